package fit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

const mib = 1 << 20

func parse(t testing.TB, text string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("t.hlo", text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// env is a getenv over a fixed environment.
func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func analyze(t testing.TB, m *hlo.Module, device string, getenv func(string) string) *Report {
	t.Helper()
	r, err := Analyze(context.Background(), m, Options{Device: device, Getenv: getenv, File: "t.hlo"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runs plans m as Analyze does and runs it on a fresh client of dev with
// cfg: the independent check of a lever's figure.
func runs(t testing.TB, m *hlo.Module, dev string, cfg gpu.ClientConfig) (bool, int64) {
	t.Helper()
	d, err := gpu.DeviceByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	r, err := compile.Compile(context.Background(), m.Clone(), compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := gpu.NewProgram(m.Name, r.Assignment)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gpu.NewClient(d, cfg, gpu.ClientOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := session(context.Background(), c, p)
	if err != nil {
		t.Fatal(err)
	}
	return ok, c.Stats().BytesLimit
}

func lever(t testing.TB, r *Report, name string) *Lever {
	t.Helper()
	for _, l := range r.Levers {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no %s lever", name)
	return nil
}

// prove holds of a changed module what remat/plan_test.go's prove holds:
// it verifies, its plan passes assign.Check (Compile) and the shadow
// check, and its planned run computes the original's outputs bit for bit
// on the same random arguments.
func prove(t *testing.T, orig, changed *hlo.Module) {
	t.Helper()
	if err := hlo.Verify(changed); err != nil {
		t.Fatalf("changed module invalid: %v", err)
	}
	ctx := context.Background()
	rc, err := compile.Compile(ctx, changed.Clone(), compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.Shadow(ctx, rc.Assignment)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Violation != nil {
		t.Fatalf("shadow check: %v", sh.Violation)
	}
	ro, err := compile.Compile(ctx, orig.Clone(), compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	args := eval.RandomArgs(orig, rand.New(rand.NewPCG(3, 4)))
	want, err := exec.Execute(ctx, ro.Assignment, args, nil, exec.Options{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Execute(ctx, rc.Assignment, args, nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Outputs) != len(want.Outputs) {
		t.Fatalf("%d outputs, want %d", len(got.Outputs), len(want.Outputs))
	}
	for i := range want.Outputs {
		if !got.Outputs[i].Identical(want.Outputs[i]) {
			t.Fatalf("output %d differs", i)
		}
	}
}

// small: three 4 MiB arrays at once.
const small = `HloModule small, is_scheduled=true

ENTRY %main (p: f32[1048576]) -> f32[1048576] {
  %p = f32[1048576]{0} parameter(0)
  %e = f32[1048576]{0} exponential(%p)
  ROOT %n = f32[1048576]{0} negate(%e)
}
`

// JAX's client default is a 75% BFC pool, preallocated (JAX's
// XLA_PYTHON_CLIENT_MEM_FRACTION default .75; XLA's
// xla/pjrt/gpu/gpu_helpers.h GpuAllocatorConfig memory_fraction = 0.75).
func TestFits(t *testing.T) {
	m := parse(t, small)
	r := analyze(t, m, "custom:1GiB", env())
	v := r.Verdict
	if !v.Fits || v.Short != 0 || v.Spare != v.Limit-v.Need || v.Need <= 0 {
		t.Fatalf("verdict %+v", v)
	}
	if want := gpu.RoundLimit(int64(0.75 * float64(1<<30))); v.Limit != want {
		t.Errorf("limit %d, want the 75%% pool %d", v.Limit, want)
	}
	if !r.Combination.Fits || len(r.Combination.Levers) != 0 {
		t.Errorf("combination %+v for a module that fits", r.Combination)
	}
	if l := lever(t, r, "remat"); l.Applies {
		t.Errorf("remat applies to a module that fits")
	}
	if l := lever(t, r, "jit"); l.Applies || !strings.Contains(l.Why, "is_scheduled") {
		t.Errorf("jit lever on a scheduled module: %+v", l)
	}
}

// The smallest fraction that fits is a real run's, and a hundredth less
// does not fit (each checked on a fresh client, Verify on).
func TestMemFraction(t *testing.T) {
	m := parse(t, small)
	big := analyze(t, m, "custom:1GiB", env())
	// A device of what the run needs: 75% (rounded up to 2 MiB) is short
	// of it, 100% is not.
	size := big.Verdict.Need
	dev := fmt.Sprintf("custom:%d", size)
	r := analyze(t, m, dev, env())
	if r.Verdict.Fits || r.Verdict.Short <= 0 {
		t.Fatalf("verdict %+v on %s, want short", r.Verdict, dev)
	}
	l := lever(t, r, "allocator")
	if !l.Fits || l.config == nil {
		t.Fatalf("allocator lever %+v", l)
	}
	f := l.config.MemFraction
	cfg := gpu.DefaultConfig()
	cfg.MemFraction = f
	if ok, lim := runs(t, m, dev, cfg); !ok || lim != l.Limit {
		t.Errorf("fraction %.2f: fits %v limit %d, lever says limit %d", f, ok, lim, l.Limit)
	}
	cfg.MemFraction = f - 0.01
	if ok, _ := runs(t, m, dev, cfg); ok {
		t.Errorf("fraction %.2f fits too: %.2f is not the smallest", f-0.01, f)
	}
	if !strings.Contains(strings.Join(l.Change, " "), fmt.Sprintf("XLA_PYTHON_CLIENT_MEM_FRACTION=%.2f", f)) {
		t.Errorf("change %q", l.Change)
	}
	c := r.Combination
	if !c.Fits || len(c.Levers) != 1 || c.Levers[0] != "allocator" {
		t.Errorf("combination %+v", c)
	}
}

// remat-chain.hlo (testdata, shared with report's TestFitRow) is
// remat/plan_test.go's chainText at 1024 times the sizes: x =
// negate(exp(p)) read at the start and at the end, over a 16 MiB
// temporary. XLA's HloRematerialization recomputes such a value before
// its later use (hlo_rematerialization_test.cc,
// RecomputeComputationTest-style single-use chains).
const chainFile = "../testdata/remat-chain.hlo"

func TestRemat(t *testing.T) {
	b, err := os.ReadFile(chainFile)
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, string(b))
	full := env("XLA_PYTHON_CLIENT_MEM_FRACTION", "1")
	big := analyze(t, m, "custom:1GiB", full)
	// No fraction helps at 100%; remat frees x's 4 MiB over the
	// temporary.
	dev := fmt.Sprintf("custom:%d", big.Verdict.Need-2*mib)
	r := analyze(t, m, dev, full)
	if r.Verdict.Fits {
		t.Fatalf("fits on %s: %+v", dev, r.Verdict)
	}
	if r.Verdict.Instruction == "" || len(r.Verdict.Live) == 0 {
		t.Errorf("verdict names nothing at the peak: %+v", r.Verdict)
	}
	l := lever(t, r, "remat")
	if !l.Applies || !l.Fits || l.module == nil {
		t.Fatalf("remat lever %+v", l)
	}
	prove(t, m, l.module)
	if ok, _ := runs(t, l.module, dev, gpu.ClientConfig{Preallocate: true, MemFraction: 1, Allocator: gpu.BFCKind}); !ok {
		t.Errorf("the rematerialized module does not run on %s", dev)
	}
	if l.Saved != r.Verdict.Total-l.Total || l.Saved <= 0 {
		t.Errorf("saved %d of %d -> %d", l.Saved, r.Verdict.Total, l.Total)
	}
	d := strings.Join(l.Details, "\n")
	if !strings.Contains(d, "jit(step)/block") || !strings.Contains(d, "model.py:") {
		t.Errorf("details do not name the scope and source:\n%s", d)
	}
	if !strings.Contains(l.Change[0], PolicyDotsSaveable) {
		t.Errorf("no dot recomputed, want %s: %q", PolicyDotsSaveable, l.Change)
	}
	c := r.Combination
	if !c.Fits || c.Levers[len(c.Levers)-1] != "remat" {
		t.Errorf("combination %+v", c)
	}
}

// unscheduled is small without is_scheduled: the function JAX would run
// op by op without jit (eager), each op holding its own result.
const unscheduled = `HloModule f

ENTRY %main (p: f32[1048576]) -> f32[1048576] {
  %p = f32[1048576]{0} parameter(0)
  %e = f32[1048576]{0} exponential(%p)
  %n = f32[1048576]{0} negate(%e)
  ROOT %a = f32[1048576]{0} add(%n, %p)
}
`

// TestJitLever: on a module XLA has not compiled, the jit lever shows
// the op-by-op runs beside the jitted one, the figures eager.Compare
// gives on the same client.
func TestJitLever(t *testing.T) {
	m := parse(t, unscheduled)
	r := analyze(t, m, "custom:1GiB", env())
	l := lever(t, r, "jit")
	if !l.Applies || !l.Fits {
		t.Fatalf("jit lever %+v", l)
	}
	d, _ := gpu.DeviceByName("custom:1GiB")
	c, err := eager.Compare(context.Background(), m, func() (*gpu.Client, error) {
		return gpu.NewClient(d, gpu.DefaultConfig(), gpu.ClientOptions{})
	}, eager.Options{Release: eager.Held, LiveAt: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("op by op (held): fits, peak %d bytes, %d more than jitted", c.Eager.Peak, c.Eager.Peak-c.Jit.Peak)
	if !strings.Contains(strings.Join(l.Details, "\n"), want) {
		t.Errorf("details %q, want %q", l.Details, want)
	}
	if l.Change[0] != "wrap the function in jax.jit" {
		t.Errorf("change %q", l.Change)
	}
}
