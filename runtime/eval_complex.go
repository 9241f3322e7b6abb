package runtime

import (
	"fmt"
	"math/cmplx"

	"github.com/hlomem/hlomem/hlo"
)

func involvesComplex(in *hlo.Instruction, ops []Literal) bool {
	if isComplex(in.Shape.Elem) {
		return true
	}
	for _, o := range ops {
		if isComplex(o.Shape.Elem) {
			return true
		}
	}
	return false
}

func logicalC(o Literal) ([]complex128, error) {
	b, _, err := o.logical()
	if err != nil {
		return nil, err
	}
	return decodeC(o.Shape.Elem, b), nil
}

// evalComplex handles the numeric opcodes on c64/c128; ok is false for
// opcodes it leaves to the generic (byte-moving) code.
func evalComplex(in *hlo.Instruction, ops []Literal) (out Literal, ok bool, err error) {
	t := in.Shape.Elem
	switch in.Opcode {
	case hlo.OpConstant:
		lit := in.Literal()
		n := elemCount(in.Shape)
		if lit == nil || lit.Elided || len(lit.Floats) != 2*n {
			return Literal{}, true, fmt.Errorf("constant has no complex values")
		}
		v := make([]complex128, n)
		for i := range v {
			v[i] = complex(lit.Floats[2*i], lit.Floats[2*i+1])
		}
		out, err = fromLogical(in.Shape, encodeC(t, v))
		return out, true, err
	case hlo.OpNegate, hlo.OpExp, hlo.OpLog, hlo.OpSqrt:
		if err := sameElem(in, ops[0]); err != nil {
			return Literal{}, true, err
		}
		if err := operandDims(in, ops[0], false); err != nil {
			return Literal{}, true, err
		}
		v, err := logicalC(ops[0])
		if err != nil {
			return Literal{}, true, err
		}
		for i, c := range v {
			switch in.Opcode {
			case hlo.OpNegate:
				v[i] = -c
			case hlo.OpExp:
				v[i] = cmplx.Exp(c)
			case hlo.OpLog:
				v[i] = cmplx.Log(c)
			case hlo.OpSqrt:
				v[i] = cmplx.Sqrt(c)
			}
		}
		out, err = fromLogical(in.Shape, encodeC(t, v))
		return out, true, err
	case hlo.OpAdd, hlo.OpSubtract, hlo.OpMultiply, hlo.OpDivide:
		if err := sameElem(in, ops...); err != nil {
			return Literal{}, true, err
		}
		for _, o := range ops {
			if err := operandDims(in, o, false); err != nil {
				return Literal{}, true, err
			}
		}
		a, err := logicalC(ops[0])
		if err != nil {
			return Literal{}, true, err
		}
		b, err := logicalC(ops[1])
		if err != nil {
			return Literal{}, true, err
		}
		for i := range a {
			switch in.Opcode {
			case hlo.OpAdd:
				a[i] += b[i]
			case hlo.OpSubtract:
				a[i] -= b[i]
			case hlo.OpMultiply:
				a[i] *= b[i]
			case hlo.OpDivide:
				a[i] /= b[i]
			}
		}
		out, err = fromLogical(in.Shape, encodeC(t, a))
		return out, true, err
	case hlo.OpCompare:
		dir, _ := in.Attr("direction")
		if (dir != "EQ" && dir != "NE") || t != hlo.PRED || ops[0].Shape.Elem != ops[1].Shape.Elem {
			return Literal{}, true, fmt.Errorf("cannot evaluate opcode %s on complex with direction %s", in.OpName(), dir)
		}
		for _, o := range ops {
			if err := operandDims(in, o, false); err != nil {
				return Literal{}, true, err
			}
		}
		a, err := logicalC(ops[0])
		if err != nil {
			return Literal{}, true, err
		}
		b, err := logicalC(ops[1])
		if err != nil {
			return Literal{}, true, err
		}
		r := make([]int64, len(a))
		for i := range a {
			if (a[i] == b[i]) == (dir == "EQ") {
				r[i] = 1
			}
		}
		out, err = outI(in.Shape, r)
		return out, true, err
	case hlo.OpReal, hlo.OpImag, hlo.OpAbs:
		x := ops[0]
		if !isComplex(x.Shape.Elem) || !isFloat(t) {
			return Literal{}, true, fmt.Errorf("cannot evaluate opcode %s from %s to %s", in.OpName(), x.Shape.Elem, t)
		}
		if err := operandDims(in, x, false); err != nil {
			return Literal{}, true, err
		}
		v, err := logicalC(x)
		if err != nil {
			return Literal{}, true, err
		}
		r := make([]float64, len(v))
		for i, c := range v {
			switch in.Opcode {
			case hlo.OpReal:
				r[i] = real(c)
			case hlo.OpImag:
				r[i] = imag(c)
			default:
				r[i] = cmplx.Abs(c)
			}
		}
		out, err = outF(in.Shape, r)
		return out, true, err
	case hlo.OpComplex:
		if !isComplex(t) || !isFloat(ops[0].Shape.Elem) || ops[0].Shape.Elem != ops[1].Shape.Elem {
			return Literal{}, true, fmt.Errorf("cannot evaluate opcode %s to %s", in.OpName(), t)
		}
		for _, o := range ops {
			if err := operandDims(in, o, false); err != nil {
				return Literal{}, true, err
			}
		}
		re, err := logicalF(ops[0])
		if err != nil {
			return Literal{}, true, err
		}
		im, err := logicalF(ops[1])
		if err != nil {
			return Literal{}, true, err
		}
		v := make([]complex128, len(re))
		for i := range v {
			v[i] = complex(re[i], im[i])
		}
		out, err = fromLogical(in.Shape, encodeC(t, v))
		return out, true, err
	case hlo.OpConvert:
		x := ops[0]
		if err := operandDims(in, x, false); err != nil {
			return Literal{}, true, err
		}
		if !isComplex(t) {
			return Literal{}, true, fmt.Errorf("cannot evaluate opcode %s from %s to %s", in.OpName(), x.Shape.Elem, t)
		}
		var v []complex128
		switch f := x.Shape.Elem; {
		case isComplex(f):
			if v, err = logicalC(x); err != nil {
				return Literal{}, true, err
			}
		case isFloat(f):
			r, err := logicalF(x)
			if err != nil {
				return Literal{}, true, err
			}
			v = make([]complex128, len(r))
			for i, x := range r {
				v[i] = complex(x, 0)
			}
		case numericType(f):
			r, err := logicalI(x)
			if err != nil {
				return Literal{}, true, err
			}
			v = make([]complex128, len(r))
			for i, x := range r {
				if f == hlo.U64 {
					v[i] = complex(float64(uint64(x)), 0)
				} else {
					v[i] = complex(float64(x), 0)
				}
			}
		default:
			return Literal{}, true, fmt.Errorf("cannot evaluate opcode %s from %s", in.OpName(), f)
		}
		out, err = fromLogical(in.Shape, encodeC(t, v))
		return out, true, err
	}
	return Literal{}, false, nil
}
