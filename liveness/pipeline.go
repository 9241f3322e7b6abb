package liveness

// The preparation pipeline: the steps XLA takes before buffer assignment,
// as one ordered table of passes (Passes) that Prepare, every CLI command
// and a Go user run the same way. A pass is a plain function over the
// module that says whether it changed it; RunPasses runs a table in order,
// turns a panic into an error naming the pass and, with
// PrepareOptions.VerifyEach, runs hlo.Verify after each pass.
//
// The analysis is the pipeline's product: copy insertion computes it
// anyway (its last round finds nothing to add, and that round's analysis
// is current), so the schedule pass lays out that analysis with the chosen
// schedule instead of analysing again. Nothing is analysed twice and only
// the schedule asked for is laid out.

import (
	"context"
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// PrepareOptions configures the preparation pipeline. The zero value
// prepares a module as XLA does before buffer assignment, keeping a
// scheduled module's order and choosing the best schedule otherwise.
type PrepareOptions struct {
	// Scheduler names the schedule the schedule pass lays out
	// (ScheduleByName); "" means keep for a scheduled module, as XLA left
	// it, and best otherwise.
	Scheduler string
	// Search bounds best, search and optimal (the zero value: their
	// defaults).
	Search SearchOptions
	// Fusion, when not nil, runs in the fusion slot, after the call graph
	// is flattened and before copies are inserted (where fusion.Run plugs
	// in); it reports whether it changed the module, which must stay
	// valid. nil leaves the slot empty.
	Fusion func(*hlo.Module) (changed bool, err error)
	// Optimize are passes of their own that run in the fusion slot, after
	// Fusion, in order (fusion.Passes gives simplification, CSE, dead-code
	// removal and fusion); Pipeline puts them in the table.
	Optimize []Pass
	// VerifyEach runs hlo.Verify after every pass and fails naming the
	// pass that left the module invalid. Tests set it; it costs one
	// verification per pass.
	VerifyEach bool

	// state carries what one pass leaves for the next within RunPasses;
	// nil when a pass runs on its own.
	state *prepareState
}

// prepareState is what the passes of one RunPasses share.
type prepareState struct {
	// verified: hlo.Verify accepted the module and only passes that keep
	// it valid changed it since, so the analysis need not verify again.
	verified bool
	// a is an analysis of the module as it is now, without live ranges,
	// or nil.
	a *Analysis
	// laid is a with its live ranges, once the schedule pass has run.
	laid *Analysis
	// ctx is PrepareContext's, for the schedulers that search.
	ctx context.Context
}

// Pass is one step of the preparation pipeline.
type Pass struct {
	// Name identifies the pass in errors ("copy-insertion").
	Name string
	// Run transforms m and reports whether it changed it.
	Run func(m *hlo.Module, opts PrepareOptions) (changed bool, err error)

	// ownState: the pass keeps the pipeline state right itself; after any
	// other pass that changed the module, RunPasses forgets what it knew
	// (that the module was verified, its analysis).
	ownState bool
}

// Passes is the preparation pipeline, in order:
//
//   - flatten-call-graph: hlo.FlattenCallGraph (verifies m first), so that
//     every sequential computation has one call site;
//   - fusion: PrepareOptions.Fusion, an empty slot when it is nil;
//   - copy-insertion: the copies XLA's CopyInsertion would add (copies.go),
//     for a module XLA has not scheduled (no is_scheduled); a scheduled one
//     has been through it already;
//   - schedule: lays the analysis out with PrepareOptions.Scheduler. The
//     schedule is the analysis's (Analysis.Schedule): the module's
//     instruction order is left as it is, so the pass reports no change.
var Passes = []Pass{
	{Name: "flatten-call-graph", Run: flattenPass, ownState: true},
	{Name: "fusion", Run: fusionPass},
	{Name: "copy-insertion", Run: copyInsertionPass, ownState: true},
	{Name: "schedule", Run: schedulePass, ownState: true},
}

// Prepare readies m for buffer assignment as XLA does before it: it runs
// Passes (flatten the call graph, the empty fusion slot, insert copies
// into a module XLA has not scheduled, lay out the named scheduler's
// schedule; "" means keep for a scheduled module and best otherwise) and
// returns the analysis of the result. Calling the steps one by one
// (hlo.FlattenCallGraph, AnalyzeInsertingCopies or Analyze, Reschedule)
// gives the same analysis, but verifies m at each and lays out the
// module's own order on the way.
func Prepare(m *hlo.Module, scheduler string) (*Analysis, error) {
	return PrepareWith(m, PrepareOptions{Scheduler: scheduler})
}

// PrepareWith is Prepare with options.
func PrepareWith(m *hlo.Module, opts PrepareOptions) (*Analysis, error) {
	return RunPasses(m, Pipeline(opts), opts)
}

// PrepareContext is PrepareWith under ctx: once ctx is done, the pipeline
// stops (between passes, and within the long ones: verification, the
// analyses, copy insertion, the schedulers' search) and returns ctx's
// error. (A search's own budget and timeout, SearchOptions, end it early
// keeping the best schedule found; ctx ends the whole preparation.)
func PrepareContext(ctx context.Context, m *hlo.Module, opts PrepareOptions) (*Analysis, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return runPasses(ctx, m, Pipeline(opts), opts)
}

// Context returns the context of the pipeline a pass runs in
// (PrepareContext's), for passes that run long: they stop when it is
// done. Outside a pipeline it is context.Background().
func (o PrepareOptions) Context() context.Context {
	if o.state != nil && o.state.ctx != nil {
		return o.state.ctx
	}
	return context.Background()
}

// Pipeline returns the pass table PrepareWith runs for opts: Passes with
// opts.Optimize inserted after the fusion slot.
func Pipeline(opts PrepareOptions) []Pass {
	if len(opts.Optimize) == 0 {
		return Passes
	}
	out := make([]Pass, 0, len(Passes)+len(opts.Optimize))
	for _, p := range Passes {
		out = append(out, p)
		if p.Name == "fusion" {
			out = append(out, opts.Optimize...)
		}
	}
	return out
}

// RunPasses runs passes on m in order and returns the analysis the last
// of them left laid out (nil when no schedule pass ran). A pass that
// panics fails with an *Error of kind ErrPassPanicked naming it; with
// opts.VerifyEach, hlo.Verify runs after each pass and a module it refuses
// fails the pipeline naming the pass before it.
func RunPasses(m *hlo.Module, passes []Pass, opts PrepareOptions) (*Analysis, error) {
	return runPasses(context.Background(), m, passes, opts)
}

// RunPassesContext is RunPasses under ctx (PrepareContext): the passes
// stop, and it returns ctx's error, once ctx is done.
func RunPassesContext(ctx context.Context, m *hlo.Module, passes []Pass, opts PrepareOptions) (*Analysis, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return runPasses(ctx, m, passes, opts)
}

func runPasses(ctx context.Context, m *hlo.Module, passes []Pass, opts PrepareOptions) (*Analysis, error) {
	if m == nil {
		return nil, newError(ErrNoModule, nil, hlo.Pos{}, ErrNoModule.Error(), nil)
	}
	if opts.Scheduler != "" && !slices.Contains(Schedulers, opts.Scheduler) {
		// Refused before any work, as the schedule pass would refuse it.
		err := unknownScheduler(m, opts.Scheduler).(*Error)
		err.Pass = "schedule"
		return nil, err
	}
	st := &prepareState{ctx: ctx}
	opts.state = st
	for _, p := range passes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		changed, err := runPass(p, m, opts)
		if err != nil {
			return nil, err
		}
		if changed && !p.ownState {
			st.verified, st.a, st.laid = false, nil, nil
		}
		if opts.VerifyEach {
			if err := hlo.Verify(m); err != nil {
				return nil, &Error{Kind: ErrInvalidAfterPass, Module: m.Name, Pass: p.Name,
					Msg: fmt.Sprintf("liveness: after pass %s: %v", p.Name, err), Err: err}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st.laid, nil
}

// runPass runs p under a recover that turns a panic into an error naming
// p; errors of this package's own get p's name too.
func runPass(p Pass, m *hlo.Module, opts PrepareOptions) (changed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			changed = false
			err = &Error{Kind: ErrPassPanicked, Module: m.Name, Pass: p.Name,
				Msg: fmt.Sprintf("liveness: pass %s: internal error: %v", p.Name, r)}
		}
		if e, ok := err.(*Error); ok && e.Pass == "" {
			e.Pass = p.Name
		}
	}()
	return p.Run(m, opts)
}

// stateOf returns the pipeline state of opts, or a fresh one for a pass
// run on its own.
func stateOf(opts PrepareOptions) *prepareState {
	if opts.state != nil {
		return opts.state
	}
	return &prepareState{ctx: context.Background()}
}

// check is the input check the analysis of m still needs.
func (st *prepareState) check() inputCheck {
	if st.verified {
		return checkVerified
	}
	return checkAll
}

func flattenPass(m *hlo.Module, opts PrepareOptions) (bool, error) {
	st := stateOf(opts)
	changed, err := hlo.FlattenCallGraphContext(st.ctx, m) // verifies m first
	if err != nil {
		return false, err
	}
	st.verified = true
	if changed {
		st.a, st.laid = nil, nil
	}
	return changed, nil
}

func fusionPass(m *hlo.Module, opts PrepareOptions) (bool, error) {
	if opts.Fusion == nil {
		return false, nil
	}
	return opts.Fusion(m)
}

func copyInsertionPass(m *hlo.Module, opts PrepareOptions) (bool, error) {
	if m.IsScheduled {
		return false, nil // XLA's copy insertion ran before it scheduled
	}
	st := stateOf(opts)
	a, changed, err := analyzeInsertingCopies(st.ctx, m, st.check(), false)
	if err != nil {
		return changed, err
	}
	st.a, st.laid = a, nil // the last round's analysis is current
	return changed, nil
}

func schedulePass(m *hlo.Module, opts PrepareOptions) (bool, error) {
	st := stateOf(opts)
	a := st.a
	if a == nil {
		var err error
		if a, err = analyzeModule(st.ctx, m, Options{}, st.check(), false); err != nil {
			return false, err
		}
	}
	scheduler := opts.Scheduler
	if scheduler == "" {
		scheduler = SchedBest
		if m.IsScheduled {
			scheduler = SchedKeep
		}
	}
	var err error
	var searched *SearchResult
	search := func(a *Analysis) (*SearchResult, error) {
		if scheduler == SchedOptimal {
			return Optimal(st.ctx, a, opts.Search)
		}
		return Search(st.ctx, a, opts.Search) // installs the schedule it picks
	}
	switch scheduler {
	case SchedKeep:
		err = a.layoutDefault()
	case SchedBest, SchedSearch, SchedOptimal:
		searched, err = search(a)
	case SchedHeuristic:
		_, _, err = HeuristicBest(a)
	default:
		var s *Schedule
		if s, err = ScheduleByName(a, scheduler); err == nil {
			err = a.Reschedule(s)
		}
	}
	if err != nil {
		return false, err
	}
	a, changed, err := repairInterference(st.ctx, m, a)
	if err != nil {
		return changed, err
	}
	if changed && searched != nil && searched.NeedsCopies {
		// The search kept a heuristic's order that needed copies of its
		// own; with them in place it needs none: search on from there (the
		// order is among the new search's candidates).
		if searched, err = search(a); err != nil {
			return changed, err
		}
		if a, _, err = repairInterference(st.ctx, m, a); err != nil {
			return changed, err
		}
	}
	a.Search = searched
	st.a, st.laid = a, a
	return changed, nil
}

// pollEvery is how many steps of a long loop run between two looks at
// the context.
const pollEvery = 8192

// outputFailed calls flush every pollEvery steps of a writing loop (i
// counts them) and returns its error: the output has failed (an
// interrupted command's output refuses every write), so the loop stops
// rather than format the rest for nothing.
func outputFailed(i int, flush func() error) error {
	if i%pollEvery != pollEvery-1 {
		return nil
	}
	return flush()
}
