package pack

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// genOptions shapes randomProblem.
type genOptions struct {
	n      int     // buffers
	steps  int64   // time steps
	maxLen int64   // longest lifetime
	maxSz  int64   // largest size
	align  bool    // random power-of-two alignments
	colors int     // 0 or 1: one color
	groups float64 // fraction of buffers put into must-share groups
	fixed  float64 // fraction of items fixed where a first packing put them
	empty  bool    // allow zero sizes and zero lifetimes
}

// randomProblem returns a seeded random problem. Fixed offsets are taken
// from a best-fit packing of the same problem without them, so they never
// conflict.
func randomProblem(rng *rand.Rand, o genOptions) *Problem {
	p := &Problem{}
	minLen, minSz := int64(1), int64(1)
	if o.empty {
		minLen, minSz = 0, 0
	}
	for i := 0; i < o.n; i++ {
		s := rng.Int63n(o.steps)
		b := Buffer{
			ID:    fmt.Sprintf("b%d", i),
			Start: s,
			End:   s + minLen + rng.Int63n(o.maxLen),
			Size:  minSz + rng.Int63n(o.maxSz),
		}
		if o.align && rng.Intn(3) == 0 {
			b.Align = int64(1) << rng.Intn(4)
		}
		if o.colors > 1 {
			b.Color = rng.Intn(o.colors)
		}
		p.Buffers = append(p.Buffers, b)
	}
	if o.groups > 0 {
		inGroup := make([]bool, o.n)
		for k := 0; k < int(o.groups*float64(o.n)/2); k++ {
			a, b := rng.Intn(o.n), rng.Intn(o.n)
			if a == b || inGroup[a] || inGroup[b] {
				continue
			}
			p.Buffers[b].Color = p.Buffers[a].Color
			g := []int{a, b}
			if c := rng.Intn(o.n); rng.Intn(3) == 0 && !inGroup[c] && c != a && c != b {
				p.Buffers[c].Color = p.Buffers[a].Color
				g = append(g, c)
			}
			for _, m := range g {
				inGroup[m] = true
			}
			p.Groups = append(p.Groups, g)
		}
	}
	if o.fixed > 0 {
		sol, err := Pack(context.Background(), p, Options{Algorithm: "bestfit-size"})
		if err != nil {
			panic(err)
		}
		group := make([]int, o.n)
		for i := range group {
			group[i] = -1
		}
		for g, ms := range p.Groups {
			for _, m := range ms {
				group[m] = g
			}
		}
		for i := range p.Buffers {
			if group[i] < 0 && rng.Float64() < o.fixed {
				p.Buffers[i].Fixed, p.Buffers[i].Offset = true, sol.Offsets[i]
			}
		}
		for _, ms := range p.Groups {
			if rng.Float64() < o.fixed {
				for _, m := range ms {
					p.Buffers[m].Fixed, p.Buffers[m].Offset = true, sol.Offsets[m]
				}
			}
		}
	}
	return p
}

// traceProblem returns a seeded problem shaped like a training-step trace:
// a few hundred buffers live for the whole run (weights), some live for
// tens to thousands of steps (saved activations, optimizer state), and the
// rest are short-lived temporaries, all of log-uniform sizes. The run gets
// longer as n grows but the number of buffers live at once does not (about
// 600), as in real programs, where a bigger model means a longer schedule.
func traceProblem(seed int64, n int) *Problem {
	rng := rand.New(rand.NewSource(seed))
	steps := int64(max(n/4, 64))
	p := &Problem{Buffers: make([]Buffer, n)}
	logUniform := func(lo, hi float64) int64 {
		return int64(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo))))
	}
	globals := min(n/100, 500)
	for i := range p.Buffers {
		b := &p.Buffers[i]
		b.ID = fmt.Sprintf("t%d", i)
		switch r := rng.Intn(100); {
		case i < globals:
			b.Start, b.End = 0, steps
			b.Size = logUniform(1<<12, 1<<24)
		case r < 4:
			length := min(logUniform(16, 4096), steps)
			b.Start = rng.Int63n(steps - length + 1)
			b.End = b.Start + length
			b.Size = logUniform(1<<8, 1<<22)
		default:
			b.Start = rng.Int63n(steps)
			b.End = b.Start + 1 + int64(rng.ExpFloat64()*4)
			b.Size = logUniform(1<<6, 1<<22)
		}
		// Sizes of real tensors: multiples of 64 bytes, mostly.
		if rng.Intn(4) != 0 {
			b.Size = (b.Size + 63) &^ 63
		}
	}
	return p
}

// checkSolution fails the test unless sol is a valid packing of p whose
// heap heights are at least their lower bounds.
func checkSolution(t testing.TB, p *Problem, sol *Solution, what string) {
	t.Helper()
	require.NoError(t, Check(p, sol.Packing), "%s", what)
	got := p.Heights(sol.Offsets)
	require.Len(t, sol.Heaps, len(got), "%s: %d heaps reported, %d colors", what, len(sol.Heaps), len(got))
	for k, h := range sol.Heaps {
		require.True(t, h.Color == got[k].Color && h.Height == got[k].Height,
			"%s: heap %d reported as color %d height %d, packing has color %d height %d",
			what, k, h.Color, h.Height, got[k].Color, got[k].Height)
		lb := LowerBound(p, h.Color)
		require.True(t, h.LowerBound == lb && h.Height >= lb,
			"%s: color %d: height %d, lower bound %d (reported %d)", what, h.Color, h.Height, lb, h.LowerBound)
	}
}
