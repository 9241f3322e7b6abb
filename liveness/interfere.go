package liveness

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// Interference is a value read at a step after another value of its own
// buffer has been written over it: the module breaks the invariant XLA's
// copy insertion establishes (a buffer's values follow one another, each
// read only before the next is written).
type Interference struct {
	Value *Value // the value read
	Use   Use    // the read
	At    int    // the step of the read
	Over  *Value // the value written over it, before At
}

func (i *Interference) Error() string {
	return fmt.Sprintf("%s is read by %s at step %d after %s, of the same buffer, is written at step %d",
		i.Value.Name(), i.Use.Inst.Name, i.At, i.Over.Name(), i.Over.Range.Start)
}

// ReadsNothing reports a use that reads no bytes at the user's step: a
// tuple or get-tuple-element forwarding the value, or one that hands it to
// a called computation.
func (u Use) ReadsNothing() bool {
	return u.HandsOn() || u.Inst.Opcode == hlo.OpTuple || u.Inst.Opcode == hlo.OpGetTupleElement
}

// Interference returns the reads of a value after a later value of its
// buffer was defined under the current schedule; a value live out of the
// program is read by the entry's root, after every step. XLA's HloLiveRange cuts
// each value's range where the next value of its buffer starts, which is
// safe only when no such read exists; a module through XLA's copy
// insertion has none.
func (a *Analysis) Interference() []*Interference {
	var found []*Interference
	var defs []*Value
	for _, b := range a.Buffers {
		if len(b.Values) < 2 {
			continue
		}
		defs = defs[:0]
		for _, w := range b.Values {
			if !w.IsPhi && w.Scheduled {
				defs = append(defs, w)
			}
		}
		if len(defs) < 2 {
			continue
		}
		slices.SortFunc(defs, func(x, y *Value) int { return x.Range.Start - y.Range.Start })
		for _, v := range b.Values {
			if !v.Scheduled {
				continue
			}
			// The first value of the buffer written after v is.
			i := sort.Search(len(defs), func(i int) bool { return defs[i].Range.Start > v.Range.Start })
			if i == len(defs) {
				continue
			}
			w := defs[i]
			for _, u := range v.Uses {
				// The entry's root tuple forwards the value out of the
				// program: the caller reads it after the last step.
				out := v.LiveOut && u.Inst == a.Module.Entry.Root
				if u.ReadsNothing() && !out {
					continue
				}
				if !v.Shape.IsArray() {
					continue // a tuple's index table: forwarded, not read
				}
				if t := a.Time(u.Inst); t > w.Range.Start || out && w.Range.Start > v.Range.Start {
					found = append(found, &Interference{Value: v, Use: u, At: t, Over: w})
				}
			}
		}
	}
	return found
}

// repairInterference gives every read that interference finds a copy of
// the value of its own, made right after the value is defined (or, for a
// value that comes from elsewhere, right after the operand that hands it
// over), so that the read no longer depends on bytes the buffer's next
// value overwrites. It repeats until none is left and returns the analysis
// of the repaired module under the same schedule, the copies in place.
// hlomem's copy insertion is rule-based and misses some of the copies
// XLA's (which adds copies everywhere, then removes the ones it proves
// unneeded under the schedule) keeps; a hand-written scheduled module may
// lack them too. Without this, the ranges would be cut short: an unsafe
// plan.
func repairInterference(ctx context.Context, m *hlo.Module, a *Analysis) (*Analysis, bool, error) {
	changed := false
	var names *hlo.NameUniquer
	for round := 0; ; round++ {
		found := a.Interference()
		if len(found) == 0 {
			return a, changed, nil
		}
		if round == 16 {
			return nil, changed, unrepaired(m, found[0], "copies did not repair it")
		}
		if names == nil {
			names = hlo.NewNameUniquer(m)
		}
		s := a.Schedule
		copies := map[*Value]*hlo.Instruction{}
		for _, f := range found {
			u := f.Use
			if h, ok := handOver(a, f); ok {
				// The read is in a computation the value's own one calls:
				// copy where the value is handed over.
				u = h
			}
			cp := copies[f.Value]
			if cp == nil || cp.Parent != u.Inst.Parent {
				var err error
				if cp, err = addCopy(m, s, names, f, u); err != nil {
					return nil, changed, err
				}
				copies[f.Value] = cp
			}
			u.Inst.ReplaceOperand(u.Operand, reshapedCopy(s, names, cp, u.Inst.Operands[u.Operand]))
			changed = true
		}
		m.Renumber()
		var err error
		if a, err = analyzeModule(ctx, m, Options{}, checkNone, false); err != nil {
			return nil, changed, err
		}
		if err := a.Reschedule(s); err != nil {
			return nil, changed, err
		}
	}
}

// reshapedCopy returns cp for a read whose operand op has cp's shape, and
// otherwise (the read reaches the value through a bitcast, which only
// relabels its bytes) a bitcast of cp to op's shape, added right after cp
// in the module and in schedule s.
func reshapedCopy(s *Schedule, names *hlo.NameUniquer, cp, op *hlo.Instruction) *hlo.Instruction {
	if hlo.Compatible(cp.Shape, op.Shape) {
		return cp
	}
	c := cp.Parent
	bc := c.Module.NewInstruction(&hlo.Instruction{Name: names.Unique("bitcast"), Opcode: hlo.OpBitcast, Shape: op.Shape, Operands: []*hlo.Instruction{cp}})
	var next *hlo.Instruction
	if k := slices.Index(c.Instructions, cp); k >= 0 && k+1 < len(c.Instructions) {
		next = c.Instructions[k+1]
	}
	c.InsertBefore(bc, next)
	seq := slices.Clone(s.Sequence(c))
	seq = slices.Insert(seq, slices.Index(seq, cp)+1, bc)
	s.Set(c, seq)
	return bc
}

// unrepaired is the error for an interference the repair cannot mend.
func unrepaired(m *hlo.Module, f *Interference, why string) error {
	return newError(ErrCopiesUnsettled, m, m.Pos, "liveness: "+f.Error()+"; "+why, nil)
}

// addCopy adds a copy of f's value for the read u to u's computation c,
// in the module and in schedule s, and returns it. The copy reads the
// value right where it is defined (its instruction, then
// get-tuple-elements down to its index) when that is in c, else right
// after the operand that hands it to u.
func addCopy(m *hlo.Module, s *Schedule, names *hlo.NameUniquer, f *Interference, u Use) (*hlo.Instruction, error) {
	c := u.Inst.Parent
	op := u.Inst.Operands[u.Operand]
	if len(u.Index) > 0 || !op.Shape.IsArray() {
		return nil, unrepaired(m, f, "the read is through a tuple, which a copy cannot repair here")
	}
	seq := slices.Clone(s.Sequence(c)) // may share c.Instructions
	v := f.Value
	src := op
	var path hlo.ShapeIndex
	if v.Inst.Parent == c && slices.Contains(seq, v.Inst) {
		src, path = v.Inst, v.Index
		if v.Inst.Opcode == hlo.OpParameter {
			// Defined when the computation starts, wherever the
			// schedule lists it: list it first.
			seq = slices.DeleteFunc(seq, func(x *hlo.Instruction) bool { return x == v.Inst })
			seq = slices.Insert(seq, 0, v.Inst)
		}
	}
	// Each new instruction goes right after the last, in the module and
	// in the schedule.
	after := src
	add := func(in *hlo.Instruction) {
		var next *hlo.Instruction
		if k := slices.Index(c.Instructions, after); k >= 0 && k+1 < len(c.Instructions) {
			next = c.Instructions[k+1]
		}
		c.InsertBefore(in, next)
		seq = slices.Insert(seq, slices.Index(seq, after)+1, in)
		after = in
	}
	if !slices.Contains(seq, src) {
		return nil, unrepaired(m, f, "its operand is not scheduled")
	}
	for _, k := range path {
		if !src.Shape.IsTuple() || k < 0 || int(k) >= len(src.Shape.Tuple) {
			break
		}
		g := c.Module.NewInstruction(&hlo.Instruction{Name: names.Unique("get-tuple-element"), Opcode: hlo.OpGetTupleElement, Shape: src.Shape.Tuple[k], Operands: []*hlo.Instruction{src}, TupleIndex: k})
		add(g)
		src = g
	}
	if !src.Shape.IsArray() {
		return nil, unrepaired(m, f, "no array to copy")
	}
	cp := c.Module.NewInstruction(&hlo.Instruction{Name: names.Unique("copy"), Opcode: hlo.OpCopy, Shape: src.Shape, Operands: []*hlo.Instruction{src}})
	add(cp)
	s.Set(c, seq)
	return cp, nil
}

// handOver finds, for a read in another computation than the one defining
// the value, the call or conditional in the defining computation that hands
// the value on towards the read.
func handOver(a *Analysis, f *Interference) (Use, bool) {
	home := f.Value.Inst.Parent
	if f.Use.Inst.Parent == home {
		return Use{}, false
	}
	target := f.Use.Inst.Parent
	for _, x := range f.Value.Uses {
		if x.Inst.Parent != home || !callsInto(x.Inst, target) {
			continue
		}
		if len(x.Index) == 0 {
			return x, true
		}
		// A leaf of a loop state or of call arguments (a while's
		// loop-invariant slot holding a donated parameter, read in the
		// body after the parameter's buffer is written): copy the leaf
		// where the tuple that holds it is built.
		op, ix := x.Inst.Operands[x.Operand], x.Index
		for len(ix) > 0 && op.Opcode == hlo.OpTuple && int(ix[0]) < len(op.Operands) {
			// The leaf is the value itself, or a get-tuple-element of
			// the tuple that holds it (a loop's state handed on to an
			// inner loop).
			if len(ix) == 1 && (op.Operands[ix[0]] == f.Value.Inst && len(f.Value.Index) == 0 ||
				op.Operands[ix[0]].Shape.IsArray() && a.ValueAt(op.Operands[ix[0]], nil) == f.Value) {
				return Use{Inst: op, Operand: int(ix[0])}, true
			}
			op, ix = op.Operands[ix[0]], ix[1:]
		}
	}
	return Use{}, false
}

// callsInto reports whether in is a call, while or conditional whose
// callees are target or call it.
func callsInto(in *hlo.Instruction, target *hlo.Computation) bool {
	switch in.Opcode {
	case hlo.OpCall, hlo.OpConditional, hlo.OpWhile:
	default:
		return false
	}
	for _, callee := range in.Callees() {
		if reaches(callee, target, 0) {
			return true
		}
	}
	return false
}

// reaches reports whether computation from is target or calls it,
// directly or not.
func reaches(from, target *hlo.Computation, depth int) bool {
	if from == target {
		return true
	}
	if depth > hlo.MaxInlineDepth {
		return false
	}
	for _, in := range from.Instructions {
		for _, c := range in.Callees() {
			if reaches(c, target, depth+1) {
				return true
			}
		}
	}
	return false
}
