package compile

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
	"github.com/hlomem/hlomem/tpu"
)

// preparedCorpus is what the pipeline tests run on: the hand-written
// modules and every paired dump.
var preparedCorpus = []string{"hlo/*/*.hlo", "paired*/*/*after_optimizations.txt"}

func parse(t testing.TB, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("m.hlo", src)
	require.NoError(t, err)
	return m
}

const small = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"

// withPasses runs f with Passes replaced by wrap's version of each pass,
// and restores the table.
func withPasses(t *testing.T, wrap func(Pass) Pass, f func()) {
	t.Helper()
	old := Passes
	Passes = make([]Pass, len(old))
	for i, p := range old {
		Passes[i] = wrap(p)
	}
	defer func() { Passes = old }()
	f()
}

// TestCorpusVerifyEach runs the pipeline on every corpus module with
// VerifyEach, which holds every pass to what it reports: the module
// verifies after it, a pass that says it changed nothing leaves the
// module's text as it was, and a changed module prints as a fixed point
// of parse and print. Modules over 5,000 instructions keep their order
// (the schedulers have tests of their own) and run only without -short.
func TestCorpusVerifyEach(t *testing.T) {
	n, visited := 0, 0
	corpusmod.ForModules(t, preparedCorpus, func(t *testing.T, f string, m *hlo.Module) {
		visited++
		small := m.NumInstructions() <= 5000
		opts := Options{VerifyEach: true, Assign: assign.Options{Algorithm: "xla"}}
		if !small {
			opts.Scheduler = schedule.Keep
		}
		r, err := Compile(context.Background(), m, opts)
		if err != nil {
			// Modules the analysis refuses (unknown opcodes, unsized
			// shapes) must be refused for that, not by verification.
			require.False(t, errors.Is(err, ErrInvalidAfterPass), "%s: %v", f, err)
			require.False(t, errors.Is(err, ErrPassPanicked), "%s: %v", f, err)
			return
		}
		require.NotNil(t, r.Analysis)
		require.NotNil(t, r.Assignment)
		require.Len(t, r.Analysis.Kinds, len(m.Computations))
		for i, c := range m.Computations {
			require.Equal(t, i, c.ID)
		}
		var names []string
		for _, p := range r.Passes {
			names = append(names, p.Name)
		}
		require.Equal(t, []string{"flatten-call-graph", "copy-insertion", "schedule", "assign", "check"}, names, f)
		n++
	})
	require.GreaterOrEqual(t, n, corpus.Enough(301, visited))
}

// TestPassPanicNamesPass: a panicking pass fails the pipeline with an
// error naming it, and a pass leaving the module invalid is caught by
// VerifyEach and named.
func TestPassPanicNamesPass(t *testing.T) {
	breakIn := func(name string, f func(*unit)) func(Pass) Pass {
		return func(p Pass) Pass {
			if p.Name == name {
				p.Run = func(_ context.Context, _ *planner, u *unit) (bool, error) {
					f(u)
					return true, nil
				}
			}
			return p
		}
	}
	var err error
	withPasses(t, breakIn("copy-insertion", func(*unit) { panic("boom") }), func() {
		_, err = Compile(context.Background(), parse(t, small), Options{})
	})
	require.ErrorIs(t, err, ErrPassPanicked)
	require.EqualError(t, err, "compile: pass copy-insertion: internal error: boom")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "copy-insertion", e.Pass)
	require.Equal(t, "m", e.Module)

	withPasses(t, breakIn("copy-insertion", func(u *unit) { u.Module.Entry.Root = nil }), func() {
		_, err = Compile(context.Background(), parse(t, small), Options{VerifyEach: true})
	})
	require.ErrorIs(t, err, ErrInvalidAfterPass)
	require.ErrorAs(t, err, &e)
	require.Equal(t, "copy-insertion", e.Pass)

	// liveness's own errors name the pass that failed.
	_, err = Compile(context.Background(), parse(t, small), Options{Scheduler: "magic"})
	require.ErrorIs(t, err, schedule.ErrUnknown)
	var le *liveness.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, "schedule", le.Pass)

	_, err = Compile(context.Background(), nil, Options{})
	require.ErrorIs(t, err, ErrOptions)
	_, err = Compile(context.Background(), parse(t, small), Options{Until: "nope"})
	require.ErrorIs(t, err, ErrOptions)
	_, err = Compile(context.Background(), parse(t, small), Options{Assign: assign.Options{Algorithm: "nope"}})
	require.ErrorContains(t, err, `unknown algorithm "nope"`)
}

// TestPassesFollowOptions: the options choose the passes that run, in the
// table's order, and Until stops after its pass.
func TestPassesFollowOptions(t *testing.T) {
	v5e := tpu.V5e
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"default", Options{}, []string{"flatten-call-graph", "copy-insertion", "schedule", "assign", "check"}},
		{"fused", Options{Fuse: true}, []string{"flatten-call-graph", "simplify", "cse", "dce", "fusion", "copy-insertion", "schedule", "assign", "check"}},
		{"tpu", Options{Target: assign.TPU}, []string{"flatten-call-graph", "target-layout", "copy-insertion", "schedule", "assign", "check"}},
		{"tpu fused spaces", Options{Target: assign.TPU, Generation: &v5e, Fuse: true, Spaces: &tpu.SpaceOptions{VMEM: v5e.VMEM}},
			[]string{"flatten-call-graph", "target-layout", "simplify", "cse", "dce", "fusion", "fusion-layout", "memory-spaces", "copy-insertion", "schedule", "assign", "check"}},
		{"until schedule", Options{Until: "schedule"}, []string{"flatten-call-graph", "copy-insertion", "schedule"}},
		{"until fusion", Options{Fuse: true, Until: "fusion"}, []string{"flatten-call-graph", "simplify", "cse", "dce", "fusion"}},
	} {
		var traced []string
		tc.opts.Trace = func(r PassRun) { traced = append(traced, r.Name) }
		r, err := Compile(context.Background(), parse(t, small), tc.opts)
		require.NoError(t, err, tc.name)
		var ran []string
		for _, p := range r.Passes {
			ran = append(ran, p.Name)
		}
		require.Equal(t, tc.want, ran, tc.name)
		require.Equal(t, tc.want, traced, tc.name)
		require.Equal(t, tc.opts.Until == "", r.Assignment != nil, tc.name)
	}
}

// TestPassTableNeeds: every pass's needs are made by a pass before it.
func TestPassTableNeeds(t *testing.T) {
	var made Artifact
	for _, p := range Passes {
		require.Equal(t, p.Needs, p.Needs&made, "pass %s needs what no pass before it makes", p.Name)
		made |= p.Makes
	}
}

// TestCorpusMatchesSteps: Compile up to the schedule gives the analysis of
// flattening, copy insertion (unscheduled modules), the analysis, the
// scheduler and the interference repair done one by one (keep, the
// default, list in turn), on every corpus module of up to 5,000
// instructions and the paired dumps; and it refuses what they refuse,
// with the same error.
func TestCorpusMatchesSteps(t *testing.T) {
	n, visited := 0, 0
	corpusmod.ForModules(t, preparedCorpus, func(t *testing.T, f string, m *hlo.Module) {
		if m.NumInstructions() > 5000 {
			return
		}
		visited++
		m2 := m.Clone()
		sched := []string{schedule.Keep, "", schedule.List}[n%3]
		r, err := Compile(context.Background(), m, Options{Scheduler: sched, Until: "schedule"})
		require.NoError(t, err, f)
		ctx := context.Background()
		_, err = hlo.FlattenCallGraph(m2)
		require.NoError(t, err)
		var b *liveness.Analysis
		if m2.IsScheduled {
			b, err = liveness.AnalyzeUnscheduled(ctx, m2, liveness.CheckAll)
		} else {
			b, _, err = liveness.InsertCopiesUnscheduled(ctx, m2, liveness.CheckAll)
		}
		require.NoError(t, err)
		b, _, err = schedule.Apply(ctx, b, sched, schedule.Options{})
		require.NoError(t, err, f)
		var x, y bytes.Buffer
		require.NoError(t, r.Analysis.WriteJSON(&x))
		require.NoError(t, b.WriteJSON(&y))
		require.Equal(t, y.String(), x.String(), filepath.Base(f))
		n++
	})
	require.GreaterOrEqual(t, n, corpus.Enough(41, visited))

	for _, src := range []string{
		"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, a)\n}\n",
		"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] frobnicate(p)\n}\n",
	} {
		m, err := hlo.ParseModule("bad.hlo", src)
		if err != nil {
			continue // refused by the parser already
		}
		_, err = Compile(context.Background(), m, Options{})
		require.Error(t, err, src)
		m2, _ := hlo.ParseModule("bad.hlo", src)
		_, want := hlo.FlattenCallGraph(m2)
		if want == nil {
			_, _, want = liveness.AnalyzeInsertingCopies(m2)
		}
		require.Error(t, want)
		require.EqualError(t, err, want.Error(), src)
	}
}

// TestFusionInPipeline: with Fuse, the module the later passes analyse
// and plan is the fused one: its root is the fusion, it has fewer values
// than the unfused module's analysis, and VerifyEach holds each pass.
func TestFusionInPipeline(t *testing.T) {
	const chain = `HloModule chain

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p0 = f32[64,32] parameter(0)
  p1 = f32[64,32] parameter(1)
  m = f32[64,32] multiply(p0, p1)
  c = f32[] constant(2)
  b = f32[64,32] broadcast(c), dimensions={}
  a = f32[64,32] add(m, b)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(a, z), dimensions={1}, to_apply=add
}
`
	m := parse(t, chain)
	fused, err := Compile(context.Background(), m, Options{Fuse: true, VerifyEach: true})
	require.NoError(t, err)
	require.Equal(t, hlo.OpFusion, m.Entry.Root.Opcode)
	require.Same(t, m, fused.Analysis.Module)
	unfused, err := Compile(context.Background(), parse(t, chain), Options{VerifyEach: true})
	require.NoError(t, err)
	require.Less(t, len(fused.Analysis.Values), len(unfused.Analysis.Values))
	require.LessOrEqual(t, fused.Assignment.Stats.TotalBytes, unfused.Assignment.Stats.TotalBytes)
}
