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

// reduceSimple folds each element i of x into accumulator outIdx[i] (of m,
// starting at init's value) with f.
func reduceSimple[T any](x, init Literal, m int, outIdx []int, dec func(Literal) ([]T, error), f func(a, b T) T) ([]T, error) {
	v, err := dec(x)
	if err != nil {
		return nil, err
	}
	iv, err := dec(init)
	if err != nil {
		return nil, err
	}
	acc := make([]T, m)
	for i := range acc {
		acc[i] = iv[0]
	}
	for i, e := range v {
		o := outIdx[i]
		acc[o] = f(acc[o], e)
	}
	return acc, nil
}

func (ev *Evaluator) reduce(in *hlo.Instruction, ops []Literal) (Literal, error) {
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
		nextIndex(idx, x.Shape.Dims)
	}
	m := elemCount(in.Shape)
	op, simple := simpleReducer(in.ToApply(), t)
	if isFloat(t) && binaryFloat[op] == nil {
		simple = false // and/or/xor on floats: let the computation refuse them
	}
	if simple && isFloat(t) {
		f := binaryFloat[op]
		acc, err := reduceSimple(x, init, m, outIdx, logicalF, func(a, b float64) float64 { return roundF(t, f(a, b)) })
		if err != nil {
			return Literal{}, err
		}
		return outF(in.Shape, acc)
	}
	if simple {
		f := binaryInt(op, t)
		acc, err := reduceSimple(x, init, m, outIdx, logicalI, func(a, b int64) int64 { return normI(t, f(a, b)) })
		if err != nil {
			return Literal{}, err
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
		v, err := ev.Computation(c, []Literal{acc[o], e})
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
