package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/runtime"
	"github.com/hlomem/hlomem/tpu"
)

// isTPUDevice reports whether --device names a TPU generation.
func isTPUDevice(name string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(name)), "tpu")
}

// runTPU runs each module of file on a TPU-like chip: arrays tiled as
// XLA:TPU tiles them, the plan for the TPU target checked against the
// generation's HBM (XLA:TPU's compile-time OOM, exit 2), then with
// --verify the shadow execution, and with --inputs=random the evaluator on
// the padded buffers of an HBM that compacts, compared with a plan-free
// run. It prints the unpadded and padded bytes live at every step.
func runTPU(ctx context.Context, e *env, genName string, files []string, opts assign.Options, popts liveness.PrepareOptions, verify, evaluate bool, rexec runtime.ExecOptions) error {
	gen, err := tpu.GenerationByName(genName)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	if len(files) != 1 {
		return errors.New("hlomem run: a TPU run takes one input file")
	}
	opts.Target = assign.TPU
	popts.Fusion = tpu.LayoutPass(gen)
	out := e.stdout
	fmt.Fprintf(out, "device %s: HBM %s (%d bytes), VMEM %s\n", gen.Name, assign.HumanBytes(gen.HBM), gen.HBM, assign.HumanBytes(gen.VMEM))
	return eachAnalysis(e, files[0], popts, headed, func(w io.Writer, m *hlo.Module, a *liveness.Analysis) error {
		as, err := assign.Assign(ctx, a, opts)
		if err != nil {
			return err
		}
		if err := tpu.CompileOOM(as, gen, 5); err != nil {
			return &exitError{code: exitInfeasible, msg: err.Error()}
		}
		p := tpu.PaddingOf(as)
		fmt.Fprintf(w, "plan: %s of %s HBM; buffers unpadded %s, padded %s (%.2fx expansion)\n",
			assign.HumanBytes(as.Stats.TotalBytes), assign.HumanBytes(gen.HBM), assign.HumanBytes(p.Unpadded), assign.HumanBytes(p.Padded), p.Expansion())
		if verify {
			if err := shadowRun(ctx, w, as); err != nil {
				return err
			}
		}
		if evaluate {
			hbm, err := tpu.NewHBM(gen.HBM)
			if err != nil {
				return err
			}
			hbm.Fill = runtime.PoisonByte
			args := runtime.RandomArgs(m, rand.New(rand.NewPCG(rexec.Seed, 0)))
			got, _, err := planEqualsReference(ctx, as, args, hbm, rexec)
			if err != nil {
				return err
			}
			st := hbm.Stats()
			fmt.Fprintf(w, "ok: the run on the padded buffers of the HBM equals the reference run; %d steps; %d compactions moved %d bytes\n", got.Steps, st.Compactions, st.BytesMoved)
		}
		fmt.Fprintln(w, "step instruction unpadded padded")
		for _, s := range tpu.LiveBytes(as.Analysis) {
			fmt.Fprintf(w, "%d %s %d %d\n", s.Step, s.Inst, s.Unpadded, s.Padded)
		}
		return nil
	})
}
