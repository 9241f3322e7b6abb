package liveness

import (
	"context"
	"fmt"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// Analysis is the result of Analyze: the values and buffers of a module,
// the flattened schedule and every value's live range.
type Analysis struct {
	Module *hlo.Module
	// Kinds classifies every computation, indexed by hlo.Computation.ID.
	Kinds []CompKind
	// Schedule is the per-computation order the analysis used.
	Schedule *Schedule
	// Sequence is the flattened schedule: time t runs Sequence[t].
	Sequence []*hlo.Instruction
	// Spans gives each flattened computation's [Start, End) in time, indexed
	// by hlo.Computation.ID; End is the time after its last instruction. A
	// computation outside the flattened schedule has Span{-1, -1}.
	Spans []Span
	// Values in ID order; Buffers in ID order.
	Values  []*Value
	Buffers []*Buffer
	// Search is what the search that chose Schedule found (the best,
	// search and optimal schedulers through schedule.Apply), or nil.
	Search *SearchReport

	parallelRoots []*hlo.Computation
	settings      Settings
	// excluded marks, by computation ID, the computations on execution
	// threads the settings leave out (nil: none); asyncExcluded reports
	// the async ops whose thread is left out (threads.go).
	excluded      []bool
	asyncExcluded func(*hlo.Instruction) bool
	callers       [][]*hlo.Instruction // by computation ID
	tabs          []*shapeTable        // by instruction ID, tuple shapes only
	slots         []*Value             // value at each (instruction, subshape) slot
	times         []int                // time of each instruction by ID, -1 if not in Sequence
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

	// XLARules selects XLA's live-range rules (settings.go); the zero
	// value takes those of the context of the analysis (WithSettings),
	// which default to the current.
	XLARules Rules
	// ExecutionThreads limits the analysis to the computations on these
	// threads (threads.go); empty takes the context's, which default to
	// every thread.
	ExecutionThreads []string

	// numbering, when set, gives the XLA IDs of values that are not phis
	// (tests set it from an XLA dump; see valueOrder for why the text alone
	// cannot give them all).
	numbering func(in *hlo.Instruction, ix hlo.ShapeIndex) (int, bool)
}

// Analyze computes the values, buffers and live ranges of m as XLA's
// HloDataflowAnalysis, HloAliasAnalysis and HloLiveRange (module-scoped)
// do. It renumbers m's instructions (IDs are derived data). Sequentially
// called computations must each have one call site (XLA flattens the call
// graph before buffer assignment); hlo.FlattenCallGraph makes it so.
// Errors match this package's sentinels under errors.Is (see Error).
//
// Analyze verifies m first (hlo.Verify) and takes any module: an invalid
// one, one with an opcode this package does not know, or one with a shape
// whose size cannot be computed (an unbounded dimension) is refused with
// positioned errors (an hlo.ErrorList), never planned on guesses; one with
// more than MaxValues subshape positions is refused too.
func Analyze(m *hlo.Module, opts Options) (*Analysis, error) {
	return analyzeModule(context.Background(), m, opts, checkAll, true)
}

// MaxValues bounds the subshape positions (one per instruction and
// subshape, tuples included) of a module Analyze accepts. The analysis
// keeps a few hundred bytes per position, so the bound keeps a hostile
// module (a tuple nested thousands deep copied level by level has a
// number of positions quadratic in its depth) to a few gigabytes; the
// largest corpus module (Mixtral 8x7B) has 46 thousand.
const MaxValues = 1 << 23

// inputCheck says how much of checkInput a module still needs.
type inputCheck uint8

const (
	checkAll      inputCheck = iota
	checkVerified            // hlo.Verify passed and m kept valid since: the rest of checkInput
	checkNone                // checkInput passed and only this package's own rewrites (copy insertion) followed

	// checkUnbounded, or'ed into checkAll or checkVerified, lets
	// unbounded dynamic shapes through (AllowUnbounded).
	checkUnbounded inputCheck = 1 << 7
)

// analyzeModule is Analyze with the checks check asks for; without lay
// (and without opts.Schedule) it leaves out the live ranges, for a caller
// that lays the analysis out itself (layoutDefault, Reschedule, the schedulers of package schedule).
//
// It stops, returning ctx's error, once ctx is done: between its stages,
// and within the dataflow's fixed point.
func analyzeModule(ctx context.Context, m *hlo.Module, opts Options, check inputCheck, lay bool) (*Analysis, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if check != checkNone {
		if err := checkInputVerified(ctx, m, check); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.Renumber()
	if n := m.NumValues(); n > MaxValues {
		return nil, newError(ErrTooManyValues, m, m.Pos, fmt.Sprintf("liveness: module %s has %d subshape positions (values before aliasing), more than the %d this package analyses; deeply nested tuples passed whole through copies multiply them", m.Name, n, MaxValues), nil)
	}
	kinds, roots, err := classify(m)
	if err != nil {
		return nil, err
	}
	if err := checkFlat(m, kinds); err != nil {
		return nil, err
	}
	a := &Analysis{Module: m, Kinds: kinds, parallelRoots: roots, tabs: make([]*shapeTable, m.NumInstructions())}
	a.settle(ctx, opts)
	if err := a.runDataflow(ctx, opts.numbering); err != nil {
		return nil, err
	}
	a.buildBuffers()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Schedule != nil {
		if err := a.Reschedule(opts.Schedule); err != nil {
			return nil, err
		}
	} else if lay {
		if err := a.layoutDefault(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// layoutDefault lays the analysis out in the module's own order, or in
// post-order when the text has forward references and is not an order.
func (a *Analysis) layoutDefault() error {
	s := ModuleOrder(a.Module)
	if s.Validate(a.Module, a.Kinds) != nil {
		s = PostOrder(a.Module)
	}
	return a.Reschedule(s)
}

// Reschedule recomputes the flattened sequence and every live range for
// schedule s; values and buffers do not depend on the schedule.
func (a *Analysis) Reschedule(s *Schedule) error {
	if err := s.Validate(a.Module, a.Kinds); err != nil {
		return err
	}
	a.Install(s, a.Layout(s))
	return nil
}

// checkFlat reports a sequential computation called from more than one site.
func checkFlat(m *hlo.Module, kinds []CompKind) error {
	sites := make([]*hlo.Instruction, len(m.Computations)) // by callee ID
	for _, c := range m.Computations {
		if kinds[c.ID] != Sequential {
			continue
		}
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpCall, hlo.OpWhile, hlo.OpConditional, hlo.OpAsyncStart:
			default:
				continue
			}
			for _, callee := range in.Callees() {
				if callee == nil {
					continue
				}
				if prev := sites[callee.ID]; prev != nil && prev != in {
					return newError(ErrNotFlat, m, in.Pos, fmt.Sprintf("liveness: computation %s is called from %s and %s; flatten the call graph first (hlo.FlattenCallGraph)", callee.Name, prev.Name, in.Name), nil)
				}
				sites[callee.ID] = in
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
	o, ok := a.ordinalOf(in, ix)
	if !ok {
		return nil
	}
	return a.slots[in.FirstValue+o]
}

// SubshapeValues returns the value at each subshape of in's shape, in
// the order of hlo.Shape's subshapes (the same ordinals as
// hlo.Instruction.FirstValue), nil where in holds none (a fusion body).
// The slice is the analysis's own: read it, do not change it.
func (a *Analysis) SubshapeValues(in *hlo.Instruction) []*Value {
	return a.slots[in.FirstValue : in.FirstValue+in.Shape.NumSubshapes()]
}

// Callers returns the instructions that call c (one per call site: a
// sequential computation has at most one once the call graph is flat).
func (a *Analysis) Callers(c *hlo.Computation) []*hlo.Instruction { return a.callers[c.ID] }

// Time returns the time of in in the flattened schedule, or -1.
func (a *Analysis) Time(in *hlo.Instruction) int {
	if in == nil || in.ID < 0 || in.ID >= len(a.times) {
		return -1
	}
	return a.times[in.ID]
}

// EndTime returns the length of the flattened schedule (XLA's schedule_end_time).
func (a *Analysis) EndTime() int { return len(a.Sequence) }

// runDataflow computes the values (dataflow.go) and then every value's
// positions and uses.
func (a *Analysis) runDataflow(ctx context.Context, numbering func(*hlo.Instruction, hlo.ShapeIndex) (int, bool)) error {
	m := a.Module
	callers := callSites(m)
	d := &dataflow{a: a, m: m, kinds: a.Kinds, ctx: xlaContexts(m, callers), callers: callers,
		slots: make([]*Value, m.NumValues()), defined: make([]bool, m.NumValues()), phis: newPhiGraph()}
	d.initialize()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.propagate(ctx); err != nil {
		return err
	}
	d.optimizePhis()
	a.slots = d.slots
	a.callers = callers
	for id, v := range d.byID {
		if v != nil && !d.deleted[id] {
			a.Values = append(a.Values, v)
		}
	}
	if numbering != nil {
		for _, v := range a.Values {
			if id, ok := numbering(v.Inst, v.Index); ok && !v.IsPhi {
				v.XLAID = id
			}
		}
		sort.SliceStable(a.Values, func(i, j int) bool { return a.Values[i].XLAID < a.Values[j].XLAID })
	}
	for i, v := range a.Values {
		v.ID = i
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a.positionsAndUses(d)
	return nil
}

// positionsAndUses gives every value its positions, the defining one
// first and then the others in module order (XLA's HloDataflowAnalysis
// Run), and its uses as XLA's HloValue::ComputeUses derives them from the
// positions. Both live in two arrays shared by all values.
func (a *Analysis) positionsAndUses(d *dataflow) {
	npos := make([]int32, len(a.Values))
	eachPosition := func(f func(v *Value, in *hlo.Instruction, ord int)) {
		for _, c := range a.Module.Computations {
			if !d.holds(c) {
				continue
			}
			for _, in := range c.Instructions {
				n := in.Shape.NumSubshapes()
				for ord := 0; ord < n; ord++ {
					if v := a.slots[in.FirstValue+ord]; v != nil && v.Inst != in {
						f(v, in, ord)
					}
				}
			}
		}
	}
	total := len(a.Values)
	eachPosition(func(v *Value, _ *hlo.Instruction, _ int) { npos[v.ID]++; total++ })
	all := make([]Position, 0, total)
	for _, v := range a.Values {
		all = append(all, Position{Inst: v.Inst, Index: v.Index})
		v.Positions = all[len(all)-1 : len(all) : len(all)+int(npos[v.ID])]
		all = all[:len(all)+int(npos[v.ID])]
	}
	eachPosition(func(v *Value, in *hlo.Instruction, ord int) {
		v.Positions = append(v.Positions, Position{Inst: in, Index: a.indexAt(in, ord)})
	})
	entryRoot := a.Module.Entry.Root
	// uses calls f for each use of v, in XLA's order.
	uses := func(v *Value, f func(Use)) {
		for _, p := range v.Positions {
			for _, u := range p.Inst.Users {
				if !mayUseOperandValue(u, p.Index) && !(u.IsRoot() && hasPosition(v, u)) {
					continue
				}
				for k, o := range u.Operands {
					if o == p.Inst {
						f(Use{Inst: u, Operand: k, Index: p.Index})
					}
				}
			}
		}
	}
	nuses := 0
	for _, v := range a.Values {
		uses(v, func(Use) { nuses++ })
	}
	allUses := make([]Use, 0, nuses)
	for _, v := range a.Values {
		start := len(allUses)
		uses(v, func(u Use) { allUses = append(allUses, u) })
		v.Uses = allUses[start:len(allUses):len(allUses)]
		for _, p := range v.Positions {
			if p.Inst == entryRoot {
				v.LiveOut = true
			}
		}
	}
}

// hasPosition reports whether v appears at some index of in.
func hasPosition(v *Value, in *hlo.Instruction) bool {
	for _, p := range v.Positions {
		if p.Inst == in {
			return true
		}
	}
	return false
}

// Timeline is a schedule laid out in time (Layout): the flattened
// sequence, each instruction's time and computation's span, and each
// value's range. It is computed without touching the analysis, so that
// several schedules can be scored at once; Install makes one the
// analysis's own. The side tables are slices by dense ID. A scheduler
// that moves a stretch of the sequence may update them in place, as long
// as they stay what Layout would compute for the new order.
type Timeline struct {
	Seq       []*hlo.Instruction // time t runs Seq[t]
	Times     []int              // by instruction ID, -1 when not scheduled
	Spans     []Span             // by computation ID; Span{-1, -1} when not flattened
	Ranges    []Range            // by value ID, chained within each buffer
	Scheduled []bool             // by value ID: the value has a range
	EndPos    []Position         // by value ID: its end position (Value.EndPosition)
}

// flattened reports whether c is part of the flattened schedule.
func (tl *Timeline) flattened(c *hlo.Computation) bool {
	return tl.Spans[c.ID].Start >= 0
}

// Time returns the time of in, or -1 when it is not in the sequence.
func (tl *Timeline) Time(in *hlo.Instruction) int {
	if in == nil || in.ID < 0 || in.ID >= len(tl.Times) {
		return -1
	}
	return tl.Times[in.ID]
}

// Layout flattens s as XLA's HloLiveRange does and computes every value's
// live range (CalculateBufferStartEndMap), then chains the ranges of values
// that share a buffer (NormalizeAliasedBuffers).
//
// Flattening: before a call or a conditional come its called computations;
// before a while, its condition and then its body; before the first op of
// an async chain whose operands bind every parameter of the async
// computation (normally the async-start), that computation. Computations
// flattened inside an async computation belong to its async context.
//
// A value lives from its definition (a parameter from its computation's
// start; under the current rules, Rules2026, a value in an async context
// from the start of the computation that holds its chain) to the latest
// of: its definition's end (a computation's root lives to the
// computation's end; an instruction in an async context lives until the
// async-done of its chain), its positions (a position at
// a root counts at that computation's end) and its uses (a call's use is
// dropped, its callee being flattened in; a while's use moves to the
// body's parameter, so the init value dies as the body starts). Entry
// parameters that no output aliases live to the end of the program.
//
// Layout reads the analysis and changes nothing: Install makes the result
// the analysis's layout.
func (a *Analysis) Layout(s *Schedule) *Timeline {
	nc := len(a.Module.Computations)
	tl := &Timeline{Times: make([]int, a.Module.NumInstructions()), Spans: make([]Span, nc),
		Ranges: make([]Range, len(a.Values)), Scheduled: make([]bool, len(a.Values)), EndPos: make([]Position, len(a.Values))}
	for i := range tl.Times {
		tl.Times[i] = -1
	}
	for i := range tl.Spans {
		tl.Spans[i] = Span{-1, -1}
	}
	starts := make([]int, nc) // by computation ID
	asyncCtx := walkFlattened(a.Module, a.excluded, s.Sequence,
		func(c *hlo.Computation) { starts[c.ID] = len(tl.Seq) },
		func(in *hlo.Instruction) {
			tl.Times[in.ID] = len(tl.Seq)
			tl.Seq = append(tl.Seq, in)
		},
		func(c *hlo.Computation) { tl.Spans[c.ID] = Span{starts[c.ID], len(tl.Seq)} })

	end := len(tl.Seq)
	entry := a.Module.Entry
	aliasedParam := map[[2]int64]bool{}
	for _, al := range a.Module.InputOutputAlias {
		if p := paramOf(entry, al.Param); p != nil {
			if o, ok := a.ordinalOf(p, al.ParamIndex); ok {
				aliasedParam[[2]int64{al.Param, int64(o)}] = true
			}
		}
	}
	posTime := func(p Position) int {
		if p.Inst.IsRoot() {
			return tl.Spans[p.Inst.Parent.ID].End // -1 when not flattened
		}
		return tl.Time(p.Inst)
	}
	for _, v := range a.Values {
		def := v.Inst
		t := tl.Time(def)
		if t < 0 {
			continue // thread-local or otherwise outside the flattened schedule
		}
		c := def.Parent
		start := t
		if def.Opcode == hlo.OpParameter {
			start = tl.Spans[c.ID].Start
		}
		defEnd := t
		if def.IsRoot() {
			defEnd = tl.Spans[c.ID].End
		}
		if ctx := asyncCtx[c.ID]; ctx != nil {
			for _, site := range a.callers[ctx.ID] {
				done := asyncChainDone(site)
				if dt := tl.Time(done); done != nil && dt >= 0 {
					defEnd = max(defEnd, dt)
				} else {
					defEnd = max(defEnd, tl.Spans[c.ID].End)
				}
				if a.settings.XLARules.asyncStartsAtOuter() && site.Parent != nil && tl.flattened(site.Parent) {
					start = min(start, tl.Spans[site.Parent.ID].Start)
				}
			}
		}
		last, endPos := defEnd, v.Positions[0]
		for _, p := range v.Positions[1:] {
			if pt := posTime(p); pt > last {
				last, endPos = pt, p
			}
		}
		if def.Opcode == hlo.OpParameter && c == entry &&
			!aliasedParam[[2]int64{def.ParameterNumber, int64(v.ord)}] {
			last = end
		} else {
			for _, u := range v.Uses {
				used := u.Inst
				if used.Opcode == hlo.OpCall {
					if callee := used.ToApply(); callee != nil {
						if tl.flattened(callee) {
							continue
						}
					}
				}
				if used.Opcode == hlo.OpWhile {
					if b := used.Body(); b != nil && len(b.Params) > 0 && b.Params[0] != nil {
						if tl.flattened(b) {
							used = b.Params[0]
						}
					}
				}
				if ut := tl.Time(used); ut >= 0 {
					last = max(last, ut)
				}
			}
		}
		tl.Ranges[v.ID] = Range{start, last}
		tl.Scheduled[v.ID] = true
		tl.EndPos[v.ID] = endPos
	}
	a.extendAsync(tl)
	a.normalizeBuffers(tl)
	return tl
}

// extendAsync keeps the arrays an asynchronous operation reads (its
// operands') and writes (those its start defines) live until its done. In
// a well-formed module the dataflow already says so (the done uses the
// start's tuple); for one whose shapes do not carry the operands through,
// this keeps them live anyway.
func (a *Analysis) extendAsync(tl *Timeline) {
	for in := range a.asyncStarts() {
		td := tl.Time(asyncDone(in))
		if td < 0 {
			continue
		}
		extend := func(x *hlo.Instruction, definedOnly bool) {
			n := x.Shape.NumSubshapes()
			for ord := 0; ord < n; ord++ {
				v := a.slots[x.FirstValue+ord]
				if v != nil && !v.Shape.IsTuple() && tl.Scheduled[v.ID] && (!definedOnly || v.Inst == x) && tl.Ranges[v.ID].End < td {
					tl.Ranges[v.ID].End = td
				}
			}
		}
		for _, o := range in.Operands {
			extend(o, false)
		}
		extend(in, true)
	}
}

// normalizeBuffers gives the values of one buffer disjoint, chained
// ranges, as XLA's NormalizeAliasedBuffers: in (start, end, ID) order
// each range ends where the next begins, and the next extends to the
// end of the two.
func (a *Analysis) normalizeBuffers(tl *Timeline) {
	var vs []*Value
	for _, b := range a.Buffers {
		if len(b.Values) < 2 {
			continue
		}
		vs = vs[:0]
		for _, v := range b.Values {
			if tl.Scheduled[v.ID] {
				vs = append(vs, v)
			}
		}
		sort.Slice(vs, func(i, j int) bool {
			ri, rj := tl.Ranges[vs[i].ID], tl.Ranges[vs[j].ID]
			if ri.Start != rj.Start {
				return ri.Start < rj.Start
			}
			if ri.End != rj.End {
				return ri.End < rj.End
			}
			return vs[i].ID < vs[j].ID
		})
		for i := 0; i+1 < len(vs); i++ {
			r1, r2 := &tl.Ranges[vs[i].ID], &tl.Ranges[vs[i+1].ID]
			r2.End = max(r1.End, r2.End)
			r1.End = min(r1.End, r2.Start)
		}
	}
}

// firstFullyBound reports whether the async op in is the first of its
// chain that is fully bound (XLA's async::IsFirstFullyBound,
// hlo_instruction_utils.cc): its tuple's operands element {0} lists the
// async computation's parameters and its output (element {1} of a start
// or update, an async-done's own shape) the computation's result
// (AreOperandsAndOutputFullyBound, by ShapeUtil::Compatible), and the op
// before it in the chain is not. An async-start that binds everything, or
// the update or done that completes a late-binding chain.
func firstFullyBound(in *hlo.Instruction) bool {
	w := AsyncComputation(in)
	if w == nil || w.Root == nil || !fullyBound(in, w) {
		return false
	}
	if in.Opcode == hlo.OpAsyncStart || len(in.Operands) == 0 {
		return true
	}
	return !fullyBound(in.Operands[0], w)
}

// fullyBound is XLA's async::AreOperandsAndOutputFullyBound for the op x
// of a chain running w.
func fullyBound(x *hlo.Instruction, w *hlo.Computation) bool {
	var tuple, out hlo.Shape
	switch x.Opcode {
	case hlo.OpAsyncStart, hlo.OpAsyncUpdate:
		tuple = x.Shape
	case hlo.OpAsyncDone:
		if len(x.Operands) == 0 {
			return false
		}
		tuple, out = x.Operands[0].Shape, x.Shape
	default:
		return false
	}
	if !tuple.IsTuple() || len(tuple.Tuple) < 2 || !tuple.Tuple[0].IsTuple() {
		return false
	}
	if x.Opcode != hlo.OpAsyncDone {
		out = tuple.Tuple[1]
	}
	ops := tuple.Tuple[0].Tuple
	if len(ops) != len(w.Params) {
		return false
	}
	for i, p := range w.Params {
		if p == nil || !hlo.Compatible(ops[i], p.Shape) {
			return false
		}
	}
	return hlo.Compatible(out, w.Root.Shape)
}

// asyncDone returns the done of the asynchronous operation start begins
// (any kind: all-reduce-done, copy-done, async-done, ...), or nil.
func asyncDone(start *hlo.Instruction) *hlo.Instruction {
	cur := start
	for i := 0; cur != nil && i < 1<<16; i++ {
		var next *hlo.Instruction
		for _, u := range cur.Users {
			if len(u.Operands) > 0 && u.Operands[0] == cur && (u.Opcode == hlo.OpAsyncUpdate || u.Opcode.Has(hlo.AsyncDone)) {
				next = u
				break
			}
		}
		if next == nil || next.Opcode.Has(hlo.AsyncDone) {
			return next
		}
		cur = next
	}
	return nil
}

// asyncChainDone returns the async-done that ends the chain an async op
// belongs to, following users from an async-start or async-update.
func asyncChainDone(in *hlo.Instruction) *hlo.Instruction {
	for i := 0; in != nil && i < 1<<16; i++ {
		if in.Opcode == hlo.OpAsyncDone {
			return in
		}
		var next *hlo.Instruction
		for _, u := range in.Users {
			if (u.Opcode == hlo.OpAsyncUpdate || u.Opcode == hlo.OpAsyncDone) && len(u.Operands) > 0 && u.Operands[0] == in {
				next = u
				break
			}
		}
		in = next
	}
	return nil
}

// Install makes tl, the layout of s (Layout), the analysis's current
// layout: Schedule, Sequence, Spans and every value's Range, Scheduled and
// EndPosition. s must be a valid schedule (Schedule.Validate) of the
// analysed module; Reschedule checks that and installs.
func (a *Analysis) Install(s *Schedule, tl *Timeline) {
	a.Schedule = s
	a.Sequence = tl.Seq
	a.times = tl.Times
	a.Spans = tl.Spans
	for _, v := range a.Values {
		v.Range, v.Scheduled, v.EndPosition = tl.Ranges[v.ID], tl.Scheduled[v.ID], tl.EndPos[v.ID]
	}
}
