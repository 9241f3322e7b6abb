package liveness

// The steps of preparation this package owns, as plain functions for the
// pipeline (package compile) to sequence: the analysis with or without
// live ranges, copy insertion, laying an analysis out in the module's own
// order, and repairing the interference a schedule leaves. None of them
// calls another's caller: which runs when is the pipeline's to say. The
// schedulers, and schedule.Apply, which lays an analysis out under one and
// repairs what its order needs, are package schedule's.

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

// AllowUnbounded, or'ed into CheckAll or CheckVerified, accepts a module
// with unbounded dynamic dimensions (f32[?]), which are valid HLO: the
// analysis computes their values and live ranges as XLA's HloLiveRange
// does, but their sizes are unknown (0 in Value.Size and Buffer.Size), so
// nothing that weighs sizes may use it: WriteXLA prints XLA's "Peak memory
// could not be determined due to unbounded dynamic shape." in place of the
// peak, WriteJSON and the size-weighing schedulers (package schedule)
// refuse it, and so does assign. Without it such a module is refused with
// a positioned error per instruction (hlo.ErrUnboundedShape).
const AllowUnbounded Check = 1 << 7

func (c Check) input() inputCheck {
	var in inputCheck
	switch c &^ AllowUnbounded {
	case CheckVerified:
		in = checkVerified
	case CheckNone:
		return checkNone
	default:
		in = checkAll
	}
	if c&AllowUnbounded != 0 {
		in |= checkUnbounded
	}
	return in
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
