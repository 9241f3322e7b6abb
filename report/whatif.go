package report

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/remat"
	"github.com/hlomem/hlomem/schedule"
)

// Lever is one alternative to the plan a report shows: another schedule,
// fusion on or off, another packer, the rest of the options as they are;
// or the function run without jit (op by op, package eager).
type Lever struct {
	// Kind is "schedule", "fusion", "packer", "jit", "remat" or "fit"
	// (Value the device: hlomem fit's cheapest combination); Value
	// the scheduler name, "on" or "off", the packer name, "off-held" /
	// "off-last-use" (the release rule of the op-by-op run), or the
	// remat algorithm (the module rematerialized to fit
	// Options.RematLimit).
	Kind, Value string
}

func (l Lever) String() string { return l.Kind + "=" + l.Value }

// The schedulers and packers WhatIfs tries.
var (
	WhatIfSchedules = []string{schedule.Keep, schedule.PostOrder, schedule.DFS, schedule.List,
		schedule.Heuristic, schedule.Search, schedule.Optimal}
	WhatIfPackers = []string{"xla", "portfolio", "auto"}
)

// WhatIfOptimalLimit is the most instructions a module may have for
// WhatIfs to try the optimal scheduler.
const WhatIfOptimalLimit = 500

// WhatIfOptimalBudget is the exact search's budget (expansions) in the
// optimal what-if when the options set none: a tenth of the scheduler's
// own default, a few seconds at most, so a report stays quick. The
// lever's bound is then the best order found, proven or not.
const WhatIfOptimalBudget = schedule.DefaultOptimalBudget / 10

// WhatIfEagerLimit is the most top-level instructions a module may have
// for WhatIfs to run it without jit (hlomem run --eager does it at any
// size).
const WhatIfEagerLimit = 5000

// WhatIfs returns the usual alternatives to a plan with opts: every
// scheduler of WhatIfSchedules (keep only for a module XLA scheduled,
// whose order is then a real schedule), fusion on and off, and every
// packer of WhatIfPackers, for a module XLA has not scheduled, the
// function run without jit under each release rule, and the module
// rematerialized by each algorithm of WhatIfRemats. The plan's own
// choices are among them, so the table shows them side by side.
func WhatIfs(m *hlo.Module) []Lever {
	var out []Lever
	for _, s := range WhatIfSchedules {
		if s == schedule.Keep && (m == nil || !m.IsScheduled) {
			continue
		}
		// The exact search of every computation is for modules small
		// enough for it to finish in seconds.
		if s == schedule.Optimal && (m == nil || m.NumInstructions() > WhatIfOptimalLimit) {
			continue
		}
		out = append(out, Lever{"schedule", s})
	}
	out = append(out, Lever{"fusion", "off"}, Lever{"fusion", "on"})
	for _, p := range WhatIfPackers {
		out = append(out, Lever{"packer", p})
	}
	// Without jit: a module XLA has not compiled is the function JAX
	// would run op by op (eager); each distinct op is planned on its own,
	// so only up to WhatIfEagerLimit top-level ops.
	if m != nil && !m.IsScheduled && m.Entry != nil && len(m.Entry.Instructions) <= WhatIfEagerLimit {
		out = append(out, Lever{"jit", "off-held"}, Lever{"jit", "off-last-use"})
	}
	for _, a := range WhatIfRemats {
		out = append(out, Lever{"remat", a})
	}
	return out
}

// EagerDevice is the device model of the without-jit what-ifs: one the
// function always fits (a pebibyte: 1,048,576 GiB), with the platform allocator, so the
// peaks are the bytes the arrays take, not an allocator's rounding.
const EagerDevice = "custom:1048576GiB"

// eagerConfig is the client of the without-jit what-ifs, as the flags of
// their command set it.
var eagerConfig = gpu.ClientConfig{Preallocate: false, MemFraction: 1, Allocator: gpu.Platform}

// planEager runs m op by op under the lever's release rule and jitted, on
// EagerDevice: Total is the peak without jit, JitPeak the jitted run's on
// the same model.
func (l Lever) planEager(ctx context.Context, m *hlo.Module, opts Options, w WhatIf) WhatIf {
	rule, err := eager.ParseRelease(strings.TrimPrefix(l.Value, "off-"))
	if err != nil || !strings.HasPrefix(l.Value, "off-") {
		w.Err = fmt.Sprintf("unknown lever %s", l)
		return w
	}
	c := opts.Compile
	c.Fuse = true
	w.Command = eagerCommand(opts.File, m, c, rule)
	dev, err := gpu.DeviceByName(EagerDevice)
	if err != nil {
		w.Err = err.Error()
		return w
	}
	newClient := func() (*gpu.Client, error) { return gpu.NewClient(dev, eagerConfig, gpu.ClientOptions{}) }
	if opts.share == nil {
		cmp, err := eager.Compare(ctx, m.Clone(), newClient, eager.Options{Release: rule, Compile: c, LiveAt: -1})
		if err != nil {
			w.Err = err.Error()
			return w
		}
		w.Total, w.JitPeak = cmp.Eager.Peak, cmp.Jit.Peak
		return w
	}
	// eager.Compare's two runs, the jitted one (the same under either
	// release rule) run once for every jit lever.
	ce, err := newClient()
	if err != nil {
		w.Err = err.Error()
		return w
	}
	e, err := eager.Run(ctx, m.Clone(), ce, eager.Options{Release: rule, Compile: c, LiveAt: -1})
	if err != nil {
		w.Err = fmt.Errorf("eager run: %w", err).Error()
		return w
	}
	sh := opts.share
	sh.jitOnce.Do(func() {
		cj, err := newClient()
		if err != nil {
			sh.jitErr = err
			return
		}
		var j *eager.JitResult
		if fused := opts.fusedPlan(ctx, m); fused != nil {
			// The jitted program is the fusion=on row's plan.
			var as *assign.Assignment
			if as, err = fused(); err == nil {
				j, err = eager.JitPlan(ctx, m.Name, as, cj)
			}
		} else {
			j, err = eager.Jit(ctx, m, cj, c)
		}
		if err != nil {
			sh.jitErr = fmt.Errorf("jitted run: %w", err)
			return
		}
		sh.jitPeak = j.Peak
	})
	if sh.jitErr != nil {
		w.Err = sh.jitErr.Error()
		return w
	}
	w.Total, w.JitPeak = e.Peak, sh.jitPeak
	return w
}

// whatIfShare is what the what-ifs of one report compute once for
// several levers.
type whatIfShare struct {
	// The jitted run of the jit levers (eager.Jit; the same under either
	// release rule): its peak, or why it failed.
	jitOnce sync.Once
	jitPeak int64
	jitErr  error
	// The plan's module in its schedule, for the remat levers
	// (Options.scheduledPlan).
	schedOnce sync.Once
	sched     *hlo.Module
	// m planned with fusion on (Options.fusedPlan).
	fusedOnce sync.Once
	fused     *assign.Assignment
	fusedErr  error
}

// eagerCommand is the hlomem run line that prints a without-jit
// what-if's figures ("peak without jit", "peak with jit").
func eagerCommand(file string, m *hlo.Module, opts compile.Options, rule eager.Release) []string {
	args := []string{"hlomem", "run", "--device=" + EagerDevice, "--allocator=platform", "--mem-fraction=1", "--preallocate=false",
		"--eager=" + rule.String(), "--algo=" + algoName(opts.Assign), "--schedule=" + scheduleName(m, opts.Scheduler)}
	if b := opts.Search.Budget; b != 0 {
		args = append(args, "--schedule-budget="+strconv.FormatInt(b, 10))
	}
	if t := opts.Target.Name; t != "" && t != assign.GPU.Name {
		args = append(args, "--target="+t)
	}
	return append(args, fileArg(file))
}

// Current reports whether l is what opts already do.
func (l Lever) Current(opts Options, m *hlo.Module) bool {
	switch l.Kind {
	case "schedule":
		return l.Value == scheduleName(m, opts.Compile.Scheduler)
	case "fusion":
		return (l.Value == "on") == opts.Compile.Fuse
	case "packer":
		return l.Value == algoName(opts.Compile.Assign)
	}
	return false // jit=off: a report plans the jitted program
}

// plan plans m with l applied to opts, as hlomem assign plans it with
// the options of w.Command.
func (l Lever) plan(ctx context.Context, m *hlo.Module, opts Options) WhatIf {
	w := WhatIf{Lever: l}
	c := opts.Compile
	switch l.Kind {
	case "schedule":
		c.Scheduler = l.Value
		if l.Value == schedule.Optimal && c.Search.Budget == 0 {
			c.Search.Budget = WhatIfOptimalBudget
		}
	case "fusion":
		c.Fuse = l.Value == "on"
	case "packer":
		c.Assign.Algorithm = l.Value
	case "jit":
		return l.planEager(ctx, m, opts, w)
	case "remat":
		return l.planRemat(ctx, m, opts, w)
	case "fit":
		return l.planFit(ctx, m, opts, w)
	default:
		w.Err = fmt.Sprintf("unknown lever %q", l.Kind)
		return w
	}
	w.Command = Command(opts.File, m, c)
	var as *assign.Assignment
	var err error
	switch p := opts.plan; {
	case p != nil && samePlan(m, c, opts.Compile):
		// The lever is the plan's own options (the command is the plan's):
		// the plan is its plan.
		as = p.Assignment
	case p != nil && l.Kind == "fusion" && c.Fuse && !opts.Compile.Fuse && fusionIdle(ctx, m, c):
		// The optimization passes change nothing in this module (one
		// fused already): the pipeline with them is the plan's.
		as = p.Assignment
	case p != nil && l.Kind == "packer" && packerOnly(m, opts.Compile):
		// Nothing before the packer depends on it: the plan's analysis,
		// packed again.
		as, err = repack(ctx, p.Assignment, c.Assign.Algorithm)
	case l.Kind == "fusion" && c.Fuse && opts.fusedPlan(ctx, m) != nil:
		// Planned once for this row and the jitted run of the jit rows.
		as, err = opts.fusedPlan(ctx, m)()
	default:
		as, err = plan(ctx, m, c)
	}
	if err != nil {
		w.Err = err.Error()
		return w
	}
	w.LowerBound, w.Total = as.Stats.LowerBound, as.Stats.TotalBytes
	return w
}

// fusedPlan returns a func that plans m with the plan's options and
// fusion on, once for every caller: the fusion=on row's plan and the jit
// rows' jitted program (eager.Jit compiles with those options, fusion
// on, as this report plans: the plan's total weighed, the whole
// pipeline). nil when there is nothing to share or the options differ.
func (o Options) fusedPlan(ctx context.Context, m *hlo.Module) func() (*assign.Assignment, error) {
	sh := o.share
	c := o.Compile
	if sh == nil || !c.PlanCost || c.Until != "" || c.Spaces != nil {
		return nil
	}
	c.Fuse = true
	return func() (*assign.Assignment, error) {
		sh.fusedOnce.Do(func() { sh.fused, sh.fusedErr = plan(ctx, m, c) })
		return sh.fused, sh.fusedErr
	}
}

// samePlan reports whether the lever's options c plan m as the plan's
// options p do: the same effective scheduler and search budget, fusion
// and packer (a lever changes nothing else of p).
func samePlan(m *hlo.Module, c, p compile.Options) bool {
	return effectiveScheduler(c.Scheduler, m) == effectiveScheduler(p.Scheduler, m) &&
		c.Search.Budget == p.Search.Budget && c.Search.Timeout == p.Search.Timeout &&
		c.Fuse == p.Fuse && algoName(c.Assign) == algoName(p.Assign)
}

// effectiveScheduler is the scheduler the schedule pass runs on m for
// name (schedule.Effective), best named search (the same scheduler).
func effectiveScheduler(name string, m *hlo.Module) string {
	if s := schedule.Effective(name, m); s != schedule.Best {
		return s
	}
	return schedule.Search
}

// packerOnly reports whether, under the plan's options p, nothing the
// pipeline does before buffer assignment weighs the packer: no fusion
// (whose guard weighs the plan's total), no remat (which plans its
// candidates), and a scheduler that does not search (the searches weigh
// the plan's total, assign.TotalCost, with the packer). A packer lever
// then packs the plan's own analysis.
func packerOnly(m *hlo.Module, p compile.Options) bool {
	if p.Fuse || p.Remat != nil || p.Spaces != nil {
		return false
	}
	switch schedule.Effective(p.Scheduler, m) {
	case schedule.Best, schedule.Search, schedule.Optimal:
		return false
	}
	return true
}

// repack plans the analysis of the plan as with the packer algo, the rest
// of its options as they are, and checks it as Compile checks a plan.
func repack(ctx context.Context, as *assign.Assignment, algo string) (*assign.Assignment, error) {
	o := as.Options
	o.Algorithm = algo
	out, err := assign.Assign(ctx, as.Analysis, o)
	if err != nil {
		return nil, err
	}
	if err := assign.Check(out); err != nil {
		return nil, fmt.Errorf("internal error, the plan is invalid: %w", err)
	}
	return out, nil
}

// fusionIdle reports whether the optimization passes of the fusion
// lever's options c (simplification, CSE, DCE, fusion) leave m as it is:
// run without fusion's guard, which only keeps fusions from happening, so
// that a module they leave unchanged unguarded they leave unchanged
// guarded. The lever's pipeline is then the plan's.
func fusionIdle(ctx context.Context, m *hlo.Module, c compile.Options) bool {
	c.Fusion.NoGuard, c.Until, c.Remat, c.Spaces = true, "fusion", nil, nil
	r, err := compile.Compile(ctx, m.Clone(), c)
	if err != nil {
		return false
	}
	for _, p := range r.Passes {
		switch p.Name {
		case "simplify", "cse", "dce", "fusion":
			if p.Changed {
				return false
			}
		}
	}
	return true
}

// Command returns the command line (program name first) whose hlomem
// assign --format=json output gives the figures of m planned with opts:
// its lower_bound and total_bytes (for file's module m, among
// others when file holds several). It names every option that decides
// them and is not at its default, but the scheduler, the target and the
// packer always; file "" is written FILE.
func Command(file string, m *hlo.Module, opts compile.Options) []string {
	aopts := opts.Assign
	target := opts.Target.Name
	if target == "" {
		target = aopts.Target.Name // as compile reads it
	}
	if target == "" {
		target = assign.GPU.Name
	}
	args := []string{"hlomem", "assign", "--format=json", "--target=" + target, "--algo=" + algoName(aopts)}
	if target == assign.TPU.Name {
		args = append(args, "--vmem=0") // the report assigns no memory spaces
	}
	if aopts.Budget != 0 && aopts.Budget != assign.DefaultBudget {
		args = append(args, "--budget="+aopts.Budget.String())
	}
	if aopts.Align > 0 {
		args = append(args, "--align="+strconv.FormatInt(aopts.Align, 10))
	}
	switch g := aopts.Gap; {
	case g < 0:
		args = append(args, "--gap=0") // the flag's 0: search on
	case g > 0 && g != assign.DefaultGap:
		args = append(args, "--gap="+strconv.FormatFloat(g, 'g', -1, 64))
	}
	args = append(args, "--schedule="+scheduleName(m, opts.Scheduler))
	if b := opts.Search.Budget; b != 0 {
		args = append(args, "--schedule-budget="+strconv.FormatInt(b, 10))
	}
	if opts.Fuse {
		args = append(args, "--fuse")
	}
	if r := opts.Remat; r != nil {
		algo := r.Algorithm
		if algo == "" {
			algo = remat.Plan
		}
		args = append(args, "--remat-limit="+strconv.FormatInt(r.Limit, 10), "--remat-algo="+algo)
	}
	return append(args, fileArg(file))
}

// algoName is the packer a command names: the options', auto by default.
func algoName(aopts assign.Options) string {
	if aopts.Algorithm == "" {
		return "auto"
	}
	return aopts.Algorithm
}

// fileArg is the input as a command line names it: FILE for "", and a
// name that starts with '-' made a path so it is not read as a flag.
func fileArg(file string) string {
	switch {
	case file == "":
		return "FILE"
	case strings.HasPrefix(file, "-") && file != "-":
		return "./" + file
	}
	return file
}

// shellQuote returns args as one line a POSIX shell splits back into
// them: arguments of safe characters as they are, others in single
// quotes; a lone "|" stays a pipe (a row whose command prints a module
// for the next to read: the fit row's when a lever rewrote the module).
func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "|" {
			b.WriteString(a) // a pipe between two commands (the fit row's)
			continue
		}
		safe := a != ""
		for _, r := range a {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
				safe = false
				break
			}
		}
		if safe {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// whatIfs plans m under every lever of opts.WhatIf, as many at once as
// there are processors, and returns the results in the levers' order.
func whatIfs(ctx context.Context, m *hlo.Module, opts Options, progress func(string)) []WhatIf {
	n := len(opts.WhatIf)
	if n == 0 {
		return nil
	}
	out := make([]WhatIf, n)
	opts.share = &whatIfShare{}
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
