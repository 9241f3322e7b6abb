package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/gpu"
)

// deviceFlags are run's flags for a session on a modelled GPU.
type deviceFlags struct {
	device, memFraction, allocator, workload, preallocate string
}

func (d *deviceFlags) register(fs *flagSet) {
	fs.StringVar(&d.device, "device", "", "NAME", "run on a modelled GPU: a100-40gb, a100-80gb (a100), h100-80gb (h100), h200 or custom:SIZE, printing the allocator's stats after each step; or on a TPU generation: tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e, tpu-7x or tpu-custom:HBM[:VMEM[:SMEM]], printing unpadded and padded live bytes per step")
	fs.StringVar(&d.preallocate, "preallocate", "", "BOOL", "true or false: reserve the whole limit when the client starts (default: "+gpu.EnvPreallocate+", else true)")
	fs.StringVar(&d.memFraction, "mem-fraction", "", "F", "share of the device's total memory the client may use (default: "+gpu.EnvMemFraction+", else 0.75)")
	fs.StringVar(&d.allocator, "allocator", "", "NAME", "client allocator: default, bfc, platform or cuda_async (default: "+gpu.EnvAllocator+", else bfc)")
	fs.StringVar(&d.workload, "workload", "", "FILE", "a JSON session of put, put_params, run, delete and defragment steps over the programs (see gpu.Workload)")
}

func (d *deviceFlags) active() bool {
	return d.device != "" || d.workload != "" || d.preallocate != "" || d.memFraction != "" || d.allocator != ""
}

// config is JAX's setting: the environment, then the flags over it. A
// variable a flag overrides is not read, so its errors do not matter.
func (d *deviceFlags) config(getenv func(string) string) (gpu.ClientConfig, error) {
	hidden := map[string]bool{}
	if d.preallocate != "" {
		hidden[gpu.EnvPreallocate] = true
	}
	if d.memFraction != "" {
		hidden[gpu.EnvMemFraction], hidden[gpu.EnvOldMemFraction] = true, true
	}
	if d.allocator != "" {
		hidden[gpu.EnvAllocator] = true
	}
	cfg, err := gpu.ConfigFromEnv(func(k string) string {
		if hidden[k] {
			return ""
		}
		return getenv(k)
	})
	if err != nil {
		return cfg, err
	}
	if d.preallocate != "" {
		b, err := strconv.ParseBool(d.preallocate)
		if err != nil {
			return cfg, fmt.Errorf("--preallocate=%q: want true or false", d.preallocate)
		}
		cfg.Preallocate = b
	}
	if d.memFraction != "" {
		if cfg.MemFraction, err = gpu.ParseMemFraction("--mem-fraction", d.memFraction, cfg.UnifiedMemory); err != nil {
			return cfg, err
		}
	}
	if d.allocator != "" {
		if cfg.Allocator, err = gpu.ParseAllocator("--allocator", d.allocator); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// runDevice replays a session on a modelled GPU: the workload's steps, or
// for each program of files, put its parameters, run it, delete its
// arguments and outputs. An OOM exits 2 with XLA's report on stderr and
// the steps before it on stdout.
func runDevice(ctx context.Context, e *env, d *deviceFlags, files []string, opts compile.Options, verify bool, ef *eagerFlags) error {
	liveAt, err := ef.liveStep()
	if err != nil {
		return err
	}
	cfg, err := d.config(os.Getenv)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	var w *gpu.Workload
	if d.workload != "" {
		f, err := os.Open(d.workload)
		if err != nil {
			return fmt.Errorf("hlomem run: %w", err)
		}
		w, err = gpu.ParseWorkload(d.workload, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	devName := d.device
	if devName == "" && w != nil {
		devName = w.Device
	}
	if devName == "" {
		return errors.New("hlomem run: say which device: --device=NAME (or \"device\" in the workload)")
	}
	dev, err := gpu.DeviceByName(devName)
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}

	// The programs: every module of the files, by module name and, for a
	// file of one module, by the file's base name; then the workload's.
	progs := map[string]*gpu.Program{}
	var order []*gpu.Program
	load := func(file string, aliases ...string) error {
		mods, err := loadModules(e, file, true)
		if err != nil {
			return err
		}
		for _, m := range mods {
			o := opts
			o.Trace = e.tracePasses(m)
			r, err := compile.Compile(ctx, m, o)
			if err != nil {
				return moduleError(inputName(file), m, err)
			}
			if r.Remat != nil {
				fmt.Fprintln(e.stderr, rematLine("run", m, r.Remat))
			}
			as := r.Assignment
			p, err := gpu.NewProgram(m.Name, as)
			if err != nil {
				return moduleError(inputName(file), m, err)
			}
			names := []string{m.Name}
			if len(mods) == 1 {
				names = append(names, aliases...)
				base := filepath.Base(file)
				names = append(names, base, strings.TrimSuffix(base, filepath.Ext(base)))
			}
			if prev := progs[m.Name]; prev != nil && prev != p {
				return fmt.Errorf("hlomem run: two programs are named %s", m.Name)
			}
			for _, n := range names {
				if progs[n] == nil {
					progs[n] = p
				}
			}
			order = append(order, p)
		}
		return nil
	}
	for _, f := range files {
		if err := load(f); err != nil {
			return err
		}
	}
	if w != nil {
		keys := make([]string, 0, len(w.Programs))
		for k := range w.Programs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			path := w.Programs[k]
			if !filepath.IsAbs(path) {
				path = filepath.Join(filepath.Dir(d.workload), path)
			}
			before := len(order)
			if err := load(path, k); err != nil {
				return err
			}
			if len(order)-before != 1 {
				return fmt.Errorf("hlomem run: %s: program %q: %s holds %d modules; a workload program is one module", d.workload, k, path, len(order)-before)
			}
			progs[k] = order[len(order)-1]
		}
	} else {
		if len(order) == 0 {
			return errors.New("hlomem run: no program to run")
		}
		w = defaultSession(order)
	}

	c, err := gpu.NewClient(dev, cfg, gpu.ClientOptions{Verify: verify})
	if err != nil {
		return fmt.Errorf("hlomem run: %w", err)
	}
	out := e.stdout
	st := c.Stats()
	fmt.Fprintf(out, "device %s: %s (%d bytes); allocator %s, limit %s, preallocate %v, mem fraction %g\n",
		dev.Name, assign.HumanBytes(dev.Memory), dev.Memory, c.Alloc.Name(), assign.HumanBytes(st.BytesLimit), cfg.Preallocate, cfg.MemFraction)
	for _, p := range order {
		var params, outs, host int64
		for _, l := range p.Params {
			if l.Host {
				host += l.Bytes
			} else {
				params += l.Bytes
			}
		}
		for _, l := range p.Outputs {
			outs += l.Bytes
		}
		hostText := ""
		if host += p.HostTempBytes; host > 0 {
			// Arrays in host memory (S(5)): not the device's.
			hostText = ", in host memory " + assign.HumanBytes(host)
		}
		fmt.Fprintf(out, "program %s: parameters %s, outputs %s, temps %s, constants %s%s; %d steps\n",
			p.Name, assign.HumanBytes(params), assign.HumanBytes(outs), assign.HumanBytes(p.TempBytes), assign.HumanBytes(p.ConstantBytes), hostText, p.Steps)
	}
	fmt.Fprintf(out, "step 0 start: %s\n", statsLine(st))
	err = c.Replay(ctx, w, progs, func(r gpu.StepResult) error {
		_, err := fmt.Fprintf(out, "step %d %s: %s\n", r.Index, stepText(r), statsLine(r.Stats))
		return err
	})
	if ef.liveAt != "" {
		for _, p := range order {
			step, live := eager.PlanLive(p.Assignment, liveAt)
			r := &eager.Result{LiveStep: step, Live: live, PeakStep: p.PeakStep}
			fmt.Fprintf(out, "program %s: ", p.Name)
			writeLiveArrays(out, r)
		}
	}
	var oom *gpu.OOMError
	if errors.As(err, &oom) {
		return &exitError{code: exitInfeasible, msg: "hlomem run: " + err.Error()}
	}
	return err
}

// defaultSession is the session run without a workload: each program in
// turn puts its parameters, runs, and deletes the arrays the run leaves
// (its arguments, less those it consumed by donation, and its outputs),
// each once.
func defaultSession(progs []*gpu.Program) *gpu.Workload {
	w := &gpu.Workload{File: "(session)"}
	for _, p := range progs {
		w.Steps = append(w.Steps, gpu.Step{PutParams: p.Name}, gpu.Step{Run: p.Name})
		seen := map[string]bool{}
		del := func(name string) {
			if !seen[name] {
				seen[name] = true
				w.Steps = append(w.Steps, gpu.Step{Delete: name})
			}
		}
		for _, l := range p.Params {
			if !l.Donated {
				del(l.Name)
			}
		}
		for _, l := range p.Outputs {
			del(p.Name + ".out" + l.Name)
		}
	}
	return w
}

func stepText(r gpu.StepResult) string {
	s := r.Step
	switch {
	case r.OOM != nil:
		return fmt.Sprintf("%s: out of memory as expected (%s asked, %s free in total, largest free block %s%s)",
			describe(s), assign.HumanBytes(r.OOM.Rounded), assign.HumanBytes(r.OOM.Free), assign.HumanBytes(r.OOM.Stats.LargestFreeBlockBytes),
			map[bool]string{true: "; fragmentation", false: ""}[r.OOM.Fragmented()])
	case r.Run != nil:
		return fmt.Sprintf("%s: ok, allocated %s, %s, %d donated", describe(s), assign.HumanBytes(r.Run.Allocated), count(len(r.Run.Outputs), "output", "outputs"), r.Run.Donated)
	case r.Defrag != nil:
		d := r.Defrag
		return fmt.Sprintf("defragment: moved %s (%s); largest free block %s -> %s", count(d.Arrays, "array", "arrays"), assign.HumanBytes(d.BytesMoved),
			assign.HumanBytes(d.LargestFreeBefore), assign.HumanBytes(d.LargestFreeAfter))
	}
	return describe(s) + ": ok"
}

func describe(s *gpu.Step) string {
	switch {
	case s.Put != "":
		return fmt.Sprintf("put %s (%s)", s.Put, assign.HumanBytes(s.Bytes))
	case s.PutParams != "":
		return "put_params " + s.PutParams
	case s.Run != "":
		return "run " + s.Run
	case s.Delete != "":
		return "delete " + s.Delete
	}
	return "defragment"
}

func statsLine(s gpu.Stats) string {
	return fmt.Sprintf("in_use %s, peak %s, reserved %s, largest_free %s, fragmentation %.3f, allocs %d, driver calls %d (%s)",
		assign.HumanBytes(s.BytesInUse), assign.HumanBytes(s.PeakBytesInUse), assign.HumanBytes(s.BytesReserved),
		assign.HumanBytes(s.LargestFreeBlockBytes), s.Fragmentation(), s.NumAllocs, s.DriverCalls, s.DriverTime)
}
