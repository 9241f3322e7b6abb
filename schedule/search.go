package schedule

// Search and Optimal: schedules below XLA's heuristics.
//
// XLA's DefaultMemoryScheduler runs three heuristics (list, DFS,
// post-order) and keeps the one whose schedule needs the least memory
// (HeuristicBest here, an emulation: it scores by the live peak, not by
// XLA's HeapSimulator::MinimumMemoryForModule, and considers the module's
// own order too). The order decides which
// buffers are live together, and so bounds every packing from below; the
// heuristics leave much of it on the table (on the corpus, search lowers
// the summed bound by 8.5%, and some modules by a quarter). Both
// schedulers start from the best heuristic and improve on it with the
// exact search of exact.go, on windows of one computation's order at a
// time (segment.go):
//
//   - warm start: list, DFS, post-order, the module's own order (and the
//     schedule the analysis is laid out under, if any) are each laid out
//     and scored by the module's LowerBound, the objective throughout; the
//     best that needs no further copies is the incumbent (for a module
//     XLA scheduled, its own order unless one is lower: below). An order
//     that needs copies of its own (liveness.Analysis.Interference) is
//     scored after them, on a clone, when it is XLA's choice or could
//     win; when it wins, or when every order needs copies, it is returned
//     (NeedsCopies) and Apply adds its copies and searches again from it;
//   - Search: while the budget lasts, the module's worst step is found and
//     a window of its computation's order around it (16, 32, ... 256
//     instructions, then the caller's order around the call) is searched
//     exactly for an order whose worst step is below it, its static bound
//     first telling when no order of it can be; a window found is taken in
//     place (applyWindow). A peak no window lowers ends the search;
//   - Optimal: Search (with its default budget, so Optimal is never
//     above it), then every computation of up to OptimalBlocks
//     instructions searched whole, exactly, innermost first as XLA
//     schedules them (larger ones only by their static bound), then
//     windows again with what is left;
//   - the result is laid out and scored by LowerBound itself. It is never
//     above the incumbent (the incumbent is kept unless LowerBound is
//     lower), nor above XLA's choice, HeuristicBest's schedule (among the
//     warm start's candidates, scored after its copies when it needs
//     them, and returned when it beats the search).
//
// A module with an order of its own. XLA never reschedules a module it
// scheduled (is_scheduled=true): buffer assignment takes the order it is
// given, and that order is what the user runs. Searching it again is
// hlomem's own lever, under its own rule: the module's order is what the
// search must beat.
//
//   - The warm start's incumbent is the module's own order; a heuristic
//     replaces it only with a lower bound (ties stay with it), and orders
//     that need further copies are not candidates (XLA's copies went in
//     before it scheduled; more would make another program).
//   - The lower bound is the search's objective, but what the user is
//     shown is the plan's total, which alignment, the packer and the
//     target's in-place rules move on their own: on jit_scan heuristic
//     orders tie the module's bound and their plan takes 225 MiB more.
//     Given Options.Cost (the plan's total, assign.TotalCost, as the
//     CLI's assign, run and report pass it), an order found replaces the
//     module's own only if its cost is no higher (a tie goes to the lower
//     bound). The result is then never above the module's own order, in
//     bound nor in cost; OwnOrder says when it is that order.
//
// Given Cost, Optimal also weighs its first phase's order (Search's, with
// Search's default budget) against its own, on any module, and returns
// the cheaper (a tie to the lower bound): a lower bound that the plan
// does not turn into a lower total is not worth a dearer plan, and the
// optimal what-if is then never above Search's. Either weighing, when it
// overrules the exact search, leaves the result unproven.
//
// Why the search is exact for the module's bound. The steps of a window
// are the module's steps in its stretch of time, and reordering it
// changes no other step (segment.go), so the worst step of the module is
// the larger of the window's worst step and the worst outside it. For a
// whole computation c, its stretch holds c's steps and those of the
// computations it calls, in their current orders. A callee d and its
// caller share only the values passed into d and out of it: the caller's
// buffers live across d's stretch add the same bytes to each of d's steps
// whatever d's order, so d's best order minimises d's own worst step; and
// whether a value passed in stays live after d depends on the caller's
// order only when an instruction of the caller that the call may run
// before or after reads it. Optimal searches d again in each such context
// (each of up to four such values kept or not) and keeps an order that is
// the best in all of them (contextRobust). Then the best order of each
// computation, taken innermost first, gives the least bound over the
// orders of all computations together, and Optimal reports the module
// proven optimal (Proven) when: every computation's search ended with
// F(empty) known or met its static bound, every callee's order is the
// best in every context, and the model's figure for the entry and for
// every callee's stretch is LowerBound's. "Optimal" is over the orders
// that need no further copies (those that keep each buffer's values in
// order and read each value before the next one of its buffer is
// written), the orders XLA's copy insertion leaves valid.
//
// Budgets. The budget is counted in expansions (an expansion whose steps
// visit many values counting as several, exact.go workPerExpansion), so
// a result is reproducible on any machine; the timeout (DefaultSearch-
// Timeout, DefaultOptimalTimeout: CPU time, see cutoff) is a safety net,
// and a search it cuts short says so (Stopped) and claims no proof.
import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Options configures RunSearch and RunOptimal (Apply and ByName pass it
// on). The zero value is the default of each.
type Options struct {
	// Budget bounds the work of the whole module in expansions (sets of
	// scheduled instructions the exact search expands; see exact.go). 0
	// means DefaultSearchBudget for Search and DefaultOptimalBudget for
	// Optimal, whose budget comes on top of a first phase that is Search
	// with its default budget; a negative budget runs only the warm start.
	Budget int64
	// Timeout caps the CPU time the process spends while the search runs
	// (wall-clock time where the system does not report CPU time), a
	// safety net on slow machines: a result it cuts short depends on the
	// machine's speed, but not on how busy it is. 0 means
	// DefaultSearchTimeout or DefaultOptimalTimeout; negative, none.
	Timeout time.Duration
	// Cost, when set, measures what the user is shown of an order (the
	// total of its buffer assignment: assign.TotalCost): for a module
	// with an order of its own (is_scheduled), the order found replaces
	// it only if its Cost is no higher, and Optimal's order replaces its
	// first phase's (Search's) only if its Cost is no higher (see the top
	// of the file). nil compares lower bounds only.
	Cost func(*liveness.Analysis) (int64, error)
}

// Defaults of Options.
const (
	DefaultSearchBudget   = 200_000
	DefaultOptimalBudget  = 2_000_000
	DefaultSearchTimeout  = 20 * time.Second
	DefaultOptimalTimeout = 60 * time.Second
	// OptimalBlocks is the largest computation (in instructions) Optimal
	// searches whole; larger ones get windows only, and their static
	// bound (up to 4096 instructions) as the only proof.
	OptimalBlocks = 512
)

// SearchResult is what Search and Optimal found.
type SearchResult struct {
	Schedule *liveness.Schedule
	// SearchReport is what the analysis laid out under Schedule carries
	// (liveness.Analysis.Search, through Apply): LowerBound, the module's
	// LowerBound under Schedule; Start, Heuristic and XLABest, the
	// incumbent's and XLA's choice's; Proven and Why (Optimal); the work
	// done; and OwnOrder, that Schedule is the module's own order (a
	// module XLA scheduled), which no order found beat: none had a lower
	// bound, or, with Options.Cost, none that did cost no more.
	liveness.SearchReport
	// NeedsCopies reports that Schedule is a heuristic's order that needs
	// copies of its own (liveness.Analysis.Interference): either its
	// bound with them, LowerBound, beat every order that needs none, or
	// every heuristic's order needs copies and it is XLA's choice
	// (LowerBound is then its bound before them). Apply adds them and
	// searches again.
	NeedsCopies bool
	// Candidates are the heuristics' schedules, scored.
	Candidates []Candidate
}

// RunSearch returns the scalable search's schedule (see the top of the
// file) and leaves a analysed under it. It is the scheduler Search (and
// Best) names.
func RunSearch(ctx context.Context, a *liveness.Analysis, opts Options) (*SearchResult, error) {
	if opts.Budget == 0 {
		opts.Budget = DefaultSearchBudget
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultSearchTimeout
	}
	return runSearch(ctx, a, opts, false)
}

// RunOptimal returns the exact search's schedule (see the top of the
// file), proven optimal when Proven is set, and leaves a analysed under
// it. It is the scheduler Optimal names.
func RunOptimal(ctx context.Context, a *liveness.Analysis, opts Options) (*SearchResult, error) {
	if opts.Budget == 0 {
		opts.Budget = DefaultOptimalBudget
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultOptimalTimeout
	}
	return runSearch(ctx, a, opts, true)
}

// searcher is the state of one Search or Optimal run.
type searcher struct {
	ctx      context.Context
	a        *liveness.Analysis
	em       *liveness.Events
	sched    *liveness.Schedule
	tl       *liveness.Timeline
	steps    []int64 // LowerBoundCurve's figure at every step
	peak     int64
	budget   int64 // left
	used     int64
	deadline cutoff
	stopped  bool
	// callerSegs caches callerSegment (looked up by key only); byID
	// serves instByID.
	callerSegs map[*hlo.Computation]*segment
	byID       []*hlo.Instruction
}

func runSearch(ctx context.Context, a *liveness.Analysis, opts Options, exact bool) (*SearchResult, error) {
	name := Search
	if exact {
		name = Optimal
	}
	res := &SearchResult{}
	inc, fallback, fallbackLB, err := warmStart(a, res)
	if err != nil {
		return nil, err
	}
	useFallback := func(why string) (*SearchResult, error) {
		// A heuristic order that needs copies of its own does better,
		// once they are in: return it (the pipeline adds the copies and
		// may search again from there).
		out := liveness.NewSchedule(name)
		for _, c := range a.Module.Computations {
			out.Set(c, fallback.Sequence(c))
		}
		a.Install(out, a.Layout(out))
		res.Schedule, res.LowerBound, res.Why, res.NeedsCopies = out, fallbackLB, why, true
		if fallbackLB < 0 {
			res.LowerBound = a.LowerBound(nil).Bytes // before its copies
		}
		return res, nil
	}
	if inc == nil {
		if fallback == nil {
			s, _, err := HeuristicBest(a)
			if err != nil {
				return nil, err
			}
			res.Schedule, res.Why, res.NeedsCopies = s, "no heuristic order settles", true
			res.LowerBound = a.LowerBound(nil).Bytes
			return res, nil
		}
		return useFallback("every heuristic order needs further copies")
	}
	st := &searcher{ctx: ctx, a: a, em: a.Events(), budget: opts.Budget}
	st.deadline = newCutoff(opts.Timeout)
	st.setSchedule(inc)
	proof := proofState{ok: exact}
	var searched *liveness.Schedule // Optimal's first phase: Search's order
	if opts.Budget > 0 {
		if exact {
			// Search first, with its own default budget (so Optimal is
			// never above Search): a better incumbent prunes the exact
			// search. Then every computation whole, with Optimal's budget;
			// then windows again with what is left.
			st.budget = DefaultSearchBudget
			st.windows()
			searched = st.sched
			st.budget = opts.Budget
			st.stopped = false
			st.wholeComputations(&proof)
			if !proof.ok {
				st.windows()
			}
		} else {
			st.windows()
		}
	} else {
		proof.fail("no budget")
	}
	out := liveness.NewSchedule(name)
	for _, c := range a.Module.Computations {
		if seq, ok := st.sched.Lookup(c); ok {
			out.Set(c, seq)
		}
	}
	tl := a.Layout(out)
	a.Install(out, tl)
	lb := a.LowerBound(nil).Bytes
	if lb >= res.Start {
		// No better than the incumbent (the windows may have lowered
		// steps below the peak without lowering the peak): keep the
		// incumbent's order, which keeps outputs stable. Above it, the
		// model promised better and LowerBound disagrees: say so.
		if lb > res.Start {
			proof.fail("the search's figure was not LowerBound's")
		}
		out = inc
		out.Name = name
		a.Install(out, a.Layout(out))
		lb = res.Start
	}
	res.Schedule, res.LowerBound = out, lb
	res.Expansions, res.Stopped = st.used, st.stopped
	if fallback != nil && fallbackLB < lb {
		return useFallback("a heuristic order with copies of its own does better")
	}
	// The plan's cost has the last word between the module's own order
	// and the orders found, and between Optimal's order and its first
	// phase's (Search's).
	own := ownCandidate(a, res.Candidates)
	var ownS *liveness.Schedule
	ownLB := int64(-1)
	if own >= 0 {
		ownS, ownLB = res.Candidates[own].Schedule, res.Candidates[own].LowerBound
	}
	if opts.Cost != nil && (own >= 0 && lb < ownLB || searched != nil && !sameOrder(a, searched, out)) {
		s, err := cheapest(a, opts.Cost, ownS, []*liveness.Schedule{out, searched}, name)
		if err != nil {
			return nil, err
		}
		if s != out {
			proof.fail("the plan of another order costs less (Options.Cost)")
		}
		res.Schedule, res.LowerBound = s, a.LowerBound(nil).Bytes
	}
	res.OwnOrder = own >= 0 && res.LowerBound == ownLB
	if exact {
		if proof.ok && proof.predicted != res.LowerBound {
			proof.fail(fmt.Sprintf("the model's figure %d is not LowerBound's %d", proof.predicted, res.LowerBound))
		}
		res.Proven, res.Why = proof.ok, proof.why
	}
	return res, nil
}

// proofState collects whether Optimal's result is proven.
type proofState struct {
	ok        bool
	why       string
	predicted int64 // the model's figure for the module, from the entry's search
}

func (p *proofState) fail(why string) {
	if p.ok {
		p.ok, p.why = false, why
	}
}

// warmStart scores the heuristics, and the schedule a is laid out under
// if any, by LowerBound, and returns the best schedule that needs no
// further copies (nil when none) and the best of all once their copies
// are in place (fallback, nil when it is the first), filling res's Start,
// Heuristic, XLABest and Candidates. It leaves a analysed under
// HeuristicBest's schedule.
func warmStart(a *liveness.Analysis, res *SearchResult) (inc, fallback *liveness.Schedule, fallbackLB int64, err error) {
	current := a.Schedule
	xla, cands, err := HeuristicBest(a)
	if err != nil {
		return nil, nil, 0, err
	}
	if current != nil && current.Validate(a.Module, a.Kinds) == nil {
		cands = append(cands, Candidate{Name: current.Name, Schedule: current})
	}
	res.Start, fallbackLB = -1, -1
	for i := range cands {
		c := &cands[i]
		a.Install(c.Schedule, a.Layout(c.Schedule))
		c.LowerBound = a.LowerBound(nil).Bytes
		c.NeedsCopies = len(a.Interference()) > 0
		c.AfterCopies = c.LowerBound
	}
	// A module XLA scheduled starts from its own order, which another
	// leaves only with a lower bound (ties stay with it).
	own := ownCandidate(a, cands)
	if own >= 0 {
		inc, res.Start, res.Heuristic = cands[own].Schedule, cands[own].LowerBound, cands[own].Name
	}
	for i := range cands {
		c := &cands[i]
		if !c.NeedsCopies && (inc == nil || c.LowerBound < res.Start) {
			inc, res.Start, res.Heuristic = c.Schedule, c.LowerBound, c.Name
		}
	}
	// An order that needs copies is scored after them (on a copy of the
	// module: costly) when it is XLA's choice, which the result must not
	// be above, or when its bound before them beats every order that
	// needs none. When every order needs copies, none is: XLA's choice is
	// returned for the pipeline to add its copies and search on from it.
	// A module with its own order takes none of them: its copies were
	// inserted before XLA scheduled it, and further ones would make it
	// another program than the one its own order is compared with.
	for i := range cands {
		c := &cands[i]
		if !c.NeedsCopies {
			continue
		}
		c.AfterCopies = -1
		if inc == nil {
			if c.Schedule == xla {
				fallback, fallbackLB = c.Schedule, -1
			}
			continue
		}
		if c.Schedule != xla && (own >= 0 || c.LowerBound >= res.Start) {
			continue
		}
		if lb, err := boundAfterCopies(a, c.Schedule); err == nil {
			c.AfterCopies = lb // else its copies do not settle: not a candidate
		}
		if own < 0 && c.AfterCopies >= 0 && (fallback == nil || c.AfterCopies < fallbackLB) {
			fallback, fallbackLB = c.Schedule, c.AfterCopies
		}
	}
	for _, c := range cands {
		if c.Schedule == xla {
			res.XLABest = c.AfterCopies
		}
	}
	res.Candidates = cands
	a.Install(xla, a.Layout(xla))
	if inc != nil {
		s := liveness.NewSchedule(inc.Name)
		for _, c := range a.Module.Computations {
			s.Set(c, inc.Sequence(c))
		}
		inc = s
	}
	return inc, fallback, fallbackLB, nil
}

// cheapest returns, named name, the order of least cost among the
// module's own order (own, nil when it has none) and the orders found
// (nil ones skipped; with own, only those whose bound is below its); a
// cost tie goes to the lower bound, then to own and the earlier found. It
// leaves a analysed under the order returned.
func cheapest(a *liveness.Analysis, cost func(*liveness.Analysis) (int64, error), own *liveness.Schedule, found []*liveness.Schedule, name string) (*liveness.Schedule, error) {
	var best *liveness.Schedule
	var bestLB, bestCost int64
	ownLB := int64(-1)
	consider := func(s *liveness.Schedule) error {
		a.Install(s, a.Layout(s))
		lb := a.LowerBound(nil).Bytes
		if ownLB >= 0 && lb >= ownLB {
			return nil
		}
		c, err := cost(a)
		if err != nil {
			return fmt.Errorf("schedule: the cost of the %s order: %w", s.Name, err)
		}
		if best == nil || c < bestCost || c == bestCost && lb < bestLB {
			best, bestLB, bestCost = s, lb, c
		}
		return nil
	}
	if own != nil {
		s := liveness.NewSchedule(name)
		for _, c := range a.Module.Computations {
			s.Set(c, own.Sequence(c))
		}
		if err := consider(s); err != nil {
			return nil, err
		}
		ownLB = bestLB
	}
	for i, s := range found {
		if s == nil || slices.ContainsFunc(found[:i], func(t *liveness.Schedule) bool { return t != nil && sameOrder(a, s, t) }) {
			continue
		}
		if err := consider(s); err != nil {
			return nil, err
		}
	}
	if a.Schedule != best {
		a.Install(best, a.Layout(best))
	}
	best.Name = name
	return best, nil
}

// sameOrder reports whether s and t order every computation of a's
// module alike.
func sameOrder(a *liveness.Analysis, s, t *liveness.Schedule) bool {
	for _, c := range a.Module.Computations {
		if !slices.Equal(s.Sequence(c), t.Sequence(c)) {
			return false
		}
	}
	return true
}

// ownCandidate returns the index among cands of the module's own order
// when the module has one (XLA scheduled it: is_scheduled) and it needs
// no further copies, and -1 otherwise.
func ownCandidate(a *liveness.Analysis, cands []Candidate) int {
	if !a.Module.IsScheduled {
		return -1
	}
	for i, c := range cands {
		if c.Name == Keep && !c.NeedsCopies {
			return i
		}
	}
	return -1
}

// boundAfterCopies returns the lower bound of a's module under s once
// the copies s needs are in place (liveness.RepairInterference), computed on a
// copy of the module.
func boundAfterCopies(a *liveness.Analysis, s *liveness.Schedule) (int64, error) {
	m2 := a.Module.Clone()
	byID := make([]*hlo.Instruction, m2.NumInstructions())
	for _, c := range m2.Computations {
		for _, in := range c.Instructions {
			if in.ID >= 0 && in.ID < len(byID) {
				byID[in.ID] = in
			}
		}
	}
	s2 := liveness.NewSchedule(s.Name)
	for i, c := range a.Module.Computations {
		seq := s.Sequence(c)
		seq2 := make([]*hlo.Instruction, len(seq))
		for k, in := range seq {
			seq2[k] = byID[in.ID]
		}
		s2.Set(m2.Computations[i], seq2)
	}
	// The copy is analysed under a's rules and threads.
	ctx := liveness.WithSettings(context.Background(), a.Settings())
	a2, err := liveness.AnalyzeUnscheduled(ctx, m2, liveness.CheckNone)
	if err != nil {
		return 0, err
	}
	if err := a2.Reschedule(s2); err != nil {
		return 0, err
	}
	a2, _, err = liveness.RepairInterference(ctx, m2, a2)
	if err != nil {
		return 0, err
	}
	return a2.LowerBound(nil).Bytes, nil
}

// setSchedule makes s the searcher's schedule and lays it out.
func (st *searcher) setSchedule(s *liveness.Schedule) {
	st.sched = s
	st.tl = st.a.Layout(s)
	st.a.Install(s, st.tl)
	curve := st.a.LowerBoundCurve(nil, nil)
	st.steps = make([]int64, len(curve))
	for t, c := range curve {
		st.steps[t] = c.Bytes()
	}
	st.setPeak()
}

func (st *searcher) setPeak() {
	st.peak = 0
	for _, x := range st.steps {
		st.peak = max(st.peak, x)
	}
}

// applyWindow takes order for window s, updating the layout in place:
// the window's steps are rearranged block by block (their computations'
// spans move with them), the ranges of the values with an event in the
// window are resolved again, and the window's steps take the model's
// figures (steps, in the new order), which are LowerBound's: nothing
// else changes. (One thing outside could: the end position of a value
// that ends after the window, when it is among positions in the window
// that no constraint orders, decides a takeover after the window; a
// window keeps those positions in order, and a whole computation cannot
// hold them, so that is only a safety net.)
func (st *searcher) applyWindow(s *segment, order []int32, steps []int64) {
	st.sched = st.with(s.c, s.sequence(order))
	for id := range s.vals {
		if s.tracked[id] >= 0 && s.vals[id].post {
			st.setSchedule(st.sched) // not in a window: buildOrder orders them
			return
		}
	}
	tl := st.tl
	old := slices.Clone(tl.Seq[s.T0:s.T1])
	pos := s.T0
	for _, b := range order {
		from := int(s.base[b])
		delta := pos - (s.T0 + from)
		copy(tl.Seq[pos:], old[from:from+int(s.blen[b])])
		for _, d := range s.inner[b] {
			tl.Spans[d].Start += delta
			tl.Spans[d].End += delta
		}
		pos += int(s.blen[b])
	}
	for u := s.T0; u < s.T1; u++ {
		tl.Times[tl.Seq[u].ID] = u
	}
	// The values with an event in the window, then their buffers'
	// chains, as Layout makes them.
	for id := range s.vals {
		v := s.vals[id].v
		r, ep := st.em.Resolve(tl, v.ID)
		tl.Ranges[v.ID], tl.EndPos[v.ID] = r, v.Positions[ep]
	}
	var vs []*liveness.Value
	for _, sb := range s.bufs {
		if len(sb.b.Values) < 2 {
			continue
		}
		vs = vs[:0]
		for _, v := range sb.b.Values {
			if tl.Scheduled[v.ID] {
				vs = append(vs, v)
			}
		}
		liveness.SortByRange(vs, tl.Ranges)
		for i := 0; i+1 < len(vs); i++ {
			r1, r2 := &tl.Ranges[vs[i].ID], &tl.Ranges[vs[i+1].ID]
			r2.End = max(r1.End, r2.End)
			r1.End = min(r1.End, r2.Start)
		}
	}
	copy(st.steps[s.T0:s.T1], steps)
	st.setPeak()
}

// with returns the schedule with c's sequence replaced.
func (st *searcher) with(c *hlo.Computation, seq []*hlo.Instruction) *liveness.Schedule {
	s := liveness.NewSchedule(st.sched.Name)
	for _, d := range st.a.Module.Computations {
		if x, ok := st.sched.Lookup(d); ok {
			s.Set(d, x)
		}
	}
	s.Set(c, seq)
	return s
}

// exactOpts returns the options of the next exact search, with at most
// cap expansions of the budget left.
func (st *searcher) exactOpts(cap int64, floor int64) (exactOptions, bool) {
	if st.budget <= 0 || st.stopped {
		return exactOptions{}, false
	}
	if st.ctx.Err() != nil || st.deadline.passed() {
		st.stopped = true
		return exactOptions{}, false
	}
	return exactOptions{Budget: min(cap, st.budget), Deadline: st.deadline, Floor: floor}, true
}

// spend charges an exact search's work to the budget.
func (st *searcher) spend(r exactResult, o exactOptions) {
	st.used += r.Expansions
	st.budget -= r.Expansions
	if !r.Exhausted && (o.Budget >= st.budget+r.Expansions || o.Deadline.passed()) {
		st.stopped = true
	}
}

func identity(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// wholeComputations searches every computation of up to OptimalBlocks
// instructions whole, callees first (Optimal), and records in proof
// whether the result is proven.
func (st *searcher) wholeComputations(proof *proofState) {
	a := st.a
	entry := a.Module.Entry
	var comps []*hlo.Computation
	for _, c := range a.Module.ComputationPostOrder() {
		if a.Kinds[c.ID] == liveness.Sequential && st.tl.Spans[c.ID].Start >= 0 && len(st.sched.Sequence(c)) > 0 {
			comps = append(comps, c)
		}
	}
	for i, c := range comps {
		n := len(st.sched.Sequence(c))
		if n > 4096 {
			proof.fail(fmt.Sprintf("computation %s has %d instructions, more than the %d searched whole", c.Name, n, OptimalBlocks))
			continue
		}
		s, ok := newSegment(a, st.em, st.tl, st.sched, st.steps, c, 0, n)
		if !ok {
			proof.fail(fmt.Sprintf("computation %s: its order needs further copies", c.Name))
			continue
		}
		floor := int64(0) // a callee: its own least worst step
		if c == entry {
			floor = s.OutsideMax // the last step, which every order keeps
		}
		// Each computation may take a share of what is left, four times
		// its even share (but at least 50,000 expansions), so that one
		// hard computation does not starve the others.
		share := max(4*st.budget/int64(len(comps)-i), 50_000)
		o, ok := st.exactOpts(share, floor)
		if !ok {
			proof.fail("the budget or the timeout ended the search")
			return
		}
		o.Bound = true
		if n > OptimalBlocks {
			o.NoSearch = true // only the static bound can prove it
		}
		inc := identity(n)
		r := s.solve(st.ctx, inc, o)
		st.spend(r, o)
		if !r.Exhausted {
			if n > OptimalBlocks {
				proof.fail(fmt.Sprintf("computation %s has %d instructions, more than the %d searched whole, and its static bound is below its figure", c.Name, n, OptimalBlocks))
			} else {
				proof.fail(fmt.Sprintf("computation %s: the search was not exhausted", c.Name))
			}
		}
		if c == entry {
			proof.predicted = max(r.Cost, s.OutsideMax)
		}
		if r.Improved {
			st.setSchedule(st.with(c, s.sequence(r.Order)))
		}
		if c != entry && proof.ok && r.Exhausted {
			// Its best order must be the best in every context its
			// caller's orders give it.
			if why := st.contextRobust(c, s, r, proof); why != "" {
				proof.fail(why)
			}
		}
		if c != entry && proof.ok {
			// The callee's own figure must be LowerBound's for its
			// stretch, or the relaxation decided something.
			sp := st.tl.Spans[c.ID]
			var worst int64
			for t := sp.Start; t < sp.End; t++ {
				worst = max(worst, st.steps[t])
			}
			if worst != r.Cost {
				proof.fail(fmt.Sprintf("computation %s: the model's figure %d is not LowerBound's %d", c.Name, r.Cost, worst))
			}
		}
	}
}

// contextRobust checks that the order found for callee d (its segment s,
// search result r) is the best in every context the orders of its caller
// can give it, and returns why not ("" when it is). A value passed into d
// stays live past d when some instruction of the caller after the call
// reads it; when such an instruction is one the call may run before or
// after (no constraint orders them), the order of the caller decides, so
// d is searched again with that value kept and not kept, in every
// combination (up to four such values), and the order found must reach
// each optimum.
func (st *searcher) contextRobust(d *hlo.Computation, s *segment, r exactResult, proof *proofState) string {
	a := st.a
	sites := a.Callers(d)
	if len(sites) != 1 {
		return fmt.Sprintf("computation %s has %d call sites", d.Name, len(sites))
	}
	call := sites[0]
	c := call.Parent
	cs := st.callerSegment(c)
	if cs == nil {
		return fmt.Sprintf("computation %s: its caller %s has no order model", d.Name, c.Name)
	}
	bi := cs.blockIndex[call.ID]
	span := st.tl.Spans[d.ID]
	// owner climbs from computation e to the instruction of c whose
	// block holds it, and says whether the climb passed through d.
	owner := func(e *hlo.Computation, in *hlo.Instruction) (*hlo.Instruction, bool) {
		inside := false
		for depth := 0; e != nil && depth < 1<<10; depth++ {
			if e == d {
				inside = true
			}
			if e == c {
				return in, inside
			}
			callers := a.Callers(e)
			if len(callers) != 1 {
				return nil, inside
			}
			in, e = callers[0], callers[0].Parent
		}
		return nil, inside
	}
	var varying []int32
	for id := range s.vals {
		ve := &st.em.Vals[s.vals[id].v.ID]
		variable, always := false, ve.ToEnd
		for _, es := range [][]liveness.Event{{ve.Start}, ve.DefEnd, ve.Pos, ve.Ends} {
			for _, e := range es {
				var o *hlo.Instruction
				var inside bool
				switch e.Kind {
				case liveness.EventInst:
					if e.ID < 0 {
						continue
					}
					x := st.instByID(int(e.ID))
					if x == nil {
						continue
					}
					o, inside = owner(x.Parent, x)
				case liveness.EventSpanStart, liveness.EventSpanEnd:
					comp := a.Module.Computations[e.ID]
					if comp == c {
						always = always || e.Kind == liveness.EventSpanEnd
						continue
					}
					o, inside = owner(comp, nil)
				default:
					always = true
					continue
				}
				if inside {
					continue
				}
				t := st.tl.At(e)
				switch {
				case o == nil || o == call:
					always = always || t >= span.End
				default:
					j := cs.blockIndex[o.ID]
					switch {
					case cs.precedes(bi, j):
						always = true
					case cs.precedes(j, bi):
					default:
						variable = true
					}
				}
			}
		}
		if variable && !always {
			varying = append(varying, int32(id))
		}
	}
	if len(varying) == 0 {
		return ""
	}
	if len(varying) > 4 {
		return fmt.Sprintf("computation %s: %d values passed in stay live past it or not depending on its caller's order", d.Name, len(varying))
	}
	// The optimum in every context, and an order optimal in all of them:
	// the one found, else one of the others' optima.
	var alts []*segment
	var opts []int64
	cands := [][]int32{r.Order}
	for mask := 0; mask < 1<<len(varying); mask++ {
		alt := s.withPost(varying, mask)
		o, ok := st.exactOpts(st.budget, 0)
		if !ok {
			return "the budget or the timeout ended the search"
		}
		o.Bound = true
		opt := alt.solve(st.ctx, identity(len(alt.blocks)), o)
		st.spend(opt, o)
		if !opt.Exhausted {
			return fmt.Sprintf("computation %s: the search in another context was not exhausted", d.Name)
		}
		alts, opts = append(alts, alt), append(opts, opt.Cost)
		cands = append(cands, opt.Order)
	}
	for i, order := range cands {
		good := true
		for k, alt := range alts {
			if alt.evaluate(order, nil) != opts[k] {
				good = false
				break
			}
		}
		if !good {
			continue
		}
		if i > 0 {
			st.setSchedule(st.with(d, s.sequence(order)))
		}
		return ""
	}
	return fmt.Sprintf("computation %s: no order of it is the best in every context its caller's orders give it", d.Name)
}

// instByID returns the instruction with that ID, from a table built once.
func (st *searcher) instByID(id int) *hlo.Instruction {
	if st.byID == nil {
		st.byID = make([]*hlo.Instruction, st.a.Module.NumInstructions())
		for _, c := range st.a.Module.Computations {
			for _, in := range c.Instructions {
				if in.ID >= 0 && in.ID < len(st.byID) {
					st.byID[in.ID] = in
				}
			}
		}
	}
	if id < 0 || id >= len(st.byID) {
		return nil
	}
	return st.byID[id]
}

// callerSegment returns the whole-computation segment of c, for its order
// constraints (which callees' orders do not change), built once.
func (st *searcher) callerSegment(c *hlo.Computation) *segment {
	if s, ok := st.callerSegs[c]; ok {
		return s
	}
	n := len(st.sched.Sequence(c))
	var s *segment
	if n > 0 && n <= 4096 {
		s, _ = newSegment(st.a, st.em, st.tl, st.sched, st.steps, c, 0, n)
		if s != nil {
			s.blockIndex = map[int]int32{}
			for b, in := range s.blocks {
				s.blockIndex[in.ID] = int32(b)
			}
		}
	}
	if st.callerSegs == nil {
		st.callerSegs = map[*hlo.Computation]*segment{}
	}
	st.callerSegs[c] = s
	return s
}

// windowSizes are the window widths tried around a peak, smallest first;
// a window of w instructions may expand windowBudget*w sets.
var windowSizes = []int{16, 32, 64, 128, 256}

const windowBudget = 50

// windows lowers the module's peak by searching windows of the order
// around its worst steps, until no window helps or the budget runs out.
func (st *searcher) windows() {
	for !st.stopped && st.budget > 0 {
		// The first step at the peak that some window can lower.
		improved := false
		for t, x := range st.steps {
			if x != st.peak || t >= len(st.tl.Seq) {
				continue
			}
			if st.lowerStep(t) {
				improved = true
				break
			}
			// A peak step no window lowers: the peak stays.
			return
		}
		if !improved {
			return // the peak is at the end of the program, which no order moves
		}
	}
}

// lowerStep searches windows around step t (of its own computation, then
// of the computations around it) for an order whose worst step is below
// the peak, and takes the first it finds.
func (st *searcher) lowerStep(t int) bool {
	a := st.a
	in := st.tl.Seq[t]
	for c := in.Parent; c != nil; {
		seq := st.sched.Sequence(c)
		// The instruction of c whose block holds step t.
		idx, _ := slices.BinarySearchFunc(seq, t, func(x *hlo.Instruction, t int) int { return st.tl.Time(x) - t })
		if idx >= len(seq) {
			break
		}
		for _, w := range windowSizes {
			if w > 2*len(seq) {
				break
			}
			lo := max(0, idx-w/2)
			hi := min(len(seq), lo+w)
			lo = max(0, hi-w)
			if hi-lo < 2 {
				continue
			}
			s, ok := newWindow(a, st.em, st.tl, st.sched, st.steps, c, lo, hi)
			if !ok {
				continue
			}
			if s.staticBound() >= st.peak {
				// Every order of the window keeps a step at the peak: a
				// larger window, or the caller's.
				if hi-lo == len(seq) {
					break
				}
				continue
			}
			o, ok := st.exactOpts(int64(windowBudget*w), st.peak-1)
			if !ok {
				return false
			}
			r := s.solve(st.ctx, identity(hi-lo), o)
			st.spend(r, o)
			if r.Improved && r.Cost < st.peak {
				steps := make([]int64, s.T1-s.T0)
				s.evaluate(r.Order, steps)
				st.applyWindow(s, r.Order, steps)
				return true
			}
			if hi-lo == len(seq) {
				break // the whole computation: no larger window
			}
		}
		// The computation's caller, around the call.
		callers := a.Callers(c)
		if len(callers) != 1 {
			break
		}
		in = callers[0]
		t = st.tl.Time(in)
		c = in.Parent
	}
	return false
}
