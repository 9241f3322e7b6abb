package hlo

import "strings"

// The lexer turns HLO text into tokens. It is hand-written for speed: the
// parser must read a 4 MB dump in well under 100 ms. Tokens refer to the
// source by offset; words and names are substrings of the source string, so
// lexing allocates nothing.
//
// Whitespace, /* block */ comments and // line comments are skipped, except
// that a line comment starting "// -----" (FileCheck's split-input-file
// marker) becomes a tokSplit token separating modules.

type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokWord           // identifier, keyword or number: [A-Za-z0-9_.$+-]+ (a '-' before '>' ends it)
	tokName           // %name (the text excludes the %)
	tokString         // "..." (the text includes the quotes)
	tokLParen
	tokRParen
	tokLBrace
	tokRBrace
	tokLBrack
	tokRBrack
	tokComma
	tokEq
	tokColon
	tokArrow // ->
	tokLeq   // <=
	tokSplit // "// -----" line
	tokOther // any other single character
	tokError // a lexical error; the lexer's err holds the message
)

var tokNames = [...]string{
	tokEOF: "end of file", tokWord: "word", tokName: "name", tokString: "string",
	tokLParen: "'('", tokRParen: "')'", tokLBrace: "'{'", tokRBrace: "'}'",
	tokLBrack: "'['", tokRBrack: "']'", tokComma: "','", tokEq: "'='", tokColon: "':'",
	tokArrow: "'->'", tokLeq: "'<='", tokSplit: "'// -----'", tokOther: "character", tokError: "error",
}

type token struct {
	kind tokKind
	// space is true when whitespace or a comment separates this token from
	// the previous one.
	space bool
	start int32 // byte offset of the token in the source
	end   int32
	line  int32
	col   int32
}

func (t token) pos() Pos { return Pos{t.line, t.col} }

type lexer struct {
	src       string
	off       int
	line      int32
	lineStart int
	err       string // message of the last tokError
}

// text returns the token's text: a name without its '%', a string with
// its quotes, the message of an error token.
func (lx *lexer) text(t token) string {
	switch t.kind {
	case tokName:
		return lx.src[t.start+1 : t.end]
	case tokError:
		return lx.err
	case tokSplit:
		return "// -----"
	}
	return lx.src[t.start:t.end]
}

// newLexer returns a lexer at the start of src. A UTF-8 byte-order mark
// there (editors on Windows write one) is skipped, and columns on the first
// line count from after it.
func newLexer(src string) lexer {
	lx := lexer{src: src, line: 1}
	if strings.HasPrefix(src, byteOrderMark) {
		lx.off, lx.lineStart = len(byteOrderMark), len(byteOrderMark)
	}
	return lx
}

// byteOrderMark is U+FEFF in UTF-8.
const byteOrderMark = "\uFEFF"

var wordByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == '-' || c == '$' || c == '+'
	}
	return t
}()

func isWordByte(c byte) bool { return wordByte[c] }

// next returns the next token.
func (lx *lexer) next() token {
	space := lx.skipSpace()
	src := lx.src
	t := token{space: space, start: int32(lx.off), line: lx.line, col: int32(lx.off - lx.lineStart + 1)}
	if lx.off >= len(src) {
		t.kind = tokEOF
		t.end = t.start
		return t
	}
	c := src[lx.off]
	switch {
	case c == '/' && lx.atSplit():
		for lx.off < len(src) && src[lx.off] != '\n' {
			lx.off++
		}
		t.kind = tokSplit
	case c == '%':
		j := lx.off + 1
		for j < len(src) && isWordByte(src[j]) && !(src[j] == '-' && j+1 < len(src) && src[j+1] == '>') {
			j++
		}
		if j == lx.off+1 {
			lx.off++
			t.kind = tokOther
			break
		}
		t.kind = tokName
		lx.off = j
	case isWordByte(c) && !(c == '-' && lx.off+1 < len(src) && src[lx.off+1] == '>'):
		j := lx.off + 1
		for j < len(src) && isWordByte(src[j]) && !(src[j] == '-' && j+1 < len(src) && src[j+1] == '>') {
			j++
		}
		t.kind = tokWord
		lx.off = j
	case c == '"':
		// Find the closing quote with IndexByte; fall back to a byte loop
		// only when the string holds an escape or a line break.
		j := lx.off + 1
		if k := strings.IndexByte(src[j:], '"'); k >= 0 && strings.IndexByte(src[j:j+k], '\\') < 0 && strings.IndexByte(src[j:j+k], '\n') < 0 {
			j += k
		} else {
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					break
				}
				j++
			}
		}
		if j >= len(src) || src[j] != '"' {
			t.kind = tokError
			lx.err = "unterminated string"
			lx.off = len(src)
			break
		}
		t.kind = tokString
		lx.off = j + 1
	default:
		lx.off++
		switch c {
		case '(':
			t.kind = tokLParen
		case ')':
			t.kind = tokRParen
		case '{':
			t.kind = tokLBrace
		case '}':
			t.kind = tokRBrace
		case '[':
			t.kind = tokLBrack
		case ']':
			t.kind = tokRBrack
		case ',':
			t.kind = tokComma
		case '=':
			t.kind = tokEq
		case ':':
			t.kind = tokColon
		case '-':
			if lx.off < len(src) && src[lx.off] == '>' {
				lx.off++
				t.kind = tokArrow
			} else {
				t.kind = tokOther
			}
		case '<':
			if lx.off < len(src) && src[lx.off] == '=' {
				lx.off++
				t.kind = tokLeq
			} else {
				t.kind = tokOther
			}
		default:
			t.kind = tokOther
		}
	}
	t.end = int32(lx.off)
	return t
}

// skipSpace skips whitespace and comments and reports whether it skipped
// anything. It stops before a "// -----" split marker, which it returns as
// a token from next.
func (lx *lexer) skipSpace() bool {
	src := lx.src
	start := lx.off
	for lx.off < len(src) {
		c := src[lx.off]
		switch c {
		case '\n':
			lx.off++
			lx.line++
			lx.lineStart = lx.off
		case ' ', '\t', '\r', '\f', '\v':
			lx.off++
		case '/':
			if lx.off+1 >= len(src) {
				return lx.off > start
			}
			switch src[lx.off+1] {
			case '/':
				if isSplitMarker(src[lx.off:]) {
					return lx.off > start
				}
				for lx.off < len(src) && src[lx.off] != '\n' {
					lx.off++
				}
			case '*':
				end := strings.Index(src[lx.off+2:], "*/")
				if end < 0 {
					return lx.off > start // the parser reports the stray '/'
				}
				end += lx.off + 2
				for i := lx.off; i < end+2; i++ {
					if src[i] == '\n' {
						lx.line++
						lx.lineStart = i + 1
					}
				}
				lx.off = end + 2
			default:
				return lx.off > start
			}
		default:
			return lx.off > start
		}
	}
	return lx.off > start
}

// isSplitMarker reports whether s starts with "//" followed by optional
// spaces and at least five dashes.
func isSplitMarker(s string) bool {
	i := 2
	for i < len(s) && s[i] == ' ' {
		i++
	}
	n := 0
	for i < len(s) && s[i] == '-' {
		i++
		n++
	}
	return n >= 5
}

// atSplit reports whether a split marker starts at the current offset.
func (lx *lexer) atSplit() bool {
	return lx.off+1 < len(lx.src) && lx.src[lx.off] == '/' && lx.src[lx.off+1] == '/' && isSplitMarker(lx.src[lx.off:])
}
