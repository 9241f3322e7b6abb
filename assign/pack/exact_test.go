package pack

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bruteOptimum returns the least height of p (one color, no alignment, no
// groups) by trying every order of laying its buffers, each on top of the
// earlier ones it overlaps: every canonical packing is among these.
func bruteOptimum(p *Problem) int64 {
	n := len(p.Buffers)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	best := int64(1 << 62)
	off := make([]int64, n)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			var h int64
			for i := range p.Buffers {
				h = max(h, off[i]+p.Buffers[i].Size)
			}
			best = min(best, h)
			return
		}
		for j := k; j < n; j++ {
			perm[k], perm[j] = perm[j], perm[k]
			b := p.Buffers[perm[k]]
			var o int64
			for q := 0; q < k; q++ {
				c := p.Buffers[perm[q]]
				if c.Start < b.End && b.Start < c.End {
					o = max(o, off[perm[q]]+c.Size)
				}
			}
			off[perm[k]] = o
			rec(k + 1)
			perm[k], perm[j] = perm[j], perm[k]
		}
	}
	rec(0)
	return best
}

func randomSmallProblem(rng *rand.Rand, n int) *Problem {
	p := &Problem{}
	for i := 0; i < n; i++ {
		s := int64(rng.Intn(8))
		p.Buffers = append(p.Buffers, Buffer{
			ID:    fmt.Sprintf("b%d", i),
			Start: s, End: s + 1 + int64(rng.Intn(5)),
			Size: 1 + int64(rng.Intn(6)),
		})
	}
	return p
}

// TestExactDecisionAgainstBruteForce checks the decision search on small
// random problems: it must find a packing at the optimum and prove the
// optimum minus one infeasible.
func TestExactDecisionAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	iters := 2000
	if testing.Short() {
		iters = 300
	}
	for iter := 0; iter < iters; iter++ {
		p := randomSmallProblem(rng, 2+rng.Intn(6))
		opt := bruteOptimum(p)
		lay, err := normalize(p)
		require.NoError(t, err)
		in := lay.insts[0]
		x := newExactInst(in)
		for _, c := range []int64{opt, opt - 1} {
			s := newSearch(x, c, context.Background(), time.Time{})
			st := s.run()
			want := found
			if c < opt {
				want = infeasible
			}
			require.Equal(t, want, st, "problem %d: capacity %d, optimum %d: got status %d, want %d\n%+v", iter, c, opt, st, want, p.Buffers)
			if st != found {
				continue
			}
			off := make([]int64, len(p.Buffers))
			for i := range p.Buffers {
				off[i] = s.sol[lay.item[i]]
			}
			require.NoError(t, Check(p, Packing{off}), "problem %d", iter)
			h := in.height(s.sol)
			require.LessOrEqual(t, h, c, "problem %d: height %d above capacity %d", iter, h, c)
		}
	}
}

// bruteItemsOptimum is bruteOptimum for any one-color problem without fixed
// buffers: groups become items of several parts, alignment rounds offsets
// up. Every order of the items is tried, each item laid at its lowest
// aligned offset above the earlier items it meets.
func bruteItemsOptimum(t *testing.T, p *Problem) int64 {
	lay, err := normalize(p)
	require.NoError(t, err)
	if len(lay.insts) == 0 {
		return 0
	}
	in := lay.insts[0]
	n := len(in.items)
	// ext[a][b]: how far above a's offset b must start, if b goes above a.
	ext := make([][]int64, n)
	for a := range ext {
		ext[a] = make([]int64, n)
		for b := range n {
			for _, pa := range in.parts[in.items[a].p0:in.items[a].p1] {
				for _, pb := range in.parts[in.items[b].p0:in.items[b].p1] {
					if a != b && pa.start < pb.end && pb.start < pa.end {
						ext[a][b] = max(ext[a][b], pa.size)
					}
				}
			}
		}
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	off := make([]int64, n)
	best := int64(1 << 62)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			best = min(best, in.height(off))
			return
		}
		for j := k; j < n; j++ {
			perm[k], perm[j] = perm[j], perm[k]
			i := perm[k]
			var o int64
			for q := 0; q < k; q++ {
				if e := ext[perm[q]][i]; e > 0 {
					o = max(o, off[perm[q]]+e)
				}
			}
			off[i] = alignUp(o, in.items[i].align)
			rec(k + 1)
			perm[k], perm[j] = perm[j], perm[k]
		}
	}
	rec(0)
	return best
}

// TestExactGroupsAlignment checks the minimising exact search on small
// problems with must-share groups and alignment against brute force.
func TestExactGroupsAlignment(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for it := 0; it < 300; it++ {
		p := randomProblem(rng, genOptions{n: 3 + rng.Intn(5), steps: 6, maxLen: 4, maxSz: 6, align: true, groups: 0.6})
		opt := bruteItemsOptimum(t, p)
		sol, err := Pack(context.Background(), p, Options{Algorithm: "exact", Budget: time.Minute})
		require.NoError(t, err)
		checkSolution(t, p, sol, "exact")
		require.True(t, sol.Height() == opt && sol.Optimal(), "problem %d: exact height %d (optimal %v), brute force %d: %+v groups %v",
			it, sol.Height(), sol.Optimal(), opt, p.Buffers, p.Groups)
	}
}

// TestAlignedLowerBound: the alignment-aware bound never exceeds the
// optimum (brute force) on small problems with alignment and groups, is
// never below the plain bound, and is the optimum on a case where the
// plain bound is not.
func TestAlignedLowerBound(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	stronger := 0
	for it := 0; it < 1000; it++ {
		o := genOptions{n: 2 + rng.Intn(6), steps: 6, maxLen: 4, maxSz: 300, groups: 0.3}
		p := randomProblem(rng, o)
		a := int64(1) << rng.Intn(8)
		for i := range p.Buffers {
			p.Buffers[i].Align = a
			if rng.Intn(3) == 0 {
				p.Buffers[i].Align = 2 * a // mixed: g is still a
			}
		}
		lay, err := normalize(p)
		require.NoError(t, err)
		in := lay.insts[0]
		lb, alb := in.lowerBound(), in.alignedLowerBound()
		opt := bruteItemsOptimum(t, p)
		require.LessOrEqual(t, alb, opt, "problem %d: aligned bound %d above the optimum %d: %+v groups %v", it, alb, opt, p.Buffers, p.Groups)
		require.False(t, alb < lb && a > 1, "problem %d: aligned bound %d below the plain %d", it, alb, lb)
		if alb > lb {
			stronger++
		}
	}
	require.NotZero(t, stronger, "the aligned bound never beat the plain one")
	t.Logf("stronger than the plain bound on %d of 1000", stronger)
	// Three 1-byte buffers live together at alignment 64: 64+64+1.
	p := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 2, Size: 1, Align: 64},
		{ID: "b", Start: 0, End: 2, Size: 1, Align: 64},
		{ID: "c", Start: 0, End: 2, Size: 1, Align: 64},
	}}
	sol, err := Pack(context.Background(), p, Options{})
	require.NoError(t, err)
	require.True(t, sol.Height() == 129 && sol.Optimal() && sol.LowerBound() == 3,
		"height %d optimal %v lower bound %d; want 129, proven optimal, plain bound 3", sol.Height(), sol.Optimal(), sol.LowerBound())
}
