package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

func init() {
	register(&command{
		name:    "liveness",
		usage:   "[--format=xla|json] [--peak-format=current|legacy] [--schedule=NAME] [--schedule-budget=N] [--fuse] FILE.hlo",
		summary: "live ranges of every buffer; --format=xla matches XLA's HloLiveRange dump",
		run:     runLiveness,
	})
}

// fuseFlag documents --fuse, shared by several commands.
const fuseFlag = "simplify and fuse the module first (hlomem fuse), keeping its lower bound (and for assign and run the assigned total) from rising"

// prepareOptions is the preparation pipeline of a command: the scheduler
// and its budget and, with --fuse, the optimization passes.
func prepareOptions(sched scheduleFlags, fuse bool, cost func(*liveness.Analysis) (int64, error)) liveness.PrepareOptions {
	o := liveness.PrepareOptions{Scheduler: *sched.name, Search: sched.search()}
	o.Search.Cost = cost // search and optimal leave a module's own order only for a plan that costs no more
	if fuse {
		o.Optimize = fusion.Passes(fusion.Options{Cost: cost, Search: o.Search})
	}
	return o
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
func addScheduleFlags(fs *flag.FlagSet, doc string) scheduleFlags {
	return scheduleFlags{
		name:   fs.String("schedule", "", doc+scheduleFlag),
		budget: fs.Int64("schedule-budget", 0, fmt.Sprintf("expansions (sets of scheduled instructions) the best, search and optimal schedulers may search per module; 0 means their defaults (%d, %d for optimal), negative the best heuristic only", liveness.DefaultSearchBudget, liveness.DefaultOptimalBudget)),
	}
}

// search returns the search options of the flags.
func (f scheduleFlags) search() liveness.SearchOptions {
	return liveness.SearchOptions{Budget: *f.budget}
}

func runLiveness(e *env, args []string) error {
	c := commands["liveness"]
	fs := newFlagSet(c, e)
	format := fs.String("format", "xla", "output format: xla or json")
	sched := addScheduleFlags(fs, "scheduler: ")
	peak := fs.String("peak-format", "current", peakFormatFlag)
	fuse := fs.Bool("fuse", false, fuseFlag)
	file, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := oneOf("liveness", "format", *format, []string{"xla", "json"}); err != nil {
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
	return eachAnalysis(e, file, prepareOptions(sched, *fuse, nil), l, func(w io.Writer, _ *hlo.Module, a *liveness.Analysis) error {
		if *format == "json" {
			return a.WriteJSON(w)
		}
		return a.WriteXLAWith(w, xopts)
	})
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

// eachAnalysis loads and verifies every module of file, prepares and
// analyses each as XLA does before buffer assignment (liveness.PrepareWith
// popts: its scheduler, "" picking keep for a scheduled module and best
// otherwise, and the optimization passes --fuse asks for) and calls write
// for it with where to write its part of the output, laid out as l says
// (moduleOutput).
func eachAnalysis(e *env, file string, popts liveness.PrepareOptions, l layout, write func(io.Writer, *hlo.Module, *liveness.Analysis) error) error {
	return eachPrepared(e, file, func(m *hlo.Module) (*liveness.Analysis, error) {
		return liveness.PrepareContext(e.ctx, m, popts)
	}, l, write)
}

// eachPrepared is eachAnalysis with the preparation prepare.
func eachPrepared(e *env, file string, prepare func(*hlo.Module) (*liveness.Analysis, error), l layout, write func(io.Writer, *hlo.Module, *liveness.Analysis) error) error {
	mods, err := loadModules(e, file, true)
	if err != nil {
		return err
	}
	name := inputName(file)
	out := newModuleOutput(e.stdout, l, len(mods))
	for _, m := range mods {
		a, err := prepare(m)
		if err != nil {
			return moduleError(name, m, err)
		}
		w, err := out.next(m)
		if err != nil {
			return err
		}
		if err := write(w, m, a); err != nil {
			return moduleError(name, m, err)
		}
	}
	return out.finish()
}
