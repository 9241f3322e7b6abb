package runtime

import (
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// simpleReducer returns the opcode of a reducer computation of the form
// ROOT op(p0, p1) with op a commutative binary op, or false.
func simpleReducer(c *hlo.Computation, t hlo.ElementType) (hlo.Opcode, bool) {
	if c == nil || c.Root == nil || len(c.Params) != 2 || len(c.Root.Operands) != 2 {
		return 0, false
	}
	r := c.Root
	switch r.Opcode {
	case hlo.OpAdd, hlo.OpMultiply, hlo.OpMaximum, hlo.OpMinimum, hlo.OpAnd, hlo.OpOr, hlo.OpXor:
	default:
		return 0, false
	}
	if r.Shape.Elem != t || len(r.Shape.Dims) != 0 {
		return 0, false
	}
	a, b := r.Operands[0], r.Operands[1]
	if a.Opcode != hlo.OpParameter || b.Opcode != hlo.OpParameter || a == b {
		return 0, false
	}
	for _, p := range c.Params {
		if p.Shape.Elem != t || len(p.Shape.Dims) != 0 {
			return 0, false
		}
	}
	return r.Opcode, true
}

func evalReduce(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) != 2 {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s with %d operands (variadic reduce)", in.OpName(), len(ops))
	}
	x, init := ops[0], ops[1]
	t := in.Shape.Elem
	if err := checkNumeric(in, t); err != nil {
		return Literal{}, err
	}
	if err := sameElem(in, x, init); err != nil {
		return Literal{}, err
	}
	if len(init.Shape.Dims) != 0 {
		return Literal{}, fmt.Errorf("init value is not a scalar")
	}
	r := len(x.Shape.Dims)
	reduced := make([]bool, r)
	for _, d := range in.Dimensions {
		if d < 0 || int(d) >= r || reduced[d] {
			return Literal{}, fmt.Errorf("bad reduce dimensions %v", in.Dimensions)
		}
		reduced[d] = true
	}
	var keep []int
	for d := 0; d < r; d++ {
		if !reduced[d] {
			keep = append(keep, d)
		}
	}
	if len(keep) != len(in.Shape.Dims) {
		return Literal{}, fmt.Errorf("result rank %d, want %d", len(in.Shape.Dims), len(keep))
	}
	for i, d := range keep {
		if in.Shape.Dims[i] != x.Shape.Dims[d] {
			return Literal{}, fmt.Errorf("result dims %v do not match", in.Shape.Dims)
		}
	}
	ost := strides(in.Shape.Dims)
	// outIdx[i] is the output element of input element i.
	n := elemCount(x.Shape)
	outIdx := make([]int, n)
	idx := make([]int64, r)
	for i := 0; i < n; i++ {
		o := int64(0)
		for k, d := range keep {
			o += idx[d] * ost[k]
		}
		outIdx[i] = int(o)
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < x.Shape.Dims[d] {
				break
			}
			idx[d] = 0
		}
	}
	m := elemCount(in.Shape)
	op, simple := simpleReducer(in.ToApply(), t)
	if simple && isFloat(t) {
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		iv := decodeF(t, init.Data)[0]
		acc := make([]float64, m)
		for i := range acc {
			acc[i] = iv
		}
		for i, f := range v {
			o := outIdx[i]
			r, _ := binaryF(op, acc[o], f)
			acc[o] = roundF(t, r)
		}
		return outF(in.Shape, acc)
	}
	if simple {
		v, err := logicalI(x)
		if err != nil {
			return Literal{}, err
		}
		iv := decodeI(t, init.Data)[0]
		acc := make([]int64, m)
		for i := range acc {
			acc[i] = iv
		}
		for i, a := range v {
			o := outIdx[i]
			r, _ := binaryI(op, t, acc[o], a)
			acc[o] = normI(t, r)
		}
		return outI(in.Shape, acc)
	}
	c := in.ToApply()
	if c == nil {
		return Literal{}, fmt.Errorf("reduce has no to_apply computation")
	}
	xb, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	scalar := hlo.Shape{Elem: t}
	acc := make([]Literal, m)
	for i := range acc {
		acc[i] = Literal{Shape: scalar, Data: init.Data}
	}
	for i := 0; i < n; i++ {
		o := outIdx[i]
		e := Literal{Shape: scalar, Data: xb[i*w : (i+1)*w]}
		v, err := EvalComputation(c, []Literal{acc[o], e})
		if err != nil {
			return Literal{}, err
		}
		if v.Shape.Elem != t || len(v.Data) != w {
			return Literal{}, fmt.Errorf("reducer %s returned %s", c.Name, v.Shape)
		}
		acc[o] = v
	}
	out := make([]byte, m*w)
	for i, a := range acc {
		copy(out[i*w:], a.Data)
	}
	return fromLogical(in.Shape, out)
}
