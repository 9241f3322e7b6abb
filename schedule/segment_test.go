package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
)

// randomBlockOrder returns a random order of the segment's blocks that
// respects its constraints.
func randomBlockOrder(s *segment, rng *rand.Rand) []int32 {
	m := len(s.blocks)
	deps := make([]int, m)
	var ready []int32
	for b := range m {
		deps[b] = len(s.preds[b])
		if deps[b] == 0 {
			ready = append(ready, int32(b))
		}
	}
	var out []int32
	for len(ready) > 0 {
		k := rng.IntN(len(ready))
		b := ready[k]
		ready[k] = ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		out = append(out, b)
		for _, u := range s.succs[b] {
			deps[u]--
			if deps[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return out
}

// checkSegmentModel builds the segment of every window given by windows
// for each sequential computation of a (laid out with its current
// schedule), evaluates random orders with the model and compares each
// step of the window with LowerBoundCurve after laying the order out.
// It returns how many orders were compared.
func checkSegmentModel(t *testing.T, a *liveness.Analysis, rng *rand.Rand, orders int, windows func(n int) [][2]int, name string) int {
	t.Helper()
	inc := a.Schedule
	em := a.Events()
	tl := a.Layout(inc)
	a.Install(inc, tl)
	curve := a.LowerBoundCurve(nil, nil)
	compared := 0
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		n := len(inc.Sequence(c))
		if tl.Spans[c.ID].Start < 0 || n == 0 {
			continue
		}
		for _, w := range windows(n) {
			s, ok := newSegment(a, em, tl, inc, stepBytes(curve), c, w[0], w[1])
			if !ok {
				continue
			}
			// The incumbent order first: the model must give its curve.
			for k := 0; k < orders; k++ {
				order := make([]int32, len(s.blocks))
				for b := range order {
					order[b] = int32(b)
				}
				if k > 0 {
					order = randomBlockOrder(s, rng)
				}
				require.Len(t, order, len(s.blocks))
				steps := make([]int64, s.T1-s.T0)
				relaxed := s.relaxed
				got := s.evaluate(order, steps)
				sched := liveness.NewSchedule("model")
				for _, d := range sequentialComputations(a.Module, a.Kinds) {
					sched.Set(d, inc.Sequence(d))
				}
				sched.Set(c, s.sequence(order))
				require.NoError(t, sched.Validate(a.Module, a.Kinds))
				tl2 := a.Layout(sched)
				a.Install(sched, tl2)
				require.Empty(t, a.Interference(), "%s: %s window %v: the order needs copies", name, c.Name, w)
				want := a.LowerBoundCurve(nil, nil)
				var worst int64
				if testing.Verbose() {
					for u := range steps {
						if want[s.T0+u].Bytes() != steps[u] && s.relaxed == relaxed {
							var names []string
							for _, b := range order {
								names = append(names, s.blocks[b].Name)
							}
							t.Logf("%s %s window %v order %v: step %d model %d want %+v", name, c.Name, w, names, s.T0+u, steps[u], want[s.T0+u])
							for _, in := range a.Sequence {
								t.Logf("  %d %s", a.Time(in), in.Name)
							}
							for _, v := range a.Values {
								if v.Scheduled {
									t.Logf("  %s %v buf %d size %d endpos %s", v.Name(), v.Range, v.Buffer.ID, v.Buffer.Size, v.EndPosition.Inst.Name)
								}
							}
							break
						}
					}
				}
				for u := range steps {
					if s.relaxed == relaxed {
						require.Equal(t, want[s.T0+u].Bytes(), steps[u], "%s: %s window %v order %d: step %d (block %d)", name, c.Name, w, k, s.T0+u, u)
					} else {
						require.LessOrEqual(t, steps[u], want[s.T0+u].Bytes(), "%s: %s: step %d", name, c.Name, s.T0+u)
					}
					worst = max(worst, want[s.T0+u].Bytes())
				}
				if s.relaxed == relaxed {
					require.Equal(t, worst, got)
				}
				a.Install(inc, tl)
				compared++
				if s.relaxed != relaxed {
					relaxedOrders++
				}
			}
		}
	}
	return compared
}

// relaxedOrders counts the orders whose evaluation used the
// end-position relaxation (for the tests' logs).
var relaxedOrders int

func wholeComputation(n int) [][2]int { return [][2]int{{0, n}} }

func someWindows(n int) [][2]int {
	out := [][2]int{{0, n}}
	for _, w := range []int{3, 8, 20} {
		if w < n {
			out = append(out, [2]int{0, w}, [2]int{n - w, n}, [2]int{(n - w) / 2, (n-w)/2 + w})
		}
	}
	return out
}

// TestSegmentModelOnRandomModules: on random modules (calls, loops,
// conditionals, in-place fusions, control dependencies), the segment
// model's figure at every step of every window, under random orders of
// the window, is LowerBoundCurve's after laying the order out.
func TestSegmentModelOnRandomModules(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 40
	}
	checkRandomSegments(t, n)
}

// checkRandomSegments runs checkSegmentModel on random modules 0..n-1
// under post-order, every one of which must prepare, and logs the orders
// compared.
func checkRandomSegments(t *testing.T, n int) {
	t.Helper()
	total := 0
	for seed := uint64(0); seed < uint64(n); seed++ {
		m, err := hlo.ParseModule("rand.hlo", randhlo.Generate(seed, randhlo.Options{Instructions: 5 + int(seed%40)}))
		require.NoError(t, err)
		a, err := prepare(m, PostOrder)
		require.NoError(t, err, "seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 3))
		total += checkSegmentModel(t, a, rng, 4, someWindows, m.Name)
	}
	t.Logf("%d orders compared, %d used the relaxation", total, relaxedOrders)
}

// TestSegmentModelRelaxed: the relaxation (a window too large for its
// precedence to be computed, where any of a value's positions that ran
// in S may be its last) is forced on the random modules' windows by
// computing no precedence at all. Every order that takes it must give a
// figure no higher than LowerBoundCurve's at every step, the others must
// still be exact, and the relaxation must actually be taken. Then, still
// relaxed, Optimal's claims on small DAGs must hold against every order.
func TestSegmentModelRelaxed(t *testing.T) {
	defer func(n int) { precedenceBlocks = n }(precedenceBlocks)
	precedenceBlocks = 0
	n := 150
	if testing.Short() {
		n = 60
	}
	relaxedOrders = 0
	checkRandomSegments(t, n)
	require.Positive(t, relaxedOrders, "no order took the relaxation: the test does not reach it")
	checked, proven := optimalAgainstBruteForce(t, 60, false)
	t.Logf("relaxed: %d DAGs checked against every order, %d proven", checked, proven)
	require.Positive(t, proven)
}

// TestSegmentModelOnCorpus: the same on the corpus modules, each
// computation whole when it has up to 300 instructions, else in windows.
func TestSegmentModelOnCorpus(t *testing.T) {
	relaxedOrders = 0
	total := 0
	corpusmod.ForModules(t, []string{"hlo/*/*.hlo"}, func(t *testing.T, f string, m *hlo.Module) {
		if m.NumInstructions() > 3000 {
			return
		}
		a, err := prepare(m, "")
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(uint64(m.NumInstructions()), 5))
		total += checkSegmentModel(t, a, rng, 3, func(n int) [][2]int {
			if n <= 300 {
				return wholeComputation(n)
			}
			return [][2]int{{0, 30}, {n/2 - 15, n/2 + 15}, {n - 30, n}}
		}, f)
	})
	t.Logf("%d orders compared, %d used the relaxation", total, relaxedOrders)
}

// stepBytes returns each step's figure of a LowerBoundCurve.
func stepBytes(curve []liveness.StepBound) []int64 {
	out := make([]int64, len(curve))
	for t, c := range curve {
		out[t] = c.Bytes()
	}
	return out
}

// chainOrderBySort is chainOrder as it was written first: every value of
// the buffer sorted, stably, by local start, the values starting in b by
// end and ID, the others by rank.
func chainOrderBySort(s *segment, sb *segBuffer, L int32) []int32 {
	sc := &s.sc
	ord := slices.Clone(sb.vals)
	slices.SortStableFunc(ord, func(x, y int32) int {
		sx, sy := sc.sl[x], sc.sl[y]
		if sx != sy {
			return int(sx - sy)
		}
		if sx >= 0 && sx < L {
			if ex, ey := sc.el[x], sc.el[y]; ex != ey {
				return int(ex - ey)
			}
			return s.vals[x].v.ID - s.vals[y].v.ID
		}
		return int(s.vals[x].rank - s.vals[y].rank)
	})
	return ord
}

// TestChainOrderMatchesSort: chainOrder, which partitions a buffer's
// values instead of sorting them, orders them as the sort did, for every
// buffer of every block after every prefix of random orders of windows
// of random modules.
func TestChainOrderMatchesSort(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 20
	}
	checked := 0
	for seed := uint64(0); seed < uint64(n); seed++ {
		m, err := hlo.ParseModule("rand.hlo", randhlo.Generate(seed, randhlo.Options{Instructions: 5 + int(seed%40)}))
		require.NoError(t, err)
		a, err := prepare(m, PostOrder)
		require.NoError(t, err, "seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 5))
		em := a.Events()
		tl := a.Layout(a.Schedule)
		steps := stepBytes(a.LowerBoundCurve(nil, nil))
		for _, c := range sequentialComputations(a.Module, a.Kinds) {
			nc := len(a.Schedule.Sequence(c))
			if tl.Spans[c.ID].Start < 0 || nc == 0 {
				continue
			}
			for _, w := range someWindows(nc) {
				s, ok := newSegment(a, em, tl, a.Schedule, steps, c, w[0], w[1])
				if !ok {
					continue
				}
				order := randomBlockOrder(s, rng)
				for i, next := range order {
					for _, b := range order[i:] {
						L := s.blen[b]
						for _, buf := range s.involved[b] {
							sb := &s.bufs[buf]
							s.localSpans(sb, b)
							require.Equal(t, chainOrderBySort(s, sb, L), slices.Clone(s.chainOrder(sb, L)), "seed %d: %s window %v block %d buffer %d", seed, c.Name, w, b, buf)
							checked++
						}
					}
					s.apply(next)
				}
				for i := len(order) - 1; i >= 0; i-- {
					s.undo(order[i])
				}
			}
		}
	}
	require.Positive(t, checked)
	t.Logf("%d chain orders compared", checked)
}
