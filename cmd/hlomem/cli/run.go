package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/schedule"
	"github.com/hlomem/hlomem/tpu"
)

// runFlags defines the flags of hlomem run on fs and returns its run func.
func runFlags(fs *flagSet, e *env) func(args []string) error {
	verify := fs.Bool("verify", false, "shadow execution: check the plan step by step")
	inputs := fs.String("inputs", "", "random|FILE", "evaluate the module on arguments: random, or a file of literals (XLA syntax, one per entry parameter leaf)")
	var argTexts []string
	fs.Func("arg", "LITERAL...", "an argument literal in XLA syntax (repeat: one per entry parameter leaf, in order)", func(s string) error {
		argTexts = append(argTexts, s)
		return nil
	})
	seed := fs.Uint64("seed", 1, "N", "seed of --inputs=random and of rng")
	printOut := fs.Bool("print", false, "print the outputs as literals")
	maxSteps := fs.Int64("max-steps", exec.DefaultMaxSteps, "N", "instructions a run may take (loop iterations count again)")
	var hostMem hostMemoryFlag
	hostMem.register(fs)
	target := fs.String("target", "", "gpu|cpu|tpu", targetFlag)
	algo := fs.String("algo", "auto", "NAME", "packer for the temp heaps (see hlomem pack)")
	sched := addScheduleFlags(fs, "scheduler: ")
	fuse := fs.Bool("fuse", false, fuseFlag)
	var dev deviceFlags
	dev.register(fs)
	var ef eagerFlags
	ef.register(fs)
	var sf spaceFlags
	sf.register(fs, true)
	var rf rematFlags
	rf.register(fs)
	live := addLiveFlags(fs)
	e.passesFlag(fs)
	return func(args []string) error {
		files, err := parseFiles(fs, args)
		if err != nil {
			return err
		}
		// Every flag is checked before any input is read.
		ropts, err := checkRunFlags(*target, *algo, *sched.name, *maxSteps, &dev, sf, &rf, &ef)
		if err != nil {
			return err
		}
		if err := live.apply("run", e); err != nil {
			return err
		}
		host, err := hostMem.limit()
		if err != nil {
			return err
		}
		file0 := ""
		if len(files) == 1 {
			file0 = files[0]
		}
		tgt, note := targetFor("run", *target, file0)
		if note != "" && !dev.active() {
			fmt.Fprintln(e.stderr, note)
		}
		ctx := e.ctx
		// The pipeline: the plan's total weighs the search's and fusion's
		// choices (but on a TPU, whose memories the plan is checked against).
		opts := compileOptions(sched, *fuse, true)
		opts.Target, opts.Assign = tgt, assign.Options{Algorithm: *algo}
		opts.Remat = ropts
		if isTPUDevice(dev.device) {
			if argTexts != nil || (*inputs != "" && *inputs != "random") {
				return errors.New("hlomem run: a TPU run evaluates on --inputs=random only")
			}
			opts.PlanCost = false
			return runTPU(ctx, e, dev.device, files, opts, sf, *verify, *inputs == "random", exec.Options{Seed: *seed, MaxSteps: *maxSteps}, host)
		}
		if (ef.rule != "" || ef.liveAt != "") && (dev.device == "" || isTPUDevice(dev.device)) {
			return errEagerNeedsDevice
		}
		if dev.active() {
			if ef.rule != "" {
				if argTexts != nil || *inputs != "" && *inputs != "random" {
					return errors.New("hlomem run: --eager evaluates on --inputs=random only")
				}
				return runEager(ctx, e, &dev, &ef, files, opts, *inputs == "random", *seed)
			}
			if *inputs != "" || argTexts != nil {
				return errors.New("hlomem run: --device models memory only; it does not evaluate (--inputs, --arg)")
			}
			if len(files) == 0 && dev.workload == "" {
				fs.Usage()
				return &exitError{code: exitFailure, msg: "hlomem run: want an input file or a --workload"}
			}
			return runDevice(ctx, e, &dev, files, opts, *verify, &ef)
		}
		if len(files) != 1 {
			fs.Usage()
			return &exitError{code: exitFailure, msg: fmt.Sprintf("%s: want exactly one input file, got %d (several only with --device)", fs.Name(), len(files))}
		}
		file := files[0]
		if !*verify && *inputs == "" && argTexts == nil {
			return errors.New("hlomem run: say what to run: --verify (shadow execution), --inputs=random|FILE or --arg (evaluation)")
		}
		if *inputs != "" && argTexts != nil {
			return errors.New("hlomem run: give the arguments either with --inputs or with --arg, not both")
		}
		// The argument text is read only once the first module's estimate,
		// which counts it, is within the limit.
		var argText, argName string
		var argFile *argumentFile
		switch {
		case argTexts != nil:
			argText, argName = strings.Join(argTexts, "\n"), "--arg"
		case *inputs != "" && *inputs != "random":
			if argFile, err = openArguments(*inputs); err != nil {
				return err
			}
			defer argFile.f.Close()
			argName = *inputs
		}
		evaluate := *inputs != "" || argTexts != nil
		hopts := exec.HostOptions{Reference: evaluate, Planned: evaluate, Shadow: *verify, Print: *printOut && evaluate, ArgText: int64(len(argText))}
		if argFile != nil {
			hopts.ArgText = argFile.size
		}
		x := &rematted{cmd: "run", stderr: e.stderr}
		return x.after(eachCompiled(e, file, opts, headed, func(w io.Writer, m *hlo.Module, r *compile.Result) error {
			as := r.Assignment
			x.note(m, r)
			if err := host.check(as, hopts); err != nil {
				return err
			}
			if *verify {
				if err := shadowRun(ctx, w, as); err != nil {
					return err
				}
			}
			if argFile != nil && argText == "" {
				if argText, err = argFile.read(host.bytes); err != nil {
					return err
				}
				if n := int64(len(argText)); n != hopts.ArgText {
					// A pipe: its text is counted once read.
					hopts.ArgText = n
					if err := host.check(as, hopts); err != nil {
						return err
					}
				}
			}
			var args []eval.Literal
			switch {
			case *inputs == "random":
				args = eval.RandomArgs(m, rand.New(rand.NewPCG(*seed, 0)))
			case argName != "":
				if args, err = eval.ParseArgs(m, argName, argText); err != nil {
					return err
				}
			default:
				return nil
			}
			orig, err := originalPlan(ctx, m, r, opts)
			if err != nil {
				return err
			}
			return compareRuns(ctx, w, as, orig, args, exec.Options{Seed: *seed, MaxSteps: *maxSteps}, *printOut)
		}))
	}
}

// originalPlan plans m, the module as it came to the remat pass of the
// Compile with opts that made r (scheduled, not rewritten), in its own
// order and without remat, for its reference run: the rewrite is proven
// against it. It returns nil when the remat pass did not run.
func originalPlan(ctx context.Context, m *hlo.Module, r *compile.Result, opts compile.Options) (*assign.Assignment, error) {
	if r.Remat == nil {
		return nil, nil
	}
	opts.Remat, opts.Fuse, opts.PlanCost, opts.Trace = nil, false, false, nil
	opts.Scheduler, opts.Search = schedule.Keep, schedule.Options{}
	opts.Assign.Algorithm = "xla" // a reference run reads no offsets
	r, err := compile.Compile(ctx, m.Clone(), opts)
	if err != nil {
		return nil, fmt.Errorf("planning the module before remat: %w", err)
	}
	return r.Assignment, nil
}

// checkRunFlags checks run's flag values before any input is read and
// returns the remat options of --remat-limit.
func checkRunFlags(target, algo, sched string, maxSteps int64, dev *deviceFlags, sf spaceFlags, rf *rematFlags, ef *eagerFlags) (*compile.RematOptions, error) {
	ropts, err := rf.options("run")
	if err != nil {
		return nil, err
	}
	if ropts != nil && (isTPUDevice(dev.device) || ef.rule != "" || ef.liveAt != "") {
		return nil, flagError("run", "--remat-limit is for a GPU or host run, not with a TPU --device or --eager/--live-at")
	}
	return ropts, checkRunFlagValues(target, algo, sched, maxSteps, dev, sf)
}

// checkRunFlagValues checks run's flags but those of remat.
func checkRunFlagValues(target, algo, sched string, maxSteps int64, dev *deviceFlags, sf spaceFlags) error {
	if err := checkTarget("run", target); err != nil {
		return err
	}
	if err := checkAlgo("run", algo); err != nil {
		return err
	}
	if err := checkSchedule("run", sched); err != nil {
		return err
	}
	if maxSteps < 1 {
		return flagError("run", "--max-steps must be at least 1, got %d (the default is %d)", maxSteps, exec.DefaultMaxSteps)
	}
	if isTPUDevice(dev.device) {
		gen, err := tpu.GenerationByName(dev.device)
		if err != nil {
			return flagError("run", "--device: %v", err)
		}
		if _, err := sf.apply(&gen, true); err != nil {
			return flagError("run", "%v", err)
		}
		return nil
	}
	if sf.vmem != "" || sf.smem != "" || sf.minWindow != 0 {
		return flagError("run", "--vmem, --smem and --min-window need a TPU --device")
	}
	if dev.device != "" {
		if _, err := gpu.DeviceByName(dev.device); err != nil {
			return flagError("run", "--device: %v", err)
		}
	}
	if dev.active() {
		if _, err := dev.config(os.Getenv); err != nil {
			return flagError("run", "%v", err)
		}
	}
	return nil
}

// argumentFile is the file of --inputs, opened (so that a missing file
// is an error before any module is planned) and read later.
type argumentFile struct {
	f    *os.File
	name string
	size int64 // bytes; 0 for a file that is not regular (a pipe)
}

func openArguments(name string) (*argumentFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("hlomem run: %w", err)
	}
	af := &argumentFile{f: f, name: name}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		af.size = st.Size()
	}
	return af, nil
}

// read reads the file's text. A file whose size was not known beforehand
// (a pipe) may be at most a tenth of limit, what the estimate allows
// parsing.
func (af *argumentFile) read(limit int64) (string, error) {
	most := af.size
	if most == 0 {
		most = limit / 10
	}
	b, err := io.ReadAll(io.LimitReader(af.f, most+1))
	if err != nil {
		return "", fmt.Errorf("hlomem run: %w", err)
	}
	if int64(len(b)) > most {
		return "", fmt.Errorf("hlomem run: %s: more than %s of argument text, more than the host memory limit allows parsing; raise the limit with --host-memory=SIZE", af.name, assign.HumanBytes(most))
	}
	return string(b), nil
}

// shadowRun checks the plan step by step (exec.Shadow) and reports
// what it checked.
func shadowRun(ctx context.Context, w io.Writer, as *assign.Assignment) error {
	rep, err := exec.Shadow(ctx, as)
	if err != nil {
		return err
	}
	if rep.Violation != nil {
		return fmt.Errorf("the plan fails: %w", rep.Violation)
	}
	_, err = fmt.Fprintf(w, "ok: %s, %s written, %s, %d bytes checked\n", count(rep.Steps, "step", "steps"), count(rep.Writes, "value", "values"), count(rep.Reads, "read", "reads"), rep.BytesChecked)
	return err
}

// compareRuns evaluates the entry on args twice, on the plan's bytes and
// with a region per buffer, and fails unless every output is the same bit
// for bit. With orig, the plan of the module before remat rewrote it into
// as's, the planned run must also equal orig's reference run bit for bit.
func compareRuns(ctx context.Context, w io.Writer, as, orig *assign.Assignment, args []eval.Literal, opts exec.Options, printOut bool) error {
	got, sums, err := planEqualsReference(ctx, as, args, nil, opts)
	if err != nil {
		return err
	}
	if _, err = fmt.Fprintf(w, "ok: planned run equals reference run; %s; output checksums %s\n", count(got.Steps, "step", "steps"), strings.Join(sums, " ")); err != nil {
		return err
	}
	if orig != nil {
		if err := sameAsOriginal(ctx, w, orig, got, args, opts); err != nil {
			return err
		}
	}
	if printOut {
		// Written element by element: a large output never exists as
		// one string.
		for i, o := range got.Outputs {
			if _, err := fmt.Fprintf(w, "output %d: ", i); err != nil {
				return err
			}
			if err := o.WriteText(w); err != nil {
				return err
			}
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameAsOriginal runs the plan orig of the module before remat with a
// region per buffer and fails unless every output equals the rewritten
// module's planned run (got) bit for bit.
func sameAsOriginal(ctx context.Context, w io.Writer, orig *assign.Assignment, got *exec.Result, args []eval.Literal, opts exec.Options) error {
	opts.Reference = true
	want, err := exec.Execute(ctx, orig, args, nil, opts)
	if err != nil {
		return fmt.Errorf("the module before remat: %w", err)
	}
	if len(want.Outputs) != len(got.Outputs) {
		return fmt.Errorf("the rematerialized module has %d outputs, the module before remat %d", len(got.Outputs), len(want.Outputs))
	}
	for i := range want.Outputs {
		r, g := want.Outputs[i], got.Outputs[i]
		if r.Shape.StringNoLayout() != g.Shape.StringNoLayout() || !bytes.Equal(r.Data, g.Data) {
			return fmt.Errorf("the rematerialized module computes a different output %d: checksum %016x, the module before remat %016x", i, g.Checksum(), r.Checksum())
		}
	}
	_, err = fmt.Fprintf(w, "ok: rematerialized module's planned run equals the original module's reference run bit for bit (%s)\n", count(len(want.Outputs), "output", "outputs"))
	return err
}

// planEqualsReference evaluates the entry on args on the plan's bytes in
// mem (nil: a fresh HostArena) and with a region per buffer, and fails
// unless every output is the same bit for bit; it returns the planned run
// and its output checksums.
func planEqualsReference(ctx context.Context, as *assign.Assignment, args []eval.Literal, mem exec.Memory, opts exec.Options) (*exec.Result, []string, error) {
	ref := opts
	ref.Reference = true
	want, err := exec.Execute(ctx, as, args, nil, ref)
	if err != nil {
		return nil, nil, err
	}
	got, err := exec.Execute(ctx, as, args, mem, opts)
	if err != nil {
		return nil, nil, err
	}
	var sums []string
	for i := range want.Outputs {
		r, g := want.Outputs[i].Checksum(), got.Outputs[i].Checksum()
		if r != g {
			return nil, nil, fmt.Errorf("the plan computes a different output %d: checksum %016x, reference %016x", i, g, r)
		}
		sums = append(sums, fmt.Sprintf("%016x", g))
	}
	return got, sums, nil
}
