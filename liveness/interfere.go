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
	// Use is the read. For a result read (Result) it is the root's use of
	// the value or, when the root uses nothing (it defines the value or is
	// a parameter forwarding it), Use{Inst: root, Operand: -1, Index: the
	// value's index in the root}.
	Use  Use
	At   int    // the step of the read
	Over *Value // the value written over it, before At
	// Result says the value is (part of) the result of Use.Inst's
	// computation, which its caller reads when the computation ends (At).
	Result bool
	// ReadOnly says the value is a constant or an entry parameter that is
	// not donated, whose bytes are not the program's to write: Over writes
	// them (an in-place update), and the caller, or the next run, reads
	// them after the program ends (At). Use is Over's instruction.
	ReadOnly bool
	// OverAt is the step Over is written (its definition's; under
	// Rules2026 a value of an async computation lives from before that).
	OverAt int
}

// written returns the step v's bytes are written: its definition's time,
// or its range's start for a parameter or a phi (the computation's
// start). A value of an async context lives from the start of the
// computation holding its chain under the current rules, but is written
// only when its instruction runs.
func (a *Analysis) written(v *Value) int {
	if v.IsPhi || v.Inst.Opcode == hlo.OpParameter {
		return v.Range.Start
	}
	if t := a.Time(v.Inst); t >= 0 {
		return t
	}
	return v.Range.Start
}

func (i *Interference) Error() string {
	if i.ReadOnly {
		return fmt.Sprintf("%s, %s, is written over by %s at step %d",
			i.Value.Name(), readOnlyKind(i.Value), i.Over.Name(), i.OverAt)
	}
	if i.Result {
		return fmt.Sprintf("%s, in the result of %s, is read when that computation ends at step %d after %s, of the same buffer, is written at step %d",
			i.Value.Name(), i.Use.Inst.Parent.Name, i.At, i.Over.Name(), i.OverAt)
	}
	return fmt.Sprintf("%s is read by %s at step %d after %s, of the same buffer, is written at step %d",
		i.Value.Name(), i.Use.Inst.Name, i.At, i.Over.Name(), i.OverAt)
}

// ReadsNothing reports a use that reads no bytes at the user's step: a
// tuple or get-tuple-element forwarding the value, or one that hands it to
// a called computation.
func (u Use) ReadsNothing() bool {
	return u.HandsOn() || u.Inst.Opcode == hlo.OpTuple || u.Inst.Opcode == hlo.OpGetTupleElement
}

// Interference returns the reads of a value after a later value of its
// buffer was defined under the current schedule. XLA's HloLiveRange cuts
// each value's range where the next value of its buffer starts, which is
// safe only when no such read exists; a module through XLA's copy
// insertion has none. Besides the reads at their instructions' steps, two
// reads happen elsewhere:
//
//   - a result: a value at a computation's root (a position there) is read
//     by the computation's caller when the computation ends, whatever the
//     schedule puts after the root (a value live out of the program, at
//     the entry's root, after every step). This is XLA's rule that a
//     root's value lives to the end of its computation and can never be
//     strictly before a value defined later within it
//     (HloOrdering::LiveRangeStrictlyBefore; copies.go);
//   - a loop's state: a while reads an init value it changes (not a
//     loop-invariant slot, whose reads in the loop are its own uses) when the loop starts,
//     at its condition's first step (the body and condition parameters
//     hold the same bytes; HloLiveRange likewise keeps the init value live
//     until the body starts).
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
		slices.SortFunc(defs, func(x, y *Value) int { return a.written(x) - a.written(y) })
		for _, v := range b.Values {
			if !v.Scheduled || !v.Shape.IsArray() {
				continue // a tuple's index table: forwarded, not read
			}
			// The first value of the buffer written after v is.
			i := sort.Search(len(defs), func(i int) bool { return a.written(defs[i]) > a.written(v) })
			if i == len(defs) {
				continue
			}
			w := defs[i]
			if a.readOnly(v) {
				// XLA keeps a constant, and an entry parameter not donated,
				// live to the program's end in a buffer of its own: copy
				// insertion copies it before any in-place update.
				found = append(found, &Interference{Value: v, Use: Use{Inst: w.Inst, Operand: -1}, At: len(a.Sequence), Over: w, ReadOnly: true, OverAt: a.written(w)})
				continue
			}
			read := func(u Use, t int, result bool) {
				if t > a.written(w) && !a.exclusive(u.Inst, w.Inst) {
					found = append(found, &Interference{Value: v, Use: u, At: t, Over: w, Result: result, OverAt: a.written(w)})
				}
			}
			for _, u := range v.Uses {
				switch {
				case u.Inst.IsRoot() && hasPosition(v, u.Inst):
					if end := a.Spans[u.Inst.Parent.ID].End; end >= 0 {
						read(u, end, true)
					}
				case u.Inst.Opcode == hlo.OpWhile:
					// A slot the loop leaves alone holds v itself, whose
					// reads inside the loop are its own uses.
					if a.ValueAt(u.Inst, u.Index) != v {
						read(u, a.loopStart(u.Inst), false)
					}
				case (u.Inst.Opcode == hlo.OpAsyncStart || u.Inst.Opcode == hlo.OpAsyncUpdate || u.Inst.Opcode == hlo.OpAsyncDone) && ownsWrite(u.Inst, w):
					// The async op hands v to its computation, whose op
					// (flattened before the start) writes it in place: an
					// async custom-call's output_to_operand_aliasing.
				case !u.ReadsNothing():
					read(u, a.Time(u.Inst), false)
				}
			}
			// A root that uses nothing: it defines v, or it is a parameter
			// handing v on from the caller.
			for _, p := range v.Positions {
				c := p.Inst.Parent
				if c == nil || c.Root != p.Inst || usedBy(v, p.Inst) {
					continue
				}
				if end := a.Spans[c.ID].End; end >= 0 {
					read(Use{Inst: p.Inst, Operand: -1, Index: p.Index}, end, true)
				}
			}
		}
	}
	return found
}

// readOnly reports whether v is a constant or an entry parameter's value
// that is neither donated to an output (input_output_alias) nor a buffer
// donor: bytes the program may read but not write.
func (a *Analysis) readOnly(v *Value) bool {
	switch {
	case v.IsPhi:
		return false
	case v.Inst.Opcode == hlo.OpConstant:
		return true
	case v.Inst.Opcode != hlo.OpParameter || v.Inst.Parent != a.Module.Entry:
		return false
	}
	if a.donated(v.Inst.ParameterNumber, v.Index) {
		return false
	}
	for _, d := range a.Module.BufferDonors {
		if d.Param == v.Inst.ParameterNumber && d.ParamIndex.Equal(v.Index) {
			return false
		}
	}
	return true
}

func readOnlyKind(v *Value) string {
	if v.Inst.Opcode == hlo.OpConstant {
		return "a constant"
	}
	return "an entry parameter not donated"
}

// exclusive reports whether x and y run in different branches of one
// conditional, so that at most one of them runs: the flattened sequence
// lays every branch out, one after another, but a read in one branch never
// sees what another branch writes. XLA's ordering says the same
// (HloOrdering: instructions in different branches of a conditional are
// mutually exclusive, neither runs before the other).
func (a *Analysis) exclusive(x, y *hlo.Instruction) bool {
	if x == nil || y == nil || x.Parent == y.Parent {
		return false
	}
	branches := a.enclosingBranches(x)
	if len(branches) == 0 {
		return false
	}
	for _, b := range a.enclosingBranches(y) {
		for _, o := range branches {
			if o.cond == b.cond {
				return o.branch != b.branch
			}
		}
	}
	return false
}

// branchOf is a conditional and the index of one of its branches.
type branchOf struct {
	cond   *hlo.Instruction
	branch int
}

// enclosingBranches lists, innermost first, the conditionals whose
// branches in runs in and which branch that is. In a flattened module each
// computation has one call site; a computation with several (or none)
// ends the walk.
func (a *Analysis) enclosingBranches(in *hlo.Instruction) []branchOf {
	var out []branchOf
	c := in.Parent
	for range len(a.Module.Computations) { // a bound: the call graph has no cycle
		if c == nil || c.ID < 0 || c.ID >= len(a.callers) || len(a.callers[c.ID]) != 1 {
			break
		}
		site := a.callers[c.ID][0]
		if site.Opcode == hlo.OpConditional {
			for i, b := range site.Callees() {
				if b == c {
					out = append(out, branchOf{site, i})
					break
				}
			}
		}
		c = site.Parent
	}
	return out
}

// loopStart returns the step at which the while w first reads its state:
// its condition's first step (the condition runs first), else its body's,
// else its own.
func (a *Analysis) loopStart(w *hlo.Instruction) int {
	for _, c := range []*hlo.Computation{w.Condition(), w.Body()} {
		if c != nil && a.Spans[c.ID].Start >= 0 && a.Spans[c.ID].Start < a.Spans[c.ID].End {
			return a.Spans[c.ID].Start
		}
	}
	return a.Time(w)
}

// usedBy reports whether in uses v.
func usedBy(v *Value, in *hlo.Instruction) bool {
	for _, u := range v.Uses {
		if u.Inst == in {
			return true
		}
	}
	return false
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
	// handed marks the reads repaired by a copy handed over by the
	// caller. When such a read interferes again (the value is overwritten
	// inside the reader's computation: a loop there working in place on
	// the parameter that holds it, whose buffer the handed-over copy
	// shares all the same), it gets a copy of the parameter made where its
	// computation starts instead.
	handed := map[readSite]bool{}
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
		// copies[v.ID] is the copy of v made this round; results[c.ID]
		// marks, by value ID, the values given a copy at c's root (made
		// for the few computations that need one).
		copies := make([]*hlo.Instruction, len(a.Values))
		results := make([][]bool, len(m.Computations))
		var handedNow []readSite
		for _, f := range found {
			u := f.Use
			if f.ReadOnly {
				if err := copyReadOnly(m, a, s, names, f); err != nil {
					return nil, changed, err
				}
				changed = true
				continue
			}
			if f.Result && (u.Operand < 0 || len(u.Index) > 0) {
				// The root holds the value but does not take it as an
				// operand: give the root a copy of its own instead.
				c := u.Inst.Parent
				if results[c.ID] != nil && results[c.ID][f.Value.ID] {
					continue
				}
				if results[c.ID] == nil {
					results[c.ID] = make([]bool, len(a.Values))
				}
				results[c.ID][f.Value.ID] = true
				if err := copyResult(m, s, names, f); err != nil {
					return nil, changed, err
				}
				changed = true
				continue
			}
			site := readSite{u.Inst, u.Operand}
			if h, ok := handOver(a, f); ok && !handed[site] {
				handedNow = append(handedNow, site)
				// The read is in a computation the value's own one calls:
				// copy where the value is handed over.
				u = h
			} else if h, ok := outerHandOver(a, f); ok {
				// The value is overwritten before the reader's computation
				// starts: copy where a caller hands it on, before that.
				u = h
			} else if l, ok := tupleLeaf(a, u, f.Value); ok {
				// A leaf of a tuple built in the reader's computation (a
				// while's init): copy the leaf where the tuple takes it.
				u = l
			}
			cp := copies[f.Value.ID]
			if cp == nil || cp.Parent != u.Inst.Parent {
				var err error
				if cp, err = addCopy(m, s, names, f, u); err != nil {
					return nil, changed, err
				}
				copies[f.Value.ID] = cp
			}
			u.Inst.ReplaceOperand(u.Operand, reshapedCopy(s, names, cp, u.Inst.Operands[u.Operand]))
			changed = true
		}
		for _, site := range handedNow {
			handed[site] = true
		}
		m.Renumber()
		var err error
		// The repaired module keeps the settings of the analysis repaired.
		if a, err = analyzeModule(ctx, m, a.settings.options(), checkNone, false); err != nil {
			return nil, changed, err
		}
		if err := a.Reschedule(s); err != nil {
			return nil, changed, err
		}
	}
}

// copyReadOnly repairs f, a constant or undonated entry parameter written
// over by an in-place update: the update (or, when it runs in a computation
// the value is handed to, the instruction handing it over there) takes a
// copy instead, made right before it, as XLA's copy insertion copies the
// operand of an in-place operation that may not be written.
func copyReadOnly(m *hlo.Module, a *Analysis, s *Schedule, names *hlo.NameUniquer, f *Interference) error {
	v, w := f.Value, f.Over.Inst
	home := v.Inst.Parent
	var at *hlo.Instruction // the instruction whose operands are redirected
	if w.Parent == home {
		at = w
	} else {
		for _, x := range v.Uses {
			if x.Inst.Parent == home && callsInto(x.Inst, w.Parent) {
				at = x.Inst
				break
			}
		}
	}
	if at == nil {
		return unrepaired(m, f, "no instruction in its computation writes it or hands it on")
	}
	done := false
	for k, op := range at.Operands {
		if !op.Shape.IsArray() {
			done = copyLeavesOf(a, s, names, v, at.Operands[k]) || done
			continue
		}
		if x := a.ValueAt(op, nil); x == nil || x.Buffer != v.Buffer {
			continue
		}
		at.ReplaceOperand(k, copyBefore(s, names, op, at))
		done = true
	}
	if !done {
		return unrepaired(m, f, "no operand of "+at.Name+" holds it")
	}
	return nil
}

// copyLeavesOf gives the tuple instruction t, where it takes an array of
// v's buffer, a copy of it made right before t; it reports whether it
// changed anything (nothing when t is not a tuple instruction).
func copyLeavesOf(a *Analysis, s *Schedule, names *hlo.NameUniquer, v *Value, t *hlo.Instruction) bool {
	if t.Opcode != hlo.OpTuple {
		return false
	}
	changed := false
	for j, e := range t.Operands {
		if !e.Shape.IsArray() {
			continue
		}
		if x := a.ValueAt(e, nil); x == nil || x.Buffer != v.Buffer {
			continue
		}
		t.ReplaceOperand(j, copyBefore(s, names, e, t))
		changed = true
	}
	return changed
}

// copyBefore adds a copy of the array op right before the instruction
// before (in its computation and in schedule s) and returns it.
func copyBefore(s *Schedule, names *hlo.NameUniquer, op, before *hlo.Instruction) *hlo.Instruction {
	c := before.Parent
	seq := slices.Clone(s.Sequence(c)) // may share c.Instructions
	cp := c.Module.NewInstruction(&hlo.Instruction{Name: names.Unique("copy"), Opcode: hlo.OpCopy, Shape: op.Shape, Operands: []*hlo.Instruction{op}})
	c.InsertBefore(cp, before)
	seq = slices.Insert(seq, max(slices.Index(seq, before), 0), cp)
	s.Set(c, seq)
	return cp
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
	v := f.Value
	src := op
	var path hlo.ShapeIndex
	if v.Inst.Parent == c && slices.Contains(s.Sequence(c), v.Inst) {
		src, path = v.Inst, v.Index
	}
	return copyFrom(m, s, names, f, c, src, path)
}

// copyFrom adds to c, in the module and in schedule s, a copy of the
// array at index path of src, made right after src (through
// get-tuple-elements down to path), and returns it. A parameter src is
// listed first: it is defined when the computation starts, wherever the
// schedule lists it.
func copyFrom(m *hlo.Module, s *Schedule, names *hlo.NameUniquer, f *Interference, c *hlo.Computation, src *hlo.Instruction, path hlo.ShapeIndex) (*hlo.Instruction, error) {
	seq := slices.Clone(s.Sequence(c)) // may share c.Instructions
	if src.Opcode == hlo.OpParameter && slices.Contains(seq, src) {
		seq = slices.DeleteFunc(seq, func(x *hlo.Instruction) bool { return x == src })
		seq = slices.Insert(seq, 0, src)
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

// copyResult gives the root of f's computation, which holds f's value at
// some index without taking it as an operand there (the root defines the
// value, is a parameter or a get-tuple-element handing it on, or nests it
// in tuples), a copy of the value of its own at each index where it holds
// it. The copy is made right after the value is defined in the
// computation, or right after the earliest instruction of the computation
// holding it (a parameter, listed first), so that it holds the value
// before anything later in the computation writes over it; the root is
// rebuilt around it.
func copyResult(m *hlo.Module, s *Schedule, names *hlo.NameUniquer, f *Interference) error {
	root := f.Use.Inst
	c := root.Parent
	v := f.Value
	seq := s.Sequence(c)
	var src *hlo.Instruction
	var path hlo.ShapeIndex
	if v.Inst.Parent == c && slices.Contains(seq, v.Inst) {
		src, path = v.Inst, v.Index
	} else {
		best := len(seq)
		for _, p := range v.Positions {
			k := slices.Index(seq, p.Inst)
			if p.Inst.Parent != c || k < 0 {
				continue
			}
			if p.Inst.Opcode == hlo.OpParameter {
				k = -1 // copyFrom lists it first
			}
			if k < best {
				src, path, best = p.Inst, p.Index, k
			}
		}
	}
	if src == nil {
		return unrepaired(m, f, "the value has no instruction in that computation to copy from")
	}
	var at []hlo.ShapeIndex
	for _, p := range v.Positions {
		if p.Inst == root {
			at = append(at, p.Index)
		}
	}
	cp, err := copyFrom(m, s, names, f, c, src, path)
	if err != nil {
		return err
	}
	nr := root
	for _, ix := range at {
		if nr, err = replaceLeaf(m, s, names, f, nr, ix, cp); err != nil {
			return err
		}
	}
	c.Root = nr
	return nil
}

// replaceLeaf returns x with the array at index ix replaced by cp (a
// bitcast of it when the shapes differ): cp itself at the top level, x
// with a new operand when x is a tuple, else a new tuple of x's elements,
// taken with get-tuple-element, added at the end of x's computation (in
// the module and in schedule s).
func replaceLeaf(m *hlo.Module, s *Schedule, names *hlo.NameUniquer, f *Interference, x *hlo.Instruction, ix hlo.ShapeIndex, cp *hlo.Instruction) (*hlo.Instruction, error) {
	if len(ix) == 0 {
		if !x.Shape.IsArray() {
			return nil, unrepaired(m, f, "no array to copy")
		}
		return reshapedCopy(s, names, cp, x), nil
	}
	k := ix[0]
	if !x.Shape.IsTuple() || k < 0 || int(k) >= len(x.Shape.Tuple) {
		return nil, unrepaired(m, f, "the result's index is not in the root's shape")
	}
	if x.Opcode == hlo.OpTuple && len(x.Operands) == len(x.Shape.Tuple) {
		e, err := replaceLeaf(m, s, names, f, x.Operands[k], ix[1:], cp)
		if err != nil {
			return nil, err
		}
		x.ReplaceOperand(int(k), e)
		return x, nil
	}
	c := x.Parent
	seq := slices.Clone(s.Sequence(c))
	add := func(in *hlo.Instruction) {
		c.InsertBefore(in, nil)
		seq = append(seq, in)
	}
	elems := make([]*hlo.Instruction, len(x.Shape.Tuple))
	for j := range x.Shape.Tuple {
		if j == int(k) && len(ix) == 1 {
			continue
		}
		g := c.Module.NewInstruction(&hlo.Instruction{Name: names.Unique("get-tuple-element"), Opcode: hlo.OpGetTupleElement, Shape: x.Shape.Tuple[j], Operands: []*hlo.Instruction{x}, TupleIndex: int64(j)})
		add(g)
		elems[j] = g
	}
	s.Set(c, seq)
	if len(ix) == 1 {
		elems[k] = reshapedCopy(s, names, cp, &hlo.Instruction{Shape: x.Shape.Tuple[k]})
	} else {
		e, err := replaceLeaf(m, s, names, f, elems[k], ix[1:], cp)
		if err != nil {
			return nil, err
		}
		elems[k] = e
	}
	t := c.Module.NewInstruction(&hlo.Instruction{Name: names.Unique("tuple"), Opcode: hlo.OpTuple, Shape: x.Shape, Operands: elems})
	c.InsertBefore(t, nil)
	s.Set(c, append(slices.Clone(s.Sequence(c)), t))
	return t, nil
}

// tupleLeaf finds, for a use u of v through a tuple index (a while taking
// its state), the tuple in u's computation that takes v as an operand at
// the end of that index, and returns that operand as a use; false when
// the index does not go down through tuple instructions to v.
func tupleLeaf(a *Analysis, u Use, v *Value) (Use, bool) {
	if len(u.Index) == 0 || u.Operand < 0 || u.Operand >= len(u.Inst.Operands) {
		return Use{}, false
	}
	op, ix := u.Inst.Operands[u.Operand], u.Index
	for len(ix) > 0 && op.Opcode == hlo.OpTuple && int(ix[0]) < len(op.Operands) {
		// The leaf is the value itself, or a get-tuple-element of the tuple
		// that holds it (a loop's state handed on to an inner loop).
		if len(ix) == 1 && (op.Operands[ix[0]] == v.Inst && len(v.Index) == 0 ||
			op.Operands[ix[0]].Shape.IsArray() && a.ValueAt(op.Operands[ix[0]], nil) == v) {
			return Use{Inst: op, Operand: int(ix[0])}, true
		}
		op, ix = op.Operands[ix[0]], ix[1:]
	}
	return Use{}, false
}

// readSite is a read: the instruction and its operand.
type readSite struct {
	inst    *hlo.Instruction
	operand int
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
		if l, ok := tupleLeaf(a, x, f.Value); ok {
			return l, true
		}
	}
	return Use{}, false
}

// outerHandOver finds, for a read in a computation that starts only after
// the value has been overwritten (so that no copy made inside it can
// help), a use in a calling computation that hands the value on towards
// the read, late enough to be close to it and early enough that a copy
// made right after its operand comes before the overwrite. The value
// need not be defined there: a computation's result reaches its caller's
// call, and that caller may hand it to another callee (a conditional's
// branch reading it after a call looped on it in place).
func outerHandOver(a *Analysis, f *Interference) (Use, bool) {
	target := f.Use.Inst.Parent
	if target == nil || target.ID < 0 || target.ID >= len(a.Spans) {
		return Use{}, false
	}
	start := a.Spans[target.ID].Start
	if start < 0 || f.OverAt >= start {
		return Use{}, false
	}
	best, bestAt := Use{}, -1
	for _, x := range f.Value.Uses {
		if x.Inst.Parent == target || !feeds(x, target) || x.Operand < 0 || x.Operand >= len(x.Inst.Operands) {
			continue
		}
		h := x
		if len(x.Index) > 0 {
			l, ok := tupleLeaf(a, x, f.Value)
			if !ok {
				continue
			}
			h = l
		}
		src := h.Inst.Operands[h.Operand]
		at := a.Time(src)
		if src.Opcode == hlo.OpParameter {
			if sp := a.Spans[src.Parent.ID]; sp.Start >= 0 {
				at = sp.Start
			}
		}
		if at < 0 || at >= f.OverAt || at <= bestAt {
			continue
		}
		best, bestAt = h, at
	}
	return best, bestAt >= 0
}

// feeds reports whether use x hands its operand to target or to a
// computation that calls it: for a conditional, the branch that operand
// goes to; for a call or while, its callees.
func feeds(x Use, target *hlo.Computation) bool {
	if x.Inst.Opcode != hlo.OpConditional {
		return callsInto(x.Inst, target)
	}
	branches := x.Inst.Callees()
	b := x.Operand - 1
	return b >= 0 && b < len(branches) && hlo.Reaches(branches[b], target)
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
		if hlo.Reaches(callee, target) {
			return true
		}
	}
	return false
}

// ownsWrite reports whether w, a later value of a buffer an async op
// binds as an operand, is written inside that op's own async computation.
func ownsWrite(async *hlo.Instruction, w *Value) bool {
	c := AsyncComputation(async)
	return c != nil && w.Inst.Parent != nil && hlo.Reaches(c, w.Inst.Parent)
}
