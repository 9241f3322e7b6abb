package schedule

// The schedulers by name, and Apply, the step of the pipeline (package
// compile) that lays an analysis out under one.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Scheduler names, as ByName, Apply and Check accept them.
const (
	Keep      = "keep"      // the module's own order (liveness.ModuleOrder)
	PostOrder = "postorder" // XLA's post-order (liveness.PostOrder)
	DFS       = "dfs"       // XLA's DFS memory scheduler (DFSOrder)
	List      = "list"      // XLA's list memory scheduler (ListOrder)
	Best      = "best"      // the search (RunSearch), Apply's default for a module XLA has not scheduled
	Search    = "search"    // the search (RunSearch)
	Optimal   = "optimal"   // the exact search (RunOptimal)
	// Heuristic is XLA's DefaultMemoryScheduler (HeuristicBest), which
	// best named before it became the search.
	Heuristic = "heuristic"
)

// Heuristics lists XLA's heuristics in the order HeuristicBest tries
// them.
var Heuristics = []string{List, DFS, PostOrder}

// Names lists every name ByName, Apply and Check accept.
var Names = []string{Keep, PostOrder, DFS, List, Heuristic, Best, Search, Optimal}

// ErrUnknown is the kind, matched under errors.Is, of the error about a
// scheduler name that is not among Names: a *liveness.Error (the
// pipeline names the pass in it as it does for liveness's own).
var ErrUnknown = errors.New("schedule: unknown scheduler")

// Check returns nil for a name ByName accepts, or "" (Apply's default),
// and otherwise an error of kind ErrUnknown that lists the names, so
// that a caller can refuse a typo before it reads and prepares a module.
func Check(name string) error {
	if name == "" || slices.Contains(Names, name) {
		return nil
	}
	return unknownScheduler(nil, name)
}

// unknownScheduler is the error of an unknown scheduler name, about m
// when there is one.
func unknownScheduler(m *hlo.Module, name string) error {
	e := &liveness.Error{Kind: ErrUnknown, Msg: fmt.Sprintf("schedule: unknown scheduler %q (want %s)", name, orList(Names))}
	if m != nil {
		e.Module = m.Name
	}
	return e
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ByName returns the schedule the named scheduler makes for the analysed
// module ("keep" is the module's own order; "best" and "search" are
// RunSearch, "optimal" RunOptimal, with opts). The searching schedulers
// and HeuristicBest leave a laid out under the schedule they return; the
// others leave a as it was.
//
// With unbounded dynamic shapes (liveness.AllowUnbounded) sizes are
// unknown, and only keep and postorder, which do not weigh them, run.
func ByName(ctx context.Context, a *liveness.Analysis, name string, opts Options) (*liveness.Schedule, error) {
	if err := sizeless(a, name); err != nil {
		return nil, err
	}
	switch name {
	case Keep:
		return liveness.ModuleOrder(a.Module), nil
	case PostOrder:
		return liveness.PostOrder(a.Module), nil
	case DFS:
		return DFSOrder(a), nil
	case List:
		return ListOrder(a), nil
	case Best, Search:
		r, err := RunSearch(ctx, a, opts)
		if err != nil {
			return nil, err
		}
		return r.Schedule, nil
	case Optimal:
		r, err := RunOptimal(ctx, a, opts)
		if err != nil {
			return nil, err
		}
		return r.Schedule, nil
	case Heuristic:
		s, _, err := HeuristicBest(a)
		return s, err
	}
	return nil, unknownScheduler(a.Module, name)
}

// Effective returns the scheduler Apply runs on m for name: name itself,
// or for "" keep when m is scheduled or has an unbounded dynamic shape
// (whose size no search can weigh) and best otherwise.
func Effective(name string, m *hlo.Module) string {
	if name != "" {
		return name
	}
	if m.IsScheduled || hlo.UnboundedErrors(m) != nil {
		return Keep
	}
	return Best
}

// sizeless refuses, for an analysis with unbounded dynamic shapes
// (liveness.AllowUnbounded), a scheduler that weighs sizes: all but keep
// and postorder. The error is at the first instruction of unbounded shape.
func sizeless(a *liveness.Analysis, name string) error {
	if name == Keep || name == PostOrder || !slices.Contains(Names, name) {
		return nil
	}
	errs := a.Unbounded()
	if errs == nil {
		return nil
	}
	e := *errs[0]
	e.Msg += fmt.Sprintf(", so scheduler %s, which weighs sizes, cannot order the module (keep and postorder can)", name)
	return &e
}

// Apply lays a (an analysis of a.Module without live ranges, or with
// any) out under the named scheduler (Names; "" keeps a scheduled
// module's own order and searches otherwise): the module's own order
// (keep), a heuristic, XLA's choice among them (heuristic), or the search
// (best, search, optimal, with opts). The copies the order needs are
// added (liveness.RepairInterference, which may change the module); when
// the search kept an order that needed copies of its own, it searches
// again once they are in. It returns the analysis laid out (of the module
// as it is now, its Search set by the searching schedulers) and whether
// copies were added.
func Apply(ctx context.Context, a *liveness.Analysis, name string, opts Options) (*liveness.Analysis, bool, error) {
	a, _, changed, err := apply(ctx, a, name, opts)
	return a, changed, err
}

// apply is Apply, which also returns the searching schedulers' result
// (nil for the others).
func apply(ctx context.Context, a *liveness.Analysis, name string, opts Options) (*liveness.Analysis, *SearchResult, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	m := a.Module
	name = Effective(name, m)
	if err := sizeless(a, name); err != nil {
		return nil, nil, false, err
	}
	search := func(a *liveness.Analysis) (*SearchResult, error) {
		if name == Optimal {
			return RunOptimal(ctx, a, opts)
		}
		return RunSearch(ctx, a, opts) // installs the schedule it picks
	}
	var err error
	var searched *SearchResult
	switch name {
	case Keep:
		err = a.LayoutModuleOrder()
	case Best, Search, Optimal:
		searched, err = search(a)
	case Heuristic:
		_, _, err = HeuristicBest(a)
	default:
		var s *liveness.Schedule
		if s, err = ByName(ctx, a, name, Options{}); err == nil {
			err = a.Reschedule(s)
		}
	}
	if err != nil {
		return nil, nil, false, err
	}
	a, changed, err := liveness.RepairInterference(ctx, m, a)
	if err != nil {
		return nil, nil, changed, err
	}
	if changed && searched != nil && searched.NeedsCopies {
		// The search kept a heuristic's order that needed copies of its
		// own; with them in place it needs none: search on from there (the
		// order is among the new search's candidates).
		if searched, err = search(a); err != nil {
			return nil, nil, changed, err
		}
		if a, _, err = liveness.RepairInterference(ctx, m, a); err != nil {
			return nil, nil, changed, err
		}
	}
	a.Search = nil
	if searched != nil {
		a.Search = &searched.SearchReport
	}
	return a, searched, changed, nil
}
