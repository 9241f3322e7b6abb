package eval

import (
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// simpleReducer returns the opcode of a reducer computation of the form
// ROOT op(p0, p1) with op a commutative binary op the evaluator applies
// directly to elements of type t (see foldFuncs), or false.
func simpleReducer(c *hlo.Computation, t hlo.ElementType) (hlo.Opcode, bool) {
	if c == nil || c.Root == nil || len(c.Params) != 2 || len(c.Root.Operands) != 2 || !numericType(t) {
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
	if a == nil || b == nil || a.Opcode != hlo.OpParameter || b.Opcode != hlo.OpParameter || a == b {
		return 0, false
	}
	for _, p := range c.Params {
		if p == nil || p.Shape.Elem != t || len(p.Shape.Dims) != 0 {
			return 0, false
		}
	}
	if isFloat(t) {
		// and/or/xor on floats: let the computation refuse them.
		return r.Opcode, binaryFloat[r.Opcode] != nil
	}
	return r.Opcode, binaryInt(r.Opcode, t) != nil
}

// foldFuncs returns a simple reducer's op on elements of type t, each
// result rounded to t: ff for floating-point types, fi for the others (the
// other is nil).
func foldFuncs(op hlo.Opcode, t hlo.ElementType) (ff func(a, b float64) float64, fi func(a, b int64) int64) {
	if isFloat(t) {
		f := binaryFloat[op]
		return func(a, b float64) float64 { return roundF(t, f(a, b)) }, nil
	}
	f := binaryInt(op, t)
	return nil, func(a, b int64) int64 { return normI(t, f(a, b)) }
}

// reduceOperands checks the operands of a single-input reduce or
// reduce-window: an input and a scalar init value of the result's numeric
// element type.
func reduceOperands(in *hlo.Instruction, ops []Literal) (x, init Literal, err error) {
	if len(ops) != 2 {
		return Literal{}, Literal{}, fmt.Errorf("cannot evaluate opcode %s with %d operands (variadic %s)", in.OpName(), len(ops), in.OpName())
	}
	x, init = ops[0], ops[1]
	if err := checkNumeric(in, in.Shape.Elem); err != nil {
		return Literal{}, Literal{}, err
	}
	if err := sameElem(in, x, init); err != nil {
		return Literal{}, Literal{}, err
	}
	if len(init.Shape.Dims) != 0 {
		return Literal{}, Literal{}, fmt.Errorf("init value is not a scalar")
	}
	return x, init, nil
}

// reduceStep applies reducer c to an accumulator and an element of type
// t, and checks that it returns a scalar of that type.
func (ev *Evaluator) reduceStep(c *hlo.Computation, t hlo.ElementType, acc, e Literal) (Literal, error) {
	v, err := ev.Computation(c, []Literal{acc, e})
	if err != nil {
		return Literal{}, err
	}
	if v.IsTuple() || v.Shape.Elem != t || len(v.Data) != len(e.Data) {
		return Literal{}, fmt.Errorf("reducer %s returned %s", c.Name, v.Shape)
	}
	return v, nil
}

// keptDims checks reduce's dimensions= against an input of rank r and
// returns the dimensions it keeps, in order.
func keptDims(reduce []int64, r int) ([]int, error) {
	reduced := make([]bool, r)
	for _, d := range reduce {
		if d < 0 || int(d) >= r || reduced[d] {
			return nil, fmt.Errorf("bad reduce dimensions %v", reduce)
		}
		reduced[d] = true
	}
	var keep []int
	for d := 0; d < r; d++ {
		if !reduced[d] {
			keep = append(keep, d)
		}
	}
	return keep, nil
}

// reduceTargets returns, for each element of an input of dims in
// row-major order, the row-major index of the output element (of dims
// outDims, the kept ones) it folds into.
func reduceTargets(dims []int64, keep []int, outDims []int64) []int {
	ost := strides(outDims)
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	outIdx := make([]int, n)
	idx := make([]int64, len(dims))
	for i := range outIdx {
		o := int64(0)
		for k, d := range keep {
			o += idx[d] * ost[k]
		}
		outIdx[i] = int(o)
		nextIndex(idx, dims)
	}
	return outIdx
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
	x, init, err := reduceOperands(in, ops)
	if err != nil {
		return Literal{}, err
	}
	t := in.Shape.Elem
	keep, err := keptDims(in.Dimensions, len(x.Shape.Dims))
	if err != nil {
		return Literal{}, err
	}
	if len(keep) != len(in.Shape.Dims) {
		return Literal{}, fmt.Errorf("result rank %d, want %d", len(in.Shape.Dims), len(keep))
	}
	for i, d := range keep {
		if in.Shape.Dims[i] != x.Shape.Dims[d] {
			return Literal{}, fmt.Errorf("result dims %v do not match", in.Shape.Dims)
		}
	}
	// outIdx[i] is the output element of input element i.
	outIdx := reduceTargets(x.Shape.Dims, keep, in.Shape.Dims)
	m := elemCount(in.Shape)
	if op, simple := simpleReducer(in.ToApply(), t); simple {
		ff, fi := foldFuncs(op, t)
		if ff != nil {
			acc, err := reduceSimple(x, init, m, outIdx, logicalF, ff)
			if err != nil {
				return Literal{}, err
			}
			return outF(in.Shape, acc)
		}
		acc, err := reduceSimple(x, init, m, outIdx, logicalI, fi)
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
	for i, o := range outIdx {
		e := Literal{Shape: scalar, Data: xb[i*w : (i+1)*w]}
		if acc[o], err = ev.reduceStep(c, t, acc[o], e); err != nil {
			return Literal{}, err
		}
	}
	out := make([]byte, m*w)
	for i, a := range acc {
		copy(out[i*w:], a.Data)
	}
	return fromLogical(in.Shape, out)
}
