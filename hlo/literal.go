package hlo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Literal is the value of a constant instruction. Small literals are parsed
// into values (the evaluator needs them); an elided one ({...}) keeps only
// its shape. Text is the literal as printed between the parentheses of
// constant(...), whitespace normalised; it is what the printer writes.
type Literal struct {
	Text   string
	Elided bool
	// Ints holds the values of integer and pred literals (unsigned 64-bit
	// values are stored bit for bit), in row-major order.
	Ints []int64
	// Floats holds the values of floating-point literals; for complex types
	// real and imaginary parts alternate.
	Floats []float64
}

// NewIntLiteral returns a literal of integer values for shape s.
func NewIntLiteral(s Shape, v ...int64) *Literal {
	l := &Literal{Ints: append([]int64(nil), v...)}
	l.Text = l.render(s)
	return l
}

// NewFloatLiteral returns a literal of floating-point values for shape s.
func NewFloatLiteral(s Shape, v ...float64) *Literal {
	l := &Literal{Floats: append([]float64(nil), v...)}
	l.Text = l.render(s)
	return l
}

// render prints the values in XLA's nested-brace form for shape s.
func (l *Literal) render(s Shape) string {
	var b strings.Builder
	n := 0
	elem := func() {
		switch {
		case s.Elem == PRED && n < len(l.Ints):
			b.WriteString(strconv.FormatBool(l.Ints[n] != 0))
		case s.Elem.IsComplex() && 2*n+1 < len(l.Floats):
			fmt.Fprintf(&b, "(%s, %s)", formatFloat(l.Floats[2*n]), formatFloat(l.Floats[2*n+1]))
		case n < len(l.Ints):
			if s.Elem == U64 {
				b.WriteString(strconv.FormatUint(uint64(l.Ints[n]), 10))
			} else {
				b.WriteString(strconv.FormatInt(l.Ints[n], 10))
			}
		case n < len(l.Floats):
			b.WriteString(formatFloat(l.Floats[n]))
		}
		n++
	}
	var walk func(d int)
	walk = func(d int) {
		if d == len(s.Dims) {
			elem()
			return
		}
		b.WriteByte('{')
		for i := int64(0); i < s.Dims[d]; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			walk(d + 1)
		}
		b.WriteByte('}')
	}
	walk(0)
	return b.String()
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// maxExpandedLiteral bounds the elements a one-value literal is expanded to.
const maxExpandedLiteral = 1 << 20

// parseLiteralValues reads the scalar tokens of a literal's text into l,
// checking the count against the shape. It accepts nested braces, commas,
// complex pairs "(re, im)", true/false, inf/nan and hexadecimal integers.
func parseLiteralValues(l *Literal, s Shape) error {
	if !s.IsArray() {
		return nil // tuple literals keep their text only
	}
	want, ok := s.Elements()
	if !ok {
		return fmt.Errorf("constant shape %s is too large", s)
	}
	var words []string
	text := l.Text
	for i := 0; i < len(text); {
		c := text[i]
		switch c {
		case '{', '}', ',', ' ', '\t', '\n', '\r', '(', ')':
			i++
			continue
		}
		j := i
		for j < len(text) && !strings.ContainsRune("{}, \t\n\r()", rune(text[j])) {
			j++
		}
		words = append(words, text[i:j])
		i = j
	}
	per := int64(1)
	if s.Elem.IsComplex() {
		per = 2
	}
	if int64(len(words)) == per && want > 1 {
		if want > maxExpandedLiteral {
			return fmt.Errorf("constant of shape %s is too large to fill from one value", s.StringNoLayout())
		}
		// A single value fills the whole array (XLA test inputs write
		// s8[10] constant(1)).
		for int64(len(words)) < want*per {
			words = append(words, words[:per]...)
		}
	}
	if int64(len(words)) != want*per {
		return fmt.Errorf("constant of shape %s needs %d values, literal has %d", s.StringNoLayout(), want*per, len(words))
	}
	switch {
	case s.Elem == PRED:
		l.Ints = make([]int64, len(words))
		for i, w := range words {
			switch w {
			case "true", "1":
				l.Ints[i] = 1
			case "false", "0":
			default:
				return fmt.Errorf("bad pred value %q", w)
			}
		}
	case s.Elem.IsInteger():
		l.Ints = make([]int64, len(words))
		for i, w := range words {
			v, err := parseIntValue(w, s.Elem.IsUnsigned())
			if err != nil {
				return err
			}
			l.Ints[i] = v
		}
	default:
		l.Floats = make([]float64, len(words))
		for i, w := range words {
			v, err := parseFloatValue(w)
			if err != nil {
				return err
			}
			l.Floats[i] = v
		}
	}
	return nil
}

func parseIntValue(w string, unsigned bool) (int64, error) {
	if unsigned {
		v, err := strconv.ParseUint(w, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("bad integer value %q", w)
		}
		return int64(v), nil
	}
	v, err := strconv.ParseInt(w, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad integer value %q", w)
	}
	return v, nil
}

func parseFloatValue(w string) (float64, error) {
	switch strings.ToLower(w) {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "-nan", "+nan":
		return math.NaN(), nil
	case "true":
		return 1, nil
	case "false":
		return 0, nil
	}
	v, err := strconv.ParseFloat(w, 64)
	if err != nil {
		// NaN payloads print as nan(0x...).
		if strings.HasPrefix(strings.ToLower(strings.TrimLeft(w, "+-")), "nan(") {
			return math.NaN(), nil
		}
		return 0, fmt.Errorf("bad floating-point value %q", w)
	}
	return v, nil
}
