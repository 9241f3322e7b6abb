package liveness

import (
	"fmt"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// Analysis is the result of Analyze: the values and buffers of a module,
// the flattened schedule and every value's live range.
type Analysis struct {
	Module *hlo.Module
	// Kinds classifies every computation.
	Kinds map[*hlo.Computation]CompKind
	// Schedule is the per-computation order the analysis used.
	Schedule *Schedule
	// Sequence is the flattened schedule: time t runs Sequence[t].
	Sequence []*hlo.Instruction
	// Spans gives each flattened computation's [Start, End) in time; End is
	// the time after its last instruction.
	Spans map[*hlo.Computation]Span
	// Values in ID order; Buffers in ID order.
	Values  []*Value
	Buffers []*Buffer

	parallelRoots []*hlo.Computation
	slots         []*Value // value at each (instruction, subshape) slot
	times         []int    // time of each instruction by ID, -1 if not in Sequence
}

// Span is the time interval [Start, End) of a computation in the flattened schedule.
type Span struct{ Start, End int }

// Range is a live range in the flattened schedule. Both ends are
// inclusive, as XLA's HloLiveRange prints them: the value is live at every
// time Start <= t <= End. HalfOpen converts to the [start, end) intervals
// the packers use.
type Range struct{ Start, End int }

// HalfOpen returns the range as [start, end).
func (r Range) HalfOpen() (start, end int) { return r.Start, r.End + 1 }

// Contains reports whether the range covers time t.
func (r Range) Contains(t int) bool { return r.Start <= t && t <= r.End }

// Options configures Analyze. The zero value analyses the module in its own
// instruction order (which is the schedule of a scheduled module).
type Options struct {
	// Schedule gives the order of each sequential computation; nil means
	// each computation's instruction order.
	Schedule *Schedule
}

// Analyze computes the values, buffers and live ranges of m as XLA's
// HloDataflowAnalysis, HloAliasAnalysis and HloLiveRange (module-scoped)
// do. It renumbers m's instructions (IDs are derived data). Sequentially
// called computations must each have one call site (XLA flattens the call
// graph before buffer assignment); FlattenCallGraph makes it so.
func Analyze(m *hlo.Module, opts Options) (*Analysis, error) {
	if m.Entry == nil {
		return nil, fmt.Errorf("liveness: module %s has no entry computation", m.Name)
	}
	m.Renumber()
	kinds, roots, err := classify(m)
	if err != nil {
		return nil, fmt.Errorf("liveness: %w", err)
	}
	if err := checkFlat(m, kinds); err != nil {
		return nil, err
	}
	a := &Analysis{Module: m, Kinds: kinds, parallelRoots: roots}
	d := &dataflow{a: a, slots: make([]*Value, m.NumValues()), defs: make([]*Value, m.NumValues()), busy: map[*hlo.Computation]bool{}}
	if err := d.run(); err != nil {
		return nil, fmt.Errorf("liveness: %w", err)
	}
	a.slots = d.slots
	a.collectValues(d)
	a.buildBuffers()
	s := opts.Schedule
	if s == nil {
		s = ModuleOrder(m)
		if s.Validate(m, kinds) != nil {
			// Text with forward references is not an order: use post-order.
			s = PostOrder(m)
		}
	}
	if err := a.Reschedule(s); err != nil {
		return nil, err
	}
	return a, nil
}

// Reschedule recomputes the flattened sequence and every live range for
// schedule s; values and buffers do not depend on the schedule.
func (a *Analysis) Reschedule(s *Schedule) error {
	if err := s.Validate(a.Module, a.Kinds); err != nil {
		return err
	}
	a.install(s, a.layout(s))
	return nil
}

// checkFlat reports a sequential computation called from more than one site.
func checkFlat(m *hlo.Module, kinds map[*hlo.Computation]CompKind) error {
	sites := map[*hlo.Computation]*hlo.Instruction{}
	for _, c := range m.Computations {
		if kinds[c] != Sequential {
			continue
		}
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpCall, hlo.OpWhile, hlo.OpConditional, hlo.OpAsyncStart:
			default:
				continue
			}
			for _, callee := range in.Callees() {
				if prev := sites[callee]; prev != nil && prev != in {
					return fmt.Errorf("liveness: computation %s is called from %s and %s; flatten the call graph first (liveness.FlattenCallGraph)", callee.Name, prev.Name, in.Name)
				}
				sites[callee] = in
			}
		}
	}
	return nil
}

// ValueAt returns the value at position (in, ix), or nil when in holds no
// values (a fusion body, an unreachable computation).
func (a *Analysis) ValueAt(in *hlo.Instruction, ix hlo.ShapeIndex) *Value {
	if in.FirstValue >= len(a.slots) {
		return nil
	}
	o, ok := ordinalOf(in.Shape, ix)
	if !ok {
		return nil
	}
	return a.slots[in.FirstValue+o]
}

// Time returns the time of in in the flattened schedule, or -1.
func (a *Analysis) Time(in *hlo.Instruction) int {
	if in.ID < 0 || in.ID >= len(a.times) {
		return -1
	}
	return a.times[in.ID]
}

// EndTime returns the length of the flattened schedule (XLA's schedule_end_time).
func (a *Analysis) EndTime() int { return len(a.Sequence) }

// collectValues numbers the values in the order XLA's dataflow analysis
// creates them: computations callees first, instructions in XLA's
// post-order, subshapes in pre-order; phis last. XLAID counts the values of
// fusion bodies and unreachable computations too, as XLA does, so it
// equals the ID XLA prints (<ID name @color>) whenever the text is XLA's
// own dump.
func (a *Analysis) collectValues(d *dataflow) {
	seen := make(map[*Value]bool, len(d.slots))
	var comps []*hlo.Computation
	xlaID := 0
	var phis []*Value
	for _, c := range ComputationPostOrder(a.Module) {
		kind := a.Kinds[c]
		holds := kind == Sequential || kind == ThreadLocal
		if holds {
			comps = append(comps, c)
		}
		for _, in := range InstructionPostOrder(c) {
			if !holds {
				xlaID += definedCount(in, true)
				continue
			}
			n := in.Shape.NumSubshapes()
			for o := 0; o < n; o++ {
				v := d.slots[in.FirstValue+o]
				// A value is numbered where it is defined, so forwarded
				// values keep their definition's place.
				if v == nil || seen[v] || v.Inst != in {
					continue
				}
				seen[v] = true
				if v.IsPhi {
					phis = append(phis, v)
					continue
				}
				v.ID = len(a.Values)
				v.XLAID = xlaID
				xlaID++
				a.Values = append(a.Values, v)
			}
		}
	}
	for _, v := range phis {
		v.ID = len(a.Values)
		v.XLAID = xlaID
		xlaID++
		a.Values = append(a.Values, v)
	}
	d.positionsAndUses(comps)
	for _, v := range a.Values {
		sortPositions(v)
		for _, p := range v.Positions {
			if p.Inst == a.Module.Entry.Root {
				v.LiveOut = true
			}
		}
	}
}

// definedCount returns how many values in defines under XLA's rules
// (InitializeInstructionValueSets); paramDefines says whether a parameter
// defines its values (entry, parallel and fusion contexts) or forwards the
// caller's.
func definedCount(in *hlo.Instruction, paramDefines bool) int {
	n := in.Shape.NumSubshapes()
	switch in.Opcode {
	case hlo.OpParameter:
		if paramDefines {
			return n
		}
		return 0
	case hlo.OpBitcast, hlo.OpDomain, hlo.OpOptimizationBarrier, hlo.OpAddDependency, hlo.OpAllReduceDone,
		hlo.OpAsyncUpdate, hlo.OpGetTupleElement, hlo.OpCall, hlo.OpWhile, hlo.OpConditional,
		hlo.OpCopyDone, hlo.OpAllGatherDone, hlo.OpCollectivePermuteDone, hlo.OpAsyncDone:
		return 0
	case hlo.OpTuple, hlo.OpCopy:
		return 1
	case hlo.OpCopyStart:
		if in.Shape.IsTuple() && len(in.Shape.Tuple) >= 2 {
			lo, hi := subtree(in.Shape, 1)
			return n - (hi - lo)
		}
	case hlo.OpAllGatherStart, hlo.OpCollectivePermuteStart, hlo.OpAsyncStart:
		if in.Shape.IsTuple() && len(in.Shape.Tuple) > 0 {
			lo, hi := subtree(in.Shape, 0)
			return n - (hi - lo)
		}
	}
	return n
}

// sortPositions puts the defining position first, keeping the others in
// the order found.
func sortPositions(v *Value) {
	for i, p := range v.Positions {
		if p.Inst == v.Inst && p.Index.Equal(v.Index) {
			if i > 0 {
				def := v.Positions[i]
				copy(v.Positions[1:i+1], v.Positions[:i])
				v.Positions[0] = def
			}
			return
		}
	}
}

// timeline is a schedule laid out in time: the flattened sequence, each
// instruction's time and computation's span, and each value's range. It
// is computed without touching the analysis, so that several schedules
// can be scored at once.
type timeline struct {
	seq       []*hlo.Instruction
	times     []int // by instruction ID, -1 when not scheduled
	spans     map[*hlo.Computation]Span
	ranges    []Range // by value ID
	scheduled []bool
	endPos    []Position
}

func (tl *timeline) time(in *hlo.Instruction) int {
	if in.ID < 0 || in.ID >= len(tl.times) {
		return -1
	}
	return tl.times[in.ID]
}

// layout flattens s as XLA's HloLiveRange does (before a call,
// conditional or async-start its called computations; for a while, the
// condition, then the body, then the while itself) and computes every
// value's live range (CalculateBufferStartEndMap), then chains the ranges
// of values that share a buffer (NormalizeAliasedBuffers).
func (a *Analysis) layout(s *Schedule) *timeline {
	tl := &timeline{times: make([]int, a.Module.NumInstructions()), spans: map[*hlo.Computation]Span{},
		ranges: make([]Range, len(a.Values)), scheduled: make([]bool, len(a.Values)), endPos: make([]Position, len(a.Values))}
	for i := range tl.times {
		tl.times[i] = -1
	}
	var walk func(c *hlo.Computation)
	walk = func(c *hlo.Computation) {
		start := len(tl.seq)
		for _, in := range s.Sequence(c) {
			switch in.Opcode {
			case hlo.OpCall, hlo.OpConditional, hlo.OpAsyncStart:
				for _, callee := range in.Callees() {
					walk(callee)
				}
			case hlo.OpWhile:
				walk(in.Condition())
				walk(in.Body())
			}
			tl.times[in.ID] = len(tl.seq)
			tl.seq = append(tl.seq, in)
		}
		tl.spans[c] = Span{start, len(tl.seq)}
	}
	walk(a.Module.Entry)

	end := len(tl.seq)
	entry := a.Module.Entry
	aliasedParam := map[[2]int64]bool{}
	for _, al := range a.Module.InputOutputAlias {
		if o, ok := ordinalOf(paramShape(entry, al.Param), al.ParamIndex); ok {
			aliasedParam[[2]int64{al.Param, int64(o)}] = true
		}
	}
	for _, v := range a.Values {
		def := v.Inst
		t := tl.time(def)
		if t < 0 {
			continue // thread-local or otherwise outside the flattened schedule
		}
		start := t
		if def.Opcode == hlo.OpParameter {
			start = tl.spans[def.Parent].Start
		}
		last := start
		endPos := v.Positions[0]
		// Positions: a position at a computation's root counts at that
		// computation's span end.
		for _, p := range v.Positions {
			var pt int
			if p.Inst.IsRoot() {
				span, ok := tl.spans[p.Inst.Parent]
				if !ok {
					continue
				}
				pt = span.End
			} else {
				if pt = tl.time(p.Inst); pt < 0 {
					continue
				}
			}
			if pt > last {
				last = pt
				endPos = p
			}
		}
		// Uses: a call's use is ignored (its callee is flattened in); a
		// while's use moves to the body parameter, so the init value dies
		// as the body starts.
		for _, u := range v.Uses {
			used := u.Inst
			if used.Opcode == hlo.OpCall {
				continue
			}
			if used.Opcode == hlo.OpWhile {
				if b := used.Body(); b != nil && len(b.Params) > 0 && b.Params[0] != nil {
					used = b.Params[0]
				}
			}
			if ut := tl.time(used); ut >= 0 {
				last = max(last, ut)
			}
		}
		// Entry parameters that no output aliases live to the end.
		if def.Opcode == hlo.OpParameter && def.Parent == entry &&
			!aliasedParam[[2]int64{def.ParameterNumber, int64(ordinal(def.Shape, v.Index))}] {
			last = end
		}
		tl.ranges[v.ID] = Range{start, last}
		tl.scheduled[v.ID] = true
		tl.endPos[v.ID] = endPos
	}
	// Normalize: values of one buffer get disjoint, chained ranges.
	var vs []*Value
	for _, b := range a.Buffers {
		if len(b.Values) < 2 {
			continue
		}
		vs = vs[:0]
		for _, v := range b.Values {
			if tl.scheduled[v.ID] {
				vs = append(vs, v)
			}
		}
		sort.Slice(vs, func(i, j int) bool {
			ri, rj := tl.ranges[vs[i].ID], tl.ranges[vs[j].ID]
			if ri.Start != rj.Start {
				return ri.Start < rj.Start
			}
			if ri.End != rj.End {
				return ri.End < rj.End
			}
			return vs[i].ID < vs[j].ID
		})
		for i := 0; i+1 < len(vs); i++ {
			r1, r2 := &tl.ranges[vs[i].ID], &tl.ranges[vs[i+1].ID]
			r2.End = max(r1.End, r2.End)
			r1.End = min(r1.End, r2.Start)
		}
	}
	return tl
}

// install makes tl the analysis's current layout.
func (a *Analysis) install(s *Schedule, tl *timeline) {
	a.Schedule = s
	a.Sequence = tl.seq
	a.times = tl.times
	a.Spans = tl.spans
	for _, v := range a.Values {
		v.Range, v.Scheduled, v.EndPosition = tl.ranges[v.ID], tl.scheduled[v.ID], tl.endPos[v.ID]
	}
}

func paramShape(c *hlo.Computation, n int64) hlo.Shape {
	if n < 0 || n >= int64(len(c.Params)) || c.Params[n] == nil {
		return hlo.Shape{}
	}
	return c.Params[n].Shape
}
