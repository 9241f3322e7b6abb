package fit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/tpu"
)

// Options configures Analyze.
type Options struct {
	// Device is a device as hlomem run --device names it: a GPU preset,
	// custom:SIZE, or a TPU generation (tpu-v4, ..., tpu-custom:...).
	Device string
	// Compile plans the module (and every changed module).
	Compile compile.Options
	// Getenv reads the XLA_PYTHON_CLIENT_* environment as run does; nil
	// is os.Getenv.
	Getenv func(string) string
	// File names the input in the printed commands ("FILE" when empty).
	File string
	// Plan, when set, is the plan compile.Compile made of m with Compile
	// (a caller that has it: hlomem report's own plan), used instead of
	// planning m again. A TPU device plans with options of its own and
	// ignores it.
	Plan *assign.Assignment
}

// Array is one array live at a step.
type Array struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Bytes  int64  `json:"bytes"`
	OpName string `json:"op_name,omitempty"`
	Source string `json:"source,omitempty"`
}

// Verdict is the program as it is on the device under the current client
// settings.
type Verdict struct {
	// Limit is what the device offers the program (the client's
	// BytesLimit hlomem run --device prints; a TPU's HBM).
	Limit int64 `json:"limit"`
	// Total is the plan's total on the device (assign Stats.DeviceBytes: TotalBytes less host memory).
	Total int64 `json:"total"`
	// Need is the most the run holds at once on the client allocator
	// (its peak bytes in use on a device large enough); on a TPU the plan's
	// total.
	Need int64 `json:"need"`
	Fits bool  `json:"fits"`
	// Spare is Limit-Need when it fits, Short the bytes missing when it
	// does not (0 when the run fails from fragmentation alone: then
	// Fragmented).
	Spare      int64 `json:"spare"`
	Short      int64 `json:"short"`
	Fragmented bool  `json:"fragmented,omitempty"`
	// Step is the plan's peak step of Steps and Instruction the
	// instruction there; Live the largest arrays live there.
	Step        int     `json:"step"`
	Steps       int     `json:"steps"`
	Instruction string  `json:"instruction"`
	Live        []Array `json:"live"`
	Command     string  `json:"command"`
}

// Report is Analyze's answer.
type Report struct {
	Module string `json:"module"`
	Device string `json:"device"`
	// DeviceBytes is the device's memory; Settings the client settings
	// the verdict runs under, as JAX's environment lines.
	DeviceBytes int64        `json:"device_bytes"`
	Settings    []string     `json:"settings"`
	Verdict     Verdict      `json:"verdict"`
	Levers      []*Lever     `json:"levers"`
	Combination *Combination `json:"combination"`
}

// Lever is one of the user's levers, measured by its own re-plan and
// re-run on the device model.
type Lever struct {
	Name string `json:"name"`
	// Applies is false when the lever cannot apply; Why says why in one
	// line.
	Applies bool   `json:"applies"`
	Why     string `json:"why,omitempty"`
	// Fits reports whether the program fits with this lever alone;
	// Total and Limit are the changed plan's total and the client limit
	// under the lever; Saved is the verdict's Total less Total (two real
	// plans).
	Fits  bool  `json:"fits"`
	Total int64 `json:"total"`
	Limit int64 `json:"limit"`
	Saved int64 `json:"saved"`
	// Cost is the lever's price in words; Change is what to change in
	// code or environment; Details further lines; Commands reproduce the
	// figures.
	Cost     string   `json:"cost"`
	Change   []string `json:"change"`
	Details  []string `json:"details,omitempty"`
	Commands []string `json:"commands,omitempty"`

	module *hlo.Module       // the changed module, when it changes one
	config *gpu.ClientConfig // the client settings, when it changes them
	remat  int64             // the remat limit, when it is the remat lever
}

// Module returns the module the lever changed (donation, offload,
// remat), nil when it changes none: what hlomem fit --emit=NAME prints.
func (l *Lever) Module() *hlo.Module { return l.module }

// Emitted returns the changed module of the lever named name, or of the
// combination ("combination"), and whether there is one.
func (r *Report) Emitted(name string) (*hlo.Module, bool) {
	if name == "combination" {
		if r.Combination == nil || r.Combination.Module == nil {
			return nil, false
		}
		return r.Combination.Module, true
	}
	for _, l := range r.Levers {
		if l.Name == name && l.module != nil {
			return l.module, true
		}
	}
	return nil, false
}

// EmitCommand is the command that prints the changed module of the lever
// (or "combination") for the next command of a pipe to read.
func (t *target) emitCommand(name string) string {
	return fmt.Sprintf("hlomem fit --device=%s --emit=%s %s", t.name, name, t.file)
}

// target is the device the analysis runs on.
type target struct {
	name string
	gpu  *gpu.Device
	cfg  gpu.ClientConfig
	tpu  *tpu.Generation
	file string
	opts compile.Options
	// plan is m's plan with opts, the verdict's (and the allocator
	// lever's: it changes the client only).
	plan *assign.Assignment
}

// ErrDevice is returned for a device Analyze does not know.
var ErrDevice = errors.New("fit: device")

func newTarget(o Options) (*target, error) {
	t := &target{name: o.Device, file: o.File, opts: o.Compile}
	if t.file == "" {
		t.file = "FILE"
	}
	if strings.HasPrefix(strings.ToLower(o.Device), "tpu-") {
		g, err := tpu.GenerationByName(o.Device)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDevice, err)
		}
		// Planned as hlomem run --device=tpu-* plans it: XLA:TPU's tiles
		// for the generation, the plan's total unweighted.
		t.tpu = &g
		t.opts.Target, t.opts.Generation, t.opts.PlanCost = assign.TPU, &g, false
		t.opts.Spaces = &tpu.SpaceOptions{VMEM: g.VMEM, SMEM: g.SMEM}
		return t, nil
	}
	d, err := gpu.DeviceByName(o.Device)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDevice, err)
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := gpu.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	t.gpu, t.cfg = &d, cfg
	return t, nil
}

// Analyze plans m for the device and measures every lever. m is left
// untouched.
func Analyze(ctx context.Context, m *hlo.Module, o Options) (*Report, error) {
	if m == nil || m.Entry == nil {
		return nil, errors.New("fit: no module")
	}
	t, err := newTarget(o)
	if err != nil {
		return nil, err
	}
	t.plan = o.Plan
	if t.plan == nil || t.tpu != nil {
		r, err := compile.Compile(ctx, m.Clone(), t.opts)
		if err != nil {
			return nil, err
		}
		t.plan = r.Assignment
	}
	rep := &Report{Module: m.Name, Device: o.Device}
	if t.tpu != nil {
		rep.DeviceBytes = t.tpu.HBM
	} else {
		rep.DeviceBytes = t.gpu.Memory
		rep.Settings = envLines(t.cfg)
	}
	v, err := t.verdict(ctx, t.plan)
	if err != nil {
		return nil, err
	}
	rep.Verdict = *v
	levers := []func(context.Context, *hlo.Module, *Verdict) (*Lever, error){
		t.allocatorLever, t.donateLever, t.offloadLever, t.rematLever, t.jitLever,
	}
	// The levers are independent of one another (each plans and runs
	// clones of m): as many at once as there are processors, the first
	// error (in the levers' order) returned.
	rep.Levers = make([]*Lever, len(levers))
	errs := make([]error, len(levers))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(levers)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				rep.Levers[i], errs[i] = levers[i](ctx, m, v)
			}
		}()
	}
	for i := range levers {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if rep.Combination, err = t.combine(ctx, m, v, rep.Levers); err != nil {
		return nil, err
	}
	return rep, nil
}

// verdict judges the plan as on the device under the current settings.
func (t *target) verdict(ctx context.Context, as *assign.Assignment) (*Verdict, error) {
	v := &Verdict{Total: as.Stats.DeviceBytes}
	step, _, at := as.Peak()
	v.Step, v.Steps = step, len(as.Analysis.Sequence)
	if step >= 0 && step < len(as.Analysis.Sequence) {
		v.Instruction = as.Analysis.Sequence[step].Name
	}
	for _, o := range at {
		if len(v.Live) == gpu.PeakBuffers {
			break
		}
		lv := assign.LargestValue(o.Buffers[0])
		a := Array{Name: lv.Name(), Kind: o.Kind(), Bytes: o.Bytes, Source: as.Module.Source(lv.Inst)}
		if lv.Inst.Metadata != nil {
			a.OpName = lv.Inst.Metadata.OpName
		}
		v.Live = append(v.Live, a)
	}
	if t.tpu != nil {
		v.Limit = t.tpu.HBM
		v.Fits, v.Need = t.tpuFits(as)
		v.Command = fmt.Sprintf("hlomem run --device=%s --verify %s", t.name, t.file)
	} else {
		d, err := t.run(ctx, as, t.cfg)
		if err != nil {
			return nil, err
		}
		v.Limit, v.Need, v.Fits, v.Fragmented = d.limit, d.need, d.fits, !d.fits && d.need <= d.limit
		v.Command = fmt.Sprintf("hlomem run --device=%s %s", t.name, t.file)
	}
	if v.Fits {
		v.Spare = v.Limit - v.Need
	} else if v.Need > v.Limit {
		v.Short = v.Need - v.Limit
	}
	return v, nil
}

// deviceRun is one run of a plan on the GPU client model.
type deviceRun struct {
	fits        bool
	limit, need int64
}

// run runs the plan on a fresh client with cfg as hlomem run --device
// does (put the parameters, run), and once more on a device large enough
// for the run to finish, whose peak bytes in use is what the run needs.
func (t *target) run(ctx context.Context, as *assign.Assignment, cfg gpu.ClientConfig) (deviceRun, error) {
	var d deviceRun
	p, err := gpu.NewProgram(as.Module.Name, as)
	if err != nil {
		return d, err
	}
	// A client that cannot start (BFC cannot reserve its limit from the
	// device) runs nothing: the program does not fit under cfg.
	d.limit = gpu.RoundLimit(cfg.Limit(*t.gpu))
	if c, err := gpu.NewClient(*t.gpu, cfg, gpu.ClientOptions{}); err == nil {
		d.limit = c.Stats().BytesLimit
		if d.fits, err = session(ctx, c, p); err != nil {
			return d, err
		}
	}
	big := *t.gpu
	big.Memory = 2*(as.Stats.DeviceBytes+p.ConstantBytes) + 2*d.limit + 64<<20
	bcfg := cfg
	bcfg.MemFraction, bcfg.UnifiedMemory = 1, false
	c2, err := gpu.NewClient(big, bcfg, gpu.ClientOptions{})
	if err != nil {
		return d, err
	}
	ok, err := session(ctx, c2, p)
	if err != nil {
		return d, err
	}
	if !ok {
		return d, fmt.Errorf("fit: internal error: %s does not run on a device of %d bytes", p.Name, big.Memory)
	}
	d.need = c2.Stats().PeakBytesInUse
	return d, nil
}

// session puts p's parameters on c and runs p; an out-of-memory is no
// error, it reports false.
func session(ctx context.Context, c *gpu.Client, p *gpu.Program) (bool, error) {
	args := make([]string, 0, len(p.Params))
	for _, l := range p.Params {
		if _, err := c.Put(l.Name, l.Bytes, l.Shape.String()); err != nil {
			return oomOr(err)
		}
		args = append(args, l.Name)
	}
	if _, err := c.Run(ctx, p, args, nil); err != nil {
		return oomOr(err)
	}
	return true, nil
}

func oomOr(err error) (bool, error) {
	var oom *gpu.OOMError
	if errors.As(err, &oom) {
		return false, nil
	}
	return false, err
}

// envLines are cfg as JAX's environment lines.
func envLines(cfg gpu.ClientConfig) []string {
	return []string{
		fmt.Sprintf("%s=%s", gpu.EnvOldMemFraction, fraction(cfg.MemFraction)),
		fmt.Sprintf("%s=%v", gpu.EnvPreallocate, cfg.Preallocate),
		fmt.Sprintf("%s=%s", gpu.EnvAllocator, allocName(cfg.Allocator)),
	}
}

func allocName(k gpu.AllocatorKind) string {
	if k == "" || k == gpu.Default {
		return string(gpu.BFCKind)
	}
	return string(k)
}

// fraction prints a memory fraction as JAX takes it (2 decimals when it
// has no more).
func fraction(f float64) string { return fmt.Sprintf("%.2f", f) }

// WriteJSON writes r as one JSON object: the same fields WriteText prints.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a reader: the verdict, the levers in cost order
// (CostOrder, then jit), the combination; each figure with the command
// that reproduces it.
func (r *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	v := r.Verdict
	fmt.Fprintf(b, "module %s on %s (%d bytes)", r.Module, r.Device, r.DeviceBytes)
	if len(r.Settings) > 0 {
		fmt.Fprintf(b, "; client %s", strings.Join(r.Settings, " "))
	}
	b.WriteString("\n")
	switch {
	case v.Fits:
		fmt.Fprintf(b, "verdict: fits with %d bytes to spare (the run needs %d of the limit %d; plan total %d)\n", v.Spare, v.Need, v.Limit, v.Total)
	case v.Fragmented:
		fmt.Fprintf(b, "verdict: does not fit from fragmentation at step %d of %d (%s): the run needs %d of the limit %d; plan total %d\n", v.Step, v.Steps, v.Instruction, v.Need, v.Limit, v.Total)
	default:
		fmt.Fprintf(b, "verdict: does not fit: short by %d bytes at step %d of %d (%s): the run needs %d of the limit %d; plan total %d\n", v.Short, v.Step, v.Steps, v.Instruction, v.Need, v.Limit, v.Total)
	}
	if !v.Fits {
		fmt.Fprintf(b, "  live at step %d, largest first:\n", v.Step)
		for _, a := range v.Live {
			fmt.Fprintf(b, "    %s (%s, %d bytes)", a.Name, a.Kind, a.Bytes)
			if a.OpName != "" {
				fmt.Fprintf(b, " op_name=%q", a.OpName)
			}
			if a.Source != "" {
				fmt.Fprintf(b, " at %s", a.Source)
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(b, "  $ %s\n", v.Command)
	fmt.Fprintf(b, "levers, cheapest first (%s; jit apart):\n", strings.Join(CostOrder, ", "))
	for _, l := range r.Levers {
		writeLever(b, l)
	}
	if c := r.Combination; c != nil {
		writeCombination(b, c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLever(b *strings.Builder, l *Lever) {
	if !l.Applies {
		fmt.Fprintf(b, "  %s: does not apply: %s\n", l.Name, l.Why)
		return
	}
	fmt.Fprintf(b, "  %s: %s alone; plan total %d (saves %d), limit %d; cost %s\n", l.Name, fitWord(l.Fits), l.Total, l.Saved, l.Limit, l.Cost)
	for _, s := range l.Change {
		fmt.Fprintf(b, "    change: %s\n", s)
	}
	for _, s := range l.Details {
		fmt.Fprintf(b, "    %s\n", s)
	}
	for _, s := range l.Commands {
		fmt.Fprintf(b, "    $ %s\n", s)
	}
}

func writeCombination(b *strings.Builder, c *Combination) {
	names := "none"
	if len(c.Levers) > 0 {
		names = strings.Join(c.Levers, " + ")
	}
	fmt.Fprintf(b, "combination: %s: %s; plan total %d, the run needs %d of the limit %d\n", names, fitWord(c.Fits), c.Total, c.Need, c.Limit)
	for _, s := range c.Steps {
		fmt.Fprintf(b, "    %s\n", s)
	}
	if c.Why != "" {
		fmt.Fprintf(b, "    %s\n", c.Why)
	}
	for _, s := range c.Change {
		fmt.Fprintf(b, "    change: %s\n", s)
	}
	for _, s := range c.Commands {
		fmt.Fprintf(b, "    $ %s\n", s)
	}
}

// tpuFits is hlomem run --device=tpu-*'s judgement of a plan: its HBM
// allocations' bytes (the need) and whether every memory space is within
// the chip's (tpu.CompileOOM).
func (t *target) tpuFits(as *assign.Assignment) (bool, int64) {
	var hbm int64
	for _, al := range as.Allocations {
		if al.Color == tpu.HBMSpace {
			hbm += al.Size
		}
	}
	return tpu.CompileOOM(as, *t.tpu, 0) == nil, hbm
}
