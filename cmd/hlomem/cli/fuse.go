package cli

import (
	"fmt"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/fusion"
)

// fuseFlags defines the flags of hlomem fuse on fs and returns its run func.
func fuseFlags(fs *flagSet, e *env) func(args []string) error {
	explain := fs.Bool("explain", false, "print the fusion decisions (made and declined, with reasons) instead of the module")
	sf := addScheduleFlags(fs, "scheduler under which the lower bound must not rise: ")
	sched := sf.name
	noGuard := fs.Bool("no-guard", false, "make every fusion the rules allow, even those that raise the lower bound")
	maxOps := fs.Int("max-operands", fusion.DefaultMaxOperands, "N", "most operands of a fusion")
	maxInst := fs.Int("max-instructions", fusion.DefaultMaxInstructions, "N", "most instructions of a fused computation")
	noMulti := fs.Bool("no-multi-output", false, "no multi-output (sibling) fusion")
	e.passesFlag(fs)
	return func(args []string) error {
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
			opts := compile.Options{Scheduler: *sched, Search: sf.search(), Fuse: true, Until: "fusion", Trace: e.tracePasses(m),
				Fusion: fusion.Options{NoGuard: *noGuard, MaxOperands: *maxOps, MaxInstructions: *maxInst, NoMultiOutput: *noMulti,
					Explain: func(d fusion.Decision) { decisions = append(decisions, d) }}}
			if _, err := compile.Compile(e.ctx, m, opts); err != nil {
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
}
