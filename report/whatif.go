package report

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Lever is one alternative to the plan a report shows: another schedule,
// fusion on or off, or another packer, the rest of the options as they
// are.
type Lever struct {
	// Kind is "schedule", "fusion" or "packer"; Value the scheduler
	// name, "on" or "off", or the packer name.
	Kind, Value string
}

func (l Lever) String() string { return l.Kind + "=" + l.Value }

// The schedulers and packers WhatIfs tries.
var (
	WhatIfSchedules = []string{liveness.SchedKeep, liveness.SchedPostOrder, liveness.SchedDFS, liveness.SchedList,
		liveness.SchedHeuristic, liveness.SchedSearch, liveness.SchedOptimal}
	WhatIfPackers = []string{"xla", "portfolio", "auto"}
)

// WhatIfOptimalLimit is the most instructions a module may have for
// WhatIfs to try the optimal scheduler.
const WhatIfOptimalLimit = 500

// WhatIfOptimalBudget is the exact search's budget (expansions) in the
// optimal what-if when the options set none: a tenth of the scheduler's
// own default, a few seconds at most, so a report stays quick. The
// lever's bound is then the best order found, proven or not.
const WhatIfOptimalBudget = liveness.DefaultOptimalBudget / 10

// WhatIfs returns the usual alternatives to a plan with opts: every
// scheduler of WhatIfSchedules (keep only for a module XLA scheduled,
// whose order is then a real schedule), fusion on and off, and every
// packer of WhatIfPackers. The plan's own choices are among them, so the
// table shows them side by side.
func WhatIfs(m *hlo.Module) []Lever {
	var out []Lever
	for _, s := range WhatIfSchedules {
		if s == liveness.SchedKeep && (m == nil || !m.IsScheduled) {
			continue
		}
		// The exact search of every computation is for modules small
		// enough for it to finish in seconds.
		if s == liveness.SchedOptimal && (m == nil || m.NumInstructions() > WhatIfOptimalLimit) {
			continue
		}
		out = append(out, Lever{"schedule", s})
	}
	out = append(out, Lever{"fusion", "off"}, Lever{"fusion", "on"})
	for _, p := range WhatIfPackers {
		out = append(out, Lever{"packer", p})
	}
	return out
}

// fused reports whether opts run the fusion passes.
func fused(p liveness.PrepareOptions) bool { return len(p.Optimize) > 0 }

// Current reports whether l is what opts already do.
func (l Lever) Current(opts Options, m *hlo.Module) bool {
	switch l.Kind {
	case "schedule":
		return l.Value == scheduleName(m, opts.Prepare.Scheduler)
	case "fusion":
		return (l.Value == "on") == fused(opts.Prepare)
	case "packer":
		a := opts.Assign.Algorithm
		if a == "" {
			a = "auto"
		}
		return l.Value == a
	}
	return false
}

// plan plans m with l applied to opts.
func (l Lever) plan(ctx context.Context, m *hlo.Module, opts Options) WhatIf {
	w := WhatIf{Lever: l}
	popts, aopts := opts.Prepare, opts.Assign
	switch l.Kind {
	case "schedule":
		popts.Scheduler = l.Value
		if l.Value == liveness.SchedOptimal && popts.Search.Budget == 0 {
			popts.Search.Budget = WhatIfOptimalBudget
		}
	case "fusion":
		popts.Optimize = nil
		if l.Value == "on" {
			popts.Optimize = fusion.Passes(fusion.Options{Scheduler: popts.Scheduler, Cost: assign.TotalCost(ctx, aopts)})
		}
	case "packer":
		aopts.Algorithm = l.Value
	default:
		w.Err = fmt.Sprintf("unknown lever %q", l.Kind)
		return w
	}
	as, err := plan(ctx, m, popts, aopts)
	if err != nil {
		w.Err = err.Error()
		return w
	}
	w.LowerBound, w.Total = as.Stats.LowerBound, as.Stats.TotalBytes
	return w
}

// whatIfs plans m under every lever of opts.WhatIf, as many at once as
// there are processors, and returns the results in the levers' order.
func whatIfs(ctx context.Context, m *hlo.Module, opts Options, progress func(string)) []WhatIf {
	n := len(opts.WhatIf)
	if n == 0 {
		return nil
	}
	out := make([]WhatIf, n)
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				l := opts.WhatIf[i]
				if ctx.Err() != nil {
					out[i] = WhatIf{Lever: l, Err: ctx.Err().Error()}
					continue
				}
				out[i] = l.plan(ctx, m, opts)
				mu.Lock()
				done++
				progress(fmt.Sprintf("what if: %d of %d planned (%s)", done, n, l))
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
