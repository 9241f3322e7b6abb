package schedule

import (
	"context"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// prepare readies m for buffer assignment from this package's steps, as
// the pipeline (package compile) runs them: the call graph flattened,
// copies inserted into a module XLA has not scheduled, the scheduler's
// order laid out ("" keeps a scheduled module's own and searches
// otherwise).
func prepare(m *hlo.Module, scheduler string) (*liveness.Analysis, error) {
	return prepareWith(m, scheduler, Options{})
}

// prepareWith is prepare with the search's options.
func prepareWith(m *hlo.Module, scheduler string, opts Options) (*liveness.Analysis, error) {
	a, _, err := prepareSearched(m, scheduler, opts)
	return a, err
}

// prepareSearched is prepareWith that also returns what the searching
// schedulers found (nil for the others).
func prepareSearched(m *hlo.Module, scheduler string, opts Options) (*liveness.Analysis, *SearchResult, error) {
	if m == nil {
		return nil, nil, liveness.ErrNoModule
	}
	if err := Check(scheduler); err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	if _, err := hlo.FlattenCallGraphContext(ctx, m); err != nil {
		return nil, nil, err
	}
	var a *liveness.Analysis
	var err error
	if m.IsScheduled {
		a, err = liveness.AnalyzeUnscheduled(ctx, m, liveness.CheckVerified)
	} else {
		a, _, err = liveness.InsertCopiesUnscheduled(ctx, m, liveness.CheckVerified)
	}
	if err != nil {
		return nil, nil, err
	}
	a, r, _, err := apply(ctx, a, scheduler, opts)
	return a, r, err
}
