package pack

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var smallShapes = []genOptions{
	{n: 12, steps: 10, maxLen: 5, maxSz: 8},
	{n: 40, steps: 30, maxLen: 10, maxSz: 100, align: true},
	{n: 40, steps: 30, maxLen: 10, maxSz: 100, colors: 3, groups: 0.3},
	{n: 60, steps: 40, maxLen: 12, maxSz: 50, groups: 0.2, fixed: 0.2, align: true},
	{n: 30, steps: 20, maxLen: 6, maxSz: 20, empty: true, groups: 0.2},
	{n: 200, steps: 100, maxLen: 30, maxSz: 1000, colors: 2, groups: 0.1, fixed: 0.05},
}

// TestPackersRandom runs every packer on random problems with every feature
// (alignment, colors, groups, fixed offsets, empty buffers) and checks each
// packing, its reported heights and the relations between packers.
func TestPackersRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	iters := 30
	if testing.Short() {
		iters = 5
	}
	ctx := context.Background()
	for _, shape := range smallShapes {
		for it := 0; it < iters; it++ {
			p := randomProblem(rng, shape)
			heaps := map[string][]Heap{}
			for _, algo := range Algorithms() {
				sol, err := Pack(ctx, p, Options{Algorithm: algo, Budget: 50 * time.Millisecond})
				if errors.Is(err, errFixedSkyline) {
					continue // skyline descents cannot always work around fixed items
				}
				require.NoError(t, err, "%s on %+v", algo, shape)
				checkSolution(t, p, sol, algo)
				heaps[algo] = sol.Heaps
			}
			// Colors are packed on their own, so the relations hold per heap.
			for k := range heaps["portfolio"] {
				h := func(algo string) int64 { return heaps[algo][k].Height }
				for _, v := range allVariants() {
					require.LessOrEqual(t, h("portfolio"), h(v.name), "portfolio height %d above %s %d", h("portfolio"), v.name, h(v.name))
				}
				want := min(h("bestfit-size"), h("bestfit-lifetime"))
				require.Equal(t, want, h("xla"), "xla height %d, want the better of bestfit-size and bestfit-lifetime, %d", h("xla"), want)
				for _, a := range []string{"auto", "exact"} {
					require.LessOrEqual(t, h(a), h("portfolio"), "%s height %d above the portfolio's %d", a, h(a), h("portfolio"))
				}
			}
		}
	}
}

// TestExactOptimalSmall compares the minimising exact search with brute
// force on tiny problems: it must reach the optimum and say so.
func TestExactOptimalSmall(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for it := 0; it < 200; it++ {
		p := randomSmallProblem(rng, 2+rng.Intn(6))
		opt := bruteOptimum(p)
		sol, err := Pack(context.Background(), p, Options{Algorithm: "exact"})
		require.NoError(t, err)
		checkSolution(t, p, sol, "exact")
		require.True(t, sol.Height() == opt && sol.Optimal(), "problem %d: exact height %d (optimal %v), brute force %d: %+v", it, sol.Height(), sol.Optimal(), opt, p.Buffers)
	}
}

func TestPackCapacity(t *testing.T) {
	p := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 4},
		{ID: "b", Start: 1, End: 3, Size: 2},
		{ID: "c", Start: 3, End: 6, Size: 2},
		{ID: "d", Start: 4, End: 8, Size: 4},
	}}
	sol, err := Pack(context.Background(), p, Options{Capacity: 6})
	require.NoError(t, err)
	checkSolution(t, p, sol, "capacity 6")
	require.Equal(t, int64(6), sol.Height(), "height %d, want 6", sol.Height())
	sol, err = Pack(context.Background(), p, Options{Capacity: 5})
	var ce *CapacityError
	require.True(t, errors.As(err, &ce) && errors.Is(err, ErrCapacity), "capacity 5: got error %v, want a *CapacityError", err)
	require.True(t, ce.Need == 6 && ce.Limit == 5 && ce.Color == 0, "got %+v, want need 6, limit 5, color 0", *ce)
	require.NotNil(t, sol, "capacity 5: no packing returned with the error")
	checkSolution(t, p, sol, "capacity 5")
	require.Equal(t, "pack: capacity exceeded: color 0 needs 6 bytes, capacity 5 (1 bytes, 20.00% over)", ce.Error())
}

func TestPackErrors(t *testing.T) {
	ctx := context.Background()
	p := &Problem{Buffers: []Buffer{{ID: "a", Start: 0, End: 1, Size: 1}}}
	_, err := Pack(ctx, p, Options{Algorithm: "nope"})
	require.ErrorIs(t, err, ErrUnknownAlgorithm, "unknown algorithm")
	bad := &Problem{Buffers: []Buffer{{ID: "a", Start: 2, End: 1, Size: 1}}}
	_, err = Pack(ctx, bad, Options{})
	require.ErrorIs(t, err, ErrInvalid, "invalid problem")
	clash := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 10, Size: 4, Fixed: true},
		{ID: "b", Start: 5, End: 15, Size: 4, Fixed: true, Offset: 2},
	}}
	_, err = Pack(ctx, clash, Options{})
	var ie *InvalidError
	require.ErrorAs(t, err, &ie, "fixed clash")
	require.Equal(t, `buffers "a" and "b" are fixed at overlapping offsets while both live`, ie.Msg, "fixed clash: got %v", err)
}

// TestPackCancel checks that a context cancelled during the exact search
// stops it and still returns the best packing found (the greedy warm
// start at least), and that one cancelled before any packing is complete
// returns its error rather than run the greedy packers to their end.
func TestPackCancel(t *testing.T) {
	p := traceProblem(1, 3000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Pack(ctx, p, Options{Algorithm: "exact", Budget: time.Hour})
	require.ErrorIs(t, err, context.Canceled)

	// Cancelled once the search is under way: the hour's budget is not
	// spent, and the packing is valid.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	time.AfterFunc(200*time.Millisecond, cancel)
	sol, err := Pack(ctx, p, Options{Algorithm: "exact", Budget: time.Hour})
	if errors.Is(err, context.Canceled) {
		t.Skip("the greedy warm start took longer than 200 ms on this machine")
	}
	require.NoError(t, err)
	checkSolution(t, p, sol, "cancelled exact")
	require.Less(t, time.Since(start), 10*time.Minute, "a cancelled search ran on")
}

// TestPackBudget checks that the budget bounds the exact search.
func TestPackBudget(t *testing.T) {
	p := traceProblem(2, 3000)
	start := time.Now()
	sol, err := Pack(context.Background(), p, Options{Algorithm: "exact", Budget: 200 * time.Millisecond})
	require.NoError(t, err)
	checkSolution(t, p, sol, "budgeted exact")
	el := time.Since(start)
	require.False(t, el > 10*time.Second && !raceEnabled, "a 200ms budget took %v", el)
}

// TestPackDeterministic checks that the parallel portfolio gives the same
// offsets run after run.
func TestPackDeterministic(t *testing.T) {
	p := traceProblem(3, 5000)
	var first []int64
	for run := 0; run < 3; run++ {
		sol, err := Pack(context.Background(), p, Options{Algorithm: "portfolio", Workers: 4})
		require.NoError(t, err)
		if first == nil {
			first = sol.Offsets
			continue
		}
		require.True(t, slices.Equal(first, sol.Offsets), "run %d gave different offsets", run)
	}
}

func TestEmptyProblem(t *testing.T) {
	for _, algo := range Algorithms() {
		sol, err := Pack(context.Background(), &Problem{}, Options{Algorithm: algo})
		require.NoError(t, err, "%s", algo)
		require.True(t, sol.Height() == 0 && len(sol.Offsets) == 0 && len(sol.Heaps) == 0, "%s: %+v", algo, sol)
	}
}
