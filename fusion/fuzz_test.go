package fusion_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/schedule"
)

// Flags of a FuzzFusion case.
const (
	fuzzGuard         = 1 << iota // the guard, with the pipeline's measure; else NoGuard
	fuzzNoMultiOutput             // fusion.Options.NoMultiOutput
	fuzzTightBounds               // MaxOperands 3, MaxInstructions 4
	fuzzScheduled                 // randhlo's module is_scheduled=true
)

// FuzzFusion: random modules (randhlo's element-wise chains, broadcasts,
// reductions, tuples, in-place updates, calls, while loops, conditionals,
// control dependencies), fused by fusion.Run with the guard (the
// pipeline's measure, compile.FusionMeasure) or without it, and within
// tight bounds or not: the fused module verifies, prints as a fixed point
// of parse and print, is left as it was when Run reports no change, keeps
// the guard's lower bound from rising when guarded, and computes, run
// without a plan on random arguments, bit for bit what the unfused module
// computes.
func FuzzFusion(f *testing.F) {
	for seed := uint64(1); seed <= 8; seed++ {
		f.Add(seed, uint8(3+5*seed), uint8(seed%16), seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64, size, flags uint8, argSeed uint64) {
		fuseRandomCase(t, seed, size, flags, argSeed)
	})
}

// fuseRandomCase checks fusion on the random module of seed (about size
// entry instructions) under flags, on arguments drawn from argSeed. It
// checks nothing when the pipeline refuses the unfused module (liveness
// refuses some scheduled ones): there is nothing to compare with.
func fuseRandomCase(t *testing.T, seed uint64, size, flags uint8, argSeed uint64) {
	t.Helper()
	src := randhlo.Generate(seed, randhlo.Options{Instructions: 4 + int(size%48), Scheduled: flags&fuzzScheduled != 0})
	name := fmt.Sprintf("rand_%d.hlo", seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	unfused, err := hlo.ParseModule(name, src)
	require.NoError(t, err, src)
	want, err := referenceOutputs(ctx, t, unfused.Clone(), argSeed, src)
	if err != nil {
		t.Logf("the pipeline refuses the unfused module: %v", err)
		return
	}

	m, err := hlo.ParseModule(name, src)
	require.NoError(t, err, src)
	measure := compile.FusionMeasure(ctx, compile.Options{Search: fuzzSearch})
	opts := fusion.Options{NoGuard: true, NoMultiOutput: flags&fuzzNoMultiOutput != 0}
	if flags&fuzzGuard != 0 {
		// The guard bisects with a probe under the heuristic scheduler, as
		// the pipeline's does when it searches.
		opts.NoGuard, opts.Measure = false, measure
		opts.Probe = compile.FusionMeasure(ctx, compile.Options{Scheduler: schedule.Heuristic})
	}
	if flags&fuzzTightBounds != 0 {
		opts.MaxOperands, opts.MaxInstructions = 3, 4
	}
	changed, err := fusion.Run(ctx, m, opts)
	require.NoError(t, err, src)
	text := m.String()
	if !changed {
		require.Equal(t, unfused.String(), text, "Run reported no change but changed the module\n%s", src)
	}
	require.NoError(t, hlo.Verify(m), "%s\nunfused:\n%s", text, src)

	// The fused text is a fixed point of parse and print.
	again, err := hlo.ParseModule(name, text)
	require.NoError(t, err, "the fused module does not parse\n%s\nunfused:\n%s", text, src)
	require.NoError(t, hlo.Verify(again), "%s\nunfused:\n%s", text, src)
	require.Equal(t, text, again.String(), "the fused module does not print as it parsed\nunfused:\n%s", src)

	if !opts.NoGuard {
		before, err := measure(ctx, unfused.Clone())
		require.NoError(t, err, src)
		after, err := measure(ctx, m.Clone())
		require.NoError(t, err, "%s\nunfused:\n%s", text, src)
		require.LessOrEqual(t, after.LowerBound, before.LowerBound, "the guard let the lower bound rise\n%s\nunfused:\n%s", text, src)
	}

	got, err := referenceOutputs(ctx, t, m, argSeed, text)
	require.NoError(t, err, "the pipeline refuses the fused module but not the unfused one\n%s\nunfused:\n%s", text, src)
	require.Len(t, got, len(want), "%s\nunfused:\n%s", text, src)
	for i := range want {
		require.Equal(t, want[i].Shape.StringNoLayout(), got[i].Shape.StringNoLayout(), "output %d\n%s\nunfused:\n%s", i, text, src)
		require.True(t, bytes.Equal(want[i].Data, got[i].Data), "output %d: the fused module computes other bits than the unfused one\n%s\nunfused:\n%s", i, text, src)
	}
}

// fuzzSearch bounds the schedule search of FuzzFusion's plans and
// measures: a random module searched with the default budget can take
// seconds under the fuzzer's instrumentation, which reports it as a hung
// worker; a small budget keeps every input fast and the outcome the same
// on any machine.
var fuzzSearch = schedule.Options{Budget: 2000}

// referenceOutputs plans m (changing it) and runs it without a plan on
// arguments drawn from argSeed for m's entry parameters; the error is the
// pipeline's when it refuses m.
func referenceOutputs(ctx context.Context, t *testing.T, m *hlo.Module, argSeed uint64, src string) ([]eval.Literal, error) {
	t.Helper()
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(argSeed, 0)))
	r, err := compile.Compile(ctx, m, compile.Options{Assign: assign.Options{Algorithm: "xla"}, Search: fuzzSearch})
	if err != nil {
		return nil, err
	}
	res, err := exec.Execute(ctx, r.Assignment, args, nil, exec.Options{Reference: true})
	require.NoError(t, err, src)
	return res.Outputs, nil
}

// loopOverParameter is the smallest form of a liveness bug FuzzFusion
// found: in a scheduled module, a called computation that reads its
// parameter after a while loop whose state starts as that parameter was
// refused ("copies did not repair it": the repair handed the callee a copy,
// whose buffer the loop then worked in place on all the same). Fusion makes
// such modules: a producer read before the loop (negate(x)) is fused into
// its consumer after it, so the read of x moves after the loop. The callee
// reads x after the loop, readAfter being that read (x itself, or a
// fusion that reads x).
func loopOverParameter(readAfter string) string {
	return `HloModule loop_over_parameter, is_scheduled=true

` + randhlo.CountedLoop("f32[64]", "neg", "negate(%x)") + `
%callee {
  %x = f32[64] parameter(0)
  %negate = f32[64] negate(%x)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(%zero, %x)
  %while = (s32[], f32[64]) while(%init), condition=%cond, body=%body
  %wout = f32[64] get-tuple-element(%while), index=1
  ROOT %subtract = f32[64] subtract(` + readAfter + `, %wout)
}

ENTRY %main {
  %p = f32[64] parameter(0)
  %e = f32[64] exponential(%p)
  ROOT %c = f32[64] call(%e), to_apply=%callee
}
`
}

// TestScheduledParameterReadAfterLoop: the pipeline plans a scheduled
// module whose callee reads its parameter after a loop over it (the
// module as written, and the module fusion makes of one that reads it
// before), and the fused module computes what the unfused one does.
func TestScheduledParameterReadAfterLoop(t *testing.T) {
	ctx := context.Background()
	m, err := hlo.ParseModule("read_after.hlo", loopOverParameter("%x"))
	require.NoError(t, err)
	_, err = compile.Compile(ctx, m, compile.Options{})
	require.NoError(t, err, "the module as written")

	src := loopOverParameter("%negate")
	unfused, err := hlo.ParseModule("read_before.hlo", src)
	require.NoError(t, err)
	want, err := referenceOutputs(ctx, t, unfused, 1, src)
	require.NoError(t, err, "unfused")
	m, err = hlo.ParseModule("read_before.hlo", src)
	require.NoError(t, err)
	changed, err := fusion.Run(ctx, m, fusion.Options{NoGuard: true})
	require.NoError(t, err)
	require.True(t, changed)
	got, err := referenceOutputs(ctx, t, m, 1, m.String())
	require.NoError(t, err, "fused:\n%s", m)
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, bytes.Equal(want[i].Data, got[i].Data), "output %d", i)
	}
}
