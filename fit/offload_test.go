package fit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// offloadParam: a large parameter p0 (256 KiB) read at the start and at the
// end, and a peak in the middle (b1, b2: 512 KiB each) that reads only p1.
const offloadParam = `HloModule offload_param, is_scheduled=true, entry_computation_layout={(f32[256,256]{1,0}, f32[256]{0})->f32[256,256]{1,0}}

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p0 = f32[256,256]{1,0} parameter(0)
  p1 = f32[256]{0} parameter(1)
  zero = f32[] constant(0)
  s0 = f32[256]{0} reduce(p0, zero), dimensions={0}, to_apply=add
  b1 = f32[512,256]{1,0} broadcast(p1), dimensions={1}
  b2 = f32[512,256]{1,0} exponential(b1)
  s1 = f32[256]{0} reduce(b2, zero), dimensions={0}, to_apply=add
  s2 = f32[256]{0} add(s0, s1)
  bs = f32[256,256]{1,0} broadcast(s2), dimensions={1}
  ROOT out = f32[256,256]{1,0} add(p0, bs)
}
`

// offloadReadAtPeak: the large parameter p0 is an operand of the peak's
// own instruction (cat, where b1, cat and p0 are all live).
const offloadReadAtPeak = `HloModule offload_read_at_peak, is_scheduled=true

ENTRY main {
  p0 = f32[256,256]{1,0} parameter(0)
  p1 = f32[256]{0} parameter(1)
  b1 = f32[256,256]{1,0} broadcast(p1), dimensions={1}
  e1 = f32[256,256]{1,0} exponential(b1)
  cat = f32[512,256]{1,0} concatenate(p0, e1), dimensions={0}
  sl = f32[256,256]{1,0} slice(cat), slice={[128:384], [0:256]}
  ROOT out = f32[256,256]{1,0} add(p0, sl)
}
`

// offloadActivation: a forward activation act (256 KiB) read by the
// forward pass (s0) and by the backward pass (g), with the peak (q, and r
// in q's place) between them. The output is small, so act is a temp and
// not a value of the output's allocation (which lives throughout).
const offloadActivation = `HloModule offload_activation, is_scheduled=true

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[256]{0} parameter(0)
  zero = f32[] constant(0)
  b = f32[256,256]{1,0} broadcast(p), dimensions={1}
  act = f32[256,256]{1,0} tanh(b), metadata={op_name="jit(f)/tanh" source_file="model.py" source_line=12}
  s0 = f32[256]{0} reduce(act, zero), dimensions={0}, to_apply=add
  q = f32[512,256]{1,0} broadcast(s0), dimensions={1}
  r = f32[512,256]{1,0} exponential(q)
  s1 = f32[256]{0} reduce(r, zero), dimensions={0}, to_apply=add
  bs = f32[256,256]{1,0} broadcast(s1), dimensions={1}
  g = f32[256,256]{1,0} multiply(act, bs)
  ROOT out = f32[256]{0} reduce(g, zero), dimensions={1}, to_apply=add
}
`

func parseOffload(t *testing.T, text string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("t.hlo", text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// offloadPlan plans a clone of m as Offload does (compile.Compile with
// opts, the zero options when none) and returns the plan.
func offloadPlan(t *testing.T, m *hlo.Module, opts ...compile.Options) *assign.Assignment {
	t.Helper()
	var o compile.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r, err := compile.Compile(context.Background(), m.Clone(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r.Assignment
}

// proveOffload holds res to the contract: the rewrite verifies and
// round-trips, its plan (compile.Compile runs assign.Check) gives After,
// passes the shadow check, and, when evaluate, computes what m computes
// bit for bit (planned run of the rewrite against m's reference run on
// the same random arguments).
func proveOffload(t *testing.T, m *hlo.Module, res *OffloadResult, evaluate bool) {
	t.Helper()
	as := proveOffloadPlan(t, res, compile.Options{})
	if evaluate {
		if err := sameOutputs(m, as, compile.Options{}); err != nil {
			t.Fatal(err)
		}
	}
}

// proveOffloadPlan checks everything but the outputs and returns the
// rewrite's plan.
func proveOffloadPlan(t *testing.T, res *OffloadResult, opts compile.Options) *assign.Assignment {
	t.Helper()
	if err := hlo.Verify(res.Module); err != nil {
		t.Fatalf("rewrite invalid: %v\n%s", err, res.Module)
	}
	out := res.Module.String()
	back, err := hlo.ParseModule("back.hlo", out)
	if err != nil || back.String() != out {
		t.Fatalf("the rewrite does not round-trip: %v\n%s", err, out)
	}
	for _, a := range res.Module.Attrs {
		if a.Name == entryLayoutAttr && a.Value != entryLayout(res.Module) {
			t.Errorf("entry_computation_layout=%s, the entry's shapes say %s", a.Value, entryLayout(res.Module))
		}
	}
	as := offloadPlan(t, back, opts)
	if as.Stats.DeviceBytes != res.After {
		t.Errorf("Offload says %d device bytes, planning the rewrite gives %d", res.After, as.Stats.DeviceBytes)
	}
	if res.After > res.Before {
		t.Errorf("device total rose: %d -> %d", res.Before, res.After)
	}
	sh, err := exec.Shadow(context.Background(), as)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Violation != nil {
		t.Fatalf("shadow check: %v\n%s", sh.Violation, out)
	}
	return as
}

// errNoReference: the evaluator cannot run the original module.
var errNoReference = errors.New("the original has no reference run")

// sameOutputs runs m's reference evaluation and the planned run of as on
// the same random arguments and compares the outputs bit for bit.
func sameOutputs(m *hlo.Module, as *assign.Assignment, opts compile.Options) error {
	ctx := context.Background()
	r, err := compile.Compile(ctx, m.Clone(), opts)
	if err != nil {
		return err
	}
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(3, 4)))
	want, err := exec.Execute(ctx, r.Assignment, args, nil, exec.Options{Reference: true})
	if err != nil {
		return fmt.Errorf("%w: %v", errNoReference, err)
	}
	got, err := exec.Execute(ctx, as, args, nil, exec.Options{})
	if err != nil {
		return err
	}
	if len(got.Outputs) != len(want.Outputs) {
		return fmt.Errorf("%d outputs, want %d", len(got.Outputs), len(want.Outputs))
	}
	for i := range want.Outputs {
		if !got.Outputs[i].Identical(want.Outputs[i]) {
			return fmt.Errorf("output %d differs", i)
		}
	}
	return nil
}

func offloadedNames(res *OffloadResult) []string {
	var names []string
	for _, a := range res.Arrays {
		names = append(names, a.Name)
	}
	return names
}

// A parameter read only before and after the peak moves to host memory
// whole, with a copy to the device before each of its two reads. XLA's
// buffer assignment gives an S(5) buffer color 5
// (BufferAssigner::DefaultColorer, xla/service/buffer_assignment.h, colors
// a value by its layout's memory_space) and never shares an allocation
// across colors (BufferAllocation::AddAssignment CHECKs it), so
// the device plan loses the parameter's 262144 bytes, and each copy lives
// only beside bs/out or s0, which the peak (b1, b2) outweighs.
func TestOffloadParameter(t *testing.T) {
	m := parseOffload(t, offloadParam)
	orig := m.String()
	before := offloadPlan(t, m).Stats.DeviceBytes
	p0 := int64(256 * 256 * 4)
	res, err := Offload(context.Background(), m, before-1, compile.Options{}, "a100")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != orig {
		t.Fatal("Offload changed its input")
	}
	proveOffload(t, m, res, true)
	if res.Before != before {
		t.Errorf("Before %d, the plan of the input gives %d", res.Before, before)
	}
	if len(res.Arrays) != 1 || res.Arrays[0].Name != "p0" || res.Arrays[0].Kind != "parameter" || res.Arrays[0].Bytes != p0 {
		t.Fatalf("offloaded %+v, want p0 alone (a parameter of %d bytes)", res.Arrays, p0)
	}
	if got := res.Before - res.After; got != p0 {
		t.Errorf("saved %d bytes, want p0's %d", got, p0)
	}
	// Two copies to the device at the A100's PCIe gen4 figure.
	if want := float64(2*p0) / 25e9; res.Arrays[0].Seconds != want || res.Bandwidth != 25e9 {
		t.Errorf("%g s at %g B/s, want %g s at 25e9", res.Arrays[0].Seconds, res.Bandwidth, want)
	}
	p := res.Module.Entry.Params[0]
	if p.Shape.MemorySpace() != assign.HostMemorySpace {
		t.Errorf("p0 is %s, want S(5)", p.Shape)
	}
	// The header says so too: XLA's HostOffloader::HandleInputStreaming
	// (xla/hlo/transforms/host_offloader.cc) finds a host parameter by
	// its S(5) in entry_computation_layout.
	const layout = "{(f32[256,256]{1,0:S(5)}, f32[256]{0})->f32[256,256]{1,0}}"
	if got := res.Module.Attrs[0]; got.Name != entryLayoutAttr || got.Value != layout {
		t.Errorf("header %s=%s, want %s", got.Name, got.Value, layout)
	}
	as := offloadPlan(t, res.Module)
	if as.Stats.HostBytes < p0 || as.Stats.TotalBytes != as.Stats.DeviceBytes+as.Stats.HostBytes {
		t.Errorf("host %d, device %d, total %d", as.Stats.HostBytes, as.Stats.DeviceBytes, as.Stats.TotalBytes)
	}
}

// A limit the plan already meets moves nothing.
func TestOffloadAlreadyFits(t *testing.T) {
	m := parseOffload(t, offloadParam)
	before := offloadPlan(t, m).Stats.DeviceBytes
	res, err := Offload(context.Background(), m, before, compile.Options{}, "h100")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Arrays) != 0 || res.After != before || res.Bandwidth != 50e9 {
		t.Errorf("offloaded %v, %d -> %d at %g", offloadedNames(res), res.Before, res.After, res.Bandwidth)
	}
	proveOffload(t, m, res, true)
}

// A parameter that the peak's own instruction reads stays on the device
// (HostOffloader moves only what MoveToHost marks; a value read at the
// step whose memory is to shrink cannot be elsewhere then).
func TestOffloadNeverReadInRegion(t *testing.T) {
	m := parseOffload(t, offloadReadAtPeak)
	plan := offloadPlan(t, m)
	before := plan.Stats.DeviceBytes
	for _, cut := range []int64{1, 64 << 10, 256 << 10} {
		for _, c := range offloadCandidates(plan, before-cut) {
			if c.name == "p0" {
				t.Errorf("cut %d: p0, read at the peak, is a candidate: %+v", cut, c)
			}
		}
		res, err := Offload(context.Background(), m, before-cut, compile.Options{}, "a100")
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(offloadedNames(res), "p0") {
			t.Errorf("cut %d: p0, read at the peak, was offloaded: %v", cut, offloadedNames(res))
		}
		proveOffload(t, m, res, true)
	}
}

// An activation kept from the forward pass (s0) for the backward (g) goes
// to host memory after s0 and comes back before g: the copy-to-host and
// copy-back pair HostOffloader makes for MoveToHost / MoveToDevice
// (xla/hlo/transforms/host_offloader.cc), here written directly as copies
// between S(0) and S(5).
func TestOffloadActivation(t *testing.T) {
	m := parseOffload(t, offloadActivation)
	before := offloadPlan(t, m).Stats.DeviceBytes
	act := int64(256 * 256 * 4)
	res, err := Offload(context.Background(), m, before-1, compile.Options{}, "custom:1GiB")
	if err != nil {
		t.Fatal(err)
	}
	proveOffload(t, m, res, true)
	if len(res.Arrays) == 0 || res.Arrays[0].Name != "act" || res.Arrays[0].Kind != "activation" {
		t.Fatalf("offloaded %+v, want act first", res.Arrays)
	}
	a := res.Arrays[0]
	if a.OpName != "jit(f)/tanh" || a.Source != "model.py:12" || a.Bytes != act {
		t.Errorf("act described as %+v", a)
	}
	if want := float64(2*act) / DefaultHostLink; a.Seconds != want {
		t.Errorf("%g s, want %g", a.Seconds, want)
	}
	if got := res.Before - res.After; got != act {
		t.Errorf("saved %d bytes (%d -> %d), want act's %d", got, res.Before, res.After, act)
	}
	var host, back int
	for _, in := range res.Module.Entry.Instructions {
		if in.Opcode == hlo.OpCopy && in.Operands[0].Name == "act" && in.Shape.MemorySpace() == assign.HostMemorySpace {
			host++
		}
		if in.Name == "g" && in.Operands[0].Opcode == hlo.OpCopy {
			back++
		}
	}
	if host != 1 || back != 1 {
		t.Errorf("copies to host %d, g reading a copy back %d; want 1 and 1\n%s", host, back, res.Module)
	}
}

// An unscheduled module is planned in the order the scheduler searched,
// and every re-plan keeps that order, with a named scheduler too.
func TestOffloadUnscheduled(t *testing.T) {
	text := strings.Replace(offloadParam, ", is_scheduled=true", "", 1)
	for _, sched := range []string{"", "list"} {
		m := parseOffload(t, text)
		opts := compile.Options{Scheduler: sched}
		r, err := compile.Compile(context.Background(), m.Clone(), opts)
		if err != nil {
			t.Fatal(err)
		}
		before := r.Assignment.Stats.DeviceBytes
		res, err := Offload(context.Background(), m, before-1, opts, "a100")
		if err != nil {
			t.Fatalf("scheduler %q: %v", sched, err)
		}
		if res.Before != before || !res.Module.IsScheduled {
			t.Errorf("scheduler %q: Before %d, want %d; scheduled %v", sched, res.Before, before, res.Module.IsScheduled)
		}
		proveOffload(t, m, res, true)
	}
}

func TestOffloadRefusals(t *testing.T) {
	m := parseOffload(t, offloadParam)
	ctx := context.Background()
	for name, f := range map[string]func() error{
		"no module":   func() error { _, err := Offload(ctx, nil, 1, compile.Options{}, "a100"); return err },
		"zero limit":  func() error { _, err := Offload(ctx, m, 0, compile.Options{}, "a100"); return err },
		"bad device":  func() error { _, err := Offload(ctx, m, 1, compile.Options{}, "tpu9"); return err },
		"bad options": func() error { _, err := Offload(ctx, m, 1, compile.Options{Until: "schedule"}, "a100"); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The paired XLA:GPU dumps at 90% of their device total: Offload returns
// a result (or refuses with a reason), never raises the total, and its
// rewrites verify, plan to After and pass the shadow check. Outputs are
// not evaluated (cuBLAS/cuDNN custom calls have no evaluator).
func TestOffloadPairedCorpus(t *testing.T) {
	files := corpus.Files(t, "paired/*/*_gpu_after_optimizations.txt", "paired-jax/*/*_gpu_after_optimizations.txt")
	var runs, moved, fits int
	var saved int64
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.ParseModule(f, string(src))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			before := offloadPlan(t, m).Stats.DeviceBytes
			limit := max(before*9/10, 1)
			res, err := Offload(context.Background(), m, limit, compile.Options{}, "a100")
			if err != nil {
				t.Logf("refused: %v", err)
				return
			}
			runs++
			proveOffload(t, m, res, false)
			if len(res.Arrays) > 0 {
				moved++
				saved += res.Before - res.After
			}
			if res.After <= limit {
				fits++
			}
			t.Logf("%d -> %d (limit %d): %v", res.Before, res.After, limit, offloadedNames(res))
		})
	}
	t.Logf("%d modules, %d planned, %d with arrays offloaded (%d bytes saved), %d within 90%%", len(files), runs, moved, saved, fits)
}

// The rewrite runs on the GPU client model (gpu.Client, the platform
// allocator, no preallocation) with p0 in pinned host memory: at its
// highest, the device holds the plan's device total less than it held for
// the original, which is what the two plans' device totals say.
func TestOffloadOnDevice(t *testing.T) {
	m := parseOffload(t, offloadParam)
	before := offloadPlan(t, m).Stats.DeviceBytes
	res, err := Offload(context.Background(), m, before-1, compile.Options{}, "a100")
	if err != nil {
		t.Fatal(err)
	}
	highest := func(as *assign.Assignment) int64 {
		t.Helper()
		p, err := gpu.NewProgram("p", as)
		if err != nil {
			t.Fatal(err)
		}
		dev, err := gpu.DeviceByName("custom:1GiB")
		if err != nil {
			t.Fatal(err)
		}
		c, err := gpu.NewClient(dev, gpu.ClientConfig{MemFraction: 1, Allocator: gpu.Platform}, gpu.ClientOptions{Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		w := &gpu.Workload{File: "(test)", Steps: []gpu.Step{{PutParams: "p"}, {Run: "p"}}}
		var top int64
		err = c.Replay(context.Background(), w, map[string]*gpu.Program{"p": p}, func(r gpu.StepResult) error {
			top = max(top, r.Stats.PeakBytesInUse)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return top
	}
	orig, off := highest(offloadPlan(t, m)), highest(offloadPlan(t, res.Module))
	if orig-off != res.Before-res.After {
		t.Errorf("the device's highest use fell %d -> %d (%d), the plans say %d", orig, off, orig-off, res.Before-res.After)
	}
}
