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

type unionFind []int

func (u unionFind) find(x int) int {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

func (u unionFind) union(x, y int) {
	x, y = u.find(x), u.find(y)
	if x == y {
		return
	}
	if y < x {
		x, y = y, x
	}
	u[y] = x
}

func (a *Analysis) buildBuffers() {
	uf := make(unionFind, len(a.Values))
	for i := range uf {
		uf[i] = i
	}
	join := func(x, y *Value) {
		if x != nil && y != nil {
			uf.union(x.ID, y.ID)
		}
	}
	joinAll := func(x, y *hlo.Instruction) {
		if x == nil || y == nil || x.Shape.NumSubshapes() != y.Shape.NumSubshapes() {
			return
		}
		for o := 0; o < x.Shape.NumSubshapes(); o++ {
			join(a.slots[x.FirstValue+o], a.slots[y.FirstValue+o])
		}
	}
	m := a.Module
	for _, al := range m.InputOutputAlias {
		p := paramOf(m.Entry, al.Param)
		if p == nil || m.Entry.Root == nil {
			continue
		}
		join(a.ValueAt(m.Entry.Root, al.Output), a.ValueAt(p, al.ParamIndex))
	}
	for _, c := range m.Computations {
		if k := a.Kinds[c]; k != Sequential && k != ThreadLocal {
			continue
		}
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpWhile:
				if len(in.Operands) == 1 {
					joinAll(in, in.Operands[0])
				}
				for _, cc := range []*hlo.Computation{in.Condition(), in.Body()} {
					if cc != nil && len(cc.Params) == 1 {
						joinAll(in, cc.Params[0])
					}
				}
				if b := in.Body(); b != nil {
					joinAll(in, b.Root)
				}
			case hlo.OpConditional:
				for _, b := range in.Branches() {
					if b != nil {
						joinAll(in, b.Root)
					}
				}
			}
			for _, pair := range InPlacePairs(in) {
				if pair.Operand < len(in.Operands) {
					join(a.ValueAt(in, pair.Output), a.ValueAt(in.Operands[pair.Operand], pair.OperandIndex))
				}
			}
		}
	}
	byRoot := map[int]*Buffer{}
	for _, v := range a.Values {
		r := uf.find(v.ID)
		b := byRoot[r]
		if b == nil {
			b = &Buffer{ID: len(a.Buffers), Color: v.Color}
			byRoot[r] = b
			a.Buffers = append(a.Buffers, b)
		}
		b.Values = append(b.Values, v)
		b.Size = max(b.Size, v.Size)
		v.Buffer = b
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
	case hlo.OpCustomCall, hlo.OpFusion:
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
