package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/runtime"
)

func init() {
	register(&command{
		name:    "run",
		usage:   "--verify [--target=gpu|cpu|tpu] [--algo=NAME] [--schedule=NAME] FILE.hlo",
		summary: "run the plan: --verify checks on every step that operands still hold their values and outputs overwrite nothing still needed",
		run:     runRun,
	})
}

func runRun(e *env, args []string) error {
	c := commands["run"]
	fs := newFlagSet(c, e)
	verify := fs.Bool("verify", false, "shadow execution: check the plan step by step")
	target := fs.String("target", "gpu", "target: gpu, cpu or tpu")
	algo := fs.String("algo", "auto", "packer for the temp heaps (see hlomem pack)")
	sched := fs.String("schedule", "", "scheduler: "+scheduleFlag)
	file, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if !*verify {
		return errors.New("hlomem run: only --verify is available in this build (the numeric evaluator is not wired in yet)")
	}
	tgt, err := assign.TargetByName(*target)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = eachAnalysis(e, file, *sched, headed, func(w io.Writer, m *hlo.Module, a *liveness.Analysis) error {
		as, err := assign.Assign(ctx, a, assign.Options{Target: tgt, Algorithm: *algo})
		if err != nil {
			return err
		}
		rep, err := runtime.Shadow(ctx, as)
		if err != nil {
			return err
		}
		if rep.Violation != nil {
			return fmt.Errorf("the plan fails: %w", rep.Violation)
		}
		_, err = fmt.Fprintf(w, "ok: %d steps, %d values written, %d reads, %d bytes checked\n", rep.Steps, rep.Writes, rep.Reads, rep.BytesChecked)
		return err
	})
	return err
}
