package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/runtime"
)

func init() {
	register(&command{
		name:    "run",
		usage:   "--verify | --inputs=random [--seed=N] [--target=gpu|cpu|tpu] [--algo=NAME] [--schedule=NAME] FILE.hlo",
		summary: "run the plan: --verify checks byte ownership at every step; --inputs=random evaluates it and compares with a run of a region per buffer",
		run:     runRun,
	})
}

func runRun(e *env, args []string) error {
	c := commands["run"]
	fs := newFlagSet(c, e)
	verify := fs.Bool("verify", false, "shadow execution: check the plan step by step")
	inputs := fs.String("inputs", "", "evaluate the module: random (random arguments)")
	seed := fs.Uint64("seed", 1, "seed of --inputs=random")
	target := fs.String("target", "gpu", "target: gpu, cpu or tpu")
	algo := fs.String("algo", "auto", "packer for the temp heaps (see hlomem pack)")
	sched := fs.String("schedule", "", "scheduler: "+scheduleFlag)
	file, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if !*verify && *inputs == "" {
		return errors.New("hlomem run: say what to run: --verify (shadow execution) or --inputs=random (evaluation)")
	}
	if *inputs != "" && *inputs != "random" {
		return fmt.Errorf("hlomem run: unknown --inputs %q (want random)", *inputs)
	}
	tgt, err := assign.TargetByName(*target)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return eachAnalysis(e, file, *sched, headed, func(w io.Writer, m *hlo.Module, a *liveness.Analysis) error {
		as, err := assign.Assign(ctx, a, assign.Options{Target: tgt, Algorithm: *algo})
		if err != nil {
			return err
		}
		if *verify {
			if err := shadowRun(ctx, w, as); err != nil {
				return err
			}
		}
		if *inputs == "random" {
			return compareRuns(ctx, w, as, runtime.RandomArgs(m, rand.New(rand.NewPCG(*seed, 0))))
		}
		return nil
	})
}

// shadowRun checks the plan step by step (runtime.Shadow) and reports
// what it checked.
func shadowRun(ctx context.Context, w io.Writer, as *assign.Assignment) error {
	rep, err := runtime.Shadow(ctx, as)
	if err != nil {
		return err
	}
	if rep.Violation != nil {
		return fmt.Errorf("the plan fails: %w", rep.Violation)
	}
	_, err = fmt.Fprintf(w, "ok: %d steps, %d values written, %d reads, %d bytes checked\n", rep.Steps, rep.Writes, rep.Reads, rep.BytesChecked)
	return err
}

// compareRuns evaluates the entry on args twice, on the plan's bytes and
// with a region per buffer, and fails unless every output is the same bit
// for bit.
func compareRuns(ctx context.Context, w io.Writer, as *assign.Assignment, args []runtime.Literal) error {
	ref, err := runtime.Execute(ctx, as, args, nil, runtime.ExecOptions{Reference: true})
	if err != nil {
		return err
	}
	got, err := runtime.Execute(ctx, as, args, nil, runtime.ExecOptions{})
	if err != nil {
		return err
	}
	var sums []string
	for i := range ref.Outputs {
		r, g := ref.Outputs[i].Checksum(), got.Outputs[i].Checksum()
		if r != g {
			return fmt.Errorf("the plan computes a different output %d: checksum %016x, reference %016x", i, g, r)
		}
		sums = append(sums, fmt.Sprintf("%016x", g))
	}
	_, err = fmt.Fprintf(w, "ok: planned run equals reference run; %d steps; output checksums %s\n", got.Steps, strings.Join(sums, " "))
	return err
}
