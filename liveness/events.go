package liveness

// Events: every value's live range as the schedule-independent moments
// that decide it. Layout (analysis.go) computes a value's range as the
// latest of a handful of times (its definition, its positions, its uses,
// the done of its asynchronous context, the end of the program); which
// instructions and computation boundaries those times belong to does not
// depend on the schedule, only the times do. The schedulers that search
// over orders (package schedule) read the Events once and then ask, for
// each order they consider, where each event falls, instead of laying the
// whole module out again. events_test.go holds the Events to Layout:
// resolved against any timeline they give its ranges and end positions.

import (
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// EventKind says which moment an event is.
type EventKind uint8

// The moments an Event names.
const (
	EventInst      EventKind = iota // the time of instruction ID
	EventSpanStart                  // the first step of computation ID
	EventSpanEnd                    // the step after computation ID's last
	EventEnd                        // the end of the program (EndTime)
)

// Event is one moment of the flattened schedule, named independently of
// any schedule; Timeline.At gives its time under one.
type Event struct {
	Kind EventKind
	ID   int32 // instruction ID (EventInst; -1: outside the flattened schedule) or computation ID (EventSpan*)
}

// ValueEvents are the Events that decide one value's range: it starts at
// Start (its definition; a parameter's computation's start; under
// Rules2026, for a value in an asynchronous context, the start of the
// computation holding the chain) and ends at the latest of the end candidates (every candidate
// Layout considers: DefEnd, Pos and Ends). EndPosition is the latest of
// the positions: DefEnd (the definition's end, which Positions[0] stands
// for) and then Pos, each replacing the one before only when strictly
// later.
type ValueEvents struct {
	Start  Event
	DefEnd []Event // the definition's end: its time or computation end, asynchronous dones
	Pos    []Event // Positions[1:], in order (posTime)
	Ends   []Event // uses and asynchronous extensions
	ToEnd  bool    // a donated-nowhere entry parameter: lives to the end
}

// Events holds the Events of every scheduled value of an analysis
// (Analysis.Events).
type Events struct {
	a *Analysis
	// Vals by value ID; Scheduled reports which values Layout gives a
	// range (those in the flattened schedule).
	Vals      []ValueEvents
	Scheduled []bool
	// ByInst[id] lists the values (IDs) with an event at instruction id
	// (EventInst); BySpan[id] those with an event at a boundary of
	// computation id. Each value is listed once per place.
	ByInst [][]int32
	BySpan [][]int32
}

// flattenedComputations returns, by computation ID, whether layout walks
// the computation (the entry and every sequential computation it reaches
// through call, conditional, while and async ops), and each one's
// asynchronous context. Neither depends on the schedule.
func (a *Analysis) flattenedComputations() (flat []bool, asyncCtx []*hlo.Computation) {
	nc := len(a.Module.Computations)
	flat = make([]bool, nc)
	asyncCtx = walkFlattened(a.Module, a.excluded, func(c *hlo.Computation) []*hlo.Instruction { return c.Instructions },
		func(c *hlo.Computation) { flat[c.ID] = true }, nil, nil)
	return flat, asyncCtx
}

// walkFlattened walks the computations that layout flattens into one
// sequence, from m's entry: each once, its instructions in the order seq
// gives, entering a computation called by call, conditional, while (its
// condition, then its body) and the first fully bound op of an async
// chain right before the instruction that calls it. enter and leave
// bracket each computation, inst sees each instruction after the
// computations it calls; any may be nil. It returns, by computation ID,
// each computation's asynchronous context (the async computation it runs
// in, nil for the caller's thread). A computation skip marks (one on an
// execution thread the analysis leaves out) is not walked, nor are the
// computations only it calls.
func walkFlattened(m *hlo.Module, skip []bool, seq func(*hlo.Computation) []*hlo.Instruction, enter func(*hlo.Computation), inst func(*hlo.Instruction), leave func(*hlo.Computation)) []*hlo.Computation {
	nc := len(m.Computations)
	walked := make([]bool, nc) // set on entry, so a cycle stops
	asyncCtx := make([]*hlo.Computation, nc)
	var walk func(c, ctx *hlo.Computation)
	walk = func(c, ctx *hlo.Computation) {
		if c == nil || walked[c.ID] || skip != nil && skip[c.ID] {
			return
		}
		walked[c.ID] = true
		if ctx != nil {
			asyncCtx[c.ID] = ctx
		}
		if enter != nil {
			enter(c)
		}
		for _, in := range seq(c) {
			switch in.Opcode {
			case hlo.OpCall, hlo.OpConditional:
				for _, callee := range in.Callees() {
					walk(callee, ctx)
				}
			case hlo.OpAsyncStart, hlo.OpAsyncUpdate, hlo.OpAsyncDone:
				if firstFullyBound(in) {
					w := AsyncComputation(in)
					walk(w, w)
				}
			case hlo.OpWhile:
				walk(in.Condition(), ctx)
				walk(in.Body(), ctx)
			}
			if inst != nil {
				inst(in)
			}
		}
		if leave != nil {
			leave(c)
		}
	}
	walk(m.Entry, nil)
	return asyncCtx
}

// Events reads the Events of every value of a, following Layout step by
// step. They do not depend on the schedule: one Events serves every
// order of the analysed module.
func (a *Analysis) Events() *Events {
	flat, asyncCtx := a.flattenedComputations()
	em := &Events{a: a, Vals: make([]ValueEvents, len(a.Values)), Scheduled: make([]bool, len(a.Values))}
	entry := a.Module.Entry
	inst := func(in *hlo.Instruction) Event { return Event{EventInst, int32(in.ID)} }
	flatInst := func(in *hlo.Instruction) bool { return in != nil && in.Parent != nil && flat[in.Parent.ID] }
	aliasedParam := map[[2]int64]bool{}
	for _, al := range a.Module.InputOutputAlias {
		if p := paramOf(entry, al.Param); p != nil {
			if o, ok := a.ordinalOf(p, al.ParamIndex); ok {
				aliasedParam[[2]int64{al.Param, int64(o)}] = true
			}
		}
	}
	posEvent := func(p Position) (Event, bool) {
		if !flatInst(p.Inst) {
			return Event{}, false // layout's posTime is -1: never the latest
		}
		if p.Inst.IsRoot() {
			return Event{EventSpanEnd, int32(p.Inst.Parent.ID)}, true
		}
		return inst(p.Inst), true
	}
	for _, v := range a.Values {
		def := v.Inst
		if !flatInst(def) {
			continue
		}
		c := def.Parent
		ve := &em.Vals[v.ID]
		em.Scheduled[v.ID] = true
		ve.Start = inst(def)
		if def.Opcode == hlo.OpParameter {
			ve.Start = Event{EventSpanStart, int32(c.ID)}
		}
		if def.IsRoot() {
			ve.DefEnd = append(ve.DefEnd, Event{EventSpanEnd, int32(c.ID)})
		} else {
			ve.DefEnd = append(ve.DefEnd, inst(def))
		}
		if ctx := asyncCtx[c.ID]; ctx != nil {
			outer := false
			for _, site := range a.callers[ctx.ID] {
				if done := asyncChainDone(site); done != nil && flatInst(done) {
					ve.DefEnd = append(ve.DefEnd, inst(done))
				} else {
					ve.DefEnd = append(ve.DefEnd, Event{EventSpanEnd, int32(c.ID)})
				}
				// Rules2026: the start of the computation holding the
				// chain, which starts no later than anything flattened
				// in it. The ops of one chain share a computation, so
				// the first that is flattened names it.
				if !outer && a.settings.XLARules.asyncStartsAtOuter() && site.Parent != nil && flat[site.Parent.ID] {
					ve.Start, outer = Event{EventSpanStart, int32(site.Parent.ID)}, true
				}
			}
		}
		for _, p := range v.Positions[1:] {
			e, ok := posEvent(p)
			if !ok {
				e = Event{EventInst, -1}
			}
			ve.Pos = append(ve.Pos, e)
		}
		if def.Opcode == hlo.OpParameter && c == entry && !aliasedParam[[2]int64{def.ParameterNumber, int64(v.ord)}] {
			ve.ToEnd = true
			continue
		}
		for _, u := range v.Uses {
			used := u.Inst
			if used.Opcode == hlo.OpCall {
				if callee := used.ToApply(); callee != nil && flat[callee.ID] {
					continue
				}
			}
			if used.Opcode == hlo.OpWhile {
				if b := used.Body(); b != nil && len(b.Params) > 0 && b.Params[0] != nil && flat[b.ID] {
					used = b.Params[0]
				}
			}
			if flatInst(used) {
				ve.Ends = append(ve.Ends, inst(used))
			}
		}
	}
	for in := range a.asyncStarts() {
		done := asyncDone(in)
		if !flatInst(done) {
			continue
		}
		td := inst(done)
		extend := func(x *hlo.Instruction, definedOnly bool) {
			n := x.Shape.NumSubshapes()
			for ord := 0; ord < n; ord++ {
				v := a.slots[x.FirstValue+ord]
				if v != nil && !v.Shape.IsTuple() && em.Scheduled[v.ID] && (!definedOnly || v.Inst == x) {
					em.Vals[v.ID].Ends = append(em.Vals[v.ID].Ends, td)
				}
			}
		}
		for _, o := range in.Operands {
			extend(o, false)
		}
		extend(in, true)
	}
	em.index()
	return em
}

// index fills byInst and bySpan.
func (em *Events) index() {
	em.ByInst = make([][]int32, em.a.Module.NumInstructions())
	em.BySpan = make([][]int32, len(em.a.Module.Computations))
	add := func(id int32, e Event) {
		var list *[]int32
		switch e.Kind {
		case EventInst:
			if e.ID < 0 || int(e.ID) >= len(em.ByInst) {
				return
			}
			list = &em.ByInst[e.ID]
		case EventSpanStart, EventSpanEnd:
			list = &em.BySpan[e.ID]
		default:
			return
		}
		if n := len(*list); n == 0 || (*list)[n-1] != id {
			*list = append(*list, id)
		}
	}
	for id := range em.Vals {
		if !em.Scheduled[id] {
			continue
		}
		ve := &em.Vals[id]
		add(int32(id), ve.Start)
		for _, es := range [][]Event{ve.DefEnd, ve.Pos, ve.Ends} {
			for _, e := range es {
				add(int32(id), e)
			}
		}
	}
}

// At returns the time of e in timeline tl (-1 for an instruction outside
// it).
func (tl *Timeline) At(e Event) int {
	switch e.Kind {
	case EventInst:
		if e.ID < 0 || int(e.ID) >= len(tl.Times) {
			return -1
		}
		return tl.Times[e.ID]
	case EventSpanStart:
		return tl.Spans[e.ID].Start
	case EventSpanEnd:
		return tl.Spans[e.ID].End
	}
	return len(tl.Seq)
}

// Resolve returns the range of value id under timeline tl, before the
// chaining of its buffer's values (SortByRange, then chained as Layout
// chains them), and its end position's index in Positions.
func (em *Events) Resolve(tl *Timeline, id int) (Range, int) {
	ve := &em.Vals[id]
	start := tl.At(ve.Start)
	last := -1
	for _, e := range ve.DefEnd {
		last = max(last, tl.At(e))
	}
	ep := 0
	for i, e := range ve.Pos {
		if t := tl.At(e); t > last {
			last, ep = t, i+1
		}
	}
	if ve.ToEnd {
		last = len(tl.Seq)
	}
	for _, e := range ve.Ends {
		last = max(last, tl.At(e))
	}
	return Range{start, last}, ep
}

// resolve computes, from the Events alone, every value's range before
// the chaining of a buffer's values (NormalizeAliasedBuffers) and its end
// position's index in Positions, under timeline tl. Tests hold it equal
// to layout.
func (em *Events) resolve(tl *Timeline) (ranges []Range, endPos []int) {
	ranges = make([]Range, len(em.Vals))
	endPos = make([]int, len(em.Vals))
	for id := range em.Vals {
		if em.Scheduled[id] {
			ranges[id], endPos[id] = em.Resolve(tl, id)
		}
	}
	return ranges, endPos
}

// normalizeRanges returns ranges with the values of every buffer chained
// as layout chains them (XLA's NormalizeAliasedBuffers): sorted by start,
// end and ID, each value ends where the next begins and the next carries
// the later end on.
func normalizeRanges(a *Analysis, ranges []Range, scheduled []bool) []Range {
	out := append([]Range(nil), ranges...)
	var vs []*Value
	for _, b := range a.Buffers {
		if len(b.Values) < 2 {
			continue
		}
		vs = vs[:0]
		for _, v := range b.Values {
			if scheduled[v.ID] {
				vs = append(vs, v)
			}
		}
		SortByRange(vs, out)
		for i := 0; i+1 < len(vs); i++ {
			r1, r2 := &out[vs[i].ID], &out[vs[i+1].ID]
			r2.End = max(r1.End, r2.End)
			r1.End = min(r1.End, r2.Start)
		}
	}
	return out
}

// SortByRange sorts values by the start, end and ID of their ranges
// (by value ID), the order in which Layout chains a buffer's values.
func SortByRange(vs []*Value, ranges []Range) {
	slices.SortFunc(vs, func(x, y *Value) int {
		rx, ry := ranges[x.ID], ranges[y.ID]
		if rx.Start != ry.Start {
			return rx.Start - ry.Start
		}
		if rx.End != ry.End {
			return rx.End - ry.End
		}
		return x.ID - y.ID
	})
}
