package liveness

// Copy insertion: the special-case copies of XLA's CopyInsertion pass,
// which runs before buffer assignment. Buffers join values that must share
// an address (a while's loop state, a conditional's result, the entry's
// result and its donated parameters). Without copies a joined buffer could
// have to hold two live values at once, or a constant or an undonated
// parameter could be overwritten. XLA adds copies everywhere and removes
// those that turn out unnecessary; this pass adds only the ones the
// following rules call for, which covers the same cases conservatively:
//
//   - while init: a leaf the loop changes (it is not loop-invariant) whose
//     value is a constant or an entry parameter not donated at that index,
//     appears at another leaf too (earlier, or later as loop-invariant
//     state the loop keeps reading), or is read somewhere the while does
//     not depend on (it may be read after the loop);
//   - while body root and conditional branch roots: a leaf whose value is
//     a constant, is not defined in that computation (a pass-through of a
//     branch parameter), or appears at an earlier leaf; a body root leaf
//     that passes the body parameter through at the same index needs none,
//     whatever its value: a constant or an entry parameter the loop only
//     reads shares the loop's buffer, as in XLA (copy_insertion.cc,
//     IndicesToCopyForWhile copies only where the while's value is not the
//     init's; AddSpecialCaseCopies copies a read-only value only when its
//     buffer holds another value, or at the entry root);
//   - entry root: a leaf whose value is a constant, an entry parameter not
//     donated to that output index, or appears at an earlier leaf.
//
//   - in-place operations (dynamic-update-slice, scatter, in-place fusions
//     and custom-calls): an overwritten operand that is a constant, an
//     undonated entry parameter, a value from a calling computation, or a
//     value read somewhere the operation does not depend on.
//
// A while init leaf the loop changes and an in-place operand also need a
// copy when the value is a result: some position of it is the root of the
// computation the site is in, or of one that calls it. XLA's rule
// (hlo_ordering.cc, HloOrdering::LiveRangeStrictlyBefore: "If the root
// instruction aliases the buffer 'a', the live range of 'a' is until the
// end of the computation and can never be strictly before another buffer
// nested in the same computation. This is needed to prevent the root
// instruction's buffers from being reused by later instructions even when
// the root is not the last instruction in the schedule."; copy_insertion.cc,
// CopyRemover::LiveRangeBefore, which keeps a copy when
// a.value->IsRootOf(b's computation)): a result is live to the end of its
// computation, so no later value of that computation may take its buffer,
// whatever the schedule puts after the root.
//
// A scheduled module has been through XLA's copy insertion already; callers
// run this only on unscheduled ones.

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// InsertCopies adds the copies described above, until none is needed, and
// reports whether it changed m. The call graph must be flat
// (hlo.FlattenCallGraph).
func InsertCopies(m *hlo.Module) (changed bool, err error) {
	_, changed, err = AnalyzeInsertingCopies(m)
	return changed, err
}

// AnalyzeInsertingCopies inserts copies as InsertCopies does and returns
// the analysis of the resulting module (in its own order), which the last
// round of copy insertion computes anyway.
func AnalyzeInsertingCopies(m *hlo.Module) (a *Analysis, changed bool, err error) {
	return analyzeInsertingCopies(context.Background(), m, checkAll, true)
}

// analyzeInsertingCopies is AnalyzeInsertingCopies with the first round's
// input check as check says; without lay the analysis has no live ranges
// yet (see analyzeModule).
func analyzeInsertingCopies(ctx context.Context, m *hlo.Module, check inputCheck, lay bool) (a *Analysis, changed bool, err error) {
	for round := 0; round < 32; round++ {
		c := check
		if round > 0 {
			c = checkNone
		}
		a, more, err := insertCopiesOnce(ctx, m, c)
		if err != nil {
			return nil, changed, err
		}
		if !more {
			if lay {
				if err := a.layoutDefault(); err != nil {
					return nil, changed, err
				}
			}
			return a, changed, nil
		}
		changed = true
	}
	return nil, changed, newError(ErrCopiesUnsettled, m, m.Pos, "liveness: copy insertion did not settle", nil)
}

// insertCopiesOnce analyses m, adds the copies the analysis calls for and
// reports whether it added any; when it did not, the analysis is current.
// check is the input check m still needs (see analyzeModule).
func insertCopiesOnce(ctx context.Context, m *hlo.Module, check inputCheck) (a *Analysis, changed bool, err error) {
	a, err = analyzeModule(ctx, m, Options{}, check, false) // copies need no live ranges
	if err != nil {
		return nil, false, err
	}
	ci := &copier{names: hlo.NewNameUniquer(m), seen: make([]bool, len(a.Values)), count: make([]int32, len(a.Values))}
	deps := &depSearch{m: m, topo: topologicalComputations(m)}
	inside := newSequentialTree(m)
	var sites []copySite
	var inPlace []inPlaceSite
	entry := m.Entry
	donated := map[string]bool{}
	for _, io := range m.InputOutputAlias {
		donated[fmt.Sprint(io.Param, io.ParamIndex)] = true
	}
	paramDonated := func(v *Value) bool {
		return donated[fmt.Sprint(v.Inst.ParameterNumber, v.Index)]
	}
	for _, c := range m.Computations {
		if a.Kinds[c.ID] != Sequential {
			continue
		}
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpWhile:
				w := in
				sites = append(sites, copySite{c: c, while: w, need: func(v *Value, ix hlo.ShapeIndex, seen []bool, dup bool) bool {
					if a.ValueAt(w, ix) == v {
						return false // loop-invariant: the loop never writes it
					}
					// A value the loop writes here and that the state
					// holds at another leaf too (one the loop may leave
					// alone and read on) shares one buffer with itself.
					if v.Inst.Opcode == hlo.OpConstant || seen[v.ID] || dup {
						return true
					}
					if v.Inst.Opcode == hlo.OpParameter && v.Inst.Parent == entry && !paramDonated(v) {
						return true
					}
					if resultAround(v, c, inside) {
						return true // the loop's state would write over a result
					}
					var readers []*hlo.Instruction
					for _, u := range v.Uses {
						if u.Inst != w && u.Inst.Parent == c {
							readers = append(readers, u.Inst)
						}
					}
					return !deps.all(w, readers)
				}})
				if b := w.Body(); b != nil && len(b.Params) == 1 {
					body := b
					sites = append(sites, copySite{c: body, root: true, need: func(v *Value, ix hlo.ShapeIndex, seen []bool, dup bool) bool {
						// Passing the loop state through at the same index is
						// free, whatever the value: a constant or an entry
						// parameter the loop only reads shares the loop's
						// buffer (copy_insertion.cc, IndicesToCopyForWhile:
						// no copy where the while's value is the init's).
						if pv := a.ValueAt(body.Params[0], ix); pv == v {
							return false
						}
						if v.Inst.Opcode == hlo.OpConstant || seen[v.ID] {
							return true
						}
						// Moving it to another index (a rotation of the
						// state) joins the two indices' buffers, whose
						// values are live at once: XLA keeps a copy.
						if v.Inst == body.Params[0] {
							return true
						}
						return !inside.within(body, v.Inst.Parent)
					}})
				}
			case hlo.OpDynamicUpdateSlice, hlo.OpScatter, hlo.OpFusion, hlo.OpCustomCall, hlo.OpAllReduceStart:
				// An in-place operand is overwritten: it must not be read
				// only, nor read again later.
				op := in
				for _, p := range InPlacePairs(op) {
					if p.Operand >= len(op.Operands) {
						continue
					}
					v := a.ValueAt(op.Operands[p.Operand], p.OperandIndex)
					if v == nil || !needsInPlaceCopy(a, op, v, entry, paramDonated, deps, inside) {
						continue
					}
					inPlace = append(inPlace, inPlaceSite{op: op, operand: p.Operand, index: p.OperandIndex})
				}
			case hlo.OpConditional:
				for _, br := range in.Branches() {
					br := br
					if br == nil {
						continue
					}
					sites = append(sites, copySite{c: br, root: true, need: func(v *Value, ix hlo.ShapeIndex, seen []bool, dup bool) bool {
						return v.Inst.Opcode == hlo.OpConstant || seen[v.ID] || !inside.within(br, v.Inst.Parent) ||
							v.Inst.Opcode == hlo.OpParameter && v.Inst.Parent == br
					}})
				}
			}
		}
	}
	sites = append(sites, copySite{c: entry, root: true, need: func(v *Value, ix hlo.ShapeIndex, seen []bool, dup bool) bool {
		if v.Inst.Opcode == hlo.OpConstant || seen[v.ID] {
			return true
		}
		if v.Inst.Opcode == hlo.OpParameter && v.Inst.Parent == entry {
			for _, io := range m.InputOutputAlias {
				if io.Output.Equal(ix) && io.Param == v.Inst.ParameterNumber && io.ParamIndex.Equal(v.Index) {
					return false
				}
			}
			return true
		}
		return false
	}})
	for _, s := range inPlace {
		x := s.op.Operands[s.operand]
		nx := ci.rebuild(s.op.Parent, x, hlo.ShapeIndex{}, []hlo.ShapeIndex{s.index}, s.op)
		for k, o := range s.op.Operands {
			if o == x {
				s.op.ReplaceOperand(k, nx)
				break
			}
		}
		changed = true
	}
	if changed {
		// The other sites are judged on a fresh analysis in the next round.
		m.Renumber()
		return a, changed, nil
	}
	for _, s := range sites {
		if ci.copySite(a, s) {
			changed = true
		}
	}
	if changed {
		m.Renumber()
	}
	return a, changed, nil
}

// copySite is a place where copy insertion may copy values: the root of
// computation c (root), or the init operand of a while; need says
// whether the value v at index ix needs a copy there (seen: v is at an
// earlier index, by value ID; dup: v is at several).
type copySite struct {
	c     *hlo.Computation
	root  bool // replace c's root
	while *hlo.Instruction
	need  func(v *Value, ix hlo.ShapeIndex, seen []bool, dup bool) bool
}

// inPlaceSite is an operand an instruction overwrites in place that needs
// a copy.
type inPlaceSite struct {
	op      *hlo.Instruction
	operand int
	index   hlo.ShapeIndex
}

// copySite copies at s the leaves whose values need it and reports
// whether it changed the module.
func (ci *copier) copySite(a *Analysis, s copySite) bool {
	var x *hlo.Instruction
	if s.root {
		x = s.c.Root
	} else {
		x = s.while.Operands[0]
	}
	// seen and count are by value ID; they are cleared again below for
	// the next site.
	seen, count := ci.seen, ci.count
	var leaves []*Value
	x.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if !sub.IsTuple() {
			if v := a.ValueAt(x, ix); v != nil {
				count[v.ID]++
				leaves = append(leaves, v)
			}
		}
	})
	var needs []hlo.ShapeIndex
	any := false
	x.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if sub.IsTuple() {
			return
		}
		v := a.ValueAt(x, ix)
		if v == nil {
			return
		}
		if s.need(v, ix, seen, count[v.ID] > 1) {
			needs = append(needs, append(hlo.ShapeIndex{}, ix...))
			any = true
		}
		seen[v.ID] = true
	})
	for _, v := range leaves {
		seen[v.ID], count[v.ID] = false, 0
	}
	if !any {
		return false
	}
	before := s.while
	if s.root {
		before = nil
	}
	nx := ci.rebuild(s.c, x, hlo.ShapeIndex{}, needs, before)
	if s.root {
		s.c.Root = nx
	} else {
		s.while.ReplaceOperand(0, nx)
	}
	return true
}

type copier struct {
	names *hlo.NameUniquer
	// seen and count, by value ID of the round's analysis, are copySite's
	// tables, all false and zero between sites.
	seen  []bool
	count []int32
}

// rebuild returns x with the leaves listed in needs replaced by copies,
// adding the new instructions to c before before (or at the end). A tuple
// used by nothing but the site is edited in place; others are taken apart
// with get-tuple-element and put back together with a new tuple.
func (ci *copier) rebuild(c *hlo.Computation, x *hlo.Instruction, ix hlo.ShapeIndex, needs []hlo.ShapeIndex, before *hlo.Instruction) *hlo.Instruction {
	if !x.Shape.IsTuple() {
		if !containsIndex(needs, ix) {
			return x
		}
		cp := c.Module.NewInstruction(&hlo.Instruction{Name: ci.names.Unique("copy"), Opcode: hlo.OpCopy, Shape: x.Shape, Operands: []*hlo.Instruction{x}})
		c.InsertBefore(cp, before)
		return cp
	}
	if !anyUnder(needs, ix) {
		return x
	}
	inPlace := x.Opcode == hlo.OpTuple && len(x.Operands) == len(x.Shape.Tuple) &&
		(len(x.Users) == 0 || len(x.Users) == 1 && x.Users[0] == before)
	elems := make([]*hlo.Instruction, len(x.Shape.Tuple))
	for k := range x.Shape.Tuple {
		var e *hlo.Instruction
		if x.Opcode == hlo.OpTuple && k < len(x.Operands) {
			e = x.Operands[k]
		} else {
			e = c.Module.NewInstruction(&hlo.Instruction{Name: ci.names.Unique("get-tuple-element"), Opcode: hlo.OpGetTupleElement, Shape: x.Shape.Tuple[k], Operands: []*hlo.Instruction{x}, TupleIndex: int64(k)})
			c.InsertBefore(e, before)
		}
		elems[k] = ci.rebuild(c, e, append(append(hlo.ShapeIndex{}, ix...), int64(k)), needs, before)
	}
	if inPlace {
		// The copies were inserted before the site; the tuple itself must
		// come after them.
		for k, e := range elems {
			if e != x.Operands[k] {
				x.ReplaceOperand(k, e)
			}
		}
		moveAfterOperands(c, x)
		return x
	}
	t := c.Module.NewInstruction(&hlo.Instruction{Name: ci.names.Unique("tuple"), Opcode: hlo.OpTuple, Shape: x.Shape, Operands: elems})
	c.InsertBefore(t, before)
	return t
}

// moveAfterOperands moves x behind its last operand in c's order if needed.
func moveAfterOperands(c *hlo.Computation, x *hlo.Instruction) {
	// pos is by instruction ID: the copies rebuild added since the last
	// Renumber have IDs up to NumIDs. An operand outside c counts as 0.
	pos := make([]int, c.Module.NumIDs())
	for i, in := range c.Instructions {
		pos[in.ID] = i
	}
	last := -1
	for _, o := range x.Operands {
		last = max(last, pos[o.ID])
	}
	px := pos[x.ID]
	if px > last {
		return
	}
	ins := append(c.Instructions[:px:px], c.Instructions[px+1:]...)
	last-- // x was removed in front of it
	out := make([]*hlo.Instruction, 0, len(c.Instructions))
	out = append(out, ins[:last+1]...)
	out = append(out, x)
	out = append(out, ins[last+1:]...)
	c.Instructions = out
}

func containsIndex(ixs []hlo.ShapeIndex, ix hlo.ShapeIndex) bool {
	for _, x := range ixs {
		if x.Equal(ix) {
			return true
		}
	}
	return false
}

// anyUnder reports whether some index in ixs starts with prefix.
func anyUnder(ixs []hlo.ShapeIndex, prefix hlo.ShapeIndex) bool {
	for _, x := range ixs {
		if len(x) >= len(prefix) && x[:len(prefix)].Equal(prefix) {
			return true
		}
	}
	return false
}

// needsInPlaceCopy reports whether the value v, which op overwrites in
// place, is a constant or an undonated entry parameter, a result of op's
// computation or of one calling it (resultAround), or is read by something
// op does not depend on.
func needsInPlaceCopy(a *Analysis, op *hlo.Instruction, v *Value, entry *hlo.Computation, donated func(*Value) bool, deps *depSearch, inside *sequentialTree) bool {
	if v.Inst.Opcode == hlo.OpConstant {
		return true
	}
	if v.Inst.Opcode == hlo.OpParameter && v.Inst.Parent == entry && !donated(v) {
		return true
	}
	if v.Inst.Parent != op.Parent {
		return true // a value from the caller: keep the caller's copy intact
	}
	if resultAround(v, op.Parent, inside) {
		return true
	}
	var readers []*hlo.Instruction
	for _, u := range v.Uses {
		if u.Inst != op && u.Inst.Parent == op.Parent {
			readers = append(readers, u.Inst)
		}
	}
	return !deps.all(op, readers)
}

// resultAround reports whether v is a result of c or of a computation
// that calls c sequentially, directly or not: some position of v is such a
// computation's root. XLA keeps such a value live to the end of that
// computation and never lets a value defined later within it, c's values
// included, share its buffer (HloOrdering::LiveRangeStrictlyBefore, the
// root-position rule; see the top of this file), even when the schedule
// puts instructions after the root.
func resultAround(v *Value, c *hlo.Computation, inside *sequentialTree) bool {
	for _, p := range v.Positions {
		if r := p.Inst.Parent; r != nil && r.Root == p.Inst && inside.within(r, c) {
			return true
		}
	}
	return false
}

// sequentialTree answers "is x c or a computation c calls sequentially,
// directly or not" (the values defined in x are then c's own) in constant
// time. In a flattened module every computation has at most one
// sequential call site, so those calls form a forest, and x is inside c
// exactly when x's pre-order number falls in c's subtree. Should a
// computation have several sequential callers, the answer is found by a
// walk instead.
type sequentialTree struct {
	pre, end []int // by computation ID; subtree of c: pre[c] <= pre[x] < end[c]
	tree     bool
}

func newSequentialTree(m *hlo.Module) *sequentialTree {
	nc := len(m.Computations)
	t := &sequentialTree{pre: make([]int, nc), end: make([]int, nc), tree: true}
	callers := make([]int, nc)
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, callee := range sequentialCallees(in) {
				callers[callee.ID]++
				if callers[callee.ID] > 1 {
					t.tree = false
				}
			}
		}
	}
	if !t.tree {
		return t
	}
	// Iterative pre-order walk from every computation nothing calls.
	n := 0
	type frame struct {
		c    *hlo.Computation
		kids []*hlo.Computation
	}
	for _, root := range m.Computations {
		if callers[root.ID] > 0 || t.pre[root.ID] != 0 {
			continue
		}
		n++
		t.pre[root.ID] = n
		stack := []frame{{root, calleesOf(root)}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if len(top.kids) == 0 {
				t.end[top.c.ID] = n + 1
				stack = stack[:len(stack)-1]
				continue
			}
			k := top.kids[0]
			top.kids = top.kids[1:]
			if t.pre[k.ID] != 0 { // a cycle, which Verify refuses: walk instead
				t.tree = false
				return t
			}
			n++
			t.pre[k.ID] = n
			stack = append(stack, frame{k, calleesOf(k)})
		}
	}
	return t
}

// sequentialCallees are the computations in calls sequentially.
func sequentialCallees(in *hlo.Instruction) []*hlo.Computation {
	if in.Opcode != hlo.OpCall && in.Opcode != hlo.OpWhile && in.Opcode != hlo.OpConditional {
		return nil
	}
	var out []*hlo.Computation
	for _, callee := range in.Callees() {
		if callee != nil {
			out = append(out, callee)
		}
	}
	return out
}

// calleesOf lists the computations c's instructions call sequentially.
func calleesOf(c *hlo.Computation) []*hlo.Computation {
	var out []*hlo.Computation
	for _, in := range c.Instructions {
		out = append(out, sequentialCallees(in)...)
	}
	return out
}

// within reports whether x is c or a computation c calls sequentially,
// directly or not.
func (t *sequentialTree) within(c, x *hlo.Computation) bool {
	if c == x {
		return true
	}
	if t.tree {
		pc, px := t.pre[c.ID], t.pre[x.ID]
		return pc != 0 && px != 0 && pc <= px && px < t.end[c.ID]
	}
	return within(c)[x.ID]
}

// within returns, by computation ID, c and the computations it calls
// sequentially, directly or not: the values defined there are c's own.
func within(c *hlo.Computation) []bool {
	seen := make([]bool, len(c.Module.Computations))
	seen[c.ID] = true
	stack := []*hlo.Computation{c}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, callee := range calleesOf(x) {
			if !seen[callee.ID] {
				seen[callee.ID] = true
				stack = append(stack, callee)
			}
		}
	}
	return seen
}

// depSearch answers dependsOnAll for the sites of one round of copy
// insertion. Its marks are by instruction ID, stamped per search so that
// one table serves them all; they grow with the module, as the sites
// judged after others were copied at meet the copies (NewInstruction IDs).
type depSearch struct {
	m    *hlo.Module
	topo []bool // topologicalComputations at the start of the round
	// want[id] and seen[id] equal stamp for an instruction wanted or seen
	// by the current search.
	want, seen []uint32
	stamp      uint32
	stack      []*hlo.Instruction
}

// all reports whether x depends on every instruction in ys (through
// operands and control predecessors). In a computation whose text order
// is topological, an instruction placed after x cannot be a dependency,
// and the backward search from x stops below the earliest of ys.
func (d *depSearch) all(x *hlo.Instruction, ys []*hlo.Instruction) bool {
	if len(ys) == 0 {
		return true
	}
	bound := -1
	if d.topo[x.Parent.ID] {
		bound = x.ID
		for _, y := range ys {
			if y.ID > x.ID {
				return false
			}
			bound = min(bound, y.ID)
		}
	}
	st := d.next()
	want, seen := d.want, d.seen
	nwant := 0
	for _, y := range ys {
		if want[y.ID] != st {
			want[y.ID] = st
			nwant++
		}
	}
	found := 0
	stack := append(d.stack[:0], x)
	for len(stack) > 0 && found < nwant {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visit := func(in *hlo.Instruction) {
			if seen[in.ID] == st || in.ID < bound {
				return
			}
			seen[in.ID] = st
			if want[in.ID] == st {
				found++
			}
			stack = append(stack, in)
		}
		for _, o := range c.Operands {
			visit(o)
		}
		for _, p := range c.ControlPredecessors() {
			visit(p)
		}
	}
	d.stack = stack[:0]
	return found == nwant
}

// next returns a new stamp, the tables grown to the module's IDs.
func (d *depSearch) next() uint32 {
	if n := d.m.NumIDs(); n > len(d.seen) {
		d.want = append(d.want, make([]uint32, n-len(d.want))...)
		d.seen = append(d.seen, make([]uint32, n-len(d.seen))...)
	}
	d.stamp++
	if d.stamp == 0 { // wrapped: clear the old stamps
		clear(d.want)
		clear(d.seen)
		d.stamp = 1
	}
	return d.stamp
}

// topologicalComputations reports for each computation (by ID) whether
// every operand and control predecessor comes before its user in text
// order.
func topologicalComputations(m *hlo.Module) []bool {
	topo := make([]bool, len(m.Computations))
	for _, c := range m.Computations {
		ok := true
		for _, in := range c.Instructions {
			for _, o := range in.Operands {
				ok = ok && o.ID < in.ID
			}
			for _, p := range in.ControlPredecessors() {
				ok = ok && p.ID < in.ID
			}
		}
		topo[c.ID] = ok
	}
	return topo
}
