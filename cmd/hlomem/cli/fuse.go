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
	if *maxOps < 1 || *maxInst < 1 {
		return fmt.Errorf("hlomem fuse: --max-operands and --max-instructions must be at least 1")
	}
	switch *sched {
	case "", liveness.SchedKeep, liveness.SchedPostOrder, liveness.SchedDFS, liveness.SchedList, liveness.SchedHeuristic, liveness.SchedBest, liveness.SchedSearch, liveness.SchedOptimal:
	default:
		return fmt.Errorf("hlomem fuse: unknown scheduler %q (want keep, postorder, dfs, list, heuristic, best, search or optimal)", *sched)
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
		if _, err := hlo.FlattenCallGraph(m); err != nil {
			return moduleError(name, m, err)
		}
		for _, p := range fusion.Passes(opts) {
			if _, err := p.Run(m, liveness.PrepareOptions{Scheduler: *sched, Search: sf.search()}); err != nil {
				return moduleError(name, m, fmt.Errorf("pass %s: %w", p.Name, err))
			}
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
			fmt.Fprintf(e.stdout, "module %s: %d fusions made, %d declined\n", m.Name, made, len(decisions)-made)
			for _, d := range decisions {
				fmt.Fprintln(e.stdout, d)
			}
			continue
		}
		e.stdout.WriteString(m.String())
	}
	return nil
}
