package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/bytesize"
	"github.com/hlomem/hlomem/tpu"
)

// isTPUDevice reports whether --device names a TPU generation.
func isTPUDevice(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	return strings.HasPrefix(n, "tpu") || n == "7x"
}

// spaceFlags are the memory-space flags of assign --target=tpu and of a
// TPU run: the VMEM and SMEM capacities AssignSpaces gets and its window.
type spaceFlags struct {
	vmem, smem string
	minWindow  int
}

func (f *spaceFlags) register(fs *flagSet, run bool) {
	what := "with --target=tpu: "
	def := " (default 0: no memory-space assignment)"
	if run {
		what = "on a TPU: "
		def = " (default: the generation's; 0 keeps every value in HBM)"
	}
	fs.StringVar(&f.vmem, "vmem", "", "SIZE", what+"VMEM capacity (e.g. 16MiB) for memory-space assignment: values prefetched to, produced in and evicted from VMEM (S(1))"+def)
	fs.StringVar(&f.smem, "smem", "", "SIZE", what+"SMEM capacity for scalars (S(2)); default the generation's when VMEM is used, 0 keeps scalars in HBM")
	fs.IntVar(&f.minWindow, "min-window", 0, "N", what+"fewest instructions between a copy-start and its copy-done (0: 2)")
}

// apply sets gen's VMEM and SMEM from the flags and says whether memory
// spaces are to be assigned: with run, unless --vmem=0; without, only
// when --vmem is given. --vmem=0 leaves the generation's VMEM the chip's
// (a module may place values there itself).
func (f *spaceFlags) apply(gen *tpu.Generation, run bool) (bool, error) {
	use := run
	if f.vmem != "" {
		v, err := bytesize.Parse(f.vmem)
		if err != nil {
			return false, fmt.Errorf("--vmem=%q: %v", f.vmem, err)
		}
		if v > 0 {
			gen.VMEM = v
		}
		use = v > 0
	}
	if f.smem != "" {
		v, err := bytesize.Parse(f.smem)
		if err != nil {
			return false, fmt.Errorf("--smem=%q: %v", f.smem, err)
		}
		gen.SMEM = v
	}
	if f.minWindow < 0 {
		return false, fmt.Errorf("--min-window=%d: want 0 or more", f.minWindow)
	}
	return use && gen.VMEM > 0, nil
}

// writeSpaces prints what memory-space assignment did.
func writeSpaces(w io.Writer, r *tpu.SpaceReport, gen tpu.Generation) error {
	h := assign.HumanBytes
	var b strings.Builder
	fmt.Fprintf(&b, "memory spaces: %d values in VMEM (%d prefetched, %d produced there, %d of them evicted): %s moved to VMEM (%s prefetched, %s produced), %s evicted, %s of HBM traffic saved\n",
		r.Placed, r.Prefetches, r.Produced, r.Evicted, h(r.BytesPrefetched+r.BytesProduced), h(r.BytesPrefetched), h(r.BytesProduced), h(r.BytesEvicted), h(r.HBMTrafficSaved))
	fmt.Fprintf(&b, "  VMEM: plan %s of %s, peak %s; SMEM: %d scalar buffers (%d values), plan %s of %s; HBM peak %s -> %s\n",
		h(r.VMEMHeap), h(gen.VMEM), h(r.VMEMPeak), r.SMEMScalars, r.SMEMValues, h(r.SMEMHeap), h(gen.SMEM), h(r.HBMPeakBefore), h(r.HBMPeakAfter))
	for _, d := range r.Decisions {
		fmt.Fprintf(&b, "  %s %s (%s) %s: %s from VMEM, %d from HBM", d.Kind, d.Name, d.Computation, h(d.Bytes), count(d.Uses, "use", "uses"), d.HBMUses)
		if d.CopyStart != "" {
			fmt.Fprintf(&b, ", %s..%s over %d instructions moving %s", d.CopyStart, d.CopyDone, d.Window, h(d.WindowBytes))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// runTPU runs each module of file on a TPU-like chip: arrays tiled as
// XLA:TPU tiles them, values placed in VMEM and SMEM by memory-space
// assignment (unless --vmem=0), the plan for the TPU target checked
// against the generation's memories (XLA:TPU's compile-time OOM, exit 2),
// then with --verify the shadow execution, and with --inputs=random the
// evaluator on the tiled, padded buffers of a chip whose HBM compacts,
// compared with a plan-free run. It prints the unpadded and padded HBM
// bytes and the VMEM and SMEM bytes live at every step.
func runTPU(ctx context.Context, e *env, genName string, files []string, opts compile.Options, sf spaceFlags, verify, evaluate bool, rexec exec.Options, host hostLimit) error {
	gen, err := tpu.GenerationByName(genName)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	spaces, err := sf.apply(&gen, true)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	if len(files) != 1 {
		return errors.New("hlomem run: a TPU run takes one input file")
	}
	opts.Target, opts.Generation = assign.TPU, &gen
	if spaces {
		opts.Spaces = &tpu.SpaceOptions{VMEM: gen.VMEM, SMEM: gen.SMEM, MinWindow: sf.minWindow}
	}
	h := assign.HumanBytes
	out := e.stdout
	fmt.Fprintf(out, "device %s: HBM %s (%d bytes), VMEM %s, SMEM %s\n", gen.Name, h(gen.HBM), gen.HBM, h(gen.VMEM), h(gen.SMEM))
	return eachCompiled(e, files[0], opts, headed, func(w io.Writer, m *hlo.Module, r *compile.Result) error {
		as, rep := r.Assignment, r.Spaces
		if err := tpu.CompileOOM(as, gen, 5); err != nil {
			return &exitError{code: exitInfeasible, msg: err.Error()}
		}
		if rep != nil {
			if err := writeSpaces(w, rep, gen); err != nil {
				return err
			}
		}
		p := as.Padding()
		var hbm int64
		for _, al := range as.Allocations {
			if al.Color == tpu.HBMSpace {
				hbm += al.Size
			}
		}
		fmt.Fprintf(w, "plan: %s of %s HBM; buffers unpadded %s, padded %s (%.2fx expansion)\n",
			h(hbm), h(gen.HBM), h(p.Unpadded), h(p.Padded), p.Expansion())
		// The chip's memories are sparse: the estimate counts the pages
		// the plan's values touch, not the HBM's capacity.
		if err := host.check(as, exec.HostOptions{Reference: evaluate, Planned: evaluate, Shadow: verify}); err != nil {
			return err
		}
		if verify {
			if err := shadowRun(ctx, w, as); err != nil {
				return err
			}
		}
		if evaluate {
			chip, err := tpu.NewChip(gen, exec.PoisonByte)
			if err != nil {
				return err
			}
			args := eval.RandomArgs(m, rand.New(rand.NewPCG(rexec.Seed, 0)))
			got, _, err := planEqualsReference(ctx, as, args, chip, rexec)
			if err != nil {
				return err
			}
			st := chip.HBM().Stats()
			fmt.Fprintf(w, "ok: the run on the tiled, padded buffers of HBM, VMEM and SMEM equals the reference run; %d steps; %d compactions moved %d bytes; VMEM peak %d bytes, SMEM peak %d bytes\n",
				got.Steps, st.Compactions, st.BytesMoved, chip.VMEM().Stats().Peak, chip.SMEM().Stats().Peak)
		}
		fmt.Fprintln(w, "step instruction unpadded padded vmem smem")
		for _, s := range tpu.LiveBytes(as.Analysis) {
			fmt.Fprintf(w, "%d %s %d %d %d %d\n", s.Step, s.Inst, s.Unpadded, s.Padded, s.VMEM, s.SMEM)
		}
		return nil
	})
}
