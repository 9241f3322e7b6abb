package liveness

// Buffers: XLA's HloAliasAnalysis. A buffer is a set of values that must
// share one address. Values are merged (union-find) when:
//
//   - input_output_alias ties an entry output to a parameter (donation);
//   - a while ties its init operand, the parameters of its condition and
//     body, its body's root and its own result, index by index;
//   - a conditional ties each branch root to its result;
//   - an in-place op writes its output over an operand: dynamic-update-slice
//     (operand 0), scatter (its inputs), all-reduce-start, a custom-call or
//     fusion with output_to_operand_aliasing, and a fusion whose root is,
//     through tuples and bitcasts, an in-place op on a fusion parameter.
//
// A buffer's size is the largest of its values' sizes.

import (
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// Buffer is a set of values that must share one address.
type Buffer struct {
	// ID is dense over the analysis, in order of the buffers' first values.
	ID     int
	Values []*Value
	// Size is the largest value size.
	Size int64
	// Color is the memory space of the buffer's first value.
	Color int64
}

// Range returns the union of the buffer's values' ranges (contiguous after
// normalisation) and whether any value is scheduled.
func (b *Buffer) Range() (Range, bool) {
	var r Range
	ok := false
	for _, v := range b.Values {
		if !v.Scheduled {
			continue
		}
		if !ok {
			r, ok = v.Range, true
			continue
		}
		r.Start = min(r.Start, v.Range.Start)
		r.End = max(r.End, v.Range.End)
	}
	return r, ok
}

// LiveOut reports whether any value of the buffer is live out of the module.
func (b *Buffer) LiveOut() bool {
	for _, v := range b.Values {
		if v.LiveOut {
			return true
		}
	}
	return false
}

// Name returns the name of the buffer's first value.
func (b *Buffer) Name() string { return b.Values[0].Name() }

// aliasedValues appends to out the values that must share v's buffer
// under XLA's rules (ComputeAliasedValues in hlo_alias_analysis.cc), v
// first, and returns it.
func (a *Analysis) aliasedValues(v *Value, out []*Value) []*Value {
	out = append(out[:0], v)
	add := func(x *Value) {
		if x == nil {
			return
		}
		for _, y := range out {
			if y == x {
				return
			}
		}
		out = append(out, x)
	}
	m := a.Module
	entry := m.Entry
	// Donation: an entry output aliased to a parameter.
	if len(m.InputOutputAlias) > 0 {
		for _, p := range v.Positions {
			if p.Inst != entry.Root {
				continue
			}
			for _, al := range m.InputOutputAlias {
				if al.Output.Equal(p.Index) {
					if param := paramOf(entry, al.Param); param != nil {
						add(a.ValueAt(param, al.ParamIndex))
					}
				}
			}
		}
	}
	// While: the init value, the loop parameters and the body root share
	// the while's buffer, index by index; a conditional's branch roots
	// share its result's.
	for _, u := range v.Uses {
		if u.Inst.Opcode == hlo.OpWhile {
			add(a.ValueAt(u.Inst, u.Index))
		}
	}
	if v.Inst.Opcode == hlo.OpParameter {
		for _, site := range a.callers[v.Inst.Parent.ID] {
			if site.Opcode == hlo.OpWhile {
				add(a.ValueAt(site, v.Index))
			}
		}
	}
	for _, p := range v.Positions {
		if !p.Inst.IsRoot() {
			continue
		}
		c := p.Inst.Parent
		for _, site := range a.callers[c.ID] {
			switch {
			case site.Opcode == hlo.OpWhile && site.Body() == c:
				add(a.ValueAt(site, p.Index))
			case site.Opcode == hlo.OpConditional:
				add(a.ValueAt(site, p.Index))
			}
		}
	}
	// In-place operations: an output and the operand it overwrites.
	for _, p := range v.Positions {
		if !mayBeInPlace(p.Inst) {
			continue
		}
		for _, pair := range InPlacePairs(p.Inst) {
			if pair.Output.Equal(p.Index) && pair.Operand < len(p.Inst.Operands) {
				add(a.ValueAt(p.Inst.Operands[pair.Operand], pair.OperandIndex))
			}
		}
	}
	for _, u := range v.Uses {
		if !mayBeInPlace(u.Inst) {
			continue
		}
		for _, pair := range InPlacePairs(u.Inst) {
			if pair.Operand == u.Operand && pair.OperandIndex.Equal(u.Index) {
				add(a.ValueAt(u.Inst, pair.Output))
			}
		}
	}
	return out
}

// mayBeInPlace reports whether InPlacePairs(in) can be non-empty.
func mayBeInPlace(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpDynamicUpdateSlice, hlo.OpScatter, hlo.OpAllReduceStart, hlo.OpCustomCall, hlo.OpFusion, hlo.OpAsyncStart:
		return true
	}
	return false
}

// buildBuffers merges values into buffers as XLA's CreateBuffers does:
// each value starts in a set of its own, in ID order; each value's aliased
// values are merged into the largest of their sets (ties to the set reached
// through the smallest value ID), and the buffers are the non-empty sets in
// the order of the slots they occupy. A set of one value keeps no list.
func (a *Analysis) buildBuffers() {
	n := len(a.Values)
	lists := make([][]*Value, n) // members of sets of two or more
	size := make([]int, n)
	setOf := make([]int32, n)
	for i := range a.Values {
		size[i] = 1
		setOf[i] = int32(i)
	}
	members := func(s int) []*Value {
		if lists[s] != nil {
			return lists[s]
		}
		return a.Values[s : s+1]
	}
	var scratch []*Value
	for _, v := range a.Values {
		scratch = a.aliasedValues(v, scratch)
		if len(scratch) < 2 {
			continue
		}
		union, bestSize, bestID := -1, -1, 0
		for _, x := range scratch {
			s := int(setOf[x.ID])
			if sz := size[s]; sz > bestSize || sz == bestSize && x.XLAID < bestID {
				union, bestSize, bestID = s, sz, x.XLAID
			}
		}
		for _, x := range scratch {
			s := int(setOf[x.ID])
			if s == union || size[s] == 0 {
				continue
			}
			if lists[union] == nil {
				lists[union] = append(make([]*Value, 0, size[union]+size[s]), members(union)...)
			}
			for _, y := range members(s) {
				setOf[y.ID] = int32(union)
			}
			lists[union] = append(lists[union], members(s)...)
			size[union] += size[s]
			size[s], lists[s] = 0, nil
		}
	}
	bufs := make([]Buffer, 0, n)
	for i := range a.Values {
		if size[i] == 0 {
			continue
		}
		vs := members(i)
		if len(vs) > 1 {
			sort.Slice(vs, func(i, j int) bool { return vs[i].ID < vs[j].ID })
		}
		bufs = append(bufs, Buffer{ID: len(bufs), Values: vs, Color: vs[0].Color})
		b := &bufs[len(bufs)-1]
		for _, v := range vs {
			b.Size = max(b.Size, v.Size)
			v.Buffer = b
		}
	}
	a.Buffers = make([]*Buffer, len(bufs))
	for i := range bufs {
		a.Buffers[i] = &bufs[i]
	}
}

func paramOf(c *hlo.Computation, n int64) *hlo.Instruction {
	if c == nil || n < 0 || n >= int64(len(c.Params)) {
		return nil
	}
	return c.Params[n]
}

// InPlacePair says that output index Output of an instruction is written
// over operand Operand at OperandIndex (XLA's GetInPlaceInputOutputPairs).
type InPlacePair struct {
	Output       hlo.ShapeIndex
	Operand      int
	OperandIndex hlo.ShapeIndex
}

// InPlacePairs returns the in-place output/operand pairs of in.
func InPlacePairs(in *hlo.Instruction) []InPlacePair {
	switch in.Opcode {
	case hlo.OpDynamicUpdateSlice:
		return []InPlacePair{{Output: hlo.ShapeIndex{}, Operand: 0, OperandIndex: hlo.ShapeIndex{}}}
	case hlo.OpScatter, hlo.OpAllReduceStart:
		n := (len(in.Operands) - 1) / 2 // scatter: inputs, indices, updates
		if in.Opcode == hlo.OpAllReduceStart {
			n = len(in.Operands)
		}
		if !in.Shape.IsTuple() {
			return []InPlacePair{{Output: hlo.ShapeIndex{}, Operand: 0, OperandIndex: hlo.ShapeIndex{}}}
		}
		var ps []InPlacePair
		for i := 0; i < n && i < len(in.Shape.Tuple); i++ {
			ps = append(ps, InPlacePair{Output: hlo.ShapeIndex{int64(i)}, Operand: i, OperandIndex: hlo.ShapeIndex{}})
		}
		return ps
	case hlo.OpCustomCall, hlo.OpFusion, hlo.OpAsyncStart:
		// An async-start's own output_to_operand_aliasing names elements
		// of its tuple (alias_info.cc, the kAsyncStart case); in the short
		// form the attribute is the wrapped op's.
		if oa := in.OutputOperandAliasing(); len(oa) > 0 {
			ps := make([]InPlacePair, len(oa))
			for i, p := range oa {
				ps[i] = InPlacePair{Output: p.Output, Operand: int(p.Operand), OperandIndex: p.OperandIndex}
			}
			return ps
		}
		if in.Opcode == hlo.OpFusion {
			return fusionInPlacePairs(in)
		}
	}
	return nil
}

// fusionInPlacePairs finds, for each output of a fusion, an in-place op at
// the root of the fused computation (looking through tuple and bitcast)
// whose in-place operand is (through bitcasts) a fusion parameter.
func fusionInPlacePairs(in *hlo.Instruction) []InPlacePair {
	fc := in.FusedComputation()
	if fc == nil || fc.Root == nil {
		return nil
	}
	var ps []InPlacePair
	var walk func(n *hlo.Instruction, out hlo.ShapeIndex)
	walk = func(n *hlo.Instruction, out hlo.ShapeIndex) {
		for n.Opcode == hlo.OpBitcast && len(n.Operands) == 1 {
			n = n.Operands[0]
		}
		switch n.Opcode {
		case hlo.OpTuple:
			for k, o := range n.Operands {
				walk(o, append(append(hlo.ShapeIndex{}, out...), int64(k)))
			}
			return
		case hlo.OpFusion:
			// A nested fusion: its own pairs, mapped to its operands.
			for _, p := range InPlacePairs(n) {
				if len(p.Output) == 0 && p.Operand < len(n.Operands) {
					if param := fusionParam(n.Operands[p.Operand]); param != nil {
						ps = append(ps, InPlacePair{Output: out, Operand: int(param.ParameterNumber), OperandIndex: p.OperandIndex})
					}
				}
			}
			return
		}
		for _, p := range InPlacePairs(n) {
			if len(p.Output) != 0 || p.Operand >= len(n.Operands) {
				continue
			}
			if param := fusionParam(n.Operands[p.Operand]); param != nil {
				ps = append(ps, InPlacePair{Output: out, Operand: int(param.ParameterNumber), OperandIndex: p.OperandIndex})
			}
		}
	}
	walk(fc.Root, hlo.ShapeIndex{})
	return ps
}

// fusionParam returns the fused-computation parameter x is (through
// bitcasts), or nil.
func fusionParam(x *hlo.Instruction) *hlo.Instruction {
	for x.Opcode == hlo.OpBitcast && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	if x.Opcode == hlo.OpParameter {
		return x
	}
	return nil
}
