package cost

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tripLoop is WhileLoopAnalysisTest's MakeWhileLoopAndGetTripCount module
// (xla/service/while_loop_analysis_test.cc): s32 induction variable at
// tuple index 1, initialised to a constant, stepped by a constant and
// compared with a constant limit.
func tripLoop(init, limit, step int, dir string) string {
	return strings.NewReplacer("INIT", fmt.Sprint(init), "LIMIT", fmt.Sprint(limit),
		"STEP", fmt.Sprint(step), "DIR", dir).Replace(`HloModule ModuleWithWhile

body {
  p_body = (f32[2], s32[]) parameter(0)
  val = f32[2] get-tuple-element(p_body), index=0
  index = s32[] get-tuple-element(p_body), index=1
  one = s32[] constant(STEP)
  inc = s32[] add(index, one)
  ROOT root = (f32[2], s32[]) tuple(val, inc)
}

condition {
  p_cond = (f32[2], s32[]) parameter(0)
  gte = s32[] get-tuple-element(p_cond), index=1
  const = s32[] constant(LIMIT)
  ROOT result = pred[] compare(gte, const), direction=DIR
}

ENTRY entry {
  param.0 = f32[2] parameter(0)
  param.1 = s32[] constant(INIT)
  while_init = (f32[2], s32[]) tuple(param.0, param.1)
  ROOT while = (f32[2], s32[]) while(while_init), condition=condition, body=body
}`)
}

// calculateTripCount is the test's CalculateTripCount: the loop run.
func calculateTripCount(init, limit, step int, dir string) int64 {
	var n int64
	for i := init; (dir == "LT" && i < limit) || (dir == "LE" && i <= limit); i += step {
		n++
	}
	return n
}

// WhileLoopAnalysisTest.ExactBoundTrivialTripCount: MatchTrivialLoopTripCount
// on i < N and i <= N with steps 1, 2 and 5. The while then costs that many
// times one iteration (the s32 add and compare, one FLOP each).
func TestXLAExactBoundTrivialTripCount(t *testing.T) {
	for _, tc := range []struct {
		init, limit, step int
		dir               string
	}{{0, 42, 1, "LT"}, {0, 42, 2, "LT"}, {0, 42, 5, "LT"}, {0, 40, 5, "LT"},
		{0, 42, 1, "LE"}, {0, 42, 2, "LE"}, {0, 42, 5, "LE"}, {0, 40, 5, "LE"}} {
		m := parse(t, tripLoop(tc.init, tc.limit, tc.step, tc.dir))
		want := calculateTripCount(tc.init, tc.limit, tc.step, tc.dir)
		n, ok := TripCount(m.Entry.Root)
		require.True(t, ok, "%+v", tc)
		require.Equal(t, want, n, "%+v", tc)
		c := Module(m)
		require.False(t, c.Loop)
		require.Equal(t, 2*want, c.FLOPs, "%+v", tc)
	}
}

// A loop outside the pattern (an init that is not a constant, a bound
// that is not, a step of 0, a direction other than LT/LE) has no trip
// count and is counted once, flagged.
func TestTripCountNoPattern(t *testing.T) {
	for _, src := range []string{
		strings.Replace(tripLoop(0, 42, 1, "LT"), "param.1 = s32[] constant(0)", "param.1 = s32[] parameter(1)", 1),
		strings.Replace(tripLoop(0, 42, 1, "LT"), "const = s32[] constant(42)", "const = s32[] get-tuple-element(p_cond), index=1", 1),
		tripLoop(0, 42, 0, "LT"),
		tripLoop(0, 42, 1, "NE"),
	} {
		m := parse(t, src)
		_, ok := TripCount(m.Entry.Root)
		require.False(t, ok)
		c := Module(m)
		require.True(t, c.Loop)
		require.Equal(t, int64(2), c.FLOPs)
	}
	// N > i is i < N.
	swapped := strings.Replace(tripLoop(0, 42, 5, "LT"), "compare(gte, const), direction=LT", "compare(const, gte), direction=GT", 1)
	n, ok := TripCount(parse(t, swapped).Entry.Root)
	require.True(t, ok)
	require.Equal(t, calculateTripCount(0, 42, 5, "LT"), n)
	// An init past the bound runs no iteration.
	n, ok = TripCount(parse(t, tripLoop(50, 42, 1, "LT")).Entry.Root)
	require.True(t, ok)
	require.Zero(t, n)
}
