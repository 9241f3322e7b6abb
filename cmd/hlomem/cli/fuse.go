package cli

import (
	"fmt"

	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

func init() {
	register(&command{
		name:    "fuse",
		usage:   "[--explain] [--schedule=NAME] [--schedule-budget=N] [--no-guard] [--max-operands=N] [--max-instructions=N] [--no-multi-output] FILE.hlo",
		summary: "simplify and fuse every module of FILE and print the result; --explain prints each decision and its reason instead",
		run:     runFuse,
	})
}

func runFuse(e *env, args []string) error {
	c := commands["fuse"]
	fs := newFlagSet(c, e)
	explain := fs.Bool("explain", false, "print the fusion decisions (made and declined, with reasons) instead of the module")
	sf := addScheduleFlags(fs, "scheduler under which the lower bound must not rise: ")
	sched := sf.name
	noGuard := fs.Bool("no-guard", false, "make every fusion the rules allow, even those that raise the lower bound")
	maxOps := fs.Int("max-operands", fusion.DefaultMaxOperands, "most operands of a fusion")
	maxInst := fs.Int("max-instructions", fusion.DefaultMaxInstructions, "most instructions of a fused computation")
	noMulti := fs.Bool("no-multi-output", false, "no multi-output (sibling) fusion")
	file, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *maxOps < 1 {
		return flagError("fuse", "--max-operands must be at least 1, got %d", *maxOps)
	}
	if *maxInst < 1 {
		return flagError("fuse", "--max-instructions must be at least 1, got %d", *maxInst)
	}
	if err := checkSchedule("fuse", *sched); err != nil {
		return err
	}
	mods, err := loadModules(e, file, true)
	if err != nil {
		return err
	}
	name := inputName(file)
	for i, m := range mods {
		var decisions []fusion.Decision
		opts := fusion.Options{Scheduler: *sched, Search: sf.search(), NoGuard: *noGuard, MaxOperands: *maxOps, MaxInstructions: *maxInst, NoMultiOutput: *noMulti,
			Explain: func(d fusion.Decision) { decisions = append(decisions, d) }}
		if _, err := hlo.FlattenCallGraphContext(e.ctx, m); err != nil {
			return moduleError(name, m, err)
		}
		// The fusion passes, each under the command's context; an error
		// names its pass.
		var passes []liveness.Pass
		for _, p := range fusion.Passes(opts) {
			run := p.Run
			p.Run = func(m *hlo.Module, po liveness.PrepareOptions) (bool, error) {
				changed, err := run(m, po)
				if err != nil && e.ctx.Err() == nil {
					err = fmt.Errorf("pass %s: %w", p.Name, err)
				}
				return changed, err
			}
			passes = append(passes, p)
		}
		if _, err := liveness.RunPassesContext(e.ctx, m, passes, liveness.PrepareOptions{Scheduler: *sched, Search: sf.search()}); err != nil {
			return moduleError(name, m, err)
		}
		if i > 0 {
			e.stdout.WriteString("\n// -----\n\n")
		}
		if *explain {
			made := 0
			for _, d := range decisions {
				if d.Fused {
					made++
				}
			}
			fmt.Fprintf(e.stdout, "module %s: %s made, %d declined\n", m.Name, count(made, "fusion", "fusions"), len(decisions)-made)
			for _, d := range decisions {
				fmt.Fprintln(e.stdout, d)
			}
			continue
		}
		e.stdout.WriteString(m.String())
	}
	return nil
}
