package pack

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// scaleShapes names the shapes scaleProblem generates, in benchmark order.
var scaleShapes = []string{"training", "chains", "fanout", "loops"}

// scaleGen draws the buffers of one seeded scale problem. The clock is the
// buffer index: buffer i is produced at step i, as in a schedule that runs
// one instruction per step, so n buffers span about n steps.
type scaleGen struct {
	rng *rand.Rand
	n   int
	p   *Problem
}

// logUniform returns a size drawn log-uniformly from [lo, hi], rounded up
// to 64 bytes three times in four, as real tensor sizes mostly are.
func (g *scaleGen) logUniform(lo, hi float64) int64 {
	s := int64(math.Exp(math.Log(lo) + g.rng.Float64()*(math.Log(hi)-math.Log(lo))))
	if g.rng.Intn(4) != 0 {
		s = (s + 63) &^ 63
	}
	return s
}

// short returns a lifetime of a few steps: 1 plus an exponential of mean 2.
func (g *scaleGen) short() int64 { return 1 + int64(g.rng.ExpFloat64()*2) }

func (g *scaleGen) add(start, end, size int64) {
	g.p.Buffers = append(g.p.Buffers, Buffer{
		ID: fmt.Sprintf("s%d", len(g.p.Buffers)), Start: start, End: end, Size: size,
	})
}

// scaleProblem returns a seeded MiniMalloc-style problem of n buffers of the
// given shape (scaleShapes), the same for the same seed:
//
//	training  97% of buffers live a few steps, 3% live n/20 to n/4 steps
//	          (activations kept from forward to backward); sizes log-uniform
//	          in 64 B..4 MiB.
//	chains    one long chain: each buffer is read by the next one or two
//	          instructions and lives a few steps; a handful live at once.
//	fanout    every 32nd buffer is a producer read by 4 to 64 consumers at
//	          random steps up to n/8 later, living until its last reader; the
//	          consumers' outputs are short-lived.
//	loops     an outer loop of inner loops over a body of 64 buffers:
//	          temporaries live a few steps, one loop-carried buffer per body
//	          spans its whole inner loop, one per outer iteration spans the
//	          outer loop, and a few weights span the program.
func scaleProblem(shape string, seed int64, n int) (*Problem, error) {
	g := &scaleGen{rng: rand.New(rand.NewSource(seed)), n: n, p: &Problem{Buffers: make([]Buffer, 0, n)}}
	switch shape {
	case "training":
		g.training()
	case "chains":
		g.chains()
	case "fanout":
		g.fanout()
	case "loops":
		g.loops()
	default:
		return nil, fmt.Errorf("scale: unknown shape %q", shape)
	}
	return g.p, nil
}

func (g *scaleGen) training() {
	n := int64(g.n)
	lo, hi := max(n/20, 1), max(n/4, 2)
	for i := int64(0); i < n; i++ {
		life := g.short()
		if g.rng.Intn(100) < 3 {
			life = lo + g.rng.Int63n(hi-lo+1)
		}
		g.add(i, i+life, g.logUniform(64, 4<<20))
	}
}

func (g *scaleGen) chains() {
	for i := int64(0); i < int64(g.n); i++ {
		g.add(i, i+1+g.rng.Int63n(3), g.logUniform(64, 4<<20))
	}
}

func (g *scaleGen) fanout() {
	n := int64(g.n)
	reach := max(n/8, 2)
	for i := int64(0); i < n; i++ {
		end := i + g.short()
		if i%32 == 0 {
			// The last of k readers at uniform steps in (i, i+reach].
			for k := 4 + g.rng.Intn(61); k > 0; k-- {
				end = max(end, i+1+g.rng.Int63n(reach)+1)
			}
		}
		g.add(i, end, g.logUniform(64, 4<<20))
	}
}

func (g *scaleGen) loops() {
	n := int64(g.n)
	const body = 64
	inner := int64(16) // iterations of each inner loop
	weights := min(n/1000+1, 64)
	for range weights {
		g.add(0, n, g.logUniform(1<<12, 4<<20))
	}
	i := weights
	for i < n {
		// One outer iteration: its carried buffer spans all its inner loops.
		outerStart, outerBuf := i, len(g.p.Buffers)
		g.add(i, i+1, g.logUniform(1<<10, 4<<20))
		i++
		for loop := 0; loop < 4 && i < n; loop++ {
			carried := len(g.p.Buffers)
			g.add(i, i+1, g.logUniform(1<<10, 1<<20))
			i++
			for it := int64(0); it < inner && i < n; it++ {
				for k := 0; k < body-1 && i < n; k++ {
					g.add(i, i+g.short(), g.logUniform(64, 4<<20))
					i++
				}
			}
			g.p.Buffers[carried].End = i
		}
		g.p.Buffers[outerBuf].End = max(i, outerStart+1)
	}
	g.p.Buffers = g.p.Buffers[:min(len(g.p.Buffers), g.n)]
}

// TestScaleProblem: each shape gives n valid buffers, the same for one seed
// and another for another seed, with the lifetimes its shape promises.
func TestScaleProblem(t *testing.T) {
	const n = 20_000
	for _, shape := range scaleShapes {
		p, err := scaleProblem(shape, 1, n)
		require.NoError(t, err)
		require.Len(t, p.Buffers, n, shape)
		require.NoError(t, p.Validate(), shape)
		q, _ := scaleProblem(shape, 1, n)
		require.Equal(t, p, q, "%s: same seed, same problem", shape)
		r, _ := scaleProblem(shape, 2, n)
		require.NotEqual(t, p, r, "%s: another seed, another problem", shape)
		var long int
		for _, b := range p.Buffers {
			require.True(t, b.Size >= 64 && b.Size <= 4<<20+63, "%s: size %d", shape, b.Size)
			if b.End-b.Start >= n/20 {
				long++
			}
		}
		switch shape {
		case "training":
			// 3% of 20,000 is 600; a binomial spread of ±4 sigma.
			require.InDelta(t, 600, long, 100, shape)
		case "chains":
			require.Zero(t, long, shape)
		case "fanout":
			require.InDelta(t, n/32, long, n/32/5, shape)
		}
	}
	_, err := scaleProblem("nope", 1, 10)
	require.Error(t, err)
}
