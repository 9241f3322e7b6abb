package eval

import (
	"fmt"
	"math/cmplx"

	"github.com/hlomem/hlomem/hlo"
)

func involvesComplex(in *hlo.Instruction, ops []Literal) bool {
	if in.Shape.Elem.IsComplex() {
		return true
	}
	for _, o := range ops {
		if o.Shape.Elem.IsComplex() {
			return true
		}
	}
	return false
}

func logicalC(o Literal) ([]complex128, error) { return logicalAs(o, decodeC) }

func outC(s hlo.Shape, v []complex128) (Literal, error) { return fromLogical(s, encodeC(s.Elem, v)) }

// complexEvals holds the evaluators of the numeric opcodes on c64/c128.
var complexEvals = map[hlo.Opcode]func(*hlo.Instruction, []Literal) (Literal, error){
	hlo.OpConstant:    complexConstant,
	hlo.OpNegate:      complexUnary,
	hlo.OpExponential: complexUnary,
	hlo.OpLog:         complexUnary,
	hlo.OpSqrt:        complexUnary,
	hlo.OpAdd:         complexBinary,
	hlo.OpSubtract:    complexBinary,
	hlo.OpMultiply:    complexBinary,
	hlo.OpDivide:      complexBinary,
	hlo.OpAtan2:       complexBinary,
	hlo.OpCompare:     complexCompare,
	hlo.OpReal:        complexPart,
	hlo.OpImag:        complexPart,
	hlo.OpAbs:         complexPart,
	hlo.OpComplex:     complexFromParts,
	hlo.OpConvert:     complexConvert,
}

// evalComplex handles the numeric opcodes on c64/c128; ok is false for
// opcodes it leaves to the generic (byte-moving) code.
func evalComplex(in *hlo.Instruction, ops []Literal) (out Literal, ok bool, err error) {
	eval, ok := complexEvals[in.Opcode]
	if !ok {
		return Literal{}, false, nil
	}
	out, err = eval(in, ops)
	return out, true, err
}

func complexConstant(in *hlo.Instruction, _ []Literal) (Literal, error) {
	lit := in.Literal()
	n := elemCount(in.Shape)
	if lit == nil || lit.Elided || len(lit.Floats) != 2*n {
		return Literal{}, fmt.Errorf("constant has no complex values")
	}
	v := make([]complex128, n)
	for i := range v {
		v[i] = complex(lit.Floats[2*i], lit.Floats[2*i+1])
	}
	return outC(in.Shape, v)
}

var complexUnaryOps = map[hlo.Opcode]func(complex128) complex128{
	hlo.OpNegate:      func(c complex128) complex128 { return -c },
	hlo.OpExponential: cmplx.Exp,
	hlo.OpLog:         cmplx.Log,
	hlo.OpSqrt:        cmplx.Sqrt,
}

func complexUnary(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if err := sameElem(in, ops[0]); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, ops[0], false); err != nil {
		return Literal{}, err
	}
	v, err := logicalC(ops[0])
	if err != nil {
		return Literal{}, err
	}
	return outC(in.Shape, mapInPlace(v, complexUnaryOps[in.Opcode]))
}

var complexBinaryOps = map[hlo.Opcode]func(a, b complex128) complex128{
	hlo.OpAdd:      func(a, b complex128) complex128 { return a + b },
	hlo.OpSubtract: func(a, b complex128) complex128 { return a - b },
	hlo.OpMultiply: func(a, b complex128) complex128 { return a * b },
	hlo.OpDivide:   func(a, b complex128) complex128 { return a / b },
	hlo.OpAtan2:    complexAtan2,
}

// complexAtan2 is atan2(y, x) on complex numbers as XLA's HloEvaluator
// defines it: -i * log((x + i*y) / sqrt(x*x + y*y)), which is the real
// atan2 for real x and y.
func complexAtan2(y, x complex128) complex128 {
	return -1i * cmplx.Log((x+1i*y)/cmplx.Sqrt(x*x+y*y))
}

func complexBinary(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if err := sameElem(in, ops...); err != nil {
		return Literal{}, err
	}
	if err := operandsDims(in, ops...); err != nil {
		return Literal{}, err
	}
	v, err := logicalAll(logicalC, ops...)
	if err != nil {
		return Literal{}, err
	}
	return outC(in.Shape, zipInPlace(v[0], v[1], complexBinaryOps[in.Opcode]))
}

func complexCompare(in *hlo.Instruction, ops []Literal) (Literal, error) {
	dir, _ := in.Attr("direction")
	if (dir != "EQ" && dir != "NE") || in.Shape.Elem != hlo.PRED || ops[0].Shape.Elem != ops[1].Shape.Elem {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s on complex with direction %s", in.OpName(), dir)
	}
	if err := operandsDims(in, ops...); err != nil {
		return Literal{}, err
	}
	v, err := logicalAll(logicalC, ops...)
	if err != nil {
		return Literal{}, err
	}
	eq := dir == "EQ"
	return outI(in.Shape, zipPred(v[0], v[1], func(a, b complex128) bool { return (a == b) == eq }))
}

var complexParts = map[hlo.Opcode]func(complex128) float64{
	hlo.OpReal: func(c complex128) float64 { return real(c) },
	hlo.OpImag: func(c complex128) float64 { return imag(c) },
	hlo.OpAbs:  cmplx.Abs,
}

func complexPart(in *hlo.Instruction, ops []Literal) (Literal, error) {
	x, t := ops[0], in.Shape.Elem
	if !x.Shape.Elem.IsComplex() || !isFloat(t) {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s from %s to %s", in.OpName(), x.Shape.Elem, t)
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	v, err := logicalC(x)
	if err != nil {
		return Literal{}, err
	}
	part := complexParts[in.Opcode]
	r := make([]float64, len(v))
	for i, c := range v {
		r[i] = part(c)
	}
	return outF(in.Shape, r)
}

// toComplex returns the complex numbers with real parts re and imaginary
// parts im (nil: all zero).
func toComplex(re, im []float64) []complex128 {
	v := make([]complex128, len(re))
	for i, x := range re {
		var y float64
		if im != nil {
			y = im[i]
		}
		v[i] = complex(x, y)
	}
	return v
}

func complexFromParts(in *hlo.Instruction, ops []Literal) (Literal, error) {
	t := in.Shape.Elem
	if !t.IsComplex() || !isFloat(ops[0].Shape.Elem) || ops[0].Shape.Elem != ops[1].Shape.Elem {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s to %s", in.OpName(), t)
	}
	if err := operandsDims(in, ops...); err != nil {
		return Literal{}, err
	}
	v, err := logicalAll(logicalF, ops...)
	if err != nil {
		return Literal{}, err
	}
	return outC(in.Shape, toComplex(v[0], v[1]))
}

func complexConvert(in *hlo.Instruction, ops []Literal) (Literal, error) {
	x, t := ops[0], in.Shape.Elem
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	if !t.IsComplex() {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s from %s to %s", in.OpName(), x.Shape.Elem, t)
	}
	var re []float64
	var err error
	switch f := x.Shape.Elem; {
	case f.IsComplex():
		v, err := logicalC(x)
		if err != nil {
			return Literal{}, err
		}
		return outC(in.Shape, v)
	case isFloat(f):
		re, err = logicalF(x)
	case numericType(f):
		var v []int64
		v, err = logicalI(x)
		re = intsToFloats(f, v)
	default:
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s from %s", in.OpName(), f)
	}
	if err != nil {
		return Literal{}, err
	}
	return outC(in.Shape, toComplex(re, nil))
}
