package pack

import (
	"context"
	"math/rand"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreeGaps drives the treap of free ranges with random takes and frees
// and checks it against a plain sorted list after every step: the ranges
// it holds, the longest one, and the lowest fitting offset for random
// sizes, alignments and floors.
func TestFreeGaps(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 20; round++ {
		f := newFreeGaps(0)
		var taken []span // sorted, disjoint: the model
		for step := 0; step < 400; step++ {
			if len(taken) > 0 && rng.Intn(3) == 0 {
				k := rng.Intn(len(taken))
				s := taken[k]
				require.True(t, f.free(s.lo, s.hi), "free %v", s)
				taken = append(taken[:k], taken[k+1:]...)
			} else {
				size := 1 + rng.Int63n(40)
				lo := rng.Int63n(1000)
				if modelFree(taken, lo, lo+size) {
					require.True(t, f.take(lo, lo+size), "take [%d, %d)", lo, lo+size)
					taken = insertSpan(taken, span{lo, lo + size})
				} else {
					require.False(t, f.take(lo, lo+size), "took [%d, %d), which is not free", lo, lo+size)
				}
			}
			// A range that is partly free cannot be freed.
			if len(taken) > 0 {
				s := taken[rng.Intn(len(taken))]
				if hi := s.hi + 1 + rng.Int63n(5); !modelAllTaken(taken, s.lo, hi) {
					require.False(t, f.free(s.lo, hi), "freed [%d, %d) past %v", s.lo, hi, s)
				}
			}
			require.Equal(t, modelGaps(taken), treapGaps(f, f.root, nil), "step %d", step)
			for q := 0; q < 5; q++ {
				size, align, from := 1+rng.Int63n(60), int64(1)<<rng.Intn(4), rng.Int63n(1100)
				require.Equal(t, modelLowest(taken, size, align, from), f.lowest(size, align, from),
					"lowest(%d, %d, %d) over %v", size, align, from, taken)
			}
		}
	}
}

func modelFree(taken []span, lo, hi int64) bool {
	for _, s := range taken {
		if s.lo < hi && lo < s.hi {
			return false
		}
	}
	return true
}

func modelAllTaken(taken []span, lo, hi int64) bool {
	for x := lo; x < hi; x++ {
		if modelFree(taken, x, x+1) {
			return false
		}
	}
	return true
}

func insertSpan(taken []span, s span) []span {
	k := 0
	for k < len(taken) && taken[k].lo < s.lo {
		k++
	}
	return append(taken[:k], append([]span{s}, taken[k:]...)...)
}

// modelGaps is the complement of taken in [0, gapTop), touching ranges
// taken being separate (the gaps between them are empty, so not listed).
func modelGaps(taken []span) []span {
	var gaps []span
	var at int64
	for _, s := range taken {
		if s.lo > at {
			gaps = append(gaps, span{at, s.lo})
		}
		at = s.hi
	}
	return append(gaps, span{at, gapTop})
}

func treapGaps(f *freeGaps, t int32, dst []span) []span {
	if t < 0 {
		return dst
	}
	n := f.nodes[t]
	dst = treapGaps(f, n.l, dst)
	dst = append(dst, span{n.lo, n.hi})
	return treapGaps(f, n.r, dst)
}

func modelLowest(taken []span, size, align, from int64) int64 {
	for o := alignUp(from, align); ; o += align {
		if modelFree(taken, o, o+size) {
			return o
		}
	}
}

// TestLargePackers: every packer the portfolio runs from layeredItems
// items packs each generated shape, with groups, fixed items and
// alignment added, into a packing that passes Check, and none is below the
// lower bound.
func TestLargePackers(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 4_000
	}
	for _, shape := range scaleShapes {
		p, err := scaleProblem(shape, 11, n)
		require.NoError(t, err)
		rng := rand.New(rand.NewSource(5))
		// Some alignment, a few fixed buffers high up, and must-share
		// pairs of buffers that follow one another.
		for i := range p.Buffers {
			b := &p.Buffers[i]
			if rng.Intn(10) == 0 {
				b.Align = 256
			}
		}
		for i := 0; i < 5; i++ {
			b := &p.Buffers[rng.Intn(n)]
			b.Fixed, b.Offset, b.Align = true, int64(i+1)<<40, 0
		}
		for i := 1; i+1 < n; i += 97 {
			if !p.Buffers[i].Fixed && !p.Buffers[i+1].Fixed {
				p.Groups = append(p.Groups, []int{i, i + 1})
			}
		}
		require.NoError(t, p.Validate())
		lay, err := normalize(p)
		require.NoError(t, err)
		in := lay.insts[0]
		vs := largeVariants(in)
		require.GreaterOrEqual(t, len(vs), 2, shape)
		for _, v := range vs {
			var bound atomic.Int64
			bound.Store(1 << 62)
			off := make([]int64, len(in.items))
			h, ok, err := v.run(in, off, &bound, nil)
			require.NoError(t, err, "%s %s", shape, v.name)
			require.True(t, ok, "%s %s", shape, v.name)
			require.Equal(t, in.height(off), h, "%s %s: reported height", shape, v.name)
			require.GreaterOrEqual(t, h, in.lowerBound(), "%s %s", shape, v.name)
			for i := range in.items {
				if it := &in.items[i]; it.fixed {
					require.Equal(t, it.off, off[i], "%s %s: fixed item moved", shape, v.name)
				} else {
					require.Zero(t, off[i]%it.align, "%s %s: item %d misaligned", shape, v.name, i)
				}
			}
		}
		sol, err := Pack(context.Background(), p, Options{Algorithm: "large"})
		require.NoError(t, err, shape)
		checkSolution(t, p, sol, "large")
	}
}

// TestLargeStops: a cancelled context stops the large packers, whose
// bound then drops below any height, without a packing.
func TestLargeStops(t *testing.T) {
	p, err := scaleProblem("training", 1, 50_000)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sol, err := Pack(ctx, p, Options{Algorithm: "large"})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, sol)
}

// TestLargeFixedOverlap: two fixed buffers overlapping while both live are
// refused by name, as by every other packer.
func TestLargeFixedOverlap(t *testing.T) {
	p, err := scaleProblem("chains", 1, 1000)
	require.NoError(t, err)
	a, b := &p.Buffers[10], &p.Buffers[11]
	a.Start, a.End, b.Start, b.End = 10, 20, 15, 25
	a.Fixed, a.Offset, b.Fixed, b.Offset = true, 1<<30, true, 1<<30+a.Size-1
	_, err = Pack(context.Background(), p, Options{Algorithm: "large"})
	var ie *InvalidError
	require.ErrorAs(t, err, &ie)
	require.Contains(t, err.Error(), `"s10" and "s11" are fixed at overlapping offsets`)
}
