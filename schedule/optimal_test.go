package schedule

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
)

// randomDAG returns the text of a module whose entry is a random DAG of n
// instructions (parameters included) over f32 vectors of several sizes:
// element-wise ops, slices that shrink, concatenations that grow, tuples
// with get-tuple-element, dynamic-update-slice (in place) and bitcasts;
// the root is a tuple of what nothing else reads. The same seed always
// gives the same module.
func randomDAG(seed uint64, n int) string { return randomDAGWith(seed, n, false) }

// randomDAGWith is randomDAG; with smallOut, each value nothing reads is
// sliced to 4 elements before the root takes it, so that the outputs
// weigh little and the order decides the peak (the benchmarks' shape).
func randomDAGWith(seed uint64, n int, smallOut bool) string {
	rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1))
	type val struct {
		name string
		size int
	}
	var vals []val
	bySize := map[int][]val{} // looked up by key only
	used := map[string]bool{}
	var lines []string
	sizes := []int{4, 16, 64, 256}
	np := 1 + rng.IntN(3)
	for i := 0; i < np; i++ {
		v := val{fmt.Sprintf("p%d", i), sizes[rng.IntN(len(sizes))]}
		lines = append(lines, fmt.Sprintf("  %s = f32[%d] parameter(%d)", v.name, v.size, i))
		vals = append(vals, v)
		bySize[v.size] = append(bySize[v.size], v)
	}
	needIdx := false
	for i := np; i < n; i++ {
		name := fmt.Sprintf("v%d", i)
		x := vals[rng.IntN(len(vals))]
		// A second operand of the same size, when there is one.
		same := bySize[x.size]
		y := same[rng.IntN(len(same))]
		var line string
		size := x.size
		switch r := rng.IntN(100); {
		case r < 25:
			op := []string{"negate", "exponential", "sqrt"}[rng.IntN(3)]
			line = fmt.Sprintf("f32[%d] %s(%s)", size, op, x.name)
			used[x.name] = true
		case r < 50:
			op := []string{"add", "multiply", "maximum"}[rng.IntN(3)]
			line = fmt.Sprintf("f32[%d] %s(%s, %s)", size, op, x.name, y.name)
			used[x.name], used[y.name] = true, true
		case r < 62 && x.size > 4:
			size = x.size / 4
			line = fmt.Sprintf("f32[%d] slice(%s), slice={[0:%d]}", size, x.name, size)
			used[x.name] = true
		case r < 74:
			size = x.size + y.size
			line = fmt.Sprintf("f32[%d] concatenate(%s, %s), dimensions={0}", size, x.name, y.name)
			used[x.name], used[y.name] = true, true
		case r < 84:
			// An update no larger than the operand, written in place.
			// A few draws for an update no larger than x (a scan of every
			// value would make large DAGs quadratic to generate).
			var u val
			for k := 0; k < 8 && u.name == ""; k++ {
				if v := vals[rng.IntN(len(vals))]; v.size <= x.size && v.name != x.name {
					u = v
				}
			}
			if u.name == "" {
				line = fmt.Sprintf("f32[%d] negate(%s)", size, x.name)
				used[x.name] = true
				break
			}
			line = fmt.Sprintf("f32[%d] dynamic-update-slice(%s, %s, idx)", size, x.name, u.name)
			used[x.name], used[u.name] = true, true
			needIdx = true
		case r < 92:
			t := name + "t"
			lines = append(lines, fmt.Sprintf("  %s = (f32[%d], f32[%d]) tuple(%s, %s)", t, x.size, y.size, x.name, y.name))
			k := rng.IntN(2)
			size = []int{x.size, y.size}[k]
			line = fmt.Sprintf("f32[%d] get-tuple-element(%s), index=%d", size, t, k)
			used[x.name], used[y.name] = true, true
		default:
			line = fmt.Sprintf("f32[%d] bitcast(%s)", size, x.name)
			used[x.name] = true
		}
		lines = append(lines, fmt.Sprintf("  %s = %s", name, line))
		vals = append(vals, val{name, size})
		bySize[size] = append(bySize[size], val{name, size})
	}
	var sinks, shapes []string
	for _, v := range vals {
		if !used[v.name] {
			if smallOut && v.size > 4 {
				lines = append(lines, fmt.Sprintf("  %s.out = f32[4] slice(%s), slice={[0:4]}", v.name, v.name))
				v = val{v.name + ".out", 4}
			}
			sinks = append(sinks, v.name)
			shapes = append(shapes, fmt.Sprintf("f32[%d]", v.size))
		}
	}
	lines = append(lines, fmt.Sprintf("  ROOT out = (%s) tuple(%s)", strings.Join(shapes, ", "), strings.Join(sinks, ", ")))
	if needIdx {
		lines = append([]string{"  idx = s32[] constant(0)"}, lines...)
	}
	return fmt.Sprintf("HloModule dag_%d\n\nENTRY main {\n%s\n}\n", seed, strings.Join(lines, "\n"))
}

// forEachOrder calls f with every topological order of c (operands and
// control predecessors first), up to limit orders; it reports whether it
// saw them all.
func forEachOrder(c *hlo.Computation, limit int, f func([]*hlo.Instruction)) bool {
	ix := hlo.NewInstructionIndex(c)
	n := len(c.Instructions)
	deps := make([]int, n)
	for i, in := range c.Instructions {
		deps[i] = len(randhlo.Distinct(in.Operands)) + len(in.ControlPredecessors())
	}
	order := make([]*hlo.Instruction, 0, n)
	done := make([]bool, n)
	count := 0
	var rec func() bool
	rec = func() bool {
		if len(order) == n {
			count++
			f(order)
			return count < limit
		}
		for i, in := range c.Instructions {
			if done[i] || deps[i] != 0 {
				continue
			}
			done[i] = true
			order = append(order, in)
			for _, u := range randhlo.Distinct(in.Users) {
				if k := ix.Of(u); k >= 0 {
					deps[k]--
				}
			}
			for _, u := range in.ControlSuccessors() {
				deps[ix.Of(u)]--
			}
			more := rec()
			for _, u := range in.ControlSuccessors() {
				deps[ix.Of(u)]++
			}
			for _, u := range randhlo.Distinct(in.Users) {
				if k := ix.Of(u); k >= 0 {
					deps[k]++
				}
			}
			order = order[:len(order)-1]
			done[i] = false
			if !more {
				return false
			}
		}
		return true
	}
	return rec()
}

// TestOptimalAgainstBruteForce: on random DAGs of up to 12 instructions,
// Optimal's lower bound is the least LowerBound over every topological
// order of the entry that needs no further copies, and it says it is
// proven; Search is never below it nor above the heuristics.
func TestOptimalAgainstBruteForce(t *testing.T) {
	seeds := 180
	if testing.Short() {
		seeds = 45
	}
	checked, _ := optimalAgainstBruteForce(t, seeds, true)
	require.Greater(t, checked, seeds/2)
}

// optimalAgainstBruteForce checks Optimal and Search on seeds random DAGs
// against every order. Optimal's figure is the least order's whenever it
// says it is proven, and it must say so on each when mustProve. It
// returns the DAGs checked and how many were proven.
func optimalAgainstBruteForce(t *testing.T, seeds int, mustProve bool) (checked, proven int) {
	t.Helper()
	sizes := map[int]int{}
	needs := 0
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		n := 4 + int(seed%9) // 4..12 instructions before copies
		src := randomDAG(seed, n)
		m, err := hlo.ParseModule("dag.hlo", src)
		require.NoError(t, err, src)
		require.NoError(t, hlo.Verify(m), src)
		a, _, err := liveness.AnalyzeInsertingCopies(m)
		require.NoError(t, err, src)
		entry := m.Entry
		if len(entry.Instructions) > 13 {
			continue
		}
		// Brute force: every order, laid out and bounded.
		best := int64(-1)
		var bestOrder []*hlo.Instruction
		all := forEachOrder(entry, 2_000_000, func(order []*hlo.Instruction) {
			s := liveness.NewSchedule("brute")
			s.Set(entry, order)
			require.NoError(t, a.Reschedule(s))
			if len(a.Interference()) > 0 {
				return // needs copies of its own: outside the space
			}
			if lb := a.LowerBound(nil).Bytes; best < 0 || lb < best {
				best, bestOrder = lb, append([]*hlo.Instruction(nil), order...)
			}
		})
		require.True(t, all, "seed %d: too many orders", seed)
		sizes[len(entry.Instructions)]++
		if best < 0 {
			continue // every order needs copies
		}
		r, err := RunOptimal(context.Background(), a, Options{})
		require.NoError(t, err, src)
		require.NoError(t, hlo.Verify(m))
		require.NoError(t, r.Schedule.Validate(m, a.Kinds))
		checkSchedule(t, a, r.Schedule)
		if r.NeedsCopies {
			// A heuristic order with copies of its own: the pipeline adds
			// them and searches again, on another module than the one the
			// brute force above enumerates.
			needs++
			continue
		}
		require.Empty(t, a.Interference(), "seed %d: optimal's order needs copies", seed)
		require.Equal(t, r.LowerBound, a.LowerBound(nil).Bytes)
		if mustProve {
			require.True(t, r.Proven, "seed %d: not proven: %s\n%s", seed, r.Why, src)
		}
		if r.Proven {
			require.Equal(t, best, r.LowerBound, "seed %d: optimal %d, brute force %d (order %v)\n%s", seed, r.LowerBound, best, names(bestOrder), src)
			proven++
		} else {
			require.GreaterOrEqual(t, r.LowerBound, best, "seed %d", seed)
		}

		rs, err := RunSearch(context.Background(), a, Options{})
		require.NoError(t, err)
		require.GreaterOrEqual(t, rs.LowerBound, best, "seed %d", seed)
		require.LessOrEqual(t, rs.LowerBound, rs.Start, "seed %d", seed)
		checked++
	}
	t.Logf("%d DAGs checked against every order (instructions: %v; %d kept a heuristic order with copies)", checked, sizes, needs)
	return checked, proven
}

// TestOptimalNeverBeaten: on random DAGs of 14 to 29 instructions (too
// many orders to enumerate), whenever Optimal says it is proven, neither
// Search started from its order nor any of a few hundred random orders
// that need no copies does better; and it is never above Search's own
// result from the heuristics.
func TestOptimalNeverBeaten(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 40
	}
	proven := 0
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		src := randomDAG(seed, 14+int(seed%16))
		m, err := hlo.ParseModule("dag.hlo", src)
		require.NoError(t, err)
		a, _, err := liveness.AnalyzeInsertingCopies(m)
		require.NoError(t, err)
		rs, err := RunSearch(context.Background(), a, Options{})
		require.NoError(t, err)
		r, err := RunOptimal(context.Background(), a, Options{})
		require.NoError(t, err)
		require.NoError(t, r.Schedule.Validate(m, a.Kinds))
		if r.NeedsCopies || rs.NeedsCopies {
			continue
		}
		require.LessOrEqual(t, r.LowerBound, rs.LowerBound, "seed %d", seed)
		if !r.Proven {
			continue
		}
		proven++
		opt := r.LowerBound
		again, err := RunSearch(context.Background(), a, Options{}) // starts from optimal's order
		require.NoError(t, err)
		require.Equal(t, opt, again.LowerBound, "seed %d: search beat a proven optimum\n%s", seed, src)
		rng := rand.New(rand.NewPCG(seed, 11))
		for k := 0; k < 200; k++ {
			s := liveness.NewSchedule("random")
			s.Set(m.Entry, randhlo.Order(m.Entry, rng))
			require.NoError(t, a.Reschedule(s))
			if len(a.Interference()) > 0 {
				continue
			}
			require.GreaterOrEqual(t, a.LowerBound(nil).Bytes, opt, "seed %d: a random order beat a proven optimum\n%s", seed, src)
		}
	}
	require.Greater(t, proven, seeds*9/10)
	t.Logf("%d of %d DAGs proven and never beaten", proven, seeds)
}

// TestOptimalNeverBeatenWithCalls: the same on random modules with calls,
// loops and conditionals (randhlo), where Optimal searches every
// computation, callees first: no random order of every computation beats
// a proven optimum.
func TestOptimalNeverBeatenWithCalls(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 30
	}
	proven := 0
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		src := randhlo.Generate(seed, randhlo.Options{Instructions: 4 + int(seed%14)})
		m, err := hlo.ParseModule("rand.hlo", src)
		require.NoError(t, err)
		_, err = hlo.FlattenCallGraph(m)
		require.NoError(t, err)
		a, _, err := liveness.AnalyzeInsertingCopies(m)
		require.NoError(t, err)
		r, err := RunOptimal(context.Background(), a, Options{})
		require.NoError(t, err)
		require.NoError(t, hlo.Verify(m))
		require.NoError(t, r.Schedule.Validate(m, a.Kinds))
		if r.NeedsCopies || !r.Proven {
			continue
		}
		proven++
		opt := r.LowerBound
		rng := rand.New(rand.NewPCG(seed, 13))
		for k := 0; k < 300; k++ {
			s := randomSchedule(a, rng)
			require.NoError(t, a.Reschedule(s))
			if len(a.Interference()) > 0 {
				continue
			}
			require.GreaterOrEqual(t, a.LowerBound(nil).Bytes, opt, "seed %d: a random order beat a proven optimum\n%s", seed, src)
		}
	}
	require.Greater(t, proven, seeds/2)
	t.Logf("%d of %d modules proven and never beaten", proven, seeds)
}

// TestExactRulesKeepTheOptimum: the rules that only prune (the static and
// state bounds; inert, free and source blocks run first or last) never
// change the optimum the exact search finds: on every computation of
// random DAGs and random modules with calls, loops and conditionals, the
// search with them and without them ends at the same figure.
func TestExactRulesKeepTheOptimum(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	compared := 0
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		srcs := []string{randomDAG(seed, 8+int(seed%12)), randhlo.Generate(seed, randhlo.Options{Instructions: 4 + int(seed%20)})}
		for _, src := range srcs {
			m, err := hlo.ParseModule("m.hlo", src)
			require.NoError(t, err)
			_, err = hlo.FlattenCallGraph(m)
			require.NoError(t, err)
			a, _, err := liveness.AnalyzeInsertingCopies(m)
			require.NoError(t, err)
			res := &SearchResult{}
			inc, _, _, err := warmStart(a, res)
			require.NoError(t, err)
			if inc == nil {
				continue
			}
			tl := a.Layout(inc)
			a.Install(inc, tl)
			steps := stepBytes(a.LowerBoundCurve(nil, nil))
			em := a.Events()
			for _, c := range sequentialComputations(m, a.Kinds) {
				n := len(inc.Sequence(c))
				if n == 0 || n > 30 || tl.Spans[c.ID].Start < 0 {
					continue
				}
				s, ok := newSegment(a, em, tl, inc, steps, c, 0, n)
				if !ok {
					continue
				}
				ctx := context.Background()
				fast := s.solve(ctx, identity(n), exactOptions{Bound: true})
				plain := s.solve(ctx, identity(n), exactOptions{plain: true, Budget: 3_000_000})
				if !plain.Exhausted {
					continue
				}
				require.True(t, fast.Exhausted)
				require.Equal(t, plain.Cost, fast.Cost, "seed %d: %s\n%s", seed, c.Name, src)
				require.Equal(t, fast.Cost, s.evaluate(fast.Order, nil))
				compared++
			}
		}
	}
	require.Greater(t, compared, seeds)
	t.Logf("%d computations compared", compared)
}
