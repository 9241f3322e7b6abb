package remat

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/cost"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// planned flattens, analyses and assigns a clone of m in its order, and
// checks the plan (assign.Check).
func planned(t testing.TB, m *hlo.Module) *assign.Assignment {
	t.Helper()
	m, err := hlo.ParseModule("planned.hlo", m.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hlo.FlattenCallGraph(m); err != nil {
		t.Fatal(err)
	}
	a, err := liveness.Analyze(m, liveness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	as, err := assign.Assign(context.Background(), a, assign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := assign.Check(as); err != nil {
		t.Fatal(err)
	}
	return as
}

// prove holds what the runtime must show of every rewrite: it verifies
// and prints as a fixed point of parse and print; its plan passes
// assign.Check and the shadow check; its total is the one Fit gave; and
// (when evaluate) its planned and reference runs compute the original's
// reference outputs bit for bit.
func prove(t *testing.T, m *hlo.Module, res *FitResult, evaluate bool) {
	t.Helper()
	if err := hlo.Verify(res.Module); err != nil {
		t.Fatalf("rewrite invalid: %v\n%s", err, res.Module)
	}
	out := res.Module.String()
	back, err := hlo.ParseModule("back.hlo", out)
	if err != nil || back.String() != out {
		t.Fatalf("the rewrite does not round-trip: %v\n%s", err, out)
	}
	as := planned(t, back)
	if as.Stats.TotalBytes != res.TotalAfter {
		t.Errorf("Fit says %d bytes, planning the rewrite gives %d", res.TotalAfter, as.Stats.TotalBytes)
	}
	if res.Fits != (res.TotalAfter <= res.Limit) {
		t.Errorf("fits %v with %d bytes against %d", res.Fits, res.TotalAfter, res.Limit)
	}
	ctx := context.Background()
	sh, err := exec.Shadow(ctx, as)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Violation != nil {
		t.Fatalf("shadow check: %v\n%s", sh.Violation, out)
	}
	if !evaluate {
		return
	}
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(3, 4)))
	want, err := exec.Execute(ctx, planned(t, m), args, nil, exec.Options{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []bool{true, false} {
		got, err := exec.Execute(ctx, as, args, nil, exec.Options{Reference: ref})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Outputs) != len(want.Outputs) {
			t.Fatalf("%d outputs, want %d", len(got.Outputs), len(want.Outputs))
		}
		for i := range want.Outputs {
			if !got.Outputs[i].Identical(want.Outputs[i]) {
				t.Fatalf("output %d differs (reference run %v)", i, ref)
			}
		}
	}
}

// fit runs the plan algorithm on text toward the limit less before's
// total less cut bytes, and proves the result.
func fit(t *testing.T, text string, cut int64, evaluate bool) (*hlo.Module, *FitResult) {
	t.Helper()
	m := mustParse(t, text)
	before, err := DefaultPlan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	orig := m.String()
	res, err := Fit(context.Background(), m, before-cut, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != orig {
		t.Fatal("the input module changed")
	}
	if res.TotalBefore != before {
		t.Errorf("TotalBefore %d, want %d", res.TotalBefore, before)
	}
	prove(t, m, res, evaluate)
	return m, res
}

func opcodeCount(m *hlo.Module, comp string, op hlo.Opcode) int {
	for _, c := range m.Computations {
		if c.Name == comp {
			return count(c, op)
		}
	}
	return -1
}

// A broadcast read at the start, in the middle and at the end, each pair
// of reads apart by a 16 KiB temporary: it is computed again before the
// middle read and before the last (two clones, two splits), so neither
// temporary's step holds it; broadcasts cost no FLOPs.
const twoLaterUses = `HloModule two, is_scheduled=true

ENTRY %main (p: f32[]) -> f32[2048] {
  %p = f32[] parameter(0)
  %b = f32[1024]{0} broadcast(%p), dimensions={}
  %u1 = f32[1024]{0} negate(%b)
  %t1 = f32[4096]{0} broadcast(%p), dimensions={}
  %t1n = f32[4096]{0} exponential(%t1)
  %s1 = f32[1024]{0} slice(%t1n), slice={[0:1024]}
  %a1 = f32[1024]{0} add(%u1, %s1)
  %u2 = f32[1024]{0} add(%b, %a1)
  %t2 = f32[4096]{0} broadcast(%p), dimensions={}
  %t2n = f32[4096]{0} exponential(%t2)
  %s2 = f32[1024]{0} slice(%t2n), slice={[0:1024]}
  %a2 = f32[1024]{0} add(%u2, %s2)
  ROOT %r = f32[2048]{0} concatenate(%b, %a2), dimensions={0}
}
`

func TestPlanTwoLaterUses(t *testing.T) {
	_, res := fit(t, twoLaterUses, 4*kib, true)
	if !res.Fits {
		t.Fatalf("%d -> %d, limit %d: %s", res.TotalBefore, res.TotalAfter, res.Limit, res.Message)
	}
	e := res.Module.Entry
	if n := count(e, hlo.OpBroadcast); n != 5 {
		t.Errorf("%d broadcasts, want 5 (b, two clones, t1, t2): %v", n, names(e))
	}
	// The middle and last reads of b read clones placed after the
	// temporaries died.
	for _, u := range []string{"u2", "r"} {
		op := e.Instruction(u).Operands[0]
		if !strings.HasPrefix(op.Name, "b.remat") || index(e, op.Name) < index(e, map[string]string{"u2": "s1", "r": "s2"}[u]) {
			t.Errorf("%s reads %s at %d", u, op.Name, index(e, op.Name))
		}
	}
	if res.AddedFLOPs != 0 {
		t.Errorf("broadcasts cost no FLOPs; added %d", res.AddedFLOPs)
	}
}

// x = negate(exp(p)) is read at the start and at the end; exp's value
// dies at x. Recomputing x before the end needs exp's value there:
// keeping it alive over the 16 KiB temporary would take as much as x
// frees, so exp is recomputed too (a chain of two).
const chainText = `HloModule chain, is_scheduled=true

ENTRY %main (p: f32[1024]) -> f32[2048] {
  %p = f32[1024]{0} parameter(0)
  %y = f32[1024]{0} exponential(%p)
  %x = f32[1024]{0} negate(%y)
  %u = f32[1024]{0} add(%x, %p)
  %t = f32[4096]{0} concatenate(%u, %u, %u, %u), dimensions={0}
  %tn = f32[4096]{0} tanh(%t)
  %s = f32[1024]{0} slice(%tn), slice={[0:1024]}
  ROOT %r = f32[2048]{0} concatenate(%x, %s), dimensions={0}
}
`

func TestPlanChain(t *testing.T) {
	_, res := fit(t, chainText, 4*kib, true)
	if !res.Fits {
		t.Fatalf("%d -> %d, limit %d: %s", res.TotalBefore, res.TotalAfter, res.Limit, res.Message)
	}
	e := res.Module.Entry
	x := e.Root.Operands[0]
	if x.Name != "x.remat" || x.Operands[0].Name != "y.remat" || x.Operands[0].Operands[0].Name != "p" {
		t.Fatalf("root reads %s: %v", x.Name, names(e))
	}
	if index(e, "y.remat") < index(e, "s") {
		t.Errorf("the chain is not after the temporary: %v", names(e))
	}
	// The exponential and the negate, again (cost's figures: XLA counts
	// an exponential as a transcendental, not a FLOP).
	m := mustParse(t, chainText)
	want := cost.Instruction(m.Entry.Instruction("y")).FLOPs + cost.Instruction(m.Entry.Instruction("x")).FLOPs
	if res.AddedFLOPs != want || want == 0 {
		t.Errorf("added %d FLOPs, want %d", res.AddedFLOPs, want)
	}
}

// A value defined early and first read late is moved, not recomputed:
// the original has no use left and goes; no FLOPs are added.
func TestPlanMove(t *testing.T) {
	text := `HloModule move, is_scheduled=true

ENTRY %main (p: f32[1024], q: f32[]) -> f32[2048] {
  %p = f32[1024]{0} parameter(0)
  %q = f32[] parameter(1)
  %x = f32[1024]{0} exponential(%p)
  %t = f32[4096]{0} broadcast(%q), dimensions={}
  %tn = f32[4096]{0} tanh(%t)
  %s = f32[1024]{0} slice(%tn), slice={[0:1024]}
  ROOT %r = f32[2048]{0} concatenate(%x, %s), dimensions={0}
}
`
	_, res := fit(t, text, 4*kib, true)
	e := res.Module.Entry
	if !res.Fits || count(e, hlo.OpExp) != 1 || e.Instruction("x") != nil || res.AddedFLOPs != 0 {
		t.Fatalf("fits %v, added %d FLOPs: %v", res.Fits, res.AddedFLOPs, names(e))
	}
	if index(e, "x.remat") < index(e, "s") {
		t.Errorf("x not moved past the temporary: %v", names(e))
	}
}

// What is never recomputed, however far the limit: an rng, a custom
// call, a collective, a parameter, each idle over the temporary; the
// limit is out of reach, the module comes back as it was, and the
// message says how far it got.
func TestPlanNeverRecomputed(t *testing.T) {
	for _, def := range []string{
		`%x = f32[1024]{0} rng(%q, %q), distribution=rng_uniform`,
		`%x = f32[1024]{0} custom-call(%p), custom_call_target="foo"`,
		`%x = f32[1024]{0} all-reduce(%p), replica_groups={}, to_apply=%sum`,
		`%x = f32[1024]{0} custom-call(%p), custom_call_target="foo", custom_call_has_side_effect=true`,
	} {
		text := `HloModule never, is_scheduled=true

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}

ENTRY %main (p: f32[1024], q: f32[]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  %q = f32[] parameter(1)
  ` + def + `
  %u = f32[1024]{0} add(%x, %p)
  %t = f32[4096]{0} concatenate(%u, %u, %u, %u), dimensions={0}
  %tn = f32[4096]{0} tanh(%t)
  %s = f32[1024]{0} slice(%tn), slice={[0:1024]}
  ROOT %r = f32[1024]{0} add(%x, %s)
}
`
		m, res := fit(t, text, 4*kib, false)
		if res.Fits || res.Message == "" || len(res.Recomputed) != 0 || res.Module.String() != m.String() {
			t.Errorf("%s: fits %v, recomputed %+v, message %q", def, res.Fits, res.Recomputed, res.Message)
		}
	}
}

// A loop body whose state element is read at the top of the body and
// again after a 16 KiB temporary: the value computed from it in the body
// is recomputed in the body; the clone lives in the body computation.
func TestPlanLoopBody(t *testing.T) {
	text := `HloModule loop, is_scheduled=true

%cond (s: (s32[], f32[1024])) -> pred[] {
  %s = (s32[], f32[1024]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[1024])) -> (s32[], f32[1024]) {
  %s = (s32[], f32[1024]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = f32[1024]{0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %w = f32[1024]{0} sine(%v)
  %u = f32[1024]{0} multiply(%w, %v)
  %t = f32[4096]{0} concatenate(%u, %u, %u, %u), dimensions={0}
  %tn = f32[4096]{0} tanh(%t)
  %sl = f32[1024]{0} slice(%tn), slice={[0:1024]}
  %r = f32[1024]{0} add(%w, %sl)
  ROOT %out = (s32[], f32[1024]{0}) tuple(%next, %r)
}

ENTRY %main (p: f32[1024]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[1024]{0}) tuple(%zero, %p)
  %loop = (s32[], f32[1024]{0}) while(%init), condition=%cond, body=%body
  ROOT %res = f32[1024]{0} get-tuple-element(%loop), index=1
}
`
	_, res := fit(t, text, 4*kib, true)
	if !res.Fits {
		t.Fatalf("%d -> %d, limit %d: %s", res.TotalBefore, res.TotalAfter, res.Limit, res.Message)
	}
	if n := opcodeCount(res.Module, "body", hlo.OpSin); n != 2 {
		t.Errorf("%d sines in the body, want 2: %+v", n, res.Recomputed)
	}
	for _, r := range res.Recomputed {
		if r.Computation != "body" || r.Original != "w" {
			t.Errorf("recomputed %+v", r)
		}
	}
}

// The plan algorithm reaches a limit XLA's cannot: XLA's pass recomputes
// one instruction at a time (block_size_limit=1), so recomputing x would
// revive y, dead by then, for as many bytes as it frees
// (MemoryReducedIfRematerialized counts that); the plan algorithm
// recomputes both.
func TestPlanBeyondXLA(t *testing.T) {
	m := mustParse(t, chainText)
	before, err := DefaultPlan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	limit := before - 4*kib
	p, err := Fit(context.Background(), m, limit, FitOptions{Algorithm: Plan})
	if err != nil {
		t.Fatal(err)
	}
	x, err := Fit(context.Background(), m, limit, FitOptions{Algorithm: XLA})
	if err != nil {
		t.Fatal(err)
	}
	prove(t, m, x, true)
	if !p.Fits || x.Fits {
		t.Errorf("plan fits %v (%d), xla fits %v (%d), limit %d", p.Fits, p.TotalAfter, x.Fits, x.TotalAfter, limit)
	}
}

func TestFitRefusals(t *testing.T) {
	m := mustParse(t, strings.Replace(twoLaterUses, ", is_scheduled=true", "", 1))
	for _, algo := range Algorithms {
		if _, err := Fit(context.Background(), m, 1, FitOptions{Algorithm: algo}); err == nil {
			t.Errorf("%s: an unscheduled module was accepted", algo)
		}
	}
	if _, err := Fit(context.Background(), nil, 1, FitOptions{}); err == nil {
		t.Error("nil accepted")
	}
	if _, err := Fit(context.Background(), mustParse(t, twoLaterUses), 1, FitOptions{Algorithm: "nope"}); err == nil {
		t.Error("unknown algorithm accepted")
	}
	if _, err := Fit(context.Background(), mustParse(t, twoLaterUses), -1, FitOptions{}); err == nil {
		t.Error("negative limit accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Fit(ctx, mustParse(t, twoLaterUses), 1, FitOptions{}); err == nil {
		t.Error("a cancelled context ran")
	}
}

// A module that fits already comes back as it was.
func TestFitAlready(t *testing.T) {
	m := mustParse(t, twoLaterUses)
	for _, algo := range Algorithms {
		res, err := Fit(context.Background(), m, 1<<40, FitOptions{Algorithm: algo})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Fits || len(res.Recomputed) != 0 || res.Module.String() != m.String() || res.TotalAfter != res.TotalBefore {
			t.Errorf("%s: %+v", algo, res)
		}
	}
}
