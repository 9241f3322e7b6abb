package liveness

import (
	"context"

	"github.com/hlomem/hlomem/hlo"
)

// prepare readies m for buffer assignment from this package's steps, as
// the pipeline (package compile) runs them: the call graph flattened,
// copies inserted into a module XLA has not scheduled, the scheduler's
// order laid out ("" keeps a scheduled module's own and searches
// otherwise).
func prepare(m *hlo.Module, scheduler string) (*Analysis, error) {
	return prepareWith(m, scheduler, SearchOptions{})
}

// prepareWith is prepare with the search's options.
func prepareWith(m *hlo.Module, scheduler string, opts SearchOptions) (*Analysis, error) {
	if m == nil {
		return nil, newError(ErrNoModule, nil, hlo.Pos{}, ErrNoModule.Error(), nil)
	}
	if err := CheckScheduler(scheduler); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := hlo.FlattenCallGraphContext(ctx, m); err != nil {
		return nil, err
	}
	var a *Analysis
	var err error
	if m.IsScheduled {
		a, err = AnalyzeUnscheduled(ctx, m, CheckVerified)
	} else {
		a, _, err = InsertCopiesUnscheduled(ctx, m, CheckVerified)
	}
	if err != nil {
		return nil, err
	}
	a, _, err = ApplyScheduler(ctx, a, scheduler, opts)
	return a, err
}
