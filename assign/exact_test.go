package assign

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
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
		if err != nil {
			t.Fatal(err)
		}
		in := lay.insts[0]
		x := newExactInst(in)
		for _, c := range []int64{opt, opt - 1} {
			s := newSearch(x, c, context.Background(), time.Time{})
			st := s.run()
			want := found
			if c < opt {
				want = infeasible
			}
			if st != want {
				t.Fatalf("problem %d: capacity %d, optimum %d: got status %d, want %d\n%+v", iter, c, opt, st, want, p.Buffers)
			}
			if st != found {
				continue
			}
			off := make([]int64, len(p.Buffers))
			for i := range p.Buffers {
				off[i] = s.sol[lay.item[i]]
			}
			if err := Check(p, Packing{off}); err != nil {
				t.Fatalf("problem %d: %v", iter, err)
			}
			if h := in.height(s.sol); h > c {
				t.Fatalf("problem %d: height %d above capacity %d", iter, h, c)
			}
		}
	}
}
