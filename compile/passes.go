package compile

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
	"github.com/hlomem/hlomem/tpu"
)

// Pass is one step of the pipeline.
type Pass struct {
	// Name identifies the pass (errors, Options.Until, PassRun).
	Name string
	// Needs and Makes say what the pass reads and what it leaves for the
	// passes after it, beyond the module itself.
	Needs, Makes Artifact
	// When says whether the pass runs for a Compile's options; nil
	// always.
	When func(*planner) bool
	// Run transforms the unit and reports whether it changed the module.
	Run func(ctx context.Context, p *planner, u *unit) (changed bool, err error)
	// OwnsState: the pass keeps the unit's state right itself; after any
	// other pass that changed the module, what was derived from it (its
	// verification, analysis, plan) is dropped.
	OwnsState bool
}

// Artifact is what a pass makes for the passes after it.
type Artifact uint8

const (
	// Flat: the call graph is flat (every sequential computation has one
	// call site) and the module verified.
	Flat Artifact = 1 << iota
	// Scheduled: the analysis, laid out under the module's schedule.
	Scheduled
	// Planned: the buffer assignment of the analysis.
	Planned
	// Checked: the plan passed assign.Check.
	Checked
)

// Passes is the pipeline, in order. Compile runs the passes its options
// call for (When); sub-pipelines (fusion's measure, memory-space
// assignment's preparations) run slices of it.
var Passes = []Pass{
	{Name: "flatten-call-graph", Makes: Flat, Run: flattenPass, OwnsState: true},
	{Name: "target-layout", Needs: Flat, When: tiled, Run: layoutPass},
	{Name: "simplify", Needs: Flat, When: fused, Run: simplifyPass},
	{Name: "cse", Needs: Flat, When: fused, Run: csePass},
	{Name: "dce", Needs: Flat, When: fused, Run: dcePass},
	{Name: "fusion", Needs: Flat, When: fused, Run: fusionPass},
	{Name: "fusion-layout", Needs: Flat, When: tiledFused, Run: layoutPass},
	{Name: "memory-spaces", Needs: Flat, When: spaces, Run: spacesPass, OwnsState: true},
	{Name: "copy-insertion", Needs: Flat, Run: copyInsertionPass, OwnsState: true},
	{Name: "schedule", Needs: Flat, Makes: Scheduled, Run: schedulePass, OwnsState: true},
	{Name: "remat", Needs: Scheduled, Makes: Scheduled, When: rematerializes, Run: rematPass, OwnsState: true},
	{Name: "assign", Needs: Scheduled, Makes: Planned, Run: assignPass, OwnsState: true},
	{Name: "check", Needs: Planned, Makes: Checked, Run: checkPass, OwnsState: true},
}

// prepare is the slice of Passes that prepares a module for buffer
// assignment once it is optimized: fusion's guard measures with it, and
// memory-space assignment prepares with it (set from Passes by init).
var prepare []Pass

func init() {
	for _, ps := range Passes {
		switch ps.Name {
		case "flatten-call-graph", "copy-insertion", "schedule":
			prepare = append(prepare, ps)
		}
	}
}

func tiled(p *planner) bool      { return p.gen != nil }
func fused(p *planner) bool      { return p.opts.Fuse }
func tiledFused(p *planner) bool { return p.gen != nil && p.opts.Fuse }
func spaces(p *planner) bool     { return p.gen != nil && p.opts.Spaces != nil }

// flattenPass: hlo.FlattenCallGraph (which verifies the module first), so
// that every sequential computation has one call site.
func flattenPass(ctx context.Context, _ *planner, u *unit) (bool, error) {
	changed, err := hlo.FlattenCallGraphContext(ctx, u.Module)
	if err != nil {
		return false, err
	}
	if changed {
		u.forget()
	}
	u.verified = true
	return changed, nil
}

// layoutPass gives every array XLA:TPU's tiles for the generation
// (tpu.ApplyLayouts): after flattening, and again after the optimization
// passes for the instructions they made.
func layoutPass(_ context.Context, p *planner, u *unit) (bool, error) {
	return tpu.ApplyLayouts(u.Module, *p.gen), nil
}

// simplifyPass: fusion.Simplify, keeping the module as it came for
// fusion's guard.
func simplifyPass(_ context.Context, p *planner, u *unit) (bool, error) {
	u.before = nil
	if !p.opts.Fusion.NoGuard {
		u.before = u.Module.Clone()
	}
	return fusion.Simplify(u.Module)
}

func csePass(_ context.Context, _ *planner, u *unit) (bool, error) { return fusion.CSE(u.Module) }
func dcePass(_ context.Context, _ *planner, u *unit) (bool, error) { return fusion.DCE(u.Module) }

// fusionPass: fusion.Run, its guard measuring with the pipeline's own
// preparation (measure) against the module as it came to simplify.
func fusionPass(ctx context.Context, p *planner, u *unit) (bool, error) {
	o := p.opts.Fusion
	o.Measure = p.measure
	if p.searches(u.Module) {
		o.Probe = p.probe
	}
	o.Before, u.before = u.before, nil
	return fusion.Run(ctx, u.Module, o)
}

// measure is fusion's guard's measure: m prepared as buffer assignment
// would (the prepare slice, under the pipeline's schedule), its lower
// bound and, with PlanCost, the plan's total.
func (p *planner) measure(ctx context.Context, m *hlo.Module) (fusion.Measure, error) {
	return p.measureUnder(ctx, m, p.opts.Scheduler)
}

// probe is measure under XLA's heuristic scheduler: fusion's guard
// bisects with it when the pipeline's scheduler searches (each search is
// costly, and the guard measures many modules), and confirms what it finds
// with measure.
func (p *planner) probe(ctx context.Context, m *hlo.Module) (fusion.Measure, error) {
	return p.measureUnder(ctx, m, schedule.Heuristic)
}

// searches reports whether the pipeline schedules m with a searching
// scheduler (best, search, optimal; the default for an unscheduled
// module).
func (p *planner) searches(m *hlo.Module) bool {
	if p.opts.Search.Budget < 0 {
		return false // the search runs its warm start only: a heuristic already
	}
	switch schedule.Effective(p.opts.Scheduler, m) {
	case schedule.Best, schedule.Search, schedule.Optimal:
		return true
	}
	return false
}

// measureUnder is measure with the named scheduler.
func (p *planner) measureUnder(ctx context.Context, m *hlo.Module, scheduler string) (fusion.Measure, error) {
	u := &unit{Module: m, sub: &subOptions{scheduler: scheduler, search: p.search()}}
	if err := p.run(ctx, u, prepare); err != nil {
		return fusion.Measure{}, err
	}
	x := fusion.Measure{LowerBound: u.analysis.LowerBound(nil).Bytes}
	if p.cost != nil {
		c, err := p.cost(u.analysis)
		if err != nil {
			return fusion.Measure{}, err
		}
		x.Cost, x.HasCost = c, true
	}
	return x, nil
}

// search is the searching schedulers' options: Options.Search, with the
// plan's cost when PlanCost asks for it.
func (p *planner) search() schedule.Options {
	s := p.opts.Search
	if s.Cost == nil {
		s.Cost = p.cost
	}
	return s
}

// spacesPass is memory-space assignment (tpu.AssignSpaces): it prepares
// a clone of the module with the prepare slice, chooses what goes to VMEM
// and SMEM, rewrites the module and re-plans it until it fits; the module
// it returns is scheduled, and the rest of the pipeline keeps that order.
func spacesPass(ctx context.Context, p *planner, u *unit) (bool, error) {
	so := *p.opts.Spaces
	so.Prepare = func(ctx context.Context, m *hlo.Module) (*liveness.Analysis, error) {
		v := &unit{Module: m, sub: &subOptions{scheduler: p.opts.Scheduler, search: p.search()}}
		if err := p.run(ctx, v, prepare); err != nil {
			return nil, err
		}
		return v.analysis, nil
	}
	so.Replan = func(ctx context.Context, m *hlo.Module, opts assign.Options) (*assign.Assignment, error) {
		v := &unit{Module: m, sub: &subOptions{}}
		if err := p.run(ctx, v, prepare); err != nil {
			return nil, err
		}
		return assign.Assign(ctx, v.analysis, opts)
	}
	out, rep, err := tpu.AssignSpaces(ctx, u.Module, so)
	if err != nil {
		return false, err
	}
	u.Module, u.spaces, u.keep = out, rep, true
	u.forget()
	return true, nil
}

// copyInsertionPass adds the copies XLA's CopyInsertion would, to a
// module XLA has not scheduled (a scheduled one has been through it).
func copyInsertionPass(ctx context.Context, _ *planner, u *unit) (bool, error) {
	if u.Module.IsScheduled {
		return false, nil
	}
	a, changed, err := liveness.InsertCopiesUnscheduled(ctx, u.Module, u.check())
	if err != nil {
		return changed, err
	}
	u.analysis, u.laid = a, false // the last round's analysis is current
	return changed, nil
}

// schedulePass lays the analysis out under the chosen schedule
// (schedule.Apply: the module's own order for a scheduled
// module, the search otherwise, unless the options name one), adding the
// copies the order needs. After memory-space assignment the module's
// order is its schedule, and is kept.
func schedulePass(ctx context.Context, p *planner, u *unit) (bool, error) {
	a := u.analysis
	if a == nil {
		var err error
		if a, err = liveness.AnalyzeUnscheduled(ctx, u.Module, u.check()); err != nil {
			return false, err
		}
	}
	scheduler, opts := p.opts.Scheduler, p.search()
	switch {
	case u.keep:
		scheduler, opts = schedule.Keep, schedule.Options{}
	case u.sub != nil:
		scheduler, opts = u.sub.scheduler, u.sub.search
	}
	a, changed, err := schedule.Apply(ctx, a, scheduler, opts)
	if err != nil {
		return changed, err
	}
	u.analysis, u.laid = a, true
	u.assignment, u.checked = nil, false
	return changed, nil
}

// assignPass is buffer assignment (assign.Assign) of the laid-out
// analysis.
func assignPass(ctx context.Context, p *planner, u *unit) (bool, error) {
	if u.analysis == nil || !u.laid {
		return false, fmt.Errorf("compile: internal error: assign without a scheduled analysis")
	}
	as, err := assign.Assign(ctx, u.analysis, p.assign)
	if err != nil {
		return false, err
	}
	u.assignment, u.checked = as, false
	return false, nil
}

// checkPass checks the plan independently of the packer that made it
// (assign.Check): no plan leaves Compile unchecked.
func checkPass(_ context.Context, _ *planner, u *unit) (bool, error) {
	if err := assign.Check(u.assignment); err != nil {
		return false, fmt.Errorf("internal error, the plan is invalid: %w", err)
	}
	u.checked = true
	return false, nil
}
