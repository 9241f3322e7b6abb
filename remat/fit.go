package remat

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/cost"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// The algorithms of Fit.
const (
	// XLA is XLA:GPU's HloRematerialization (Rematerialize) run toward
	// the limit as XLA's GPU compiler sets it: the device's bytes less
	// the entry's parameters and outputs (GetSchedulerMemoryLimit), from
	// which the pass takes the outputs once more.
	XLA = "xla"
	// Plan is hlomem's own: it measures the plan itself, and recomputes
	// what costs the fewest FLOPs per byte it takes off the steps over the
	// limit (plan.go).
	Plan = "plan"
)

// Algorithms lists Fit's algorithms, the default first.
var Algorithms = []string{Plan, XLA}

// PlanFunc returns the total bytes of the plan of a scheduled module (its
// order is its schedule): the figure Fit fits under its limit. It must
// not change m.
type PlanFunc func(ctx context.Context, m *hlo.Module) (int64, error)

// DefaultPlan is the PlanFunc of a nil FitOptions.Plan: the module's call
// graph flattened (on a clone), analysed in its own order under the
// context's rules, and assigned by assign.Assign with the zero options
// (the GPU, the auto packer): Stats.TotalBytes.
func DefaultPlan(ctx context.Context, m *hlo.Module) (int64, error) {
	m = m.Clone()
	if _, err := hlo.FlattenCallGraphContext(ctx, m); err != nil {
		return 0, err
	}
	a, err := liveness.Analyze(m, liveness.Options{})
	if err != nil {
		return 0, err
	}
	as, err := assign.Assign(ctx, a, assign.Options{})
	if err != nil {
		return 0, err
	}
	return as.Stats.TotalBytes, nil
}

// FitOptions configures Fit.
type FitOptions struct {
	// Algorithm is one of Algorithms; "" is Plan.
	Algorithm string
	// Plan measures a module; nil is DefaultPlan. The pipeline passes its
	// own (its target, packer and rules).
	Plan PlanFunc
	// XLA configures the XLA algorithm.
	XLA Options
}

// FitResult is what Fit did.
type FitResult struct {
	// Module is the rewritten module (a clone of the input, scheduled).
	Module *hlo.Module
	// Algorithm is the algorithm that ran.
	Algorithm string
	// Limit is the limit asked for; TotalBefore and TotalAfter are the
	// plan's totals (FitOptions.Plan) of the input and of Module; Fits
	// reports TotalAfter <= Limit.
	Limit, TotalBefore, TotalAfter int64
	Fits                           bool
	// Recomputed lists what was recomputed, in the order it was.
	Recomputed []Recomputed
	// FLOPs are the module's own (cost.Module of the input), AddedFLOPs
	// what the rewritten module computes beyond them
	// (cost.Module(Module) - FLOPs).
	FLOPs, AddedFLOPs int64
	// Message is XLA's warning, in plan bytes, when the limit was not
	// reached, else "".
	Message string
	// XLA is the XLA algorithm's own result (its tracker's measure), nil
	// for the other algorithm.
	XLA *Result
}

// AddedShare returns AddedFLOPs as a percentage of FLOPs (0 when the
// module computes nothing).
func (r *FitResult) AddedShare() float64 {
	if r.FLOPs <= 0 {
		return 0
	}
	return 100 * float64(r.AddedFLOPs) / float64(r.FLOPs)
}

// Fit rewrites a clone of the scheduled module m, recomputing values
// before their later uses, so that the total of its plan is at most
// limit bytes, with the chosen algorithm. m is left untouched. A module
// that fits already comes back unchanged. When the limit is not reached
// the result says so (Fits false, Message) with the smallest total
// reached; an error is returned only for a module the pass refuses
// (ErrUnsupported, an invalid module) or a cancelled context.
func Fit(ctx context.Context, m *hlo.Module, limit int64, opts FitOptions) (res *FitResult, err error) {
	algo := opts.Algorithm
	if algo == "" {
		algo = Plan
	}
	if algo != Plan && algo != XLA {
		return nil, fmt.Errorf("remat: unknown algorithm %q (want %s or %s)", algo, Plan, XLA)
	}
	if err := checkInput(ctx, m, limit); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("remat: internal error: %v", r)
		}
	}()
	plan := opts.Plan
	if plan == nil {
		plan = DefaultPlan
	}
	before, err := plan(ctx, m)
	if err != nil {
		return nil, err
	}
	res = &FitResult{Module: m.Clone(), Algorithm: algo, Limit: limit, TotalBefore: before, TotalAfter: before, FLOPs: cost.Module(m).FLOPs}
	if before > limit {
		switch algo {
		case XLA:
			err = fitXLA(ctx, m, limit, opts, plan, res)
		default:
			err = fitPlan(ctx, m, limit, opts, plan, res)
		}
		if err != nil {
			return nil, err
		}
		res.AddedFLOPs = cost.Module(res.Module).FLOPs - res.FLOPs
	}
	res.Fits = res.TotalAfter <= limit
	if !res.Fits {
		res.Message = fmt.Sprintf("Can't reduce memory use below %s (%d bytes) by rematerialization; only reduced to %s (%d bytes), down from %s (%d bytes) originally",
			assign.HumanBytes(limit), limit, assign.HumanBytes(res.TotalAfter), res.TotalAfter, assign.HumanBytes(before), before)
	}
	return res, nil
}

// fitXLA runs XLA's pass toward limit less the entry's inputs and outputs
// (XLA:GPU's GetSchedulerMemoryLimit with the limit as the device's
// memory and a slop factor of 100) and plans what it made: the rewrite
// as XLA makes it, even where its plan is no smaller.
func fitXLA(ctx context.Context, m *hlo.Module, limit int64, opts FitOptions, plan PlanFunc, res *FitResult) error {
	io, err := ioBytes(m)
	if err != nil {
		return err
	}
	x, err := Rematerialize(ctx, m, max(0, limit-io), opts.XLA)
	if err != nil {
		return err
	}
	res.XLA = x
	if !x.Changed {
		return nil
	}
	after, err := plan(ctx, x.Module)
	if err != nil {
		return err
	}
	res.Module, res.TotalAfter, res.Recomputed = x.Module, after, x.Recomputed
	return nil
}

// ioBytes is GetSchedulerMemoryLimit's total_io_size: the entry's
// parameters and outputs, an output aliased to a parameter counted once.
func ioBytes(m *hlo.Module) (int64, error) {
	var n int64
	var serr error
	add := func(s hlo.Shape, sign int64) {
		s.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
			if s.IsTuple() {
				return
			}
			b, err := hlo.BufferSize(s)
			if err != nil && serr == nil {
				serr = err
			}
			n += sign * b
		})
	}
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpParameter {
			add(in.Shape, 1)
		}
	}
	root := m.Entry.Root.Shape
	add(root, 1)
	for _, a := range m.InputOutputAlias {
		if s, ok := root.Subshape(a.Output); ok {
			add(s, -1)
		}
	}
	return n, serr
}
