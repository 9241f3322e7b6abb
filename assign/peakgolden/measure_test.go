package peakgolden

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/stretchr/testify/require"
)

// loopHLO carries a large array through a while loop: the loop's state,
// its body's parameter and its result are values of one buffer, which
// the line lists once.
const loopHLO = `HloModule loop

%cond (s: (s32[], f32[1024])) -> pred[] {
  %s = (s32[], f32[1024]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s.1: (s32[], f32[1024])) -> (s32[], f32[1024]) {
  %s.1 = (s32[], f32[1024]) parameter(0)
  %i.1 = s32[] get-tuple-element(%s.1), index=0
  %v = f32[1024]{0} get-tuple-element(%s.1), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  %w = f32[1024]{0} negate(%v)
  ROOT %t = (s32[], f32[1024]) tuple(%next, %w)
}

ENTRY %main (p: f32[1024]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[1024]) tuple(%zero, %p)
  %loop = (s32[], f32[1024]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[1024]{0} get-tuple-element(%loop), index=1
}
`

func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.hlo")
	require.NoError(t, os.WriteFile(a, []byte(loopHLO+"\n// -----\n\n"+tinyHLO), 0o644))
	b := filepath.Join(dir, "b.hlo")
	require.NoError(t, os.WriteFile(b, []byte(tinyHLO), 0o644))
	lines, err := Measure(context.Background(), []string{b, a}, Options{})
	require.NoError(t, err)
	require.Len(t, lines, 3)
	// Keyed by name and entry signature; two modules called m of one
	// signature are numbered in input order (b.hlo first).
	require.Equal(t, "loop", lines[0].Module)
	require.Equal(t, "loop@061994b3", lines[0].Key)
	require.Equal(t, "m@e5220d5d#1", lines[1].Key)
	require.Equal(t, b, lines[1].Source)
	require.Equal(t, "m@e5220d5d#2", lines[2].Key)
	require.Equal(t, a, lines[2].Source)
	require.Equal(t, "m", lines[2].Module)
	require.Equal(t, "e5220d5d", lines[2].Signature)

	l := lines[0]
	require.Equal(t, "search", l.Schedule, "an unscheduled module gets the best schedule (search)")
	names := map[string]bool{}
	for _, buf := range l.Top {
		require.False(t, names[buf.Name], "buffer %s listed twice", buf.Name)
		names[buf.Name] = true
	}
	require.LessOrEqual(t, len(l.Top), TopBuffers)
	require.Positive(t, l.Total)
	require.GreaterOrEqual(t, l.Total, l.LowerBound)

	// Same input, same bytes, whatever the target's alignment.
	for _, tgt := range []assign.Target{assign.GPU, assign.CPU, assign.TPU} {
		x, err := Measure(context.Background(), []string{a}, Options{Target: tgt})
		require.NoError(t, err)
		y, err := Measure(context.Background(), []string{a}, Options{Target: tgt})
		require.NoError(t, err)
		bx, err := Bytes(Options{Target: tgt}, x)
		require.NoError(t, err)
		by, err := Bytes(Options{Target: tgt}, y)
		require.NoError(t, err)
		require.Equal(t, string(bx), string(by))
	}
}

func TestMeasureRefuses(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.hlo")
	require.NoError(t, os.WriteFile(a, []byte(tinyHLO), 0o644))
	for _, algo := range []string{"auto", "exact"} {
		_, err := Measure(context.Background(), []string{a}, Options{Algorithm: algo})
		require.ErrorContains(t, err, `algorithm "`+algo+`" searches within a time budget`)
	}
	_, err := Measure(context.Background(), []string{a}, Options{Schedule: "fastest"})
	require.EqualError(t, err, `schedule: unknown scheduler "fastest" (want keep, postorder, dfs, list, heuristic, best, search or optimal)`)
	_, err = Measure(context.Background(), []string{a}, Options{Algorithm: "magic"})
	require.ErrorContains(t, err, `unknown algorithm "magic"`)

	bad := filepath.Join(dir, "bad.hlo")
	require.NoError(t, os.WriteFile(bad, []byte("HloModule bad\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] negate(%nope)\n}\n"), 0o644))
	_, err = Measure(context.Background(), []string{a, bad}, Options{})
	require.ErrorContains(t, err, bad+":4:")
}
