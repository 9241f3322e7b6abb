// Package preptest prepares modules for buffer assignment in the tests of
// the packages the pipeline (package compile) stands on: liveness's
// steps in compile's order (the call graph flattened, an optional pass of
// the test's own, copies inserted into a module XLA has not scheduled, the
// scheduler's order laid out), without importing any package above
// liveness, so that the tests of assign, fusion, tpu and the executor can
// use it. Programs use compile.Compile; compile's tests hold that this
// package gives the same analysis.
package preptest

import (
	"context"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
)

// Prepare readies m for buffer assignment under the named scheduler (""
// keeps a scheduled module's own order and searches otherwise) and returns
// its analysis, laid out.
func Prepare(m *hlo.Module, scheduler string) (*liveness.Analysis, error) {
	return With(context.Background(), m, Options{Scheduler: scheduler})
}

// Options are With's.
type Options struct {
	Scheduler string
	Search    schedule.Options
	// Before, when set, runs after the call graph is flattened and before
	// copies are inserted (a layout, a test's own rewrite), as compile's
	// target-layout and optimization passes do; it says whether it changed
	// the module.
	Before func(*hlo.Module) (bool, error)
	// XLARules, when set, are the live-range rules of every analysis
	// (liveness.WithSettings); the paired dumps' tests set Rules2025.
	XLARules liveness.Rules
}

// With is Prepare with options.
func With(ctx context.Context, m *hlo.Module, opts Options) (*liveness.Analysis, error) {
	if err := schedule.Check(opts.Scheduler); err != nil {
		return nil, err
	}
	if opts.XLARules != "" {
		s := liveness.SettingsFrom(ctx)
		s.XLARules = opts.XLARules
		ctx = liveness.WithSettings(ctx, s)
	}
	if _, err := hlo.FlattenCallGraphContext(ctx, m); err != nil {
		return nil, err
	}
	check := liveness.CheckVerified
	if opts.Before != nil {
		changed, err := opts.Before(m)
		if err != nil {
			return nil, err
		}
		if changed {
			check = liveness.CheckAll
		}
	}
	var a *liveness.Analysis
	var err error
	if m.IsScheduled {
		a, err = liveness.AnalyzeUnscheduled(ctx, m, check)
	} else {
		a, _, err = liveness.InsertCopiesUnscheduled(ctx, m, check)
	}
	if err != nil {
		return nil, err
	}
	a, _, err = schedule.Apply(ctx, a, opts.Scheduler, opts.Search)
	return a, err
}
