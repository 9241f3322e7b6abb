package eval

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// EntryLeaves returns the array leaves of m's entry parameters in the order
// exec.Execute takes its arguments: parameter by parameter, each in
// shape-index pre-order, with the name exec.Execute gives them in errors
// (p, p{1}, ...).
func EntryLeaves(m *hlo.Module) (shapes []hlo.Shape, names []string) {
	if m == nil || m.Entry == nil {
		return nil, nil
	}
	for _, p := range m.Entry.Params {
		p.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			if sub.IsTuple() {
				return
			}
			name := p.Name
			if len(ix) > 0 {
				name += ix.String()
			}
			shapes = append(shapes, sub)
			names = append(names, name)
		})
	}
	return shapes, names
}

// RandomArgs returns a random literal for every array leaf of m's entry
// parameters, in the order exec.Execute takes its arguments.
func RandomArgs(m *hlo.Module, rng *rand.Rand) []Literal {
	var args []Literal
	for _, p := range m.Entry.Params {
		p.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			if !sub.IsTuple() {
				args = append(args, RandomLiteral(sub, rng))
			}
		})
	}
	return args
}

// shapePrefix matches an array shape written in front of a literal's
// values, without a layout: f32[2,3], pred[], s32[4].
var shapePrefix = regexp.MustCompile(`^([a-z][a-z0-9]*)\[([0-9, ]*)\]`)

// ParseArgs reads the arguments of m's entry from text, one literal per
// array leaf of the entry parameters in the order of EntryLeaves, in XLA's
// literal syntax: `{{1, 2}, {3, 4}}`, `true`, `-inf`, `(1, -2)` for a complex
// element, or one value that fills the whole array (`0`). A literal may
// start with its shape as XLA prints it (`f32[2,2] {{1, 2}, {3, 4}}`), which
// must then be the parameter's. Literals are separated by a newline or a
// ';' outside braces (a literal may span lines inside its braces); blank
// lines and lines starting with // or # are skipped. Errors name the
// file, line and column of the literal at fault.
func ParseArgs(m *hlo.Module, name, text string) ([]Literal, error) {
	shapes, names := EntryLeaves(m)
	pieces, err := splitLiterals(name, text)
	if err != nil {
		return nil, err
	}
	if len(pieces) != len(shapes) {
		at := hlo.Pos{Line: 1, Col: 1}
		if len(pieces) > len(shapes) {
			at = pieces[len(shapes)].pos
		} else if len(pieces) > 0 {
			at = pieces[len(pieces)-1].pos
		}
		return nil, &hlo.Error{File: name, Pos: at, Msg: fmt.Sprintf("%d literals given, the entry computation takes %d (%s)", len(pieces), len(shapes), strings.Join(names, ", "))}
	}
	out := make([]Literal, len(pieces))
	for i, p := range pieces {
		shape := shapes[i]
		body := p.text
		if mm := shapePrefix.FindStringSubmatch(body); mm != nil {
			given, err := prefixShape(mm[1], mm[2])
			if err != nil {
				return nil, &hlo.Error{File: name, Pos: p.pos, Msg: fmt.Sprintf("literal for %s: %v", names[i], err)}
			}
			if !hlo.Compatible(given, shape) {
				return nil, &hlo.Error{File: name, Pos: p.pos, Msg: fmt.Sprintf("literal for %s is %s, the parameter is %s", names[i], given.StringNoLayout(), shape.StringNoLayout())}
			}
			body = body[len(mm[0]):]
		}
		if _, err := arrayBytes(shape); err != nil {
			return nil, &hlo.Error{File: name, Pos: p.pos, Msg: fmt.Sprintf("parameter %s: %v", names[i], err)}
		}
		l, err := ParseLiteral(shape, body)
		if err != nil {
			return nil, &hlo.Error{File: name, Pos: p.pos, Msg: fmt.Sprintf("literal for %s: %v", names[i], err)}
		}
		out[i] = l
	}
	return out, nil
}

func prefixShape(elem, dims string) (hlo.Shape, error) {
	t, ok := hlo.LookupElementType(elem)
	if !ok || !t.IsArray() {
		return hlo.Shape{}, fmt.Errorf("unknown element type %q", elem)
	}
	var ds []int64
	for _, f := range strings.Split(dims, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.ParseInt(f, 10, 64)
		if err != nil || d < 0 {
			return hlo.Shape{}, fmt.Errorf("bad dimension %q", f)
		}
		ds = append(ds, d)
	}
	return hlo.ArrayShape(t, ds...), nil
}

type literalText struct {
	text string
	pos  hlo.Pos
}

// splitLiterals cuts text at newlines and ';' outside braces and
// parentheses.
func splitLiterals(name, text string) ([]literalText, error) {
	var out []literalText
	line, col := 1, 1
	var cur strings.Builder
	var start hlo.Pos
	var open []hlo.Pos // where each brace or parenthesis still open was opened
	flush := func() {
		s := strings.TrimSpace(cur.String())
		if s != "" && !strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "#") {
			out = append(out, literalText{s, start})
		}
		cur.Reset()
	}
	for _, r := range text {
		at := hlo.Pos{Line: int32(line), Col: int32(col)}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		switch {
		case r == '{' || r == '(':
			open = append(open, at)
		case r == '}' || r == ')':
			if len(open) == 0 {
				return nil, &hlo.Error{File: name, Pos: at, Msg: fmt.Sprintf("unbalanced %q", r)}
			}
			open = open[:len(open)-1]
		case len(open) == 0 && (r == '\n' || r == ';'):
			flush()
			continue
		}
		if cur.Len() == 0 {
			if r == ' ' || r == '\t' || r == '\r' {
				continue
			}
			start = at
		}
		cur.WriteRune(r)
	}
	if len(open) > 0 {
		return nil, &hlo.Error{File: name, Pos: open[len(open)-1], Msg: "brace or parenthesis never closed"}
	}
	flush()
	return out, nil
}
