package liveness

import (
	"context"

	"github.com/hlomem/hlomem/hlo"
)

// prepare readies m for buffer assignment from this package's steps, as
// the pipeline (package compile) runs them, in the module's own order:
// the call graph flattened, copies inserted into a module XLA has not
// scheduled, the analysis laid out in the module's order (post-order
// where the text is not one) and the interference that order leaves
// repaired. The schedulers are package schedule's, which imports this
// one: the tests that need one are there.
func prepare(m *hlo.Module) (*Analysis, error) {
	if m == nil {
		return nil, newError(ErrNoModule, nil, hlo.Pos{}, ErrNoModule.Error(), nil)
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
	if err := a.LayoutModuleOrder(); err != nil {
		return nil, err
	}
	a, _, err = RepairInterference(ctx, m, a)
	return a, err
}
