package fit

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/schedule"
)

func donateParse(t testing.TB, text string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("donate.hlo", text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// donateRun plans a clone of m with the pipeline (compile.Compile, which
// runs assign.Check) and returns the plan.
func donateRun(t testing.TB, m *hlo.Module, opts compile.Options) *compile.Result {
	t.Helper()
	r, err := compile.Compile(context.Background(), m.Clone(), opts)
	if err != nil {
		t.Fatalf("planning: %v\n%s", err, m)
	}
	return r
}

// donateProve holds what every DonateResult must show: the input module
// unchanged; the donated module verifies and prints as a fixed point of
// parse and print; its plan (checked by Compile) has the total After and
// passes the shadow check; After is no more than Before; and, when
// evaluate, its planned run computes the original's reference outputs bit
// for bit on random arguments. It reports whether it compared outputs
// (false without evaluate, or when the original cannot be evaluated).
func donateProve(t testing.TB, m *hlo.Module, orig string, res *DonateResult, opts compile.Options, evaluate bool) bool {
	t.Helper()
	if m.String() != orig {
		t.Fatal("Donate changed its input module")
	}
	if err := hlo.Verify(res.Module); err != nil {
		t.Fatalf("donated module invalid: %v\n%s", err, res.Module)
	}
	out := res.Module.String()
	back, err := hlo.ParseModule("back.hlo", out)
	if err != nil || back.String() != out {
		t.Fatalf("the donated module does not round-trip: %v\n%s", err, out)
	}
	donated := 0
	var all []donateLeaf
	for _, d := range res.Args {
		if d.Donated {
			donated++
			if !slices.ContainsFunc(back.InputOutputAlias, func(a hlo.IOAlias) bool {
				return a.Param == d.Param && a.ParamIndex.Equal(d.ParamIndex) && a.Output.Equal(d.Output) && d.Output != nil
			}) {
				t.Errorf("%+v: not aliased so in the module", d)
			}
		}
		all = append(all, donateLeaf{param: d.Param, index: d.ParamIndex})
	}
	if len(back.InputOutputAlias)+len(back.BufferDonors) != len(m.InputOutputAlias)+len(m.BufferDonors)+donated {
		t.Fatalf("%d donations in the module, %d marked", len(back.InputOutputAlias)+len(back.BufferDonors)-len(m.InputOutputAlias)-len(m.BufferDonors), donated)
	}
	if len(all) > 0 {
		if got := donateRun(t, donateApply(m, donateMatch(m, donateLeavesOf(m, all))), opts).Assignment.Stats.TotalBytes; got != res.All {
			t.Errorf("All %d, planning every argument donated gives %d", res.All, got)
		}
	}
	r := donateRun(t, back, opts)
	if got := r.Assignment.Stats.TotalBytes; got != res.After {
		t.Errorf("After %d, planning the donated module gives %d", res.After, got)
	}
	if got := donateRun(t, m, opts).Assignment.Stats.TotalBytes; got != res.Before {
		t.Errorf("Before %d, planning the original gives %d", res.Before, got)
	}
	if res.After > res.Before {
		t.Errorf("donating raised the total %d -> %d", res.Before, res.After)
	}
	for i := 1; i < len(res.Args); i++ {
		if res.Args[i].Saved > res.Args[i-1].Saved {
			t.Errorf("Args not sorted by saving: %+v", res.Args)
		}
	}
	ctx := context.Background()
	sh, err := exec.Shadow(ctx, r.Assignment)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Violation != nil {
		t.Fatalf("shadow check: %v\n%s", sh.Violation, out)
	}
	if !evaluate {
		return false
	}
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(5, 6)))
	// The work bound keeps large corpus modules out: the original's run
	// gives up, and the module is not evaluated (false). The donated run,
	// which may add copies, gets twice the bound.
	const work = 1 << 24
	want, err := exec.Execute(ctx, donateRun(t, m, opts).Assignment, args, nil, exec.Options{Reference: true, MaxSteps: 1 << 16, MaxWork: work})
	if err != nil {
		return false
	}
	// The donated run may write over its arguments: give it its own.
	got, err := exec.Execute(ctx, r.Assignment, eval.RandomArgs(m, rand.New(rand.NewPCG(5, 6))), nil, exec.Options{MaxSteps: 1 << 16, MaxWork: 2 * work})
	if err != nil {
		t.Fatalf("the original runs, the donated module does not: %v", err)
	}
	if len(got.Outputs) != len(want.Outputs) {
		t.Fatalf("%d outputs, want %d", len(got.Outputs), len(want.Outputs))
	}
	for i := range want.Outputs {
		if !got.Outputs[i].Identical(want.Outputs[i]) {
			t.Fatalf("output %d differs from the original's", i)
		}
	}
	return true
}

func donate(t *testing.T, text string) (*hlo.Module, *DonateResult) {
	t.Helper()
	m := donateParse(t, text)
	orig := m.String()
	res, err := Donate(context.Background(), m, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) > 0 {
		t.Errorf("skipped: %v", res.Skipped)
	}
	if !donateProve(t, m, orig, res, compile.Options{}, true) {
		t.Fatal("the evaluator cannot run the test module")
	}
	return m, res
}

func donateFind(t *testing.T, res *DonateResult, param int64, ix hlo.ShapeIndex) Donation {
	t.Helper()
	for _, d := range res.Args {
		if d.Param == param && d.ParamIndex.Equal(ix) {
			return d
		}
	}
	t.Fatalf("parameter %d at %s not among %+v", param, ix, res.Args)
	return Donation{}
}

func donateBytes(t *testing.T, s string) int64 {
	t.Helper()
	m := donateParse(t, "HloModule s\nENTRY %e (p: "+s+") -> "+s+" {\n  ROOT %p = "+s+" parameter(0)\n}\n")
	n, err := hlo.BufferSize(m.Entry.Root.Shape)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An SGD step, w' = w - g, the shape JAX's train steps update in place.
// Donated alone, either argument is aliased to the output (JAX's
// _set_up_aliases, jax/_src/interpreters/mlir.py: the output takes the
// first donated argument of its shape and dtype). XLA's alias analysis
// puts an aliased parameter and its output in one HloBuffer
// (hlo_alias_analysis.cc, input/output aliases), so the output needs no
// allocation of its own: each saves the output's bytes. Donated together,
// w (the first in order) is aliased and g is left with no output: a buffer
// donor that buffer assignment never reuses (buffer_assignment.cc,
// BufferAllocation::is_readonly: an entry parameter not aliased to an
// output), so it adds nothing, and the set kept is w alone.
const donateSGD = `HloModule sgd

ENTRY %train_step (w: f32[64,32], g: f32[64,32]) -> f32[64,32] {
  %w = f32[64,32]{1,0} parameter(0), metadata={op_name="params['w']"}
  %g = f32[64,32]{1,0} parameter(1), metadata={op_name="grads['w']"}
  ROOT %u = f32[64,32]{1,0} subtract(%w, %g)
}
`

func TestDonateUpdateInPlace(t *testing.T) {
	_, res := donate(t, donateSGD)
	if len(res.Args) != 2 {
		t.Fatalf("%d donations, want 2: %+v", len(res.Args), res.Args)
	}
	size := donateBytes(t, "f32[64,32]{1,0}")
	w := donateFind(t, res, 0, hlo.ShapeIndex{})
	if !w.Donated || w.Output == nil || !w.Output.Equal(hlo.ShapeIndex{}) || w.Saved != size || w.Bytes != size || w.Name != "params['w']" {
		t.Errorf("w: %+v, want donated, aliased to {}, saving %d, named params['w']", w, size)
	}
	g := donateFind(t, res, 1, hlo.ShapeIndex{})
	if g.Donated || g.Output == nil || g.Saved != size || g.Name != "grads['w']" {
		t.Errorf("g: %+v, want aliased to {} alone saving %d, not kept", g, size)
	}
	if res.Args[0].Param != 0 {
		t.Errorf("ties not in parameter order: %+v", res.Args)
	}
	if res.Before-res.After != size || res.All != res.After {
		t.Errorf("donated set saves %d (all %d), want %d", res.Before-res.After, res.Before-res.All, size)
	}
	if len(res.Module.InputOutputAlias) != 1 || res.Module.InputOutputAlias[0].Kind != hlo.MayAlias ||
		res.Module.InputOutputAlias[0].Param != 0 || len(res.Module.BufferDonors) != 0 {
		t.Errorf("module header: %v %v", res.Module.InputOutputAlias, res.Module.BufferDonors)
	}
}

// A parameter no output matches (JAX passes no donation on, XLA's
// OptimizeInputOutputBufferAlias Test AllDifferentBufferSizes aliases
// nothing) is a buffer_donor alone and saves nothing, so it is listed but
// not kept.
func TestDonateBufferDonor(t *testing.T) {
	_, res := donate(t, `HloModule d

ENTRY %main (x: f32[128]) -> f32[64] {
  %x = f32[128]{0} parameter(0)
  %e = f32[128]{0} exponential(%x)
  ROOT %s = f32[64]{0} slice(%e), slice={[0:64]}
}
`)
	if len(res.Args) != 1 || res.Args[0].Output != nil || res.Args[0].Saved != 0 || res.Args[0].Donated {
		t.Fatalf("%+v, want one buffer donor saving nothing", res.Args)
	}
	if res.All != res.Before || res.After != res.Before {
		t.Errorf("totals %d %d %d, want all equal", res.Before, res.After, res.All)
	}
	if got := donateMatch(res.Module, donateLeaves(res.Module)); len(got) != 1 || got[0].output != nil {
		t.Errorf("matching %+v, want a buffer donor", got)
	}
}

// A parameter already aliased, or already a buffer donor, is skipped, and
// an output already aliased takes no other (OptimizeInputOutputBufferAlias::
// Build: ParameterHasAlias and OutputHasAlias skip them).
func TestDonateSkipsAliased(t *testing.T) {
	_, res := donate(t, `HloModule a, input_output_alias={ {0}: (0, {}, may-alias) }, buffer_donor={ (2, {}) }

ENTRY %main (a: f32[16], b: f32[16], c: f32[16]) -> (f32[16], f32[16]) {
  %a = f32[16]{0} parameter(0)
  %b = f32[16]{0} parameter(1)
  %c = f32[16]{0} parameter(2)
  %x = f32[16]{0} add(%a, %b)
  %y = f32[16]{0} multiply(%b, %c)
  ROOT %t = (f32[16]{0}, f32[16]{0}) tuple(%x, %y)
}
`)
	if len(res.Args) != 1 {
		t.Fatalf("%+v, want b alone", res.Args)
	}
	b := res.Args[0]
	if b.Param != 1 || !b.Output.Equal(hlo.ShapeIndex{1}) || b.Saved != donateBytes(t, "f32[16]{0}") {
		t.Errorf("b: %+v, want aliased to {1} saving its bytes", b)
	}
}

// A tuple parameter: each leaf is donated on its own, matched by size
// largest first whatever the order (OptimizeInputOutputBufferAlias Test
// UnorderedNestedTuple: input ((r1), r2, r3, r4), output (r1, (r3, r2),
// r2): {0,0}->{0}, {1}->{1,1}, {2}->{1,0}, {3} unmatched). The leaves'
// bytes: f32[4], f32[4,5], f32[4,5,6], f32[4,5,6,7].
func TestDonateTupleParameter(t *testing.T) {
	_, res := donate(t, `HloModule tup

ENTRY %main (s: ((f32[4]), f32[4,5], f32[4,5,6], f32[4,5,6,7])) -> (f32[4], (f32[4,5,6], f32[4,5]), f32[4,5]) {
  %s = ((f32[4]{0}), f32[4,5]{1,0}, f32[4,5,6]{2,1,0}, f32[4,5,6,7]{3,2,1,0}) parameter(0), metadata={op_name="state"}
  %t0 = (f32[4]{0}) get-tuple-element(%s), index=0
  %a = f32[4]{0} get-tuple-element(%t0), index=0
  %b = f32[4,5]{1,0} get-tuple-element(%s), index=1
  %c = f32[4,5,6]{2,1,0} get-tuple-element(%s), index=2
  %na = f32[4]{0} negate(%a)
  %nb = f32[4,5]{1,0} negate(%b)
  %nc = f32[4,5,6]{2,1,0} negate(%c)
  %eb = f32[4,5]{1,0} exponential(%b)
  %in = (f32[4,5,6]{2,1,0}, f32[4,5]{1,0}) tuple(%nc, %nb)
  ROOT %r = (f32[4]{0}, (f32[4,5,6]{2,1,0}, f32[4,5]{1,0}), f32[4,5]{1,0}) tuple(%na, %in, %eb)
}
`)
	want := []struct {
		ix, out hlo.ShapeIndex
		shape   string
	}{
		{hlo.ShapeIndex{0, 0}, hlo.ShapeIndex{0}, "f32[4]{0}"},
		{hlo.ShapeIndex{1}, hlo.ShapeIndex{1, 1}, "f32[4,5]{1,0}"},
		{hlo.ShapeIndex{2}, hlo.ShapeIndex{1, 0}, "f32[4,5,6]{2,1,0}"},
		{hlo.ShapeIndex{3}, nil, "f32[4,5,6,7]{3,2,1,0}"},
	}
	if len(res.Args) != len(want) {
		t.Fatalf("%d donations, want %d: %+v", len(res.Args), len(want), res.Args)
	}
	for _, w := range want {
		d := donateFind(t, res, 0, w.ix)
		if !d.Output.Equal(w.out) || (d.Output == nil) != (w.out == nil) || d.Name != "state" {
			t.Errorf("leaf %s: %+v, want output %v", w.ix, d, w.out)
		}
		saved := donateBytes(t, w.shape)
		if w.out == nil {
			saved = 0
		}
		if d.Saved != saved {
			t.Errorf("leaf %s saves %d, want %d (its output's bytes)", w.ix, d.Saved, saved)
		}
	}
}

// Each output takes the first donated argument of its shape, in one memory
// space (JAX's _set_up_aliases keys its donations by aval and memory kind;
// XLA's OptimizeInputOutputBufferAlias Tests MultipleParameters, the
// outputs in reverse order, and AllDifferentMemorySpaces: equal shapes in
// different spaces never alias). d, the second f32[4,5], finds no output
// left; c's only output of its size is in another space.
func TestDonateMatching(t *testing.T) {
	m := donateParse(t, `HloModule mp

ENTRY %main (a: f32[4], b: f32[4,5], c: f32[8], d: f32[4,5]) -> (f32[4,5], f32[4], f32[8]{0:S(5)}) {
  %a = f32[4]{0} parameter(0)
  %b = f32[4,5]{1,0} parameter(1)
  %c = f32[8]{0} parameter(2)
  %d = f32[4,5]{1,0} parameter(3)
  %x = f32[4,5]{1,0} add(%b, %d)
  %y = f32[4]{0} negate(%a)
  %z = f32[8]{0:S(5)} negate(%c)
  ROOT %r = (f32[4,5]{1,0}, f32[4]{0}, f32[8]{0:S(5)}) tuple(%x, %y, %z)
}
`)
	got := map[int64]hlo.ShapeIndex{}
	for _, c := range donateMatch(m, donateLeaves(m)) {
		got[c.param] = c.output
	}
	want := map[int64]hlo.ShapeIndex{0: {1}, 1: {0}, 2: nil, 3: nil}
	for p, w := range want {
		if o, ok := got[p]; !ok || !o.Equal(w) || (o == nil) != (w == nil) {
			t.Errorf("parameter %d -> %v (listed %v), want %v", p, o, ok, w)
		}
	}
}

// An argument no output of its shape takes is passed to XLA when an output
// left has its element count (JAX's _set_up_aliases, "find an output array
// with matching size ignoring shapes": aval.size), and XLA pairs it by
// bytes (OptimizeInputOutputBufferAlias::Build): x, f32[4,5], is aliased to
// the f32[20] output {0}, the first of the two equal-size donees (stable
// sort). y, f64[10], has the bytes of an f32[20] but not its element count:
// JAX never passes it on, so it stays a buffer donor. Donated, x saves the
// output's bytes, and the planned run of the aliased reshape computes the
// original's outputs.
func TestDonateBySize(t *testing.T) {
	_, res := donate(t, `HloModule sz

ENTRY %main (x: f32[4,5], y: f64[10]) -> (f32[20], f32[20]) {
  %x = f32[4,5]{1,0} parameter(0)
  %y = f64[10]{0} parameter(1)
  %r = f32[20]{0} reshape(%x)
  %e = f32[20]{0} exponential(%r)
  %c = f32[10]{0} convert(%y)
  %cc = f32[20]{0} concatenate(%c, %c), dimensions={0}
  %n = f32[20]{0} add(%e, %cc)
  ROOT %t = (f32[20]{0}, f32[20]{0}) tuple(%e, %n)
}
`)
	x := donateFind(t, res, 0, hlo.ShapeIndex{})
	if !x.Output.Equal(hlo.ShapeIndex{0}) || x.Output == nil || x.Saved != donateBytes(t, "f32[20]{0}") || !x.Donated {
		t.Errorf("x: %+v, want aliased to {0}, saving an f32[20]", x)
	}
	y := donateFind(t, res, 1, hlo.ShapeIndex{})
	if y.Output != nil || y.Saved != 0 || y.Donated {
		t.Errorf("y: %+v, want a buffer donor saving nothing", y)
	}
}

// A dynamic output aliases nothing (OptimizeInputOutputBufferAlias Test
// DynamicShapeBufferOutput), nor does a dynamic parameter
// (DynamicShapeBufferInput): the static one is a buffer donor, the dynamic
// one not donatable.
func TestDonateDynamic(t *testing.T) {
	m := donateParse(t, `HloModule dyn

ENTRY %main (a: f32[512], b: f32[<=512], n: s32[]) -> f32[<=512] {
  %a = f32[512]{0} parameter(0)
  %b = f32[<=512]{0} parameter(1)
  %n = s32[] parameter(2)
  %s = f32[<=512]{0} set-dimension-size(%a, %n), dimensions={0}
  ROOT %r = f32[<=512]{0} add(%s, %b)
}
`)
	cs := donateMatch(m, donateLeaves(m))
	for _, c := range cs {
		if c.output != nil || c.param == 1 {
			t.Errorf("candidate %+v: want buffer donors only, no dynamic parameter", c)
		}
	}
	if len(cs) != 2 {
		t.Errorf("%d candidates, want a and n", len(cs))
	}
}

// A scheduled module (copies inserted by XLA) in which the donated
// parameter is read after its output is written: the alias needs a copy,
// which the schedule pass's interference repair adds; the donated module
// still computes the original's outputs.
func TestDonateScheduledNeedsCopy(t *testing.T) {
	m, res := donate(t, `HloModule sched, is_scheduled=true

ENTRY %main (p: f32[256], q: f32[256]) -> (f32[256], f32[256]) {
  %p = f32[256]{0} parameter(0)
  %q = f32[256]{0} parameter(1)
  %a = f32[256]{0} add(%p, %q)
  %n = f32[256]{0} negate(%p)
  %m = f32[256]{0} multiply(%n, %q)
  ROOT %t = (f32[256]{0}, f32[256]{0}) tuple(%a, %m)
}
`)
	if len(res.Args) != 2 {
		t.Fatalf("%+v, want both parameters aliased", res.Args)
	}
	for _, d := range res.Args {
		if d.Output == nil {
			t.Errorf("%+v: want an alias", d)
		}
	}
	// copy_insertion.cc (AddCopiesForAliasedInputOutputs and the live
	// range interference of the joined buffer): %p is read by %n after %a
	// writes its buffer, so one copy of %p is added.
	before := donateCount(donateRun(t, m, compile.Options{}).Module, hlo.OpCopy)
	if got := donateCount(donateRun(t, res.Module, compile.Options{}).Module, hlo.OpCopy); got != before+1 {
		t.Errorf("%d copies in the donated plan, want %d", got, before+1)
	}
}

func donateCount(m *hlo.Module, op hlo.Opcode) int {
	n := 0
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == op {
				n++
			}
		}
	}
	return n
}

// Names: JAX's op_name is the pytree path; an op_name that is an
// operation (a scope, or torch-xla's op_type) is not; a generic
// instruction name ("Arg_0.1", "p0.1") names nothing.
func TestDonateName(t *testing.T) {
	for _, c := range []struct{ name, md, want string }{
		{"Arg_0.1", `op_name="args[0]['w']"`, "args[0]['w']"},
		{"Arg_0.1.0", `op_name="G_crys" scheduling_name="Arg_0.1.0"`, "G_crys"},
		{"Arg_3.4", "", ""},
		{"p0.1", `op_type="xla__device_data" op_name="xla__device_data"`, ""},
		{"params.2", "", "params"},
		{"x", `op_name="jit(f)/jit(main)/mul"`, "x"},
	} {
		md := ""
		if c.md != "" {
			md = ", metadata={" + c.md + "}"
		}
		m := donateParse(t, "HloModule n\nENTRY %e (a: f32[2]) -> f32[2] {\n  ROOT %"+c.name+" = f32[2]{0} parameter(0)"+md+"\n}\n")
		if got := donateName(m.Entry.Params[0]); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.name, c.md, got, c.want)
		}
	}
}

// Bad input gets an error, never a panic.
func TestDonateBadInput(t *testing.T) {
	if _, err := Donate(context.Background(), nil, compile.Options{}); err == nil {
		t.Error("nil module: no error")
	}
	m := donateParse(t, "HloModule b\nENTRY %e (a: f32[2]) -> f32[2] {\n  ROOT %a = f32[2]{0} parameter(0)\n}\n")
	m.InputOutputAlias = []hlo.IOAlias{{Param: 3}}
	_, err := Donate(context.Background(), m, compile.Options{})
	if err == nil || !strings.Contains(err.Error(), "donate.hlo:") {
		t.Errorf("alias of a missing parameter: %v, want a positioned error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Donate(ctx, donateParse(t, donateSGD), compile.Options{}); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestDonateCorpus runs Donate on XLA's own optimized modules (torch-xla
// and JAX, GPU): every module is either refused because the pipeline
// cannot plan it at all (the refusal names why) or donated to a module
// that verifies, round-trips, plans to After (no more than Before), and
// passes the shadow check. It logs how many modules gain and the bytes
// saved in all.
func TestDonateCorpus(t *testing.T) {
	files := corpus.Files(t, "paired/*/*_gpu_after_optimizations.txt", "paired-jax/*/*_gpu_after_optimizations.txt")
	var gain, refused, args, worse, evaluated int
	var saved int64
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.ParseModule(f, string(text))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		orig := m.String()
		res, err := Donate(context.Background(), m, compile.Options{})
		if err != nil {
			// An honest refusal: the original itself cannot be planned.
			if _, perr := compile.Compile(context.Background(), m.Clone(), compile.Options{}); perr == nil {
				t.Errorf("%s: Donate fails where the original plans: %v", f, err)
			}
			refused++
			t.Logf("%s: refused: %v", filepath.Base(f), err)
			continue
		}
		if donateProve(t, m, orig, res, compile.Options{}, res.After < res.Before) {
			evaluated++
		}
		for _, s := range res.Skipped {
			t.Errorf("%s: skipped %s", f, s)
		}
		args += len(res.Args)
		if res.After < res.Before {
			gain++
			saved += res.Before - res.After
		}
		if res.All > res.Before {
			worse++
			t.Logf("%s: donating every argument raises the total %d -> %d; the kept set gives %d", filepath.Base(f), res.Before, res.All, res.After)
		}
	}
	t.Logf("%d modules, %d refused, %d donatable arguments; %d modules gain, %d bytes saved in all; %d worse with every argument donated; %d of the gaining modules run bit-equal to the original (the reference run gives up on the others: work bound or unsupported)", len(files), refused, args, gain, saved, worse, evaluated)
}

// FuzzDonate donates the arguments of random modules, unscheduled or
// scheduled as the pipeline would (copies inserted, XLA's heuristic order,
// kept): either
// an error where the original cannot be planned, or a result donateProve
// accepts (bit-equal outputs where the evaluator runs the module).
func FuzzDonate(f *testing.F) {
	for seed := uint64(1); seed <= 8; seed++ {
		f.Add([]byte(randhlo.Generate(seed, randhlo.Options{Instructions: 12 + 3*int(seed)})), seed%2 == 0)
	}
	f.Fuzz(func(t *testing.T, src []byte, scheduled bool) {
		m, err := hlo.ParseModule("fuzz.hlo", string(src))
		if err != nil || m.NumInstructions() > 200 || !donateSmall(m) {
			return
		}
		if scheduled {
			m.IsScheduled = false
			a, err := preptest.Prepare(m, schedule.Heuristic)
			if err != nil {
				return
			}
			a.Schedule.Apply(m)
			m.IsScheduled = true
			if m, err = hlo.ParseModule("fuzz.hlo", m.String()); err != nil {
				t.Fatalf("the scheduled module does not parse: %v", err)
			}
		}
		// A module XLA has not scheduled is scheduled by XLA's heuristic:
		// the search, Compile's default for it, is slow for a fuzzer.
		opts := compile.Options{}
		if !m.IsScheduled {
			opts.Scheduler = schedule.Heuristic
		}
		ctx := context.Background()
		if _, err := compile.Compile(ctx, m.Clone(), opts); err != nil {
			if _, derr := Donate(ctx, m, opts); derr == nil {
				t.Fatalf("the original does not plan (%v), Donate did not say so", err)
			}
			return
		}
		orig := m.String()
		res, err := Donate(ctx, m, opts)
		if err != nil {
			t.Fatalf("the original plans, Donate fails: %v", err)
		}
		donateProve(t, m, orig, res, opts, true)
	})
}

// donateSmall reports whether every array of m is within 64 KiB.
func donateSmall(m *hlo.Module) bool {
	ok := true
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			in.Shape.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
				if n, err := hlo.BufferSize(s); err != nil || n > 64<<10 {
					ok = false
				}
			})
		}
	}
	return ok
}
