package report

import (
	"context"
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/remat"
	"github.com/hlomem/hlomem/schedule"
)

// WhatIfRemats are the remat algorithms WhatIfs tries (a "remat" lever
// each): hlomem's own, then XLA's.
var WhatIfRemats = []string{remat.Plan, remat.XLA}

// RematShare is the limit of the remat what-ifs, as a percentage of this
// plan's total, when Options.RematLimit sets none.
const RematShare = 90

// rematLimit is the remat what-ifs' limit and where it comes from.
func (o Options) rematLimit() (int64, string) {
	if o.RematLimit > 0 {
		return o.RematLimit, o.RematLimitLabel
	}
	return o.total * RematShare / 100, fmt.Sprintf("%d%% of this plan's total", RematShare)
}

// planRemat plans m rematerialized (the lever's algorithm) toward the
// remat limit, as hlomem assign --remat-limit plans it. A plan within the
// limit already, and a module the remat pass refuses, are skipped, saying
// so.
func (l Lever) planRemat(ctx context.Context, m *hlo.Module, opts Options, w WhatIf) WhatIf {
	limit, label := opts.rematLimit()
	rw := &RematWhatIf{Limit: limit, LimitLabel: label}
	w.Remat = rw
	if opts.total <= limit {
		rw.Skipped = fmt.Sprintf("plan within the limit already: this plan's total %s is within %s (whether the run fits the device: hlomem fit, the fit row)", assign.HumanBytes(opts.total), assign.HumanBytes(limit))
		return w
	}
	c := opts.Compile
	c.Remat = &compile.RematOptions{Limit: limit, Algorithm: l.Value}
	var r *compile.Result
	var err error
	if sm := opts.scheduledPlan(); sm != nil {
		// The pipeline up to the remat pass is the plan's: resume from
		// the plan's module in its schedule (what the remat pass
		// rewrites), keeping that order.
		rc := c
		rc.Fuse, rc.Scheduler = false, schedule.Keep
		r, err = compileClone(ctx, sm, rc)
	} else {
		r, err = compileClone(ctx, m, c)
	}
	if errors.Is(err, remat.ErrUnsupported) {
		rw.Skipped = "the remat pass refuses this module: " + err.Error()
		return w
	}
	w.Command = Command(opts.File, m, c)
	if err != nil {
		w.Err = err.Error()
		return w
	}
	st := r.Assignment.Stats
	w.LowerBound, w.Total = st.LowerBound, st.TotalBytes
	rw.Fits, rw.AddedFLOPs, rw.AddedShare = r.Remat.Fits, r.Remat.AddedFLOPs, r.Remat.AddedShare()
	return w
}

// rematVs is a remat row's outcome in words: the limit, whether the
// rewritten module's plan total is within it (the plan's figure; whether
// a run on a device fits is hlomem fit's, the fit row's), and the FLOPs
// that costs.
func rematVs(w WhatIf) string {
	rw := w.Remat
	s := fmt.Sprintf("limit %s (%s): ", assign.HumanBytes(rw.Limit), rw.LimitLabel)
	if rw.Fits {
		s += "plan within it"
	} else {
		s += "plan over it"
	}
	return s + fmt.Sprintf(", +%d FLOPs (%.2f%% of the module's own)", rw.AddedFLOPs, rw.AddedShare)
}

// scheduledPlan returns the plan's module in the plan's schedule, as the
// remat pass takes it (its order the schedule's, marked scheduled,
// renumbered: liveness.Schedule.Apply on a clone), made once for every
// remat lever; nil when the plan's pipeline is not the remat levers' up
// to the remat pass (the plan rematerialized already, or no shared work).
func (o Options) scheduledPlan() *hlo.Module {
	p, sh := o.plan, o.share
	if p == nil || sh == nil || o.Compile.Remat != nil || o.Compile.Spaces != nil || p.Analysis == nil || p.Analysis.Schedule == nil {
		return nil
	}
	sh.schedOnce.Do(func() {
		sm := p.Module.Clone()
		for i, c := range p.Module.Computations {
			seq := p.Analysis.Schedule.Sequence(c)
			nc := sm.Computations[i]
			if len(seq) != len(c.Instructions) {
				continue // as Schedule.Apply: a computation the schedule does not cover keeps its order
			}
			at := make(map[*hlo.Instruction]*hlo.Instruction, len(c.Instructions))
			for j, in := range c.Instructions {
				at[in] = nc.Instructions[j]
			}
			order := make([]*hlo.Instruction, len(seq))
			for j, in := range seq {
				if order[j] = at[in]; order[j] == nil {
					return // not this computation's instructions: no sharing
				}
			}
			nc.Instructions = order
		}
		sm.IsScheduled = true
		sm.Renumber()
		sh.sched = sm
	})
	return sh.sched
}
