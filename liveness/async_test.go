package liveness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/stretchr/testify/require"
)

// checkPair asserts that the module has exactly one asynchronous
// operation, start to done as named, and that every buffer it keeps in
// flight is live over the whole window.
func checkPair(t *testing.T, a *Analysis, start, done string, updates ...string) AsyncPair {
	t.Helper()
	pairs := a.AsyncPairs()
	require.Len(t, pairs, 1)
	p := pairs[0]
	require.Equal(t, start, p.Start.Name)
	require.NotNil(t, p.Done)
	require.Equal(t, done, p.Done.Name)
	var ups []string
	for _, u := range p.Updates {
		ups = append(ups, u.Name)
	}
	require.Equal(t, updates, ups)
	for _, in := range append(append([]string{start}, updates...), done) {
		q, ok := a.AsyncPairOf(a.Module.Entry.Instruction(in))
		require.True(t, ok, in)
		require.Same(t, p.Start, q.Start)
	}
	ts, td := a.Time(p.Bound), a.Time(p.Done)
	require.LessOrEqual(t, ts, td, "the done binds last in a late-binding chain at the latest")
	require.Less(t, a.Time(p.Start), td)
	for _, b := range p.InFlight() {
		r, ok := b.Range()
		require.True(t, ok)
		require.True(t, r.Start <= ts && td <= r.End, "buffer %s lives %d-%d, the operation runs %d-%d", b.Name(), r.Start, r.End, ts, td)
	}
	return p
}

func bufferNames(bs []*Buffer) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name())
	}
	return out
}

func TestAsyncAllReduce(t *testing.T) {
	a := analyze(t, `HloModule ar, is_scheduled=true
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[8] parameter(0)
  n = f32[8] negate(p)
  ars = f32[8] all-reduce-start(n), replica_groups={}, to_apply=add
  m = f32[8] negate(p)
  ard = f32[8] all-reduce-done(ars)
  ROOT r = f32[8] add(ard, m)
}`)
	// all-reduce-start writes over its operand: one buffer, chained.
	require.Equal(t, []string{"ars{}", "n{}"}, bufferOf(a, "n{}"))
	want := sorted([]string{"p{}:0-6", "n{}:1-2", "ars{}:2-5", "m{}:3-5", "r{}:5-6"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	p := checkPair(t, a, "ars", "ard")
	require.Equal(t, []string{"n{}"}, bufferNames(p.Reads))
	require.Equal(t, []string{"n{}"}, bufferNames(p.Writes))
}

func TestAsyncAllGather(t *testing.T) {
	a := analyze(t, `HloModule ag, is_scheduled=true
ENTRY e {
  p = f32[2] parameter(0)
  c = f32[2] copy(p)
  ags = (f32[2], f32[8]) all-gather-start(c), dimensions={0}, replica_groups={{0,1,2,3}}
  x = f32[2] negate(p)
  agd = f32[8] all-gather-done(ags)
  ROOT t = (f32[8], f32[2]) tuple(agd, x)
}`)
	// The operand is read until the done; the destination is written from
	// the start.
	want := sorted([]string{"p{}:0-6", "c{}:1-4", "ags{}:2-4", "ags{1}:2-6", "x{}:3-6", "t{}:5-6"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	p := checkPair(t, a, "ags", "agd")
	require.Equal(t, []string{"c{}"}, bufferNames(p.Reads))
	require.Equal(t, []string{"ags{1}"}, bufferNames(p.Writes))
}

// TestAsyncAllToAll is JAX's form of an all-to-all: an async-start running
// a computation. The computation's result is the destination: it must live
// until the async-done, not just until the async-start (the defect this
// guards against let a later buffer overwrite data still being received).
//
// The computation's result starts at the entry's start under the current
// rules (hlo_live_range.cc CalculateBufferStartEndMap), at its definition
// under Rules2025.
func TestAsyncAllToAll(t *testing.T) {
	for _, tc := range []struct {
		rules Rules
		a2a   string
	}{{"", "a2a{}:0-7"}, {Rules2025, "a2a{}:3-7"}} {
		t.Run(string(tc.rules.Effective()), func(t *testing.T) { testAsyncAllToAll(t, tc.rules, tc.a2a) })
	}
}

func testAsyncAllToAll(t *testing.T, rules Rules, a2a string) {
	a := analyzeWith(t, Options{XLARules: rules}, `HloModule a2a, is_scheduled=true
async_computation {
  ap = f32[4,8] parameter(0)
  ROOT a2a = f32[4,8] all-to-all(ap), dimensions={0}, replica_groups={{0,1,2,3}}
}
ENTRY e {
  p = f32[4,8] parameter(0)
  c = f32[4,8] copy(p)
  s = ((f32[4,8]), f32[4,8]) async-start(c), calls=async_computation
  x = f32[4,8] negate(p)
  d = f32[4,8] async-done(s)
  ROOT r = f32[4,8] add(d, x)
}`)
	var seq []string
	for _, in := range a.Sequence {
		seq = append(seq, in.Name)
	}
	require.Equal(t, []string{"p", "c", "ap", "a2a", "s", "x", "d", "r"}, seq, "the async computation runs before its start")
	want := sorted([]string{"p{}:0-8", "c{}:1-6", a2a, "s{}:4-6", "s{0}:4-6", "x{}:5-7", "r{}:7-8"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	e := a.Module.Entry
	require.Same(t, a.ValueAt(a.Module.Computation("async_computation").Root, nil), a.ValueAt(e.Instruction("s"), []int64{1}),
		"async-start forwards its computation's result")
	require.Same(t, a.ValueAt(e.Instruction("c"), nil), a.ValueAt(e.Instruction("s"), []int64{0, 0}), "and its operand")
	p := checkPair(t, a, "s", "d")
	require.Equal(t, "async_computation", p.Computation.Name)
	require.Equal(t, []string{"c{}"}, bufferNames(p.Reads))
	require.Equal(t, []string{"a2a{}"}, bufferNames(p.Writes))
}

func TestAsyncCollectivePermute(t *testing.T) {
	a := analyze(t, `HloModule cp, is_scheduled=true
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] copy(p)
  cps = (f32[4], f32[4]) collective-permute-start(c), source_target_pairs={{0,1},{1,0}}
  x = f32[4] negate(p)
  cpd = f32[4] collective-permute-done(cps)
  ROOT r = f32[4] add(cpd, x)
}`)
	want := sorted([]string{"p{}:0-6", "c{}:1-4", "cps{}:2-4", "cps{1}:2-5", "x{}:3-5", "r{}:5-6"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	p := checkPair(t, a, "cps", "cpd")
	require.Equal(t, []string{"c{}"}, bufferNames(p.Reads))
	require.Equal(t, []string{"cps{1}"}, bufferNames(p.Writes))
}

// TestAsyncStartUpdateDone: a generic async operation with an update; the
// start's context element passes through the update to the done.
// The custom-call's result starts at the entry's start under the current
// rules, at its definition under Rules2025 (as in TestAsyncAllToAll).
func TestAsyncStartUpdateDone(t *testing.T) {
	for _, tc := range []struct {
		rules Rules
		cc    string
	}{{"", "cc{}:0-8"}, {Rules2025, "cc{}:3-8"}} {
		t.Run(string(tc.rules.Effective()), func(t *testing.T) { testAsyncStartUpdateDone(t, tc.rules, tc.cc) })
	}
}

func testAsyncStartUpdateDone(t *testing.T, rules Rules, cc string) {
	a := analyzeWith(t, Options{XLARules: rules}, `HloModule au, is_scheduled=true
async_computation {
  ap = f32[4] parameter(0)
  ROOT cc = f32[4] custom-call(ap), custom_call_target="foo"
}
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] copy(p)
  s = ((f32[4]), f32[4], s32[]) async-start(c), calls=async_computation
  u = ((f32[4]), f32[4], s32[]) async-update(s)
  x = f32[4] negate(p)
  d = f32[4] async-done(u)
  ROOT r = f32[4] add(d, x)
}`)
	want := sorted([]string{"p{}:0-9", "c{}:1-7", cc, "s{}:4-5", "s{0}:4-5", "s{2}:4-7",
		"u{}:5-7", "u{0}:5-7", "x{}:6-8", "r{}:8-9"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	p := checkPair(t, a, "s", "d", "u")
	require.Equal(t, []string{"c{}"}, bufferNames(p.Reads))
	require.Equal(t, []string{"cc{}", "s{2}"}, bufferNames(p.Writes))
}

func TestAsyncCopy(t *testing.T) {
	a := analyze(t, `HloModule cs, is_scheduled=true
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] negate(p)
  cs = (f32[4], f32[4], u32[]) copy-start(c)
  x = f32[4] negate(p)
  cd = f32[4] copy-done(cs)
  ROOT r = f32[4] add(cd, x)
}`)
	want := sorted([]string{"p{}:0-6", "c{}:1-4", "cs{}:2-4", "cs{0}:2-5", "cs{2}:2-4", "x{}:3-5", "r{}:5-6"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	p := checkPair(t, a, "cs", "cd")
	require.Equal(t, []string{"c{}"}, bufferNames(p.Reads))
	require.Equal(t, []string{"cs{0}", "cs{2}"}, bufferNames(p.Writes))
}

// TestAsyncPairsCorpus: every asynchronous operation in every module of
// the corpus has its done, and everything it keeps in flight is live from
// its start to its done.
func TestAsyncPairsCorpus(t *testing.T) {
	pairs, kinds := 0, map[string]int{}
	corpusmod.ForModules(t, []string{"paired*/*/*after_optimizations.txt", "hlo/*/*.hlo"}, func(t *testing.T, f string, m *hlo.Module) {
		if hlo.Verify(m) != nil {
			return
		}
		_, err := hlo.FlattenCallGraph(m)
		require.NoError(t, err, "%s", f)
		var a *Analysis
		if m.IsScheduled {
			a, err = Analyze(m, Options{})
		} else {
			a, _, err = AnalyzeInsertingCopies(m)
		}
		require.NoError(t, err, "%s", f)
		for _, p := range a.AsyncPairs() {
			pairs++
			kinds[p.Start.Opcode.String()]++
			require.NotNil(t, p.Done, "%s: %s has no done", f, p.Start.Name)
			ts, td := a.Time(p.Bound), a.Time(p.Done)
			for _, b := range p.InFlight() {
				r, ok := b.Range()
				require.True(t, ok && r.Start <= ts && r.End >= td, "%s: %s..%s (%d-%d) keeps %s in flight, live %v", f, p.Start.Name, p.Done.Name, ts, td, b.Name(), r)
			}
		}
	})
	t.Logf("%d asynchronous operations: %v", pairs, kinds)
	require.GreaterOrEqual(t, pairs, corpus.Enough(41, 1))
}
