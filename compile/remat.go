package compile

import (
	"context"
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/remat"
	"github.com/hlomem/hlomem/schedule"
)

// RematOptions asks the pipeline to rematerialize the scheduled module
// toward a limit on its plan's total (the remat pass, remat.Fit).
type RematOptions struct {
	// Limit is the most bytes the plan's total (assign Stats.TotalBytes,
	// the very plan Compile returns) may take.
	Limit int64
	// Algorithm is one of remat.Algorithms; "" is remat.Plan.
	Algorithm string
}

func rematerializes(p *planner) bool { return p.opts.Remat != nil }

// check refuses remat options that cannot be run.
func (o *RematOptions) check() error {
	if o == nil {
		return nil
	}
	if o.Limit < 0 {
		return fmt.Errorf("%w: negative remat limit %d", ErrOptions, o.Limit)
	}
	if o.Algorithm != "" && !slices.Contains(remat.Algorithms, o.Algorithm) {
		return fmt.Errorf("%w: unknown remat algorithm %q (want one of %v)", ErrOptions, o.Algorithm, remat.Algorithms)
	}
	return nil
}

// rematPass makes the analysis' schedule the module's order, rewrites the
// module with remat.Fit toward the limit on the plan's total as this
// pipeline plans it (rematPlan), takes the rewritten module (whose order
// the rest of the pipeline keeps) and lays it out again. A limit not
// reached is no error: the result says so (FitResult.Fits).
func rematPass(ctx context.Context, p *planner, u *unit) (bool, error) {
	if u.analysis == nil || !u.laid {
		return false, fmt.Errorf("compile: internal error: remat without a scheduled analysis")
	}
	reordered := applySchedule(u)
	o := p.opts.Remat
	res, err := remat.Fit(ctx, u.Module, o.Limit, remat.FitOptions{Algorithm: o.Algorithm, Plan: p.rematPlan})
	if err != nil {
		return false, err
	}
	u.remat = res
	changed := reordered || len(res.Recomputed) > 0 || res.XLA != nil && res.XLA.Changed
	u.Module, u.keep = res.Module, true
	u.forget()
	if _, err := flattenPass(ctx, p, u); err != nil {
		return changed, err
	}
	if _, err := schedulePass(ctx, p, u); err != nil {
		return changed, err
	}
	return changed, nil
}

// applySchedule makes the analysis' schedule the module's order (marked
// scheduled) and reports whether that changed the module.
func applySchedule(u *unit) bool {
	m := u.Module
	changed := !m.IsScheduled
	before := make(map[*hlo.Computation][]*hlo.Instruction, len(m.Computations))
	for _, c := range m.Computations {
		before[c] = slices.Clone(c.Instructions)
	}
	u.analysis.Schedule.Apply(m)
	for _, c := range m.Computations {
		if !slices.Equal(before[c], c.Instructions) {
			changed = true
		}
	}
	return changed
}

// rematPlan is remat.Fit's measure in the pipeline: a clone of the
// scheduled module m prepared as the pipeline prepares it (the prepare
// slice, keeping m's order) and assigned with the pipeline's own options:
// the total of the plan Compile would return for it.
func (p *planner) rematPlan(ctx context.Context, m *hlo.Module) (int64, error) {
	v := &unit{Module: m.Clone(), sub: &subOptions{scheduler: schedule.Keep}}
	if err := p.run(ctx, v, prepare); err != nil {
		return 0, err
	}
	as, err := assign.Assign(ctx, v.analysis, p.assign)
	if err != nil {
		return 0, err
	}
	return as.Stats.TotalBytes, nil
}
