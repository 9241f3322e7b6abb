package fusion

// Algebraic simplification: the subset of XLA's AlgebraicSimplifier that
// changes how much memory a module needs, each rule exact to the bit and
// aware of layouts.
//
//   - A reshape or transpose that leaves every element at its physical
//     position becomes a bitcast (ShapeUtil::ReshapeIsBitcast,
//     ShapeUtil::TransposeIsBitcast), which buffer assignment gives no
//     buffer of its own.
//   - Operations that return their operand unchanged (a copy, convert,
//     reshape, bitcast, broadcast, transpose, slice, reverse, pad or
//     concatenate whose result is its operand, shape and layout alike) are
//     replaced by the operand. A copy that the computation's result reads
//     stays: it keeps outputs apart from parameters and from each other,
//     and loop state apart between iterations, as XLA's copy insertion
//     wants.
//   - Chains fold: bitcast(bitcast(x)) and reshape(reshape(x)) read x
//     directly, slice(slice(x)) becomes one slice, and a concatenate drops
//     operands that add nothing along its dimension.
//
// Whether a reshape is a bitcast is decided on the shapes alone, without
// touching the elements. Each shape is read as a list of physical
// dimensions, major to minor, each with its size and its stride in the
// row-major (logical) numbering of the elements the reshape preserves.
// Dimensions of size one are dropped and neighbours that are contiguous in
// both numberings merged; the reshape keeps every element in place exactly
// when the two lists are equal. A transpose is read the same way with the
// result's strides taken from the operand dimensions they come from.
//
// Replacements point users at instructions that come earlier and new
// instructions go just before the ones they replace, so a schedule stays a
// schedule. Instructions the rules leave unused are DCE's to remove.

import (
	"slices"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// Simplify rewrites m with the rules above until none applies and reports
// whether it changed the module; when it did not, the module is untouched.
func Simplify(m *hlo.Module) (changed bool, err error) {
	if m == nil {
		return false, nil
	}
	defer recoverPass("simplify", &changed, &err)
	var gone marks // the module's, shared by the simplifiers
	for _, c := range m.Computations {
		s := &simplifier{c: c, entry: c == m.Entry, gone: &gone}
		// Every sweep visits the instructions in order, so a chain
		// folds in one; the bound only guards against rules undoing
		// each other, which none does.
		for range 16 {
			if !s.sweep() {
				break
			}
			changed = true
		}
	}
	if changed {
		m.Renumber()
	}
	return changed, nil
}

// simplifier rewrites one computation.
type simplifier struct {
	c     *hlo.Computation
	entry bool
	// gone holds the instructions replaced in this sweep; they are
	// dropped from the computation when it ends.
	gone *marks
	// rootView holds what the computation's result reads without a
	// computation in between: the root, and through tuples,
	// get-tuple-elements and bitcasts, what they forward.
	rootView map[*hlo.Instruction]bool
}

func (s *simplifier) sweep() bool {
	s.gone.reset()
	s.rootView = rootView(s.c)
	changed := false
	for _, in := range slices.Clone(s.c.Instructions) {
		if s.gone.has(in.ID) || hasControl(in) {
			continue
		}
		if s.visit(in) {
			changed = true
		}
	}
	if s.gone.size() > 0 {
		dropInstructions(s.c, func(in *hlo.Instruction) bool { return s.gone.has(in.ID) })
	}
	return changed
}

// visit applies the first rule that fits in and reports whether one did.
func (s *simplifier) visit(in *hlo.Instruction) bool {
	if len(in.Operands) == 0 {
		return false
	}
	x := in.Operands[0]
	switch in.Opcode {
	case hlo.OpReshape:
		if s.forward(in, x) {
			return true
		}
		if x.Opcode == hlo.OpReshape && !hasControl(x) {
			in.ReplaceOperand(0, x.Operands[0])
			s.forward(in, in.Operands[0])
			return true
		}
		if reshapeIsBitcast(x.Shape, in.Shape) && !s.rootParam(in, x) {
			toBitcast(in)
			return true
		}
	case hlo.OpBitcast:
		if s.forward(in, x) {
			return true
		}
		if x.Opcode == hlo.OpBitcast && !hasControl(x) {
			y := x.Operands[0]
			if plainBitcast(y.Shape, x.Shape) && plainBitcast(x.Shape, in.Shape) && plainBitcast(y.Shape, in.Shape) {
				in.ReplaceOperand(0, y)
				s.forward(in, y)
				return true
			}
		}
	case hlo.OpTranspose:
		if isIota(in.Dimensions, len(in.Shape.Dims)) && s.forward(in, x) {
			return true
		}
		if transposeIsBitcast(x.Shape, in.Shape, in.Dimensions) && !s.rootParam(in, x) {
			toBitcast(in)
			return true
		}
	case hlo.OpCopy:
		if !s.rootView[in] {
			return s.forward(in, x)
		}
	case hlo.OpConvert:
		if x.Shape.Elem == in.Shape.Elem {
			return s.forward(in, x)
		}
	case hlo.OpBroadcast:
		if isIota(in.Dimensions, len(in.Shape.Dims)) {
			return s.forward(in, x)
		}
	case hlo.OpReverse:
		if len(in.Dimensions) == 0 {
			return s.forward(in, x)
		}
	case hlo.OpPad:
		v, ok := in.Attr("padding")
		if !ok {
			v, ok = in.Attr("padding_config")
		}
		if ok && zeroPadding(v) {
			return s.forward(in, x)
		}
	case hlo.OpSlice:
		if fullSlice(in.Slice(), x.Shape) && s.forward(in, x) {
			return true
		}
		if x.Opcode == hlo.OpSlice && !hasControl(x) {
			if sl, ok := composeSlices(x.Slice(), in.Slice()); ok {
				in.ReplaceOperand(0, x.Operands[0])
				in.Ext.Slice = sl
				return true
			}
		}
	case hlo.OpConcatenate:
		return s.concatenate(in)
	}
	return false
}

// forward replaces in by x, which computes the same value, when the two
// print the same shape and layout, and reports whether it did. A
// computation's root never becomes a parameter: XLA keeps a copy there so
// that the result has a buffer of its own.
func (s *simplifier) forward(in, x *hlo.Instruction) bool {
	if in.Shape.String() != x.Shape.String() {
		return false
	}
	if s.rootParam(in, x) {
		return false
	}
	in.ReplaceAllUsesWith(x)
	s.gone.mark(in.ID)
	return true
}

// rootParam reports whether in is the root and x a parameter: the root
// may become neither the parameter nor a bitcast of it.
func (s *simplifier) rootParam(in, x *hlo.Instruction) bool {
	return in.IsRoot() && x.Opcode == hlo.OpParameter
}

// concatenate drops the operands that are empty along the concatenated
// dimension and forwards a lone operand.
func (s *simplifier) concatenate(in *hlo.Instruction) bool {
	if len(in.Dimensions) != 1 {
		return false
	}
	d := in.Dimensions[0]
	var kept []*hlo.Instruction
	for _, op := range in.Operands {
		if d < 0 || int(d) >= len(op.Shape.Dims) {
			return false
		}
		if op.Shape.Dims[d] != 0 || op.Shape.IsDynamic(int(d)) {
			kept = append(kept, op)
		}
	}
	if len(kept) == 0 {
		kept = in.Operands[:1]
	}
	if len(kept) == 1 && s.forward(in, kept[0]) {
		return true
	}
	if len(kept) == len(in.Operands) {
		return false
	}
	cp := *in
	s.c.Module.NewInstruction(&cp)
	cp.Operands = kept
	cp.Users = nil
	s.c.InsertBefore(&cp, in)
	in.ReplaceAllUsesWith(&cp)
	s.gone.mark(in.ID)
	return true
}

// toBitcast turns a reshape or transpose that moves no element into a
// bitcast of the same operand, shape, name and metadata.
func toBitcast(in *hlo.Instruction) {
	in.Opcode = hlo.OpBitcast
	in.Dimensions = nil
	in.HasDimensions = false
}

// rootView returns the instructions c's result reads directly.
func rootView(c *hlo.Computation) map[*hlo.Instruction]bool {
	seen := map[*hlo.Instruction]bool{}
	var walk func(in *hlo.Instruction)
	walk = func(in *hlo.Instruction) {
		if in == nil || seen[in] {
			return
		}
		seen[in] = true
		switch in.Opcode {
		case hlo.OpTuple, hlo.OpGetTupleElement, hlo.OpBitcast:
			for _, op := range in.Operands {
				walk(op)
			}
		}
	}
	walk(c.Root)
	return seen
}

func isIota(dims []int64, rank int) bool {
	if len(dims) != rank {
		return false
	}
	for i, d := range dims {
		if d != int64(i) {
			return false
		}
	}
	return true
}

// zeroPadding reports whether a padding= value (lo_hi[_interior] per
// dimension, joined by x) pads nothing anywhere.
func zeroPadding(v string) bool {
	if v == "" {
		return false
	}
	for _, dim := range strings.Split(v, "x") {
		for _, n := range strings.Split(dim, "_") {
			if n != "0" {
				return false
			}
		}
	}
	return true
}

// fullSlice reports whether sl takes every element of s in order.
func fullSlice(sl []hlo.SliceDim, s hlo.Shape) bool {
	if len(sl) != len(s.Dims) {
		return false
	}
	for i, d := range sl {
		if d.Start != 0 || d.Limit != s.Dims[i] || d.Stride != 1 {
			return false
		}
	}
	return true
}

// composeSlices returns the one slice that takes what outer takes from the
// result of inner.
func composeSlices(inner, outer []hlo.SliceDim) ([]hlo.SliceDim, bool) {
	if len(inner) != len(outer) || len(inner) == 0 {
		return nil, false
	}
	out := make([]hlo.SliceDim, len(inner))
	for i, a := range inner {
		b := outer[i]
		if a.Stride < 1 || b.Stride < 1 || b.Start < 0 || b.Limit <= b.Start {
			return nil, false
		}
		n := (b.Limit - b.Start + b.Stride - 1) / b.Stride
		start := a.Start + b.Start*a.Stride
		stride := a.Stride * b.Stride
		limit := start + (n-1)*stride + 1
		if limit > a.Limit {
			return nil, false
		}
		out[i] = hlo.SliceDim{Start: start, Limit: limit, Stride: stride}
	}
	return out, true
}

// minorToMajor returns s's layout, the default one when s prints none, and
// false when the layout is more than a dimension order (tiles, element
// sizes, sparse or split extras) or s is not a static array.
func minorToMajor(s hlo.Shape) ([]int64, bool) {
	if !s.IsArray() || s.Dynamic != nil && slices.Contains(s.Dynamic, true) {
		return nil, false
	}
	l := s.Layout
	if l == nil {
		m2m := make([]int64, len(s.Dims))
		for i := range m2m {
			m2m[i] = int64(len(s.Dims) - 1 - i)
		}
		return m2m, true
	}
	if l.DimLevelTypes != "" || len(l.Tiles) > 0 || l.TailPaddingAlignment != 0 || l.IndexType != hlo.InvalidType ||
		l.PointerType != hlo.InvalidType || l.ElementSizeBits != 0 || len(l.Rest) > 0 {
		return nil, false
	}
	if len(l.MinorToMajor) != len(s.Dims) {
		if len(s.Dims) == 0 {
			return nil, true
		}
		return nil, false
	}
	return l.MinorToMajor, true
}

// isDefaultOrder reports whether m2m is the descending (row-major) order.
func isDefaultOrder(m2m []int64) bool {
	for i, d := range m2m {
		if d != int64(len(m2m)-1-i) {
			return false
		}
	}
	return true
}

// plainBitcast reports whether a bitcast from a to b can be read as "the
// same bytes": same element type and memory space, layouts that are only
// dimension orders, and either both layouts written out or both the
// default order (the runtime's evaluator, like XLA, treats a bitcast
// between shapes without layouts as a row-major reshape).
func plainBitcast(a, b hlo.Shape) bool {
	if a.Elem != b.Elem || a.MemorySpace() != b.MemorySpace() {
		return false
	}
	ma, okA := minorToMajor(a)
	mb, okB := minorToMajor(b)
	if !okA || !okB {
		return false
	}
	ea, okA := a.Elements()
	eb, okB := b.Elements()
	if !okA || !okB || ea != eb || ea == 0 {
		return false
	}
	switch {
	case a.Layout != nil && b.Layout != nil:
		return true
	case len(a.Dims) <= 1 && len(b.Dims) <= 1:
		return true
	}
	return isDefaultOrder(ma) && isDefaultOrder(mb)
}

// block is a run of physically contiguous elements: size of them, each
// stride apart in the logical numbering.
type block struct{ size, stride int64 }

// physicalBlocks lists s's dimensions from physically major to minor as
// blocks, with strides[d] the logical stride of dimension d, leaving out
// dimensions of size one and merging neighbours that are contiguous
// logically too. Two shapes whose lists agree put every element at the
// same physical position.
func physicalBlocks(dims, m2m, strides []int64) []block {
	var out []block
	for i := len(m2m) - 1; i >= 0; i-- {
		d := m2m[i]
		if dims[d] == 1 {
			continue
		}
		b := block{dims[d], strides[d]}
		if n := len(out); n > 0 && out[n-1].stride == b.stride*b.size {
			out[n-1] = block{out[n-1].size * b.size, b.stride}
			continue
		}
		out = append(out, b)
	}
	return out
}

// rowMajorStrides returns the logical stride of every dimension.
func rowMajorStrides(dims []int64) []int64 {
	st := make([]int64, len(dims))
	n := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = n
		n *= dims[i]
	}
	return st
}

// reshapeIsBitcast reports whether reshaping from to to keeps every
// element at its physical position (XLA's ShapeUtil::ReshapeIsBitcast) and
// a bitcast will be read that way.
func reshapeIsBitcast(from, to hlo.Shape) bool {
	if !plainBitcast(from, to) {
		return false
	}
	mf, _ := minorToMajor(from)
	mt, _ := minorToMajor(to)
	return slices.Equal(
		physicalBlocks(from.Dims, mf, rowMajorStrides(from.Dims)),
		physicalBlocks(to.Dims, mt, rowMajorStrides(to.Dims)))
}

// transposeIsBitcast reports whether transposing from by perm (result
// dimension i is operand dimension perm[i]) into to keeps every element at
// its physical position (XLA's ShapeUtil::TransposeIsBitcast).
func transposeIsBitcast(from, to hlo.Shape, perm []int64) bool {
	if len(perm) != len(from.Dims) || len(to.Dims) != len(perm) || !plainBitcast(from, to) {
		return false
	}
	seen := make([]bool, len(perm))
	fromStrides := rowMajorStrides(from.Dims)
	toStrides := make([]int64, len(perm))
	for i, p := range perm {
		if p < 0 || int(p) >= len(perm) || seen[p] || to.Dims[i] != from.Dims[p] {
			return false
		}
		seen[p] = true
		toStrides[i] = fromStrides[p]
	}
	mf, _ := minorToMajor(from)
	mt, _ := minorToMajor(to)
	return slices.Equal(physicalBlocks(from.Dims, mf, fromStrides), physicalBlocks(to.Dims, mt, toStrides))
}
