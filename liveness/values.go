package liveness

// Values: XLA's HloDataflowAnalysis in SSA form (hlo_dataflow_analysis.cc).
//
// A value is an (instruction, shape index) pair that defines storage. Every
// position (instruction, shape index) of every instruction outside fusion
// bodies holds exactly one value: either one the instruction defines, or one
// it forwards from an operand or a called computation. The rules:
//
//   - bitcast, get-tuple-element, while, call, conditional, domain,
//     add-dependency, opt-barrier and the *-done halves of asynchronous
//     pairs define nothing and forward;
//   - tuple and copy define only their top level {} and forward the rest;
//   - a parameter of a sequentially called computation (while condition and
//     body, call, conditional branch) defines nothing: its values are the
//     caller's operands; entry and thread-local parameters define all;
//   - copy-start defines {}, {0} and {2}, forwarding {1} from its operand;
//     the other *-start ops define their tuple nodes and destinations;
//   - everything else defines every subshape, tuple nodes included.
//
// Loops make phi values: where a while's body root differs from the loop
// state entering the body, a phi defined at the while (printed "(phi)")
// stands for both; where every branch root of a conditional agrees the
// conditional forwards that value, otherwise it defines a phi. Trivial phis
// never arise because a phi is only created where the two sides differ.
//
// A use is (instruction, operand number, operand shape index); passing a
// value through tuple or domain is not a use, get-tuple-element and copy
// use only the top level of their operand (XLA's MayUseOperandValue).

import (
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// Position is a place where a value appears: an instruction and a shape index.
type Position struct {
	Inst  *hlo.Instruction
	Index hlo.ShapeIndex
}

// Use is an instruction reading a value through one of its operands.
type Use struct {
	Inst    *hlo.Instruction
	Operand int
	Index   hlo.ShapeIndex // index within the operand's shape
}

// Value is one defined piece of storage: an (instruction, shape index).
type Value struct {
	// ID is dense over the analysis: 0..len(Values)-1.
	ID int
	// XLAID is the number XLA's dataflow analysis gives the value (it also
	// counts fusion-body values); printed in XLA's dump formats.
	XLAID int
	Inst  *hlo.Instruction
	Index hlo.ShapeIndex
	Shape hlo.Shape
	// Size is hlo.ByteSize of Shape (0 when it has none, e.g. unbounded).
	Size  int64
	IsPhi bool
	// Positions lists where the value appears; the first is its definition.
	Positions []Position
	Uses      []Use
	// LiveOut is true when the value appears in the entry's result.
	LiveOut bool
	// Buffer is the buffer (alias set) holding the value.
	Buffer *Buffer
	// Range is the value's live range in the flattened schedule; only
	// meaningful when Scheduled.
	Range     Range
	Scheduled bool
	// EndPosition is the latest of the value's positions in time (XLA's
	// TimeBound::end_position; uses do not move it), the place where its
	// buffer may be handed to a user.
	EndPosition Position
	// Color is the memory space of the value's layout (S(n)).
	Color int64
}

// Name returns the value as XLA's live-range dump prints it: name{index}.
func (v *Value) Name() string { return v.Inst.Name + v.Index.String() }

// String returns XLA's short form: <ID name{index} @color>, with (phi) for phis.
func (v *Value) String() string {
	phi := ""
	if v.IsPhi {
		phi = " (phi)"
	}
	return fmt.Sprintf("<%d %s%s @%d>", v.XLAID, v.Name(), phi, v.Color)
}

// CompKind classifies a computation by how it runs, as XLA's
// GatherComputationsByAllocationType does.
type CompKind uint8

const (
	// Unreachable computations are not called from the entry.
	Unreachable CompKind = iota
	// Sequential computations run in the caller's thread in schedule order:
	// the entry and the bodies of call, while, conditional and async ops.
	Sequential
	// ThreadLocal computations run in a parallel context (reduce, map,
	// sort, scatter to_apply and the like); their values never share storage.
	ThreadLocal
	// Fusion computations are fused into an instruction; their inner values
	// need no memory.
	Fusion
)

func (k CompKind) String() string {
	return [...]string{"unreachable", "sequential", "thread-local", "fusion"}[k]
}

// dataflow builds values, positions and uses.
type dataflow struct {
	a     *Analysis
	slots []*Value // value at each (instruction, subshape) slot: FirstValue + pre-order ordinal
	// defs holds the value each slot's instruction defines there (a phi
	// for a while or conditional), so re-running a loop body reuses them.
	defs []*Value
	busy map[*hlo.Computation]bool
	err  error
}

// classify assigns every computation its kind, walking the call graph
// from the entry, and lists the computations entered from a parallel
// context (the roots of thread-local regions), in module order. A
// computation reached both sequentially and in a parallel context is an
// error, as in XLA.
func classify(m *hlo.Module) (map[*hlo.Computation]CompKind, []*hlo.Computation, error) {
	kinds := make(map[*hlo.Computation]CompKind, len(m.Computations))
	parallelRoot := make(map[*hlo.Computation]bool)
	var visit func(c *hlo.Computation, k CompKind) error
	visit = func(c *hlo.Computation, k CompKind) error {
		if c == nil {
			return nil
		}
		if prev, ok := kinds[c]; ok {
			if prev != k {
				return fmt.Errorf("computation %s is called both as %s and as %s", c.Name, prev, k)
			}
			return nil
		}
		kinds[c] = k
		for _, in := range c.Instructions {
			if in.Ext == nil {
				continue
			}
			for _, callee := range in.Callees() {
				var ck CompKind
				switch {
				case in.Opcode == hlo.OpFusion:
					ck = Fusion
				case in.Opcode == hlo.OpCall || in.Opcode == hlo.OpWhile || in.Opcode == hlo.OpConditional || in.Opcode == hlo.OpAsyncStart:
					// Sequential calls inherit the caller's context; a fusion
					// body's callees run inside one thread.
					ck = k
					if k == Fusion {
						ck = ThreadLocal
					}
				default:
					ck = ThreadLocal
					if callee != nil && kinds[callee] == Unreachable {
						parallelRoot[callee] = true
					}
				}
				if ck == ThreadLocal && k != ThreadLocal && callee != nil {
					parallelRoot[callee] = true
				}
				if err := visit(callee, ck); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(m.Entry, Sequential); err != nil {
		return nil, nil, err
	}
	var roots []*hlo.Computation
	for _, c := range m.Computations {
		if _, ok := kinds[c]; !ok {
			kinds[c] = Unreachable
		}
		if parallelRoot[c] && kinds[c] == ThreadLocal {
			roots = append(roots, c)
		}
	}
	return kinds, roots, nil
}

// ordinal returns the pre-order number of index ix within shape s.
func ordinal(s hlo.Shape, ix hlo.ShapeIndex) int {
	ord := 0
	for _, k := range ix {
		ord++
		for j := int64(0); j < k; j++ {
			ord += s.Tuple[j].NumSubshapes()
		}
		s = s.Tuple[k]
	}
	return ord
}

// ordinalOf is ordinal for an index that may not exist in s.
func ordinalOf(s hlo.Shape, ix hlo.ShapeIndex) (int, bool) {
	if _, ok := s.Subshape(ix); !ok {
		return 0, false
	}
	return ordinal(s, ix), true
}

// subtree returns the pre-order ordinal range [lo, hi) of element k of tuple s.
func subtree(s hlo.Shape, k int) (lo, hi int) {
	lo = 1
	for j := 0; j < k; j++ {
		lo += s.Tuple[j].NumSubshapes()
	}
	return lo, lo + s.Tuple[k].NumSubshapes()
}

// indexAt returns the shape index of pre-order ordinal ord in s.
func indexAt(s hlo.Shape, ord int) hlo.ShapeIndex {
	ix := hlo.ShapeIndex{}
	for ord > 0 {
		ord--
		for k := range s.Tuple {
			n := s.Tuple[k].NumSubshapes()
			if ord < n {
				ix = append(ix, int64(k))
				s = s.Tuple[k]
				break
			}
			ord -= n
		}
	}
	return ix
}

func (d *dataflow) slot(in *hlo.Instruction, ord int) int { return in.FirstValue + ord }

// define returns the value in defines at ordinal ord, creating it once.
func (d *dataflow) define(in *hlo.Instruction, ord int) *Value {
	k := d.slot(in, ord)
	if v := d.defs[k]; v != nil {
		return v
	}
	ix := indexAt(in.Shape, ord)
	sub, _ := in.Shape.Subshape(ix)
	size, _ := hlo.ByteSize(sub)
	v := &Value{Inst: in, Index: ix, Shape: sub, Size: size, Color: sub.MemorySpace()}
	d.defs[k] = v
	return v
}

// phi returns the phi value of a while or conditional at ordinal ord.
func (d *dataflow) phi(in *hlo.Instruction, ord int) *Value {
	v := d.define(in, ord)
	v.IsPhi = true
	return v
}

// copySlots forwards n slots from src (starting at ordinal so) to dst
// (starting at ordinal do).
func (d *dataflow) copySlots(dst *hlo.Instruction, do int, src *hlo.Instruction, so, n int) {
	copy(d.slots[d.slot(dst, do):d.slot(dst, do)+n], d.slots[d.slot(src, so):d.slot(src, so)+n])
}

func (d *dataflow) defineAll(in *hlo.Instruction, from, to int) {
	for o := from; o < to; o++ {
		d.slots[d.slot(in, o)] = d.define(in, o)
	}
}

// run computes the values of every sequential computation reachable from
// the entry, and of thread-local computations.
func (d *dataflow) run() error {
	m := d.a.Module
	d.computation(m.Entry, nil)
	for _, c := range d.a.parallelRoots {
		d.computation(c, nil)
	}
	return d.err
}

// computation assigns values to every position of c. args, when not nil,
// holds the values of its parameters' slots (for sequentially called
// computations), one slice per parameter.
func (d *dataflow) computation(c *hlo.Computation, args [][]*Value) {
	if d.busy[c] {
		d.fail(fmt.Errorf("computation %s calls itself", c.Name))
		return
	}
	d.busy[c] = true
	defer delete(d.busy, c)
	for _, in := range topoOrder(c) {
		d.instruction(in, args)
	}
}

func (d *dataflow) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dataflow) instruction(in *hlo.Instruction, args [][]*Value) {
	n := in.Shape.NumSubshapes()
	op := func(i int) *hlo.Instruction { return in.Operands[i] }
	switch in.Opcode {
	case hlo.OpParameter:
		if args == nil {
			d.defineAll(in, 0, n)
			return
		}
		p := int(in.ParameterNumber)
		if p >= len(args) || len(args[p]) != n {
			d.fail(fmt.Errorf("%s: parameter %d does not match the caller's operand", in.Name, p))
			d.defineAll(in, 0, n)
			return
		}
		copy(d.slots[d.slot(in, 0):d.slot(in, 0)+n], args[p])
	case hlo.OpBitcast, hlo.OpDomain, hlo.OpOptimizationBarrier, hlo.OpAddDependency,
		hlo.OpAllReduceDone, hlo.OpAsyncUpdate:
		if len(in.Operands) == 0 || op(0).Shape.NumSubshapes() != n {
			d.defineAll(in, 0, n)
			return
		}
		d.copySlots(in, 0, op(0), 0, n)
	case hlo.OpGetTupleElement:
		t := op(0).Shape
		if !t.IsTuple() || in.TupleIndex >= int64(len(t.Tuple)) {
			d.defineAll(in, 0, n)
			return
		}
		lo, _ := subtree(t, int(in.TupleIndex))
		d.copySlots(in, 0, op(0), lo, n)
	case hlo.OpTuple:
		d.slots[d.slot(in, 0)] = d.define(in, 0)
		for k, o := range in.Operands {
			if k >= len(in.Shape.Tuple) {
				break
			}
			lo, hi := subtree(in.Shape, k)
			if o.Shape.NumSubshapes() != hi-lo {
				d.defineAll(in, lo, hi)
				continue
			}
			d.copySlots(in, lo, o, 0, hi-lo)
		}
	case hlo.OpCopy:
		d.slots[d.slot(in, 0)] = d.define(in, 0)
		if n > 1 && op(0).Shape.NumSubshapes() == n {
			d.copySlots(in, 1, op(0), 1, n-1)
		} else {
			d.defineAll(in, 1, n)
		}
	case hlo.OpCopyStart:
		// (destination, source, context): {1} is the operand.
		d.defineAll(in, 0, n)
		if in.Shape.IsTuple() && len(in.Shape.Tuple) >= 2 {
			lo, hi := subtree(in.Shape, 1)
			if op(0).Shape.NumSubshapes() == hi-lo {
				d.copySlots(in, lo, op(0), 0, hi-lo)
			}
		}
	case hlo.OpCopyDone, hlo.OpAllGatherDone, hlo.OpCollectivePermuteDone, hlo.OpAsyncDone:
		// The result is element {0} of copy-start and element {1} of the
		// other starts.
		k := 1
		if in.Opcode == hlo.OpCopyDone {
			k = 0
		}
		t := op(0).Shape
		if !t.IsTuple() || k >= len(t.Tuple) {
			if t.NumSubshapes() == n {
				d.copySlots(in, 0, op(0), 0, n)
			} else {
				d.defineAll(in, 0, n)
			}
			return
		}
		lo, hi := subtree(t, k)
		if hi-lo != n {
			d.defineAll(in, 0, n)
			return
		}
		d.copySlots(in, 0, op(0), lo, n)
	case hlo.OpAllGatherStart, hlo.OpCollectivePermuteStart, hlo.OpAsyncStart:
		// Element {0} holds the operands; the rest is defined.
		d.defineAll(in, 0, n)
		if in.Shape.IsTuple() && len(in.Shape.Tuple) > 0 {
			lo, hi := subtree(in.Shape, 0)
			if len(in.Operands) == 1 && op(0).Shape.NumSubshapes() == hi-lo {
				d.copySlots(in, lo, op(0), 0, hi-lo)
			} else if e := in.Shape.Tuple[0]; e.IsTuple() && len(e.Tuple) == len(in.Operands) {
				for k, o := range in.Operands {
					l2, h2 := subtree(e, k)
					if o.Shape.NumSubshapes() == h2-l2 {
						d.copySlots(in, lo+l2, o, 0, h2-l2)
					}
				}
			}
		}
		if in.Opcode == hlo.OpAsyncStart {
			for _, c := range in.Calls() {
				d.callArgs(in, c)
			}
		}
	case hlo.OpCall:
		callee := in.ToApply()
		if callee == nil && len(in.Calls()) > 0 {
			callee = in.Calls()[0]
		}
		if callee == nil || callee.Root == nil || callee.Root.Shape.NumSubshapes() != n {
			d.defineAll(in, 0, n)
			return
		}
		d.callArgs(in, callee)
		d.copySlots(in, 0, callee.Root, 0, n)
	case hlo.OpWhile:
		d.while(in)
	case hlo.OpConditional:
		d.conditional(in)
	default:
		d.defineAll(in, 0, n)
	}
}

// callArgs runs the sequential callee c with in's operands as arguments.
func (d *dataflow) callArgs(in *hlo.Instruction, c *hlo.Computation) {
	args := make([][]*Value, len(in.Operands))
	for k, o := range in.Operands {
		args[k] = d.valuesOf(o)
	}
	d.computation(c, args)
}

// valuesOf returns a copy of the values at every slot of in.
func (d *dataflow) valuesOf(in *hlo.Instruction) []*Value {
	n := in.Shape.NumSubshapes()
	return append([]*Value(nil), d.slots[d.slot(in, 0):d.slot(in, 0)+n]...)
}

// while computes the loop state: the init values, replaced by phis
// (defined at the while) wherever the body's result differs from what
// entered it, until nothing changes.
func (d *dataflow) while(in *hlo.Instruction) {
	n := in.Shape.NumSubshapes()
	body, cond := in.Body(), in.Condition()
	if len(in.Operands) != 1 || body == nil || cond == nil || body.Root == nil ||
		in.Operands[0].Shape.NumSubshapes() != n || body.Root.Shape.NumSubshapes() != n {
		d.defineAll(in, 0, n)
		return
	}
	state := d.valuesOf(in.Operands[0])
	for iter := 0; ; iter++ {
		d.computation(cond, [][]*Value{state})
		d.computation(body, [][]*Value{state})
		root := d.valuesOf(body.Root)
		changed := false
		for o := 0; o < n; o++ {
			if root[o] != state[o] && !(state[o].IsPhi && state[o].Inst == in) {
				p := d.phi(in, o)
				if state[o] != p {
					state[o] = p
					changed = true
				}
			}
		}
		if !changed || iter > n+2 {
			break
		}
	}
	copy(d.slots[d.slot(in, 0):d.slot(in, 0)+n], state)
}

// conditional runs each branch on its operand and forwards the value the
// branch roots agree on, or a phi where they differ.
func (d *dataflow) conditional(in *hlo.Instruction) {
	n := in.Shape.NumSubshapes()
	branches := in.Branches()
	if len(branches) == 0 || len(in.Operands) != len(branches)+1 {
		d.defineAll(in, 0, n)
		return
	}
	var roots [][]*Value
	for b, c := range branches {
		if c == nil || c.Root == nil || c.Root.Shape.NumSubshapes() != n {
			d.defineAll(in, 0, n)
			return
		}
		d.computation(c, [][]*Value{d.valuesOf(in.Operands[b+1])})
		roots = append(roots, d.valuesOf(c.Root))
	}
	for o := 0; o < n; o++ {
		v := roots[0][o]
		for _, r := range roots[1:] {
			if r[o] != v {
				v = d.phi(in, o)
				break
			}
		}
		d.slots[d.slot(in, o)] = v
	}
}

// mayUseOperandValue is XLA's rule for whether user reads the value at
// index ix of its operand k.
func mayUseOperandValue(user *hlo.Instruction, ix hlo.ShapeIndex) bool {
	switch user.Opcode {
	case hlo.OpGetTupleElement, hlo.OpCopy:
		return len(ix) == 0
	case hlo.OpDomain, hlo.OpTuple:
		return false
	}
	return true
}

// positionsAndUses fills every value's positions and uses by walking the
// slots of the computations that hold values.
func (d *dataflow) positionsAndUses(comps []*hlo.Computation) {
	for _, c := range comps {
		for _, in := range c.Instructions {
			in.Shape.ForEachSubshape(func(_ hlo.Shape, ix hlo.ShapeIndex) {
				// Positions are added in pre-order; ordinal counts along.
				v := d.slots[d.slot(in, ordinal(in.Shape, ix))]
				if v == nil {
					return
				}
				v.Positions = append(v.Positions, Position{Inst: in, Index: append(hlo.ShapeIndex{}, ix...)})
			})
			for k, o := range in.Operands {
				o.Shape.ForEachSubshape(func(_ hlo.Shape, ix hlo.ShapeIndex) {
					if !mayUseOperandValue(in, ix) {
						return
					}
					v := d.slots[d.slot(o, ordinal(o.Shape, ix))]
					if v == nil {
						return
					}
					v.Uses = append(v.Uses, Use{Inst: in, Operand: k, Index: append(hlo.ShapeIndex{}, ix...)})
				})
			}
		}
	}
}

// topoOrder returns c's instructions with every operand and control
// predecessor before its users, keeping text order where it allows.
func topoOrder(c *hlo.Computation) []*hlo.Instruction {
	// Fast path: text order is already topological (it is in every
	// printed module).
	seen := make(map[*hlo.Instruction]bool, len(c.Instructions))
	ok := true
	for _, in := range c.Instructions {
		for _, o := range in.Operands {
			if !seen[o] {
				ok = false
			}
		}
		for _, p := range in.ControlPredecessors() {
			if !seen[p] {
				ok = false
			}
		}
		if !ok {
			break
		}
		seen[in] = true
	}
	if ok {
		return c.Instructions
	}
	order := make([]*hlo.Instruction, 0, len(c.Instructions))
	state := make(map[*hlo.Instruction]uint8, len(c.Instructions))
	var visit func(in *hlo.Instruction)
	visit = func(in *hlo.Instruction) {
		if state[in] != 0 {
			return
		}
		state[in] = 1
		for _, o := range in.Operands {
			visit(o)
		}
		for _, p := range in.ControlPredecessors() {
			visit(p)
		}
		state[in] = 2
		order = append(order, in)
	}
	for _, in := range c.Instructions {
		visit(in)
	}
	return order
}
