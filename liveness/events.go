package liveness

// Events: every value's live range as the schedule-independent moments
// that decide it. layout (analysis.go) computes a value's range as the
// latest of a handful of times (its definition, its positions, its uses,
// the done of its asynchronous context, the end of the program); which
// instructions and computation boundaries those times belong to does not
// depend on the schedule, only the times do. The schedulers that search
// over orders (optimal.go, search.go) read the events once and then ask,
// for each order they consider, where each event falls, instead of laying
// the whole module out again. events_test.go holds the events to layout:
// resolved against any timeline they give its ranges and end positions.

import (
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// eventKind says which moment an event is.
type eventKind uint8

const (
	evInst      eventKind = iota // the time of instruction id
	evSpanStart                  // the first step of computation id
	evSpanEnd                    // the step after computation id's last
	evEnd                        // the end of the program (EndTime)
)

// event is one moment of the flattened schedule, named independently of
// any schedule.
type event struct {
	kind eventKind
	id   int32 // instruction ID (evInst) or computation ID (evSpan*)
}

// valueEvents are the events that decide one value's range: it starts at
// start and ends at the latest of ends (every candidate layout considers,
// the definition's end, positions, uses and asynchronous extensions).
// EndPosition is the latest of the positions: defEnd (the definition's
// end, which Positions[0] stands for) and then pos, each replacing the
// one before only when strictly later.
type valueEvents struct {
	start  event
	defEnd []event // the definition's end: its time or computation end, asynchronous dones
	pos    []event // Positions[1:], in order (posTime)
	ends   []event // uses and asynchronous extensions; with defEnd and pos, every end candidate
	toEnd  bool    // a donated-nowhere entry parameter: lives to the end
}

// eventModel holds the events of every scheduled value of an analysis.
type eventModel struct {
	a *Analysis
	// vals by value ID; scheduled reports which values layout gives a
	// range (those in the flattened schedule).
	vals      []valueEvents
	scheduled []bool
	// byInst[id] lists the values with an event at instruction id
	// (evInst); bySpan[id] those with an event at a boundary of
	// computation id. Each value is listed once per place.
	byInst [][]int32
	bySpan [][]int32
}

// flattenedComputations returns, by computation ID, whether layout walks
// the computation (the entry and every sequential computation it reaches
// through call, conditional, while and async ops), and each one's
// asynchronous context. Neither depends on the schedule.
func (a *Analysis) flattenedComputations() (flat []bool, asyncCtx []*hlo.Computation) {
	nc := len(a.Module.Computations)
	flat = make([]bool, nc)
	asyncCtx = make([]*hlo.Computation, nc)
	var walk func(c, ctx *hlo.Computation)
	walk = func(c, ctx *hlo.Computation) {
		if c == nil || flat[c.ID] {
			return
		}
		flat[c.ID] = true
		if ctx != nil {
			asyncCtx[c.ID] = ctx
		}
		for _, in := range c.Instructions {
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
		}
	}
	walk(a.Module.Entry, nil)
	return flat, asyncCtx
}

// newEventModel reads the events of every value of a, following layout
// step by step.
func newEventModel(a *Analysis) *eventModel {
	flat, asyncCtx := a.flattenedComputations()
	em := &eventModel{a: a, vals: make([]valueEvents, len(a.Values)), scheduled: make([]bool, len(a.Values))}
	entry := a.Module.Entry
	inst := func(in *hlo.Instruction) event { return event{evInst, int32(in.ID)} }
	flatInst := func(in *hlo.Instruction) bool { return in != nil && in.Parent != nil && flat[in.Parent.ID] }
	aliasedParam := map[[2]int64]bool{}
	for _, al := range a.Module.InputOutputAlias {
		if p := paramOf(entry, al.Param); p != nil {
			if o, ok := a.ordinalOf(p, al.ParamIndex); ok {
				aliasedParam[[2]int64{al.Param, int64(o)}] = true
			}
		}
	}
	posEvent := func(p Position) (event, bool) {
		if !flatInst(p.Inst) {
			return event{}, false // layout's posTime is -1: never the latest
		}
		if p.Inst.IsRoot() {
			return event{evSpanEnd, int32(p.Inst.Parent.ID)}, true
		}
		return inst(p.Inst), true
	}
	for _, v := range a.Values {
		def := v.Inst
		if !flatInst(def) {
			continue
		}
		c := def.Parent
		ve := &em.vals[v.ID]
		em.scheduled[v.ID] = true
		ve.start = inst(def)
		if def.Opcode == hlo.OpParameter {
			ve.start = event{evSpanStart, int32(c.ID)}
		}
		if def.IsRoot() {
			ve.defEnd = append(ve.defEnd, event{evSpanEnd, int32(c.ID)})
		} else {
			ve.defEnd = append(ve.defEnd, inst(def))
		}
		if ctx := asyncCtx[c.ID]; ctx != nil {
			for _, site := range a.callers[ctx.ID] {
				if done := asyncChainDone(site); done != nil && flatInst(done) {
					ve.defEnd = append(ve.defEnd, inst(done))
				} else {
					ve.defEnd = append(ve.defEnd, event{evSpanEnd, int32(c.ID)})
				}
			}
		}
		for _, p := range v.Positions[1:] {
			e, ok := posEvent(p)
			if !ok {
				e = event{evInst, -1}
			}
			ve.pos = append(ve.pos, e)
		}
		if def.Opcode == hlo.OpParameter && c == entry && !aliasedParam[[2]int64{def.ParameterNumber, int64(v.ord)}] {
			ve.toEnd = true
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
				ve.ends = append(ve.ends, inst(used))
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
				if v != nil && !v.Shape.IsTuple() && em.scheduled[v.ID] && (!definedOnly || v.Inst == x) {
					em.vals[v.ID].ends = append(em.vals[v.ID].ends, td)
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
func (em *eventModel) index() {
	em.byInst = make([][]int32, em.a.Module.NumInstructions())
	em.bySpan = make([][]int32, len(em.a.Module.Computations))
	add := func(id int32, e event) {
		var list *[]int32
		switch e.kind {
		case evInst:
			if e.id < 0 || int(e.id) >= len(em.byInst) {
				return
			}
			list = &em.byInst[e.id]
		case evSpanStart, evSpanEnd:
			list = &em.bySpan[e.id]
		default:
			return
		}
		if n := len(*list); n == 0 || (*list)[n-1] != id {
			*list = append(*list, id)
		}
	}
	for id := range em.vals {
		if !em.scheduled[id] {
			continue
		}
		ve := &em.vals[id]
		add(int32(id), ve.start)
		for _, es := range [][]event{ve.defEnd, ve.pos, ve.ends} {
			for _, e := range es {
				add(int32(id), e)
			}
		}
	}
}

// at returns the time of e in timeline tl (-1 for an instruction outside
// it).
func (tl *timeline) at(e event) int {
	switch e.kind {
	case evInst:
		if e.id < 0 || int(e.id) >= len(tl.times) {
			return -1
		}
		return tl.times[e.id]
	case evSpanStart:
		return tl.spans[e.id].Start
	case evSpanEnd:
		return tl.spans[e.id].End
	}
	return len(tl.seq)
}

// resolveOne is resolve for value id: its range before chaining and its
// end position's index in Positions.
func (em *eventModel) resolveOne(tl *timeline, id int) (Range, int) {
	ve := &em.vals[id]
	start := tl.at(ve.start)
	last := -1
	for _, e := range ve.defEnd {
		last = max(last, tl.at(e))
	}
	ep := 0
	for i, e := range ve.pos {
		if t := tl.at(e); t > last {
			last, ep = t, i+1
		}
	}
	if ve.toEnd {
		last = len(tl.seq)
	}
	for _, e := range ve.ends {
		last = max(last, tl.at(e))
	}
	return Range{start, last}, ep
}

// resolve computes, from the events alone, every value's range before
// the chaining of a buffer's values (NormalizeAliasedBuffers) and its end
// position's index in Positions, under timeline tl. Tests hold it equal
// to layout.
func (em *eventModel) resolve(tl *timeline) (ranges []Range, endPos []int) {
	ranges = make([]Range, len(em.vals))
	endPos = make([]int, len(em.vals))
	for id := range em.vals {
		if em.scheduled[id] {
			ranges[id], endPos[id] = em.resolveOne(tl, id)
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
		sortByRange(vs, out)
		for i := 0; i+1 < len(vs); i++ {
			r1, r2 := &out[vs[i].ID], &out[vs[i+1].ID]
			r2.End = max(r1.End, r2.End)
			r1.End = min(r1.End, r2.Start)
		}
	}
	return out
}

// sortByRange sorts values by the start, end and ID of their ranges.
func sortByRange(vs []*Value, ranges []Range) {
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
