package liveness

// Dataflow propagation, after XLA's HloDataflowAnalysis::Propagate in SSA
// form (hlo_dataflow_analysis.cc).
//
// Every instruction starts with the values it defines (definesAt) and empty
// positions elsewhere. A worklist then recomputes the forwarded positions of
// each instruction from its operands (get-tuple-element, tuple, bitcast,
// call, the async pairs, ...) until nothing changes. Work items are taken
// in XLA's order: a priority queue keyed by each instruction's place in a
// post-order of the whole module in which called computations come before
// their call site (a while's condition, then its body), ties broken by
// instruction ID where XLA would compare pointers (only instructions
// outside that post-order, which never make phis). When an instruction's
// positions change, its users are queued, and so are the parameters of the
// computations those users call; when a root changes, its callers are
// queued, and for a while body also the while and both loop parameters.
//
// Merge points make phis. A while's result and the parameters of its
// condition and body each merge the loop's init value with the body's
// result; a conditional's result merges the branch roots; a conditional
// branch's parameter is a merge of its single operand (XLA's Phi treats a
// branch parameter as a merge point too). At a merge point, per position:
// no incoming value leaves it empty; exactly one incoming value is
// forwarded (and a phi defined there before is deleted); two or more
// (the same value counted again counts twice, as in XLA) need a phi
// defined at the merge point, created once and then kept, its inputs
// recorded in the phi graph.
//
// After propagation the phi graph is optimised (phigraph.go): a phi whose
// inputs are all one value, itself aside, or a closed group of phis fed by
// one non-phi value, is replaced by that value. Deleted phis keep the IDs
// they were given, as in XLA.
//
// Value sets here hold at most one value: in SSA form on a flattened call
// graph XLA's sets do too, except in the moment an async-done has been
// updated from its computation's root before its async-start has; there
// the root's value wins, which is what the finished propagation gives.

import (
	"context"

	"github.com/hlomem/hlomem/internal/poll"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/binheap"
)

// dataflow builds the values of an analysis.
type dataflow struct {
	a     *Analysis
	m     *hlo.Module
	kinds []CompKind    // by computation ID
	ctx   []callContext // by computation ID
	// callers lists, for every computation (by ID), the instructions that
	// call it, in module order (XLA's caller_callsites).
	callers [][]*hlo.Instruction

	slots   []*Value // the value at each (instruction, subshape) slot
	defined []bool   // the slot's instruction defines a non-phi value there
	byID    []*Value // values by XLA ID (nil for values of fusion bodies)
	nextID  int
	deleted []bool // by XLA ID
	phis    *phiGraph
	// post caches InstructionPostOrder of each computation, by ID.
	post [][]*hlo.Instruction
	// slab is where newValue takes its next Value from: values are
	// allocated valueSlab at a time rather than one by one, which saves
	// the allocator's rounding (a Value is not a size class) and an object
	// per value for the collector to track.
	slab     []Value
	slabSize int // the size of the last slab
}

// valueSlab is the most values newValue allocates at once: 1,024 values
// of 264 bytes fill 33 pages of 8 KiB exactly, where a slab of 256 would
// be rounded up to whole pages and waste as much as the size classes.
// Slabs start at 8 and double, so that a small module takes little.
const valueSlab = 1024

// postOrder returns InstructionPostOrder(c), computed once.
func (d *dataflow) postOrder(c *hlo.Computation) []*hlo.Instruction {
	if d.post == nil {
		d.post = make([][]*hlo.Instruction, len(d.m.Computations))
	}
	po := d.post[c.ID]
	if po == nil {
		po = InstructionPostOrder(c)
		d.post[c.ID] = po
	}
	return po
}

// callContext is XLA's CallContext of a computation.
type callContext uint8

const (
	ctxNone callContext = iota
	ctxControlFlow
	ctxEmbedded
	ctxBoth
)

// xlaContexts computes every computation's call context as XLA's CallGraph
// does: computations nobody calls are control-flow roots; the callees of
// call, while, conditional and the async ops inherit their caller's
// context; every other callee (fusion bodies, reduction functions and the
// like) is embedded.
func xlaContexts(m *hlo.Module, callers [][]*hlo.Instruction) []callContext {
	ctx := make([]callContext, len(m.Computations))
	var work []*hlo.Computation
	add := func(c *hlo.Computation, k callContext) {
		if c == nil {
			return
		}
		prev := ctx[c.ID]
		next := prev
		switch {
		case prev == ctxNone:
			next = k
		case prev != k:
			next = ctxBoth
		}
		if next != prev {
			ctx[c.ID] = next
			work = append(work, c)
		}
	}
	for _, c := range m.Computations {
		if len(callers[c.ID]) == 0 {
			add(c, ctxControlFlow)
		}
	}
	for len(work) > 0 {
		c := work[len(work)-1]
		work = work[:len(work)-1]
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				if isControlFlowCall(in) {
					add(callee, ctx[c.ID])
				} else {
					add(callee, ctxEmbedded)
				}
			}
		}
	}
	return ctx
}

// isControlFlowCall reports whether in calls its computations in sequence
// with its caller (XLA's kControlFlow call sites).
func isControlFlowCall(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpCall, hlo.OpWhile, hlo.OpConditional, hlo.OpAsyncStart, hlo.OpAsyncUpdate, hlo.OpAsyncDone:
		return true
	}
	return false
}

// callSites lists for every computation (by ID) the instructions calling
// it, in module order. Async-update and async-done call their chain's
// computation even when the text does not repeat calls=.
func callSites(m *hlo.Module) [][]*hlo.Instruction {
	callers := make([][]*hlo.Instruction, len(m.Computations))
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			callees := in.Callees()
			if (in.Opcode == hlo.OpAsyncUpdate || in.Opcode == hlo.OpAsyncDone) && len(callees) == 0 {
				if w := AsyncComputation(in); w != nil {
					callees = []*hlo.Computation{w}
				}
			}
			for _, callee := range callees {
				// When in calls callee twice, in is already last in its list.
				if callee != nil && (len(callers[callee.ID]) == 0 || callers[callee.ID][len(callers[callee.ID])-1] != in) {
					callers[callee.ID] = append(callers[callee.ID], in)
				}
			}
		}
	}
	return callers
}

// definesAt reports whether in defines a value at index ix, whose subshape
// is sub, under XLA's rules (see values.go); paramDefines says whether a
// parameter defines its values (entry, embedded and uncalled computations)
// or takes them from its caller.
func definesAt(in *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape, paramDefines bool) bool {
	switch in.Opcode {
	case hlo.OpBitcast, hlo.OpAddDependency, hlo.OpWhile, hlo.OpCall, hlo.OpConditional,
		hlo.OpGetTupleElement, hlo.OpDomain, hlo.OpOptBarrier,
		hlo.OpCopyDone, hlo.OpAllReduceDone:
		return false
	case hlo.OpParameter:
		return paramDefines
	case hlo.OpCopy, hlo.OpTuple:
		return len(ix) == 0
	case hlo.OpAsyncStart:
		return sub.IsTuple() || len(ix) > 0 && ix[0] > 1
	case hlo.OpAsyncUpdate, hlo.OpAsyncDone:
		if sub.IsTuple() {
			return true
		}
		if len(in.Operands) == 0 || !sub.IsArray() {
			return false
		}
		src, _ := asyncSource(in, ix)
		return src == nil
	case hlo.OpCopyStart:
		return len(ix) == 0 || len(ix) == 1 && (ix[0] == 0 || ix[0] == 2)
	case hlo.OpAllGatherStart:
		return sub.IsTuple() || len(ix) > 0 && ix[0] == 1
	case hlo.OpAllGatherDone, hlo.OpCollectivePermuteDone:
		return len(ix) == 0 && in.Shape.IsTuple()
	case hlo.OpCollectivePermuteStart:
		switch {
		case len(ix) == 0:
			return true
		case len(ix) == 1:
			return ix[0] >= 1
		case len(ix) == 2 && ix[0] == 1:
			if collectivePermuteInPlace(in) {
				return in.Operands[1].Shape.IsTuple()
			}
			return len(in.Operands) > 1
		}
		return false
	case hlo.OpRecvDone:
		return len(ix) == 0 || len(ix) == 1 && ix[0] == 1
	case hlo.OpSend:
		return len(ix) == 0 || len(ix) == 1 && (ix[0] == 1 || ix[0] == 2)
	}
	return true
}

// collectivePermuteInPlace reports XLA's inplace() of a collective-permute:
// the four-operand form (input, output, input and output start indices)
// that writes into its operand 1.
func collectivePermuteInPlace(in *hlo.Instruction) bool {
	if len(in.Operands) != 4 {
		return false
	}
	_, ok := in.Attr("slice_sizes")
	return ok
}

// AsyncComputation returns the computation an async op (async-start,
// async-update or async-done) runs: its own calls= or that of the
// async-start its chain begins with.
func AsyncComputation(in *hlo.Instruction) *hlo.Computation {
	for i := 0; in != nil && i < 1<<16; i++ {
		if cs := in.Calls(); len(cs) > 0 {
			return cs[0]
		}
		if in.Opcode != hlo.OpAsyncUpdate && in.Opcode != hlo.OpAsyncDone || len(in.Operands) == 0 {
			return nil
		}
		in = in.Operands[0]
	}
	return nil
}

// paramDefines reports whether the parameters of c define their values.
func (d *dataflow) paramDefines(c *hlo.Computation) bool {
	return len(d.callers[c.ID]) == 0 || d.ctx[c.ID] == ctxEmbedded
}

// holds reports whether values of c take part in the analysis.
func (d *dataflow) holds(c *hlo.Computation) bool {
	k := d.kinds[c.ID]
	return k == Sequential || k == ThreadLocal
}

func (d *dataflow) newID() int {
	id := d.nextID
	d.nextID++
	d.byID = append(d.byID, nil)
	d.deleted = append(d.deleted, false)
	return id
}

// initialize creates the values every instruction defines, numbering them
// as XLA does, and marks the slots they occupy.
func (d *dataflow) initialize() {
	for _, c := range valueOrder(d.m) {
		if d.a.isExcluded(c) {
			continue // XLA makes no values on a thread it leaves out
		}
		holds := d.holds(c)
		params := d.paramDefines(c)
		if !holds {
			// Only the number of values matters here (XLA numbers them
			// too), not their order.
			for _, in := range c.Instructions {
				if !in.Shape.IsTuple() {
					if d.defines(in, nil, in.Shape, params) {
						d.newID()
					}
					continue
				}
				in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
					if d.defines(in, ix, sub, params) {
						d.newID()
					}
				})
			}
			continue
		}
		for _, in := range d.postOrder(c) {
			n := in.Shape.NumSubshapes()
			for o := 0; o < n; o++ {
				ix, sub := d.a.indexAt(in, o), d.a.subAt(in, o)
				if !d.defines(in, ix, sub, params) {
					continue
				}
				v := d.newValue(in, o, ix, sub, d.newID(), false)
				d.slots[in.FirstValue+o] = v
				d.defined[in.FirstValue+o] = true
			}
		}
	}
}

func (d *dataflow) newValue(in *hlo.Instruction, ord int, ix hlo.ShapeIndex, sub hlo.Shape, id int, phi bool) *Value {
	size, _ := hlo.BufferSize(sub)
	if len(d.slab) == 0 {
		d.slabSize = min(max(2*d.slabSize, 8), valueSlab)
		d.slab = make([]Value, d.slabSize)
	}
	v := &d.slab[0]
	d.slab = d.slab[1:]
	*v = Value{Inst: in, Index: ix, Shape: sub, Size: size, Color: sub.MemorySpace(), XLAID: id, IsPhi: phi, ord: int32(ord)}
	d.byID[id] = v
	return v
}

// set stores v at slot k unless the slot's instruction defines its own
// value there, and reports whether anything changed.
func (d *dataflow) set(k int, v *Value) bool {
	if d.defined[k] || d.slots[k] == v {
		return false
	}
	d.slots[k] = v
	return true
}

// at returns the value at index ix of in, or nil.
func (d *dataflow) at(in *hlo.Instruction, ix hlo.ShapeIndex) *Value {
	o, ok := d.a.ordinalOf(in, ix)
	if !ok {
		return nil
	}
	return d.slots[in.FirstValue+o]
}

// forward sets the positions of dst's subtree at dix from src's subtree at
// six, position by position (XLA's "value_set = operand_value_set");
// positions src lacks become empty. With arraysOnly only array positions
// are set (tuple nodes and tokens are left alone).
func (d *dataflow) forward(dst *hlo.Instruction, dix hlo.ShapeIndex, src *hlo.Instruction, six hlo.ShapeIndex, arraysOnly bool) bool {
	dord, ok := d.a.ordinalOf(dst, dix)
	if !ok {
		return false
	}
	sord, sok := 0, false
	if src != nil {
		sord, sok = d.a.ordinalOf(src, six)
	}
	return d.forwardTree(dst, dord, src, sord, sok, arraysOnly)
}

func (d *dataflow) forwardTree(dst *hlo.Instruction, dord int, src *hlo.Instruction, sord int, sok, arraysOnly bool) bool {
	changed := false
	dsh := d.a.subAt(dst, dord)
	if !arraysOnly || dsh.IsArray() {
		var v *Value
		if sok {
			v = d.slots[src.FirstValue+sord]
		}
		changed = d.set(dst.FirstValue+dord, v)
	}
	if !dsh.IsTuple() {
		return changed
	}
	dchild := dord + 1
	var schild int
	sTuple := sok && d.a.subAt(src, sord).IsTuple()
	if sTuple {
		schild = sord + 1
	}
	var sn int
	if sTuple {
		sn = len(d.a.subAt(src, sord).Tuple)
	}
	for k := range dsh.Tuple {
		eok := sTuple && k < sn
		if d.forwardTree(dst, dchild, src, schild, eok, arraysOnly) {
			changed = true
		}
		dchild += d.a.sizeAt(dst, dchild)
		if eok {
			schild += d.a.sizeAt(src, schild)
		}
	}
	return changed
}

// forwardTop sets position dix of dst from position six of src alone (no
// subtree): XLA forwards only the top level in copy-start, copy-done,
// all-gather-start and collective-permute.
func (d *dataflow) forwardTop(dst *hlo.Instruction, dix hlo.ShapeIndex, src *hlo.Instruction, six hlo.ShapeIndex) bool {
	o, ok := d.a.ordinalOf(dst, dix)
	if !ok {
		return false
	}
	var v *Value
	if src != nil {
		v = d.at(src, six)
	}
	return d.set(dst.FirstValue+o, v)
}

// update recomputes the forwarded positions of in (XLA's
// UpdateInstructionValueSet) and reports whether they changed.
func (d *dataflow) update(in *hlo.Instruction) bool {
	if d.a.isExcluded(in.Parent) {
		return false // not on the analysed threads (threads.go)
	}
	op := func(i int) *hlo.Instruction {
		if i < len(in.Operands) {
			return in.Operands[i]
		}
		return nil
	}
	root := hlo.ShapeIndex{}
	switch in.Opcode {
	case hlo.OpBitcast, hlo.OpAddDependency, hlo.OpDomain, hlo.OpOptBarrier, hlo.OpAllReduceDone:
		return d.forward(in, root, op(0), root, false)
	case hlo.OpCopy:
		changed := false
		for k := range in.Shape.Tuple {
			if d.forward(in, hlo.ShapeIndex{int64(k)}, op(0), hlo.ShapeIndex{int64(k)}, false) {
				changed = true
			}
		}
		return changed
	case hlo.OpGetTupleElement:
		return d.forward(in, root, op(0), hlo.ShapeIndex{in.TupleIndex}, false)
	case hlo.OpTuple:
		changed := false
		for k, o := range in.Operands {
			if d.forward(in, hlo.ShapeIndex{int64(k)}, o, root, false) {
				changed = true
			}
		}
		return changed
	case hlo.OpParameter:
		return d.updateParameter(in)
	case hlo.OpCall:
		c := in.ToApply()
		if c == nil && len(in.Calls()) > 0 {
			c = in.Calls()[0]
		}
		if c == nil || c.Root == nil {
			return false
		}
		return d.forward(in, root, c.Root, root, false)
	case hlo.OpWhile:
		var inputs []*hlo.Instruction
		if b := in.Body(); b != nil && b.Root != nil {
			inputs = append(inputs, b.Root)
		}
		if o := op(0); o != nil {
			inputs = append(inputs, o)
		}
		return d.phi(in, inputs)
	case hlo.OpConditional:
		var inputs []*hlo.Instruction
		for _, b := range in.Branches() {
			if b != nil && b.Root != nil {
				inputs = append(inputs, b.Root)
			}
		}
		return d.phi(in, inputs)
	case hlo.OpSend:
		return d.forward(in, hlo.ShapeIndex{0}, op(0), root, false)
	case hlo.OpRecvDone:
		return d.forward(in, hlo.ShapeIndex{0}, op(0), hlo.ShapeIndex{0}, false)
	case hlo.OpCopyStart:
		return d.forwardTop(in, hlo.ShapeIndex{1}, op(0), root)
	case hlo.OpCopyDone:
		return d.forwardTop(in, root, op(0), hlo.ShapeIndex{0})
	case hlo.OpAllGatherStart:
		changed := false
		for i, o := range in.Operands {
			ix := hlo.ShapeIndex{0}
			if len(in.Operands) > 1 {
				ix = hlo.ShapeIndex{0, int64(i)}
			}
			if d.forwardTop(in, ix, o, root) {
				changed = true
			}
		}
		return changed
	case hlo.OpAllGatherDone:
		changed := false
		n := in.Shape.NumSubshapes()
		for o := 0; o < n; o++ {
			ix := d.a.indexAt(in, o)
			if d.a.subAt(in, o).IsArray() && d.forwardTop(in, ix, op(0), append(hlo.ShapeIndex{1}, ix...)) {
				changed = true
			}
		}
		return changed
	case hlo.OpCollectivePermuteStart:
		changed := false
		switch o := op(0); {
		case !collectivePermuteInPlace(in) && len(in.Operands) > 1:
			for i, x := range in.Operands {
				if d.forwardTop(in, hlo.ShapeIndex{0, int64(i)}, x, root) {
					changed = true
				}
			}
		case o != nil && o.Shape.IsTuple():
			for i := range o.Shape.Tuple {
				if d.forwardTop(in, hlo.ShapeIndex{0, int64(i)}, o, hlo.ShapeIndex{int64(i)}) {
					changed = true
				}
			}
		default:
			changed = d.forwardTop(in, hlo.ShapeIndex{0}, o, root)
		}
		return changed
	case hlo.OpCollectivePermuteDone:
		if in.Shape.IsTuple() {
			changed := false
			for i := range in.Shape.Tuple {
				if d.forwardTop(in, hlo.ShapeIndex{int64(i)}, op(0), hlo.ShapeIndex{1, int64(i)}) {
					changed = true
				}
			}
			return changed
		}
		return d.forwardTop(in, root, op(0), hlo.ShapeIndex{1})
	case hlo.OpAsyncStart:
		changed := false
		for i, o := range in.Operands {
			if d.forward(in, hlo.ShapeIndex{0, int64(i)}, o, root, true) {
				changed = true
			}
		}
		if w := AsyncComputation(in); w != nil && w.Root != nil {
			if d.forward(in, hlo.ShapeIndex{1}, w.Root, root, true) {
				changed = true
			}
		}
		return changed
	case hlo.OpAsyncUpdate, hlo.OpAsyncDone:
		return d.updateAsync(in)
	}
	return false
}

// updateAsync sets the array positions of an async-update or async-done
// (XLA's UpdateAsyncUpdateValueSet and UpdateAsyncDoneValueSet): the
// output ({1} of an update, the whole of a done) from the async
// computation's root, the rest from the previous op of the chain at the
// same index. An operand bound late (an update's or done's operand after
// the first) fills the element {0,k} it binds, as XLA's
// AliasInfo::GetInPlaceInputOutputPairs aliases it there. Positions with
// no source at all are the op's own values (definesAt).
func (d *dataflow) updateAsync(in *hlo.Instruction) bool {
	if len(in.Operands) == 0 {
		return false
	}
	changed := false
	n := in.Shape.NumSubshapes()
	for o := 0; o < n; o++ {
		if !d.a.subAt(in, o).IsArray() {
			continue
		}
		ix := d.a.indexAt(in, o)
		src, six := asyncSource(in, ix)
		if src == nil {
			continue
		}
		v := d.at(src, six)
		if v == nil && src.Parent != in.Parent {
			// The computation's root holds no values when its thread is
			// left out (threads.go): the output is the start's own {1}.
			pix := ix
			if in.Opcode == hlo.OpAsyncDone {
				pix = append(hlo.ShapeIndex{1}, ix...)
			}
			v = d.at(in.Operands[0], pix)
		}
		if v != nil && d.set(in.FirstValue+o, v) {
			changed = true
		}
	}
	return changed
}

// asyncSource returns where the value at index ix of an async-update or
// async-done comes from: the async computation's root for the output, the
// operand an update or done binds late for its element {0,k}, otherwise
// the previous op of the chain at the same index. nil when there is none
// (the op then defines the value itself).
func asyncSource(in *hlo.Instruction, ix hlo.ShapeIndex) (*hlo.Instruction, hlo.ShapeIndex) {
	prev := in.Operands[0]
	out := ix
	if in.Opcode == hlo.OpAsyncUpdate {
		if len(ix) == 0 {
			return nil, nil
		}
		out = nil
		if ix[0] == 1 {
			out = ix[1:]
		}
	}
	if out != nil || in.Opcode == hlo.OpAsyncDone {
		if w := AsyncComputation(in); w != nil && w.Root != nil {
			if _, ok := w.Root.Shape.Subshape(out); ok {
				return w.Root, out
			}
		}
		pix := append(hlo.ShapeIndex{1}, out...)
		if sub, ok := prev.Shape.Subshape(pix); ok && sub.IsArray() {
			return prev, pix
		}
		return nil, nil
	}
	if ix[0] == 0 && len(ix) >= 2 && prev.Shape.IsTuple() && len(prev.Shape.Tuple) > 0 {
		if before := int64(len(prev.Shape.Tuple[0].Tuple)); ix[1] >= before {
			k := 1 + ix[1] - before
			if k < int64(len(in.Operands)) {
				if sub, ok := in.Operands[k].Shape.Subshape(ix[2:]); ok && sub.IsArray() {
					return in.Operands[k], ix[2:]
				}
			}
			return nil, nil
		}
	}
	if sub, ok := prev.Shape.Subshape(ix); ok && sub.IsArray() {
		return prev, ix
	}
	return nil, nil
}

// updateParameter is XLA's UpdateParameterValueSet: a parameter of a
// computation called as control flow takes the caller's operand; those of
// while bodies and conditions, and of conditional branches, are merge
// points.
func (d *dataflow) updateParameter(p *hlo.Instruction) bool {
	c := p.Parent
	if d.paramDefines(c) || d.ctx[c.ID] != ctxControlFlow {
		return false
	}
	var inputs []*hlo.Instruction
	needPhi := false
	n := int(p.ParameterNumber)
	for _, site := range d.callers[c.ID] {
		switch site.Opcode {
		case hlo.OpCall, hlo.OpAsyncStart:
			if n < len(site.Operands) {
				inputs = append(inputs, site.Operands[n])
			}
		case hlo.OpWhile:
			if len(site.Operands) > 0 {
				inputs = append(inputs, site.Operands[0])
			}
			if b := site.Body(); b != nil && b.Root != nil && b.Root != p {
				inputs = append(inputs, b.Root)
			}
			needPhi = true
		case hlo.OpConditional:
			for j, b := range site.Branches() {
				if b == c && j+1 < len(site.Operands) {
					inputs = append(inputs, site.Operands[j+1])
					break
				}
			}
			needPhi = true
		case hlo.OpAsyncUpdate, hlo.OpAsyncDone:
			// XLA returns here: the parameter is element {0,n} of the
			// chain's tuple, which the async-start forwarded from its
			// operand n.
			// With late binding the first update or done may bind
			// parameter n itself: its own tuple (an update) or its
			// operand (a done) holds it then.
			if len(site.Operands) == 0 {
				return false
			}
			pix := hlo.ShapeIndex{0, int64(n)}
			if _, ok := site.Operands[0].Shape.Subshape(pix); ok {
				return d.forward(p, hlo.ShapeIndex{}, site.Operands[0], pix, false)
			}
			if site.Opcode == hlo.OpAsyncUpdate {
				return d.forward(p, hlo.ShapeIndex{}, site, pix, false)
			}
			if prev := site.Operands[0].Shape; prev.IsTuple() && len(prev.Tuple) > 0 {
				if k := 1 + n - len(prev.Tuple[0].Tuple); k >= 1 && k < len(site.Operands) {
					return d.forward(p, hlo.ShapeIndex{}, site.Operands[k], hlo.ShapeIndex{}, false)
				}
			}
			return false
		}
	}
	if needPhi {
		return d.phi(p, inputs)
	}
	changed := false
	for _, x := range inputs {
		if d.forward(p, hlo.ShapeIndex{}, x, hlo.ShapeIndex{}, false) {
			changed = true
		}
	}
	return changed
}

// phi is XLA's Phi: position by position, the values arriving from inputs
// decide between forwarding one value and defining a phi at in.
func (d *dataflow) phi(in *hlo.Instruction, inputs []*hlo.Instruction) bool {
	changed := false
	var incoming []*Value
	// An input with in's structure has each position at the same ordinal.
	same := make([]bool, len(inputs))
	for i, x := range inputs {
		same[i] = hlo.SameStructure(x.Shape, in.Shape)
	}
	n := in.Shape.NumSubshapes()
	for o := 0; o < n; o++ {
		k := in.FirstValue + o
		ix, sub := d.a.indexAt(in, o), d.a.subAt(in, o)
		cur := d.slots[k]
		incoming = incoming[:0]
		for i, x := range inputs {
			var v *Value
			if same[i] {
				v = d.slots[x.FirstValue+o]
			} else {
				v = d.at(x, ix)
			}
			if v != nil {
				incoming = append(incoming, v)
			}
		}
		definedHere := cur != nil && cur.Inst == in && cur.Index.Equal(ix)
		switch {
		case len(incoming) == 0:
		case len(incoming) == 1:
			if cur != incoming[0] {
				if cur != nil && definedHere {
					d.deleted[cur.XLAID] = true
				}
				d.slots[k] = incoming[0]
				changed = true
			}
		default:
			if cur == nil || !(definedHere && cur.IsPhi) {
				v := d.newValue(in, o, ix, sub, d.newID(), true)
				d.slots[k] = v
				d.phis.register(v.XLAID, ids(incoming))
				changed = true
			} else if !d.phis.inputsEqual(cur.XLAID, incoming) {
				d.phis.register(cur.XLAID, ids(incoming))
				changed = true
			}
		}
	}
	return changed
}

func ids(vs []*Value) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.XLAID
	}
	return out
}

// priorities numbers the instructions as XLA's CalculatePostOrderSchedule:
// the entry's post-order, with the computations of a call, conditional or
// async-start numbered before it and a while's condition and body before
// the while. Instructions it does not reach get 0, as in XLA.
func (d *dataflow) priorities() []int32 {
	m := d.m
	prio := make([]int32, m.NumInstructions())
	seen := make([]bool, len(prio))
	var next int32
	var visit func(c *hlo.Computation, depth int)
	visit = func(c *hlo.Computation, depth int) {
		if c == nil || depth > len(m.Computations) {
			return
		}
		for _, in := range d.postOrder(c) {
			switch in.Opcode {
			case hlo.OpCall, hlo.OpConditional, hlo.OpAsyncStart:
				for _, callee := range in.Callees() {
					visit(callee, depth+1)
				}
			case hlo.OpWhile:
				visit(in.Condition(), depth+1)
				visit(in.Body(), depth+1)
			}
			if !seen[in.ID] {
				seen[in.ID] = true
				prio[in.ID] = next
			}
			next++
		}
	}
	visit(m.Entry, 0)
	return prio
}

// worklist is a priority queue of instructions by (priority, ID): a
// binary heap of instruction IDs over a key table.
type worklist struct {
	heap   binheap.Heap[int32]
	key    []int64 // priority<<32 | ID, by ID
	inst   []*hlo.Instruction
	queued []bool
}

func newWorklist(m *hlo.Module, prio []int32) *worklist {
	n := m.NumInstructions()
	w := &worklist{key: make([]int64, n), inst: make([]*hlo.Instruction, n), queued: make([]bool, n)}
	m.Instructions(func(in *hlo.Instruction) {
		w.key[in.ID] = int64(prio[in.ID])<<32 | int64(in.ID)
		w.inst[in.ID] = in
	})
	w.heap.Less = func(a, b int32) bool { return w.key[a] < w.key[b] }
	return w
}

func (w *worklist) add(in *hlo.Instruction) {
	if in == nil || in.ID < 0 || in.ID >= len(w.queued) || w.queued[in.ID] {
		return
	}
	w.queued[in.ID] = true
	w.heap.Push(int32(in.ID))
}

func (w *worklist) pop() *hlo.Instruction {
	top := w.heap.Pop()
	w.queued[top] = false
	return w.inst[top]
}

// propagate runs the worklist to its fixed point.
//
// It stops, returning ctx's error, once ctx is done.
func (d *dataflow) propagate(ctx context.Context) error {
	w := newWorklist(d.m, d.priorities())
	param := func(c *hlo.Computation, n int) *hlo.Instruction {
		if c == nil || n < 0 || n >= len(c.Params) {
			return nil
		}
		return c.Params[n]
	}
	for _, c := range d.m.ComputationPostOrder() {
		if !d.holds(c) {
			continue
		}
		for _, in := range d.postOrder(c) {
			w.add(in)
		}
	}
	for n := 0; w.heap.Len() > 0; n++ {
		if poll.Due(n) {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		in := w.pop()
		if !d.update(in) {
			continue
		}
		for _, u := range in.Users {
			w.add(u)
			switch u.Opcode {
			case hlo.OpConditional:
				for j, b := range u.Branches() {
					if j+1 < len(u.Operands) && u.Operands[j+1] == in {
						w.add(param(b, 0))
					}
				}
			case hlo.OpAsyncUpdate, hlo.OpAsyncDone:
				if ac := AsyncComputation(u); ac != nil {
					for _, p := range ac.Params {
						w.add(p)
					}
				}
			default:
				for _, callee := range u.Callees() {
					if d.ctx[callee.ID] != ctxControlFlow {
						continue
					}
					for k, o := range u.Operands {
						if o == in {
							w.add(param(callee, k))
						}
					}
				}
			}
		}
		if in.IsRoot() {
			c := in.Parent
			for _, site := range d.callers[c.ID] {
				switch {
				case site.Opcode == hlo.OpWhile:
					w.add(site)
					w.add(param(site.Body(), 0))
					w.add(param(site.Condition(), 0))
				case d.ctx[c.ID] == ctxControlFlow || site.Opcode == hlo.OpConditional:
					w.add(site)
				}
			}
		}
	}
	return nil
}

// optimizePhis replaces the phis the phi graph resolves to another value
// (XLA's OptimizePhiValues) and marks them deleted.
func (d *dataflow) optimizePhis() {
	d.phis.optimize()
	for _, c := range d.m.Computations {
		if !d.holds(c) {
			continue
		}
		for _, in := range c.Instructions {
			n := in.Shape.NumSubshapes()
			for o := 0; o < n; o++ {
				k := in.FirstValue + o
				v := d.slots[k]
				if v == nil || !v.IsPhi {
					continue
				}
				if id := d.phis.resolve(v.XLAID); id != v.XLAID && id >= 0 && id < len(d.byID) && d.byID[id] != nil {
					d.slots[k] = d.byID[id]
					d.deleted[v.XLAID] = true
				}
			}
		}
	}
}

// mayUseOperandValue is XLA's rule for whether user reads the value at
// index ix of the operand it takes.
func mayUseOperandValue(user *hlo.Instruction, ix hlo.ShapeIndex) bool {
	switch user.Opcode {
	case hlo.OpGetTupleElement, hlo.OpCopy:
		return len(ix) == 0
	case hlo.OpDomain, hlo.OpTuple:
		return false
	}
	return true
}
