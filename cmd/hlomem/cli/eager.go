package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// eagerFlags are run's flags for an op-by-op (un-jitted) run.
type eagerFlags struct {
	rule, liveAt string
}

func (f *eagerFlags) register(fs *flagSet) {
	fs.StringVar(&f.rule, "eager", "", "held|last-use", "with --device: run the entry op by op, as JAX without jit (each op and each called computation one program), results held until the function returns or freed at their last use; compared with the jitted run (--fuse)")
	fs.StringVar(&f.liveAt, "live-at", "", "peak|N", "with --device: list the arrays alive at step N (or at the peak) of the run, largest first, with the op, op_name and source line that made them")
}

// liveStep reads --live-at: -1 for the peak (or when not given).
func (f *eagerFlags) liveStep() (int, error) {
	switch f.liveAt {
	case "", "peak":
		return -1, nil
	}
	n, err := strconv.Atoi(f.liveAt)
	if err != nil || n < 0 {
		return 0, flagError("run", "--live-at=%q: want peak or a step number", f.liveAt)
	}
	return n, nil
}

// runEager runs one module op by op and jitted on the device the flags
// name; exit 2 when the op-by-op run does not fit.
func runEager(ctx context.Context, e *env, d *deviceFlags, ef *eagerFlags, files []string, opts compile.Options, evaluate bool, seed uint64) error {
	rule, err := eager.ParseRelease(ef.rule)
	if err != nil {
		return flagError("run", "--eager: %v", err)
	}
	liveAt, err := ef.liveStep()
	if err != nil {
		return err
	}
	if d.workload != "" || len(files) != 1 {
		return flagError("run", "--eager runs one module file on --device, without --workload")
	}
	cfg, err := d.config(os.Getenv)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	dev, err := gpu.DeviceByName(d.device)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	mods, err := loadModules(e, files[0], true)
	if err != nil {
		return err
	}
	if len(mods) != 1 {
		return fmt.Errorf("hlomem run: --eager runs one module; %s holds %d", files[0], len(mods))
	}
	m := mods[0]
	opts.Fuse = true // a nested jit, and jax.jit, fuse
	newClient := func() (*gpu.Client, error) { return gpu.NewClient(dev, cfg, gpu.ClientOptions{}) }
	eopts := eager.Options{Release: rule, Compile: opts, LiveAt: liveAt, Seed: seed}
	if evaluate {
		eopts.Inputs = eval.RandomArgs(m, rand.New(rand.NewPCG(seed, seed)))
	}
	cmp, err := eager.Compare(ctx, m, newClient, eopts)
	if err != nil {
		return moduleError(inputName(files[0]), m, err)
	}
	out := e.stdout
	fmt.Fprintf(out, "device %s: %s (%d bytes); allocator %s, limit %s, preallocate %v, mem fraction %g\n",
		dev.Name, assign.HumanBytes(dev.Memory), dev.Memory, cmp.Eager.Allocator, assign.HumanBytes(cmp.Eager.Limit), cfg.Preallocate, cfg.MemFraction)
	writeEager(out, cmp, commandLine(d, files[0]))
	if evaluate && cmp.Eager.Fits() {
		if err := sameOutputs(ctx, out, cmp, eopts); err != nil {
			return moduleError(inputName(files[0]), m, err)
		}
	}
	if oom := cmp.Eager.OOM; oom != nil {
		in := cmp.Eager.FailedInst()
		what := "putting the arguments"
		if in != nil {
			what = "%" + in.Name + " (" + in.OpName() + ")"
		}
		return &exitError{code: exitInfeasible, msg: fmt.Sprintf("hlomem run: without jit, %s runs out of memory at step %d, %s:\n%s", m.Name, cmp.Eager.FailedStep, what, oom.Error())}
	}
	return nil
}

// commandLine is the jitted run's own command, for the reader to repeat.
func commandLine(d *deviceFlags, file string) string {
	parts := []string{"hlomem run", "--device=" + d.device}
	for _, f := range []struct{ name, v string }{{"preallocate", d.preallocate}, {"mem-fraction", d.memFraction}, {"allocator", d.allocator}} {
		if f.v != "" {
			parts = append(parts, "--"+f.name+"="+f.v)
		}
	}
	return strings.Join(append(parts, "--fuse", file), " ")
}

// writeEager prints the op-by-op run step by step, its peak beside the
// jitted one, whether each fits, and the live arrays.
func writeEager(w io.Writer, cmp *eager.Comparison, jitCmd string) {
	r, j := cmp.Eager, cmp.Jit
	fmt.Fprintf(w, "without jit (release: %s): module %s, %d top-level ops\n", r.Release, r.Module.Name, len(r.Steps))
	for _, s := range r.Steps {
		if !s.Dispatched {
			continue
		}
		fmt.Fprintf(w, "step %d %%%s (%s): allocated %s, freed %s, in use %s, peak %s, %d arrays\n",
			s.Index, s.Inst.Name, s.Inst.OpName(), assign.HumanBytes(s.Allocated), assign.HumanBytes(s.Freed),
			assign.HumanBytes(s.InUse), assign.HumanBytes(s.Peak), s.Live)
	}
	at := "step " + strconv.Itoa(r.PeakStep)
	if r.PeakStep > 0 && r.PeakStep <= len(r.Steps) {
		at += " (%" + r.Steps[r.PeakStep-1].Inst.Name + ")"
	}
	fmt.Fprintf(w, "peak without jit: %s (%d bytes) at %s\n", assign.HumanBytes(r.Peak), r.Peak, at)
	fmt.Fprintf(w, "peak with jit: %s (%d bytes): %s\n", assign.HumanBytes(j.Peak), j.Peak, jitCmd)
	if ratio := cmp.Ratio(); ratio > 0 {
		fmt.Fprintf(w, "without jit / with jit: %.2fx\n", ratio)
	}
	fmt.Fprintf(w, "fits without jit: %s; fits with jit: %s\n", fitsText(r.OOM, r.FailedStep, r.FailedInst()), fitsText(j.OOM, 0, nil))
	writeLiveArrays(w, r)
}

func fitsText(oom *gpu.OOMError, step int, in *hlo.Instruction) string {
	if oom == nil {
		return "yes"
	}
	if in != nil {
		return fmt.Sprintf("no (out of memory at step %d, %%%s, asking %s)", step, in.Name, assign.HumanBytes(oom.Requested))
	}
	return fmt.Sprintf("no (out of memory asking %s)", assign.HumanBytes(oom.Requested))
}

// writeLiveArrays lists the arrays alive at the result's LiveStep, as
// jax.live_arrays() would.
func writeLiveArrays(w io.Writer, r *eager.Result) {
	why := ""
	switch {
	case r.OOM != nil && r.LiveStep == r.FailedStep:
		why = ", when it ran out of memory"
	case r.LiveStep == r.PeakStep:
		why = ", the peak"
	}
	var total int64
	for _, a := range r.Live {
		total += a.Bytes
	}
	fmt.Fprintf(w, "live arrays at step %d%s: %d, %s, largest first:\n", r.LiveStep, why, len(r.Live), assign.HumanBytes(total))
	for i, a := range r.Live {
		fmt.Fprintf(w, "  %3d. %s %s %s (%d bytes) from %%%s", i+1, a.Name, a.Shape.String(), assign.HumanBytes(a.Bytes), a.Bytes, a.Inst.Name)
		if a.OpName != "" {
			fmt.Fprintf(w, " op_name=%q", a.OpName)
		}
		if a.Source != "" {
			fmt.Fprintf(w, " at %s", a.Source)
		}
		fmt.Fprintln(w)
	}
}

var errEagerNeedsDevice = errors.New("hlomem run: --eager and --live-at model a device: give --device=NAME (a GPU)")

// sameOutputs evaluates the jitted program plan-free on the same arguments
// and fails unless the op-by-op outputs are the same bit for bit.
func sameOutputs(ctx context.Context, w io.Writer, cmp *eager.Comparison, eopts eager.Options) error {
	want, err := exec.Execute(ctx, cmp.Jit.Program.Assignment, eopts.Inputs, nil, exec.Options{Reference: true, Seed: eopts.Seed})
	if err != nil {
		return err
	}
	got := cmp.Eager.Outputs
	if len(got) != len(want.Outputs) {
		return fmt.Errorf("op by op gives %d outputs, the jitted run %d", len(got), len(want.Outputs))
	}
	var sums []string
	for i := range got {
		g, r := got[i].Checksum(), want.Outputs[i].Checksum()
		if g != r {
			return fmt.Errorf("op by op, output %d differs from the jitted run's: checksum %016x, jitted %016x", i, g, r)
		}
		sums = append(sums, fmt.Sprintf("%016x", g))
	}
	_, err = fmt.Fprintf(w, "ok: the outputs op by op equal the jitted run's bit for bit; checksums %s\n", strings.Join(sums, " "))
	return err
}
