package liveness

// The steps of preparation this package owns, as plain functions for the
// pipeline (package compile) to sequence: the analysis with or without
// live ranges, copy insertion, laying an analysis out in the module's own
// order, and repairing the interference a schedule leaves. None of them
// calls another's caller: which runs when is the pipeline's to say.

import (
	"context"

	"github.com/hlomem/hlomem/hlo"
)

// Check says how much of the input check an analysis still has to do.
type Check uint8

const (
	// CheckAll verifies the module (hlo.Verify) and checks what this
	// package needs (known opcodes, sizable shapes, few enough values).
	CheckAll Check = iota
	// CheckVerified skips hlo.Verify: it accepted the module, and only
	// passes that keep a module valid changed it since.
	CheckVerified
	// CheckNone skips the whole check: it passed, and only this package's
	// own rewrites (copy insertion, interference repair) followed.
	CheckNone
)

func (c Check) input() inputCheck {
	switch c {
	case CheckVerified:
		return checkVerified
	case CheckNone:
		return checkNone
	}
	return checkAll
}

// AnalyzeUnscheduled analyses m (flat: hlo.FlattenCallGraph) after the
// checks c asks for, without live ranges: values, positions, uses and
// buffers, for a scheduler to lay out (Reschedule, LayoutModuleOrder, or a
// scheduler that installs its choice). It stops, returning ctx's error,
// once ctx is done.
func AnalyzeUnscheduled(ctx context.Context, m *hlo.Module, c Check) (*Analysis, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return analyzeModule(ctx, m, Options{}, c.input(), false)
}

// InsertCopiesUnscheduled adds the copies XLA's copy insertion would add
// to m (InsertCopies), the first round's input check as c says, and
// returns the analysis of the result without live ranges (the last round
// computes it anyway) and whether a copy was added.
func InsertCopiesUnscheduled(ctx context.Context, m *hlo.Module, c Check) (a *Analysis, changed bool, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return analyzeInsertingCopies(ctx, m, c.input(), false)
}

// LayoutModuleOrder lays the analysis out in the module's own order, or in
// post-order when the text has forward references and is not an order.
func (a *Analysis) LayoutModuleOrder() error { return a.layoutDefault() }

// RepairInterference adds the copies that the schedule a is laid out
// under needs so that no value is overwritten while a later read still
// needs it (interfere.go), and returns the analysis of the repaired module
// under the same schedule and whether it added any.
func RepairInterference(ctx context.Context, m *hlo.Module, a *Analysis) (*Analysis, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return repairInterference(ctx, m, a)
}

// ApplyScheduler lays a (an analysis of a.Module without live ranges, or
// with any) out under the named scheduler (Schedulers; "" keeps a
// scheduled module's own order and searches otherwise): the module's own
// order (keep), a heuristic, XLA's choice among them (heuristic), or the
// search (best, search, optimal, with opts). The copies the order needs
// are added (interference repair, which may change the module); when the
// search kept an order that needed copies of its own, it searches again
// once they are in. It returns the analysis laid out (of the module as it
// is now, a.Search set by the searching schedulers) and whether copies
// were added.
func ApplyScheduler(ctx context.Context, a *Analysis, scheduler string, opts SearchOptions) (*Analysis, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	m := a.Module
	if scheduler == "" {
		scheduler = SchedBest
		if m.IsScheduled {
			scheduler = SchedKeep
		}
	}
	search := func(a *Analysis) (*SearchResult, error) {
		if scheduler == SchedOptimal {
			return Optimal(ctx, a, opts)
		}
		return Search(ctx, a, opts) // installs the schedule it picks
	}
	var err error
	var searched *SearchResult
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
		return nil, false, err
	}
	a, changed, err := repairInterference(ctx, m, a)
	if err != nil {
		return nil, changed, err
	}
	if changed && searched != nil && searched.NeedsCopies {
		// The search kept a heuristic's order that needed copies of its
		// own; with them in place it needs none: search on from there (the
		// order is among the new search's candidates).
		if searched, err = search(a); err != nil {
			return nil, changed, err
		}
		if a, _, err = repairInterference(ctx, m, a); err != nil {
			return nil, changed, err
		}
	}
	a.Search = searched
	return a, changed, nil
}
