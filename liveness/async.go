package liveness

// Asynchronous operations. XLA splits a collective, a copy or a wrapped
// computation into a start and a done (all-reduce-start/-done,
// all-gather-, collective-permute-, copy-start/-done, send/send-done,
// recv/recv-done, and the generic async-start, async-update..., async-done
// that JAX's all-to-all and others become). Between the two the operation
// runs on its own: it may still read its operands and write its
// destination at any moment, so neither may be reused before the done.
// The analysis guarantees that through the live ranges (the done uses the
// start's tuple; values of an async computation live until its done), and
// AsyncPairs lets later stages (the runtime's shadow check, device models)
// see the pairing itself instead of re-deriving it.

import (
	"iter"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// AsyncPair is one asynchronous operation, from its start to its done.
type AsyncPair struct {
	Start *hlo.Instruction
	// Updates are the async-update instructions between Start and Done, in
	// chain order (generic async operations only).
	Updates []*hlo.Instruction
	Done    *hlo.Instruction
	// Bound is the op from which the operation runs: the first of its
	// chain that binds all its operands (async::IsFirstFullyBound), where
	// its computation is flattened. The start, but for an async op whose
	// update binds operands late.
	Bound *hlo.Instruction
	// Computation is the computation an async-start runs (nil for the
	// other kinds).
	Computation *hlo.Computation
	// Reads are the buffers the operation may read until Done: those of
	// its operands' arrays.
	Reads []*Buffer
	// Writes are the buffers it may write until Done: its destination
	// (and, for an async-start, the buffers of its computation's values).
	Writes []*Buffer
}

// InFlight returns every buffer the operation may touch between Bound and
// Done, reads first; each must stay live, and keep its address, over
// [Time(Bound), Time(Done)].
func (p AsyncPair) InFlight() []*Buffer {
	out := append([]*Buffer(nil), p.Reads...)
	for _, b := range p.Writes {
		if !containsBuffer(out, b) {
			out = append(out, b)
		}
	}
	return out
}

func containsBuffer(bs []*Buffer, b *Buffer) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// AsyncPairs returns the asynchronous operations of the module's
// sequential computations, ordered by the time of their start (then by
// instruction ID for computations outside the schedule). A start whose done
// is missing (an invalid module) is reported with a nil Done.
func (a *Analysis) AsyncPairs() []AsyncPair {
	var out []AsyncPair
	for in := range a.asyncStarts() {
		out = append(out, a.asyncPair(in))
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := a.Time(out[i].Start), a.Time(out[j].Start)
		if ti != tj {
			return ti < tj
		}
		return out[i].Start.ID < out[j].Start.ID
	})
	return out
}

// asyncStarts yields the asynchronous starts of the module's sequential
// computations, in module order.
func (a *Analysis) asyncStarts() iter.Seq[*hlo.Instruction] {
	return func(yield func(*hlo.Instruction) bool) {
		for _, c := range a.Module.Computations {
			if a.Kinds[c.ID] != Sequential {
				continue
			}
			for _, in := range c.Instructions {
				if in.Opcode.Has(hlo.AsyncStart) && !yield(in) {
					return
				}
			}
		}
	}
}

// AsyncPairOf returns the asynchronous operation in belongs to (as its
// start, an update or its done).
func (a *Analysis) AsyncPairOf(in *hlo.Instruction) (AsyncPair, bool) {
	start := in
	for i := 0; start != nil && !start.Opcode.Has(hlo.AsyncStart) && i < 1<<16; i++ {
		if !(start.Opcode.Has(hlo.AsyncDone) || start.Opcode == hlo.OpAsyncUpdate) || len(start.Operands) == 0 {
			return AsyncPair{}, false
		}
		start = start.Operands[0]
	}
	if start == nil || !start.Opcode.Has(hlo.AsyncStart) {
		return AsyncPair{}, false
	}
	return a.asyncPair(start), true
}

func (a *Analysis) asyncPair(start *hlo.Instruction) AsyncPair {
	p := AsyncPair{Start: start, Bound: start}
	if start.Opcode == hlo.OpAsyncStart {
		p.Computation = AsyncComputation(start)
	}

	// Follow the chain: each link's successor takes it as operand 0.
	cur := start
	for i := 0; cur != nil && i < 1<<16; i++ {
		var next *hlo.Instruction
		for _, u := range cur.Users {
			if len(u.Operands) > 0 && u.Operands[0] == cur && (u.Opcode == hlo.OpAsyncUpdate || u.Opcode.Has(hlo.AsyncDone)) {
				next = u
				break
			}
		}
		if next == nil {
			break
		}
		if next.Opcode == hlo.OpAsyncUpdate {
			p.Updates = append(p.Updates, next)
			cur = next
			continue
		}
		p.Done = next
		break
	}
	addBuf := func(list *[]*Buffer, v *Value) {
		if v != nil && v.Buffer != nil && !containsBuffer(*list, v.Buffer) {
			*list = append(*list, v.Buffer)
		}
	}
	// Reads: the arrays of the operands (an operation reads arrays, not
	// tuple index tables).
	reads := func(o *hlo.Instruction) {
		for ord := 0; ord < o.Shape.NumSubshapes(); ord++ {
			if v := a.slots[o.FirstValue+ord]; v != nil && !v.Shape.IsTuple() {
				addBuf(&p.Reads, v)
			}
		}
	}
	for _, o := range start.Operands {
		reads(o)
	}
	for _, u := range p.Updates {
		for _, o := range u.Operands[1:] {
			reads(o)
		}
	}
	// The destination: what the done hands out, and whatever the start
	// defines besides its tuple nodes (contexts, the copy destination).
	if p.Done != nil {
		for ord := 0; ord < p.Done.Shape.NumSubshapes(); ord++ {
			if v := a.slots[p.Done.FirstValue+ord]; v != nil && !v.Shape.IsTuple() {
				addBuf(&p.Writes, v)
			}
		}
	}
	for ord := 0; ord < start.Shape.NumSubshapes(); ord++ {
		if v := a.slots[start.FirstValue+ord]; v != nil && v.Inst == start && !v.Shape.IsTuple() {
			addBuf(&p.Writes, v)
		}
	}
	if p.Computation != nil {
		for _, in := range p.Computation.Instructions {
			for ord := 0; ord < in.Shape.NumSubshapes(); ord++ {
				if v := a.slots[in.FirstValue+ord]; v != nil && v.Inst == in && !v.Shape.IsTuple() {
					addBuf(&p.Writes, v)
				}
			}
		}
	}
	for _, x := range append(append([]*hlo.Instruction{start}, p.Updates...), p.Done) {
		if x != nil && p.Computation != nil && firstFullyBound(x) {
			p.Bound = x
			break
		}
	}
	return p
}
