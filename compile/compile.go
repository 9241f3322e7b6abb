package compile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/remat"
	"github.com/hlomem/hlomem/schedule"
	"github.com/hlomem/hlomem/tpu"
)

// Options configures Compile. The zero value plans a module for the GPU
// as XLA's buffer assignment would: the call graph flattened, copies
// inserted into a module XLA has not scheduled, the module's own order
// kept when it has one (is_scheduled=true) and the searched schedule
// otherwise, the temp heaps packed by the auto packer, the plan checked.
type Options struct {
	// Target is the backend (assign.GPU, CPU, TPU); the zero Target is
	// Assign.Target when that is set, the GPU otherwise. A TPU module gets XLA:TPU's tiles (Generation's).
	Target assign.Target
	// Generation gives a TPU module its tiles (tpu.DefaultLayout) and
	// memory-space assignment its VMEM and SMEM; nil means tpu.V4. Other
	// targets ignore it.
	Generation *tpu.Generation
	// Spaces, when set (and the target is the TPU), runs memory-space
	// assignment (tpu.AssignSpaces) with these capacities and windows;
	// its Prepare and Replan are the pipeline's own and are ignored here.
	Spaces *tpu.SpaceOptions

	// Fuse runs the optimization passes: simplification, CSE, dead-code
	// removal and fusion, with Fusion's bounds; fusion's guard keeps the
	// plan's measure from rising (the lower bound, and with PlanCost the
	// plan's total). Fusion.Measure and Fusion.Before are the pipeline's.
	Fuse   bool
	Fusion fusion.Options

	// Scheduler names the schedule (schedule.Names): "" keeps the
	// module's own order when it has one and searches otherwise. Search
	// bounds the searching schedulers.
	Scheduler string
	Search    schedule.Options
	// PlanCost weighs the choices of the searching schedulers and of
	// fusion's guard by the plan's total (assign.TotalCost with Assign),
	// not only by the lower bound: a searched order replaces a module's
	// own, and a fusion is kept, only when the plan costs no more.
	PlanCost bool

	// Assign configures buffer assignment (packer, alignment, budgets);
	// its Target is Options.Target.
	Assign assign.Options

	// Remat, when set, rematerializes the scheduled module toward
	// Remat.Limit on the plan's total (the remat pass, remat.Fit) before
	// it is assigned: the plan is the rewritten module's. A limit not
	// reached is no error (Result.Remat says so).
	Remat *RematOptions

	// Until, when set, stops the pipeline after the pass of that name
	// ("fusion": the optimized module; "schedule": the analysis, no
	// plan).
	Until string
	// AllowUnbounded lets a module with unbounded dynamic dimensions
	// (f32[?], valid HLO whose sizes are unknown) through to its analysis
	// (liveness.AllowUnbounded): only with Until "schedule" and without
	// Fuse, since everything after, and fusion's guard, weighs sizes.
	// The schedule is then the module's own order unless Scheduler names
	// postorder (schedule.Effective). Without it, or with those, such a
	// module is refused with a positioned error per instruction of
	// unbounded shape (hlo.ErrUnboundedShape).
	AllowUnbounded bool
	// VerifyEach checks the module after every pass and fails naming the
	// pass that left it wrong: it must pass hlo.Verify, a pass that reports
	// no change must leave the module's text as it was, and a changed
	// module must print as a fixed point of parse and print. It prints the
	// module twice per pass: a debugging aid, not for large modules.
	VerifyEach bool
	// Trace, when set, is told of each pass as it ends.
	Trace func(PassRun)
}

// Result is what Compile made of a module.
type Result struct {
	// Module is the module as the passes left it: m itself, or after
	// memory-space assignment the module it rewrote.
	Module *hlo.Module
	// Analysis is the module's analysis under its schedule (nil when the
	// pipeline stopped before the schedule pass).
	Analysis *liveness.Analysis
	// Assignment is the plan, checked by assign.Check (nil when the
	// pipeline stopped before).
	Assignment *assign.Assignment
	// Spaces is what memory-space assignment did (nil when it did not
	// run).
	Spaces *tpu.SpaceReport
	// Remat is what the remat pass did (nil when it did not run); its
	// Module is Result.Module (before the pipeline's later passes).
	Remat *remat.FitResult
	// Passes are the passes that ran, in order.
	Passes []PassRun
}

// PassRun is one pass of a run: its name, whether it changed the module,
// and its time.
type PassRun struct {
	Name    string
	Changed bool
	Elapsed time.Duration
}

// Sentinel errors of the pipeline itself (a pass's own errors come back
// as the pass returned them).
var (
	// ErrInvalidAfterPass: with VerifyEach, hlo.Verify refused the module
	// after a pass; the *Error names the pass.
	ErrInvalidAfterPass = errors.New("compile: pass left the module invalid")
	// ErrPassPanicked: a pass panicked (a bug); the *Error names it.
	ErrPassPanicked = errors.New("compile: pass panicked")
	// ErrOptions: the options cannot be run.
	ErrOptions = errors.New("compile: invalid options")
)

// Error is a failure of the pipeline that names its pass.
type Error struct {
	// Kind is ErrInvalidAfterPass or ErrPassPanicked.
	Kind   error
	Module string
	Pass   string
	Msg    string
	Err    error
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, e.Kind) true.
func (e *Error) Is(target error) bool { return target != nil && target == e.Kind }

// Unwrap returns the cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Compile runs the passes of the table (Passes) that opts call for on m,
// in order, and returns what they made. m is changed in place (call
// graph flattened, layouts, fusion, copies); a module memory-space
// assignment rewrites is Result.Module. Once ctx is done every pass stops
// and Compile returns ctx's error. Every plan Compile returns has passed
// assign.Check.
func Compile(ctx context.Context, m *hlo.Module, opts Options) (*Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if m == nil {
		return nil, fmt.Errorf("%w: no module", ErrOptions)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.AllowUnbounded && (opts.Until != "schedule" || opts.Fuse) {
		if errs := hlo.UnboundedErrors(m); errs != nil {
			return nil, errs
		}
	}
	p := newPlanner(ctx, opts)
	u := &unit{Module: m, unbounded: opts.AllowUnbounded}
	if err := p.run(ctx, u, p.passes()); err != nil {
		return nil, err
	}
	return &Result{Module: u.Module, Analysis: u.analysis, Assignment: u.assignment, Spaces: u.spaces, Remat: u.remat, Passes: u.runs}, nil
}

// check refuses options that cannot be run, before any work.
func (o Options) check() error {
	if err := schedule.Check(o.Scheduler); err != nil {
		// As the schedule pass would refuse it.
		var le *liveness.Error
		if errors.As(err, &le) {
			le.Pass = "schedule"
		}
		return err
	}
	if err := pack.CheckAlgorithm(o.Assign.Algorithm); err != nil {
		return fmt.Errorf("assign: %w", err)
	}
	if err := o.Remat.check(); err != nil {
		return err
	}
	if o.Until != "" && !slices.ContainsFunc(Passes, func(p Pass) bool { return p.Name == o.Until }) {
		return fmt.Errorf("%w: Until names no pass: %q", ErrOptions, o.Until)
	}
	return nil
}

// planner is one Compile: its options, resolved.
type planner struct {
	opts Options
	// gen is the TPU's generation (tiles, VMEM, SMEM), nil for another
	// target.
	gen *tpu.Generation
	// assign is the plan's options, with the target.
	assign assign.Options
	// cost is the plan's total (assign.TotalCost) when PlanCost asks
	// for it, nil otherwise.
	cost func(*liveness.Analysis) (int64, error)
}

func newPlanner(ctx context.Context, opts Options) *planner {
	p := &planner{opts: opts, assign: opts.Assign}
	if opts.Target.Name == "" && opts.Target.Alignment == 0 {
		// A caller that set only Assign.Target means that target.
		opts.Target = assign.GPU
		if t := opts.Assign.Target; t.Name != "" || t.Alignment != 0 {
			opts.Target = t
		}
	}
	p.assign.Target = opts.Target
	if opts.Target.Name == assign.TPU.Name {
		g := tpu.V4
		if opts.Generation != nil {
			g = *opts.Generation
		}
		p.gen = &g
	}
	p.opts = opts
	if opts.PlanCost {
		p.cost = assign.TotalCost(ctx, p.assign)
	}
	return p
}

// passes returns the table's passes the options call for, in order,
// ending at Until.
func (p *planner) passes() []Pass {
	var out []Pass
	for _, ps := range Passes {
		if ps.When == nil || ps.When(p) {
			out = append(out, ps)
		}
		if ps.Name == p.opts.Until {
			break
		}
	}
	return out
}

// unit is what the passes of one run work on and make.
type unit struct {
	Module *hlo.Module
	// verified: hlo.Verify accepted the module, and only passes that keep
	// it valid changed it since.
	verified bool
	// analysis is the module's analysis as it is now (without live
	// ranges until the schedule pass lays it out), or nil.
	analysis *liveness.Analysis
	laid     bool
	// assignment is the plan of analysis, checked once checked is set.
	assignment *assign.Assignment
	checked    bool
	// before is the module as it came to the optimization passes, for
	// fusion's guard (fusion.Options.Before).
	before *hlo.Module
	// keep: memory-space assignment fixed the schedule; the schedule
	// pass keeps it.
	keep bool
	// unbounded: the analysis may take unbounded dynamic shapes
	// (Options.AllowUnbounded).
	unbounded bool
	// search and scheduler override the options' for a sub-pipeline
	// (fusion's measure, memory-space assignment's re-plan).
	sub    *subOptions
	spaces *tpu.SpaceReport
	remat  *remat.FitResult
	runs   []PassRun
}

// subOptions are a sub-pipeline's own scheduling options.
type subOptions struct {
	scheduler string
	search    schedule.Options
}

// check is the input check the module's next analysis needs.
func (u *unit) check() liveness.Check {
	c := liveness.CheckAll
	if u.verified {
		c = liveness.CheckVerified
	}
	if u.unbounded {
		c |= liveness.AllowUnbounded
	}
	return c
}

// forget drops what a change of the module made stale.
func (u *unit) forget() {
	u.verified, u.analysis, u.laid, u.assignment, u.checked = false, nil, false, nil, false
}

// run runs passes on u in order, recording each; a pass that changes the
// module without keeping u's state (Pass.OwnsState) makes everything
// derived from the module stale.
func (p *planner) run(ctx context.Context, u *unit, passes []Pass) error {
	for _, ps := range passes {
		if err := ctx.Err(); err != nil {
			return err
		}
		verify := p.opts.VerifyEach && u.sub == nil
		var before string
		if verify {
			before = u.Module.String()
		}
		start := time.Now()
		changed, err := p.runPass(ctx, ps, u)
		if err != nil {
			return err
		}
		elapsed := time.Since(start)
		if changed && !ps.OwnsState {
			u.forget()
		}
		r := PassRun{Name: ps.Name, Changed: changed, Elapsed: elapsed}
		u.runs = append(u.runs, r)
		if p.opts.Trace != nil && u.sub == nil {
			p.opts.Trace(r)
		}
		if verify {
			if err := verifyAfter(u.Module, ps.Name, changed, before); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// verifyAfter is VerifyEach's check after pass name: the module verifies,
// a pass that reports no change left its text as it was (before), and a
// changed module prints as a fixed point of parse and print.
func verifyAfter(m *hlo.Module, name string, changed bool, before string) error {
	fail := func(kind error, err error, format string, args ...any) error {
		return &Error{Kind: kind, Module: m.Name, Pass: name,
			Msg: fmt.Sprintf("compile: after pass %s: ", name) + fmt.Sprintf(format, args...), Err: err}
	}
	if err := hlo.Verify(m); err != nil {
		return fail(ErrInvalidAfterPass, err, "%v", err)
	}
	after := m.String()
	if !changed {
		if after != before {
			return fail(ErrInvalidAfterPass, nil, "the pass reports no change but changed the module's text")
		}
		return nil
	}
	again, err := hlo.ParseModule(m.Name, after)
	if err != nil {
		return fail(ErrInvalidAfterPass, err, "the module's text does not parse back: %v", err)
	}
	if again.String() != after {
		return fail(ErrInvalidAfterPass, nil, "the module's text is not a fixed point of parse and print")
	}
	return nil
}

// runPass runs one pass under a recover that turns a panic into an error
// naming it; liveness's own errors get the pass's name too.
func (p *planner) runPass(ctx context.Context, ps Pass, u *unit) (changed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			changed = false
			err = &Error{Kind: ErrPassPanicked, Module: u.Module.Name, Pass: ps.Name,
				Msg: fmt.Sprintf("compile: pass %s: internal error: %v", ps.Name, r)}
		}
		var le *liveness.Error
		if errors.As(err, &le) && le.Pass == "" {
			le.Pass = ps.Name
		}
	}()
	return ps.Run(ctx, p, u)
}

// FusionMeasure returns the measure fusion's guard uses in the pipeline
// (fusion.Options.Measure) under opts: the module prepared as buffer
// assignment would prepare it (call graph flattened, copies inserted,
// opts's schedule), its lower bound and, with PlanCost, the plan's total.
// It is for a caller that runs fusion.Run on its own; Compile with Fuse
// sets it itself.
func FusionMeasure(ctx context.Context, opts Options) func(context.Context, *hlo.Module) (fusion.Measure, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return newPlanner(ctx, opts).measure
}
