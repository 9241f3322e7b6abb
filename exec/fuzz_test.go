package exec

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/schedule"
)

// executeRandomCase plans the random module of seed (about size entry
// instructions; scheduled as written when flags&1 and fuzzScheduled; for
// the CPU target when flags&2, else the GPU) and runs it on
// arguments drawn from argSeed: the plan passes its shadow check, and the run on the plan's
// bytes computes bit for bit what the run without a plan computes. It
// reports false, having checked nothing, when liveness refuses the module
// (a third of the scheduled ones: their interference was never settled by
// copy insertion, as XLA's scheduled modules' is).
func executeRandomCase(t *testing.T, seed uint64, size, flags uint8, argSeed uint64) bool {
	t.Helper()
	src := randhlo.Generate(seed, randhlo.Options{Instructions: 4 + int(size%48), Scheduled: fuzzScheduled && flags&1 != 0})
	name := fmt.Sprintf("rand_%d.hlo", seed)
	m, err := hlo.ParseModule(name, src)
	require.NoError(t, err, src)
	a, err := preptest.Prepare(m, "")
	if err != nil {
		return false
	}
	opts := assign.Options{Target: assign.GPU, Budget: 10 * time.Millisecond}
	if flags&2 != 0 {
		opts.Target = assign.CPU
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	as, err := assign.Assign(ctx, a, opts)
	require.NoError(t, err, src)
	require.NoError(t, assign.Check(as), src)

	sh, err := Shadow(ctx, as)
	require.NoError(t, err, src)
	require.Nil(t, sh.Violation, "%s\n%s", sh.Violation, src)

	args := eval.RandomArgs(m, rand.New(rand.NewPCG(argSeed, 0)))
	ref, err := Execute(ctx, as, args, nil, Options{Reference: true})
	require.NoError(t, err, src)
	got, err := Execute(ctx, as, args, nil, Options{})
	require.NoError(t, err, src)
	require.Len(t, got.Outputs, len(ref.Outputs), src)
	for i := range ref.Outputs {
		require.Equal(t, ref.Outputs[i].Shape.StringNoLayout(), got.Outputs[i].Shape.StringNoLayout(), "output %d\n%s", i, src)
		require.True(t, bytes.Equal(ref.Outputs[i].Data, got.Outputs[i].Data), "output %d: the planned run differs from the reference\n%s", i, src)
	}
	return true
}

// fuzzScheduled lets FuzzExecute plan random modules scheduled as
// written (is_scheduled=true), as XLA's dumps are, which never went
// through copy insertion: liveness must repair their interference with
// copies or refuse them.
const fuzzScheduled = true

// FuzzExecute: random modules (element-wise chains, broadcasts,
// reductions, tuples, in-place updates, calls, while loops, conditionals,
// control dependencies) planned for the GPU or the CPU, on random
// arguments: nothing panics, every plan passes its shadow check, and the
// planned run equals the reference run bit for bit.
func FuzzExecute(f *testing.F) {
	for seed := uint64(1); seed <= 8; seed++ {
		f.Add(seed, uint8(8+4*seed), uint8(seed%4), seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64, size, flags uint8, argSeed uint64) {
		executeRandomCase(t, seed, size, flags, argSeed)
	})
}

// deadLoopModule is the smallest form of the first bug FuzzExecute found:
// the branch returns r, and a loop after it, dead, works in place on r's
// buffer (its state aliases its init operand). Liveness ends r's live
// range at the loop's init, so the plan lets the loop write over the
// conditional's result. The module scheduled as written fails the same
// way, and so does one whose branch returns its parameter.
var deadLoopModule = `HloModule dead_loop

` + randhlo.CountedLoop("f32[4]", "neg", "negate(%x)") + `
%branch {
  %xb = f32[4] parameter(0)
  ROOT %r = f32[4] sqrt(%xb)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %r)
  %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
}

%other {
  %xo = f32[4] parameter(0)
  ROOT %m = f32[4] negate(%xo)
}

ENTRY %main {
  %p = f32[4] parameter(0)
  %e = f32[4] exponential(%p)
  %pr = pred[] constant(true)
  ROOT %c = f32[4] conditional(%pr, %e, %e), true_computation=%branch, false_computation=%other
}
`

// TestDeadLoopOverCalledRoot: a called computation's root stays live to
// the end of the computation (XLA's root rule, liveness/copies.go), so the
// plan of deadLoopModule computes what the module computes.
func TestDeadLoopOverCalledRoot(t *testing.T) {
	planEqualsReference(t, "dead_loop.hlo", deadLoopModule)
}

// planEqualsReference plans the module of src and requires the plan to
// pass its shadow check and the planned run to compute what the
// reference run computes.
func planEqualsReference(t *testing.T, name, src string) {
	t.Helper()
	planEqualsReferenceUnder(t, name, src, "")
}

// planEqualsReferenceUnder is planEqualsReference under the named
// scheduler.
func planEqualsReferenceUnder(t *testing.T, name, src, scheduler string) {
	t.Helper()
	m, err := hlo.ParseModule(name, src)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, scheduler)
	require.NoError(t, err)
	ctx := context.Background()
	as, err := assign.Assign(ctx, a, assign.Options{})
	require.NoError(t, err)
	sh, err := Shadow(ctx, as)
	require.NoError(t, err)
	require.Nil(t, sh.Violation)
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(1, 0)))
	ref, err := Execute(ctx, as, args, nil, Options{Reference: true})
	require.NoError(t, err)
	got, err := Execute(ctx, as, args, nil, Options{})
	require.NoError(t, err)
	require.Len(t, got.Outputs, len(ref.Outputs))
	for i := range ref.Outputs {
		require.Equal(t, ref.Outputs[i].Data, got.Outputs[i].Data, "output %d: the planned run differs from the reference", i)
	}
}

// scheduledInPlaceModule is the smallest form of the scheduled-module bug
// FuzzExecute found (fuzzScheduled): e is updated in place by the fusion
// (its dynamic-update-slice) and afterwards passed to a call whose loop
// works in place on its parameter. Liveness lets both share e's buffer,
// so the call reads the fusion's result instead of e. Without
// is_scheduled=true liveness inserts the copies itself and the plan is
// right.
var scheduledInPlaceModule = `HloModule in_place_before_call, is_scheduled=true

` + randhlo.CountedLoop("f32[256]", "neg", "negate(%x)") + `
%callee {
  %x = f32[256] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[256]) tuple(%zero, %x)
  %w = (s32[], f32[256]) while(%init), condition=%cond, body=%body
  ROOT %wout = f32[256] get-tuple-element(%w), index=1
}

` + fusedDUS + `
ENTRY %main {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %e = f32[256] exponential(%p)
  %idx = s32[] constant(186)
  %dus = f32[256] fusion(%e, %u, %idx), kind=kLoop, calls=%fused_dus
  %c = f32[256] call(%e), to_apply=%callee
  ROOT %t = (f32[256], f32[256]) tuple(%c, %dus)
}
`

// fusedDUS is a fused computation that updates its first operand in
// place (a dynamic-update-slice at its root).
const fusedDUS = `%fused_dus {
  %b = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %i = s32[] parameter(2)
  ROOT %d = f32[256] dynamic-update-slice(%b, %u, %i)
}
`

// TestScheduledInPlaceBeforeCall: the plan of scheduledInPlaceModule
// computes what the module computes: the while reads its init value when
// the loop starts, after the fusion wrote over it, so the repair copies it.
func TestScheduledInPlaceBeforeCall(t *testing.T) {
	planEqualsReference(t, "in_place_before_call.hlo", scheduledInPlaceModule)
}

// TestRootResultVariants: forms of the two bugs FuzzExecute found that
// each fail without the fix: deadLoopModule scheduled as written (the
// repair gives the branch's root a copy), a branch returning its parameter
// with a loop over it, a while in the same computation as an in-place
// fusion over its init, and an in-place fusion after a branch's root,
// scheduled and not.
func TestRootResultVariants(t *testing.T) {
	sched := strings.Replace(deadLoopModule, "HloModule dead_loop", "HloModule dead_loop, is_scheduled=true", 1)
	param := strings.Replace(deadLoopModule, "  ROOT %r = f32[4] sqrt(%xb)\n", "  ROOT %xb = f32[4] parameter(0)\n  %r = f32[4] sqrt(%xb)\n", 1)
	param = strings.Replace(param, "  %xb = f32[4] parameter(0)\n  ROOT %xb", "  ROOT %xb", 1)
	param = strings.Replace(param, "tuple(%zero, %r)", "tuple(%zero, %xb)", 1)
	paramSched := strings.Replace(param, "HloModule dead_loop", "HloModule dead_loop, is_scheduled=true", 1)
	sameComp := `HloModule same, is_scheduled=true

` + randhlo.CountedLoop("f32[256]", "neg", "negate(%x)") + `
` + fusedDUS + `
ENTRY %main {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %e = f32[256] exponential(%p)
  %idx = s32[] constant(186)
  %dus = f32[256] fusion(%e, %u, %idx), kind=kLoop, calls=%fused_dus
  %zero = s32[] constant(0)
  %init = (s32[], f32[256]) tuple(%zero, %e)
  %w = (s32[], f32[256]) while(%init), condition=%cond, body=%body
  %c = f32[256] get-tuple-element(%w), index=1
  ROOT %t = (f32[256], f32[256]) tuple(%c, %dus)
}
`
	dusAfterRoot := `HloModule dus_after_root, is_scheduled=true

` + fusedDUS + `
%branch {
  %xb = f32[256] parameter(0)
  ROOT %r = f32[256] sqrt(%xb)
  %u = f32[16] constant({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16})
  %idx = s32[] constant(3)
  %dus = f32[256] fusion(%r, %u, %idx), kind=kLoop, calls=%fused_dus
}

%other {
  %xo = f32[256] parameter(0)
  ROOT %m = f32[256] negate(%xo)
}

ENTRY %main {
  %p = f32[256] parameter(0)
  %e = f32[256] exponential(%p)
  %pr = pred[] constant(true)
  ROOT %c = f32[256] conditional(%pr, %e, %e), true_computation=%branch, false_computation=%other
}
`
	dusAfterRootU := strings.Replace(dusAfterRoot, ", is_scheduled=true", "", 1)
	for name, src := range map[string]string{"sched": sched, "param": param, "paramSched": paramSched, "sameComp": sameComp, "dusAfterRoot": dusAfterRoot, "dusAfterRootU": dusAfterRootU} {
		t.Run(name, func(t *testing.T) { planEqualsReference(t, name+".hlo", src) })
	}
}

// branchLoopsModule: both branches of a conditional loop in place on the
// same operand. Only one branch runs, so neither loop's writes reach the
// other's reads: liveness must plan it (mutually exclusive branches do
// not interfere, as in XLA's ordering; it once refused, "copies did not
// repair it", gpu's TestExecuteOnBFC seeds 14 and 22) and the plan must
// compute what the module does whichever branch is taken.
var branchLoopsModule = `HloModule branch_loops

` + randhlo.CountedLoop("f32[256]", "m", "multiply(%x, %x)") + `
%branch.a {
  %x = f32[256] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[256]) tuple(%zero, %x)
  %w = (s32[], f32[256]) while(%init), condition=%cond, body=%body
  ROOT %o = f32[256] get-tuple-element(%w), index=1
}

%branch.b {
  %x = f32[256] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[256]) tuple(%zero, %x)
  %w = (s32[], f32[256]) while(%init), condition=%cond, body=%body
  ROOT %o = f32[256] get-tuple-element(%w), index=1
}

ENTRY %main {
  %p = f32[256] parameter(0)
  %e = f32[256] exponential(%p)
  %pred = pred[] constant(PRED)
  ROOT %c = f32[256] conditional(%pred, %e, %e), true_computation=%branch.a, false_computation=%branch.b
}
`

func TestBranchLoopsInPlace(t *testing.T) {
	for _, pred := range []string{"true", "false"} {
		for _, sched := range []string{schedule.Keep, schedule.PostOrder, schedule.Best} {
			t.Run(pred+"/"+sched, func(t *testing.T) {
				planEqualsReferenceUnder(t, "branch_loops.hlo", strings.ReplaceAll(branchLoopsModule, "PRED", pred), sched)
			})
		}
	}
}

// branchReadAfterCalleeLoop: c, the result of a call, is handed to a
// second call whose loop works in place on it, and afterwards to both
// branches of a conditional. Ordered with the conditional last, the loop
// has written over c's buffer before either branch starts, so a copy
// made inside a branch comes too late; the repair copies c in the entry
// where the first call returns it. Before that fix liveness gave up
// ("copies did not repair it") under the postorder and list schedulers
// and on random module 39 under the default one.
var branchReadAfterCalleeLoop = `HloModule branch_read_after_callee_loop

` + randhlo.CountedLoop("f32[64]", "y", "negate(%x)") + `
%A {
  %x = f32[64] parameter(0)
  ROOT %a = f32[64] add(%x, %x)
}

%B {
  %x = f32[64] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(%zero, %x)
  %w = (s32[], f32[64]) while(%init), condition=%cond, body=%body
  ROOT %o = f32[64] get-tuple-element(%w), index=1
}

%br1 {
  %x = f32[64] parameter(0)
  ROOT %c = f32[64] copy(%x)
}

%br2 {
  %x = f32[64] parameter(0)
  ROOT %c = f32[64] negate(%x)
}

ENTRY %e {
  %p = f32[64] parameter(0)
  %c = f32[64] call(%p), to_apply=%A
  %d = f32[64] call(%c), to_apply=%B
  %pr = pred[] constant(false)
  %k = f32[64] conditional(%pr, %c, %c), true_computation=%br1, false_computation=%br2
  ROOT %r = (f32[64], f32[64]) tuple(%d, %k)
}
`

// TestBranchReadAfterCalleeLoop: branchReadAfterCalleeLoop plans and its
// plan computes what the module computes under every scheduler, and so
// does random module 39, where the bug was found (schedule's segment
// tests skipped modules the pipeline refused).
func TestBranchReadAfterCalleeLoop(t *testing.T) {
	for _, s := range []string{"", "postorder", "list", "dfs"} {
		planEqualsReferenceUnder(t, "branch_read.hlo", branchReadAfterCalleeLoop, s)
		planEqualsReferenceUnder(t, "rand_39.hlo", randhlo.Generate(39, randhlo.Options{Instructions: 44}), s)
	}
	sched := strings.Replace(branchReadAfterCalleeLoop, "HloModule branch_read_after_callee_loop", "HloModule branch_read_after_callee_loop, is_scheduled=true", 1)
	planEqualsReference(t, "branch_read_scheduled.hlo", sched)
}

// TestUndonatedParameterNotWritten: a scheduled module whose fusion
// updates an entry parameter in place without donating it (XLA's own
// test module dynamic_update_slice_inplace.hlo has this form). The bytes
// are the caller's: the plan gives the update a copy, and the parameter's
// allocation holds the parameter alone. Before, the output was planned
// into the parameter's allocation and the caller's input overwritten.
func TestUndonatedParameterNotWritten(t *testing.T) {
	src := `HloModule undonated, is_scheduled=true
` + fusedDUS + `
ENTRY %main {
  %p = f32[256] parameter(0)
  %u = f32[16] parameter(1)
  %idx = s32[] constant(3)
  ROOT %dus = f32[256] fusion(%p, %u, %idx), kind=kLoop, calls=%fused_dus
}
`
	planEqualsReference(t, "undonated.hlo", src)
	for _, donated := range []bool{false, true} {
		text := src
		if donated {
			text = strings.Replace(src, "is_scheduled=true", "is_scheduled=true, input_output_alias={ {}: (0, {}) }", 1)
		}
		as := planText(t, text)
		var param *assign.Allocation
		for _, al := range as.Allocations {
			if al.IsParameter() && al.Parameter == 0 {
				param = al
			}
		}
		require.NotNil(t, param)
		names := []string{}
		for _, s := range param.Slots {
			names = append(names, s.Value.Inst.Name)
		}
		if donated {
			require.Contains(t, names, "dus", "donated: the update works in the parameter's bytes")
		} else {
			require.Equal(t, []string{"p"}, names, "undonated: the parameter's allocation holds it alone")
		}
	}
}
