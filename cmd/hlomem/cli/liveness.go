package cli

import (
	"fmt"
	"io"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
)

// fuseFlag documents --fuse, shared by several commands.
const fuseFlag = "simplify and fuse the module first (hlomem fuse), keeping its lower bound (and for assign and run the assigned total) from rising"

// compileOptions is the pipeline of a command (package compile): the
// scheduler and its budget, with --fuse the optimization passes, and with
// planCost the plan's total weighing the search's and fusion's choices.
func compileOptions(sched scheduleFlags, fuse, planCost bool) compile.Options {
	return compile.Options{Scheduler: *sched.name, Search: sched.search(), Fuse: fuse, PlanCost: planCost}
}

// scheduleFlag documents the --schedule choices shared by several commands.
const scheduleFlag = "keep|postorder|dfs|list|heuristic|best|search|optimal; default keep for a scheduled module, best otherwise (best is search; heuristic is XLA's best of list, dfs and postorder)"

// scheduleFlags are --schedule and --schedule-budget, shared by several
// commands.
type scheduleFlags struct {
	name   *string
	budget *int64
}

// addScheduleFlags defines --schedule (documented as doc) and
// --schedule-budget on fs.
func addScheduleFlags(fs *flagSet, doc string) scheduleFlags {
	return scheduleFlags{
		name:   fs.String("schedule", "", "NAME", doc+scheduleFlag),
		budget: fs.Int64("schedule-budget", 0, "N", fmt.Sprintf("expansions (sets of scheduled instructions) the best, search and optimal schedulers may search per module; 0 means their defaults (%d, %d for optimal), negative the best heuristic only", schedule.DefaultSearchBudget, schedule.DefaultOptimalBudget)),
	}
}

// search returns the search options of the flags.
func (f scheduleFlags) search() schedule.Options {
	return schedule.Options{Budget: *f.budget}
}

// livenessFlags defines the flags of hlomem liveness on fs and returns its run func.
func livenessFlags(fs *flagSet, e *env) func(args []string) error {
	format := fs.String("format", "xla", "xla|json", "output format: xla or json")
	peak := fs.String("peak-format", "current", "current|legacy", peakFormatFlag)
	sched := addScheduleFlags(fs, "scheduler: ")
	fuse := fs.Bool("fuse", false, fuseFlag)
	live := addLiveFlags(fs)
	e.passesFlag(fs)
	return func(args []string) error {
		file, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if err := oneOf("liveness", "format", *format, []string{"xla", "json"}); err != nil {
			return err
		}
		if err := live.apply("liveness", e); err != nil {
			return err
		}
		if err := checkSchedule("liveness", *sched.name); err != nil {
			return err
		}
		xopts, err := xlaOptions("liveness", *peak)
		if err != nil {
			return err
		}
		l := splitMarker
		if *format == "json" {
			l = jsonArray
		}
		opts := compileOptions(sched, *fuse, false)
		opts.Until = "schedule"
		// XLA's dump has live ranges for unbounded dynamic shapes and a
		// sentence in place of the peak; the JSON's sizes would be unknown.
		opts.AllowUnbounded = *format == "xla"
		return eachCompiled(e, file, opts, l, func(w io.Writer, _ *hlo.Module, r *compile.Result) error {
			if *format == "json" {
				return r.Analysis.WriteJSON(w)
			}
			return r.Analysis.WriteXLAWith(w, xopts)
		})
	}
}

// peakFormatFlag documents --peak-format, shared by liveness and assign.
const peakFormatFlag = "layout of the peak section of the XLA output: current (XLA since 2025: cumulative sizes and a stack-trace breakdown) or legacy (older dumps)"

// xlaOptions maps --peak-format to the liveness writer's options.
func xlaOptions(cmd, peak string) (liveness.XLAOptions, error) {
	switch peak {
	case "current":
		return liveness.XLAOptions{Peak: liveness.PeakCumulative}, nil
	case "legacy":
		return liveness.XLAOptions{Peak: liveness.PeakLegacy}, nil
	}
	return liveness.XLAOptions{}, oneOf(cmd, "peak-format", peak, []string{"current", "legacy"})
}

// eachCompiled loads and verifies every module of file, runs the
// pipeline (compile.Compile with opts, on the command's context) on each
// and calls write for it with where to write its part of the output, laid
// out as l says (moduleOutput).
func eachCompiled(e *env, file string, opts compile.Options, l layout, write func(io.Writer, *hlo.Module, *compile.Result) error) error {
	mods, err := loadModules(e, file, true)
	if err != nil {
		return err
	}
	name := inputName(file)
	out := newModuleOutput(e.stdout, l, len(mods))
	for _, m := range mods {
		o := opts
		o.Trace = e.tracePasses(m)
		r, err := compile.Compile(e.ctx, m, o)
		if err != nil {
			return moduleError(name, m, err)
		}
		w, err := out.next(m)
		if err != nil {
			return err
		}
		if err := write(w, m, r); err != nil {
			return moduleError(name, m, err)
		}
	}
	return out.finish()
}
