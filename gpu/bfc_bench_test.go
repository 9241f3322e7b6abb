package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// bfcLogUniform draws a size log-uniformly from [lo, hi].
func bfcLogUniform(rng *rand.Rand, lo, hi int64) int64 {
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return int64(math.Exp(l + rng.Float64()*(h-l)))
}

// bfcWorkloadSize is a size from a rough mix of what a JAX program
// allocates: 60% small (256 B to 1 MiB: scalars, biases, small
// activations), 30% medium (1 to 64 MiB: weights and activations), 10%
// large (64 MiB to 1 GiB: big activations and temp buffers), each
// log-uniform.
func bfcWorkloadSize(rng *rand.Rand) int64 {
	switch p := rng.IntN(10); {
	case p < 6:
		return bfcLogUniform(rng, 256, 1<<20)
	case p < 9:
		return bfcLogUniform(rng, 1<<20, 64<<20)
	default:
		return bfcLogUniform(rng, 64<<20, 1<<30)
	}
}

// BenchmarkBFCAllocFree measures one free and one allocate with a steady
// population of live allocations (sizes log-uniform from 256 B to 64 MiB)
// in a preallocated arena four times their expected total: each
// iteration frees a random live allocation and allocates a new one in its
// place. ns/pair is the cost of the pair.
func BenchmarkBFCAllocFree(b *testing.B) {
	for _, live := range []int{100, 1000, 10000, 100000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, uint64(live)))
			const mask = 1<<16 - 1
			sizes := make([]int64, mask+1)
			picks := make([]int32, mask+1)
			for i := range sizes {
				sizes[i] = bfcLogUniform(rng, 256, 64<<20)
				picks[i] = int32(rng.IntN(live))
			}
			// The mean of the sizes is (64 MiB - 256) / ln(2^18), about 5 MiB.
			a, err := NewBFC(BFCOptions{Limit: int64(live) * 20 << 20})
			if err != nil {
				b.Fatal(err)
			}
			addrs := make([]int64, live)
			for i := range addrs {
				if addrs[i], err = a.Allocate(sizes[i&mask]); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				j := picks[i&mask]
				if err := a.Free(addrs[j]); err != nil {
					b.Fatal(err)
				}
				if addrs[j], err = a.Allocate(sizes[(i*7+3)&mask]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pair")
			b.ReportMetric(a.Stats().Fragmentation(), "frag")
		})
	}
}

// bfcWorkload runs steps random operations on an 80 GiB arena: while less
// than 85% of the limit is in use it allocates with probability 0.6,
// above that 0.4, else it frees a random live allocation. Sizes follow
// bfcWorkloadSize. An OOM is counted and the step moves on.
func bfcWorkload(a *BFC, seed uint64, steps int) (ooms int, err error) {
	rng := rand.New(rand.NewPCG(seed, 2))
	target := a.limit / 100 * 85
	var live []int64
	var used int64
	for range steps {
		p := 6
		if used >= target {
			p = 4
		}
		if len(live) == 0 || rng.IntN(10) < p {
			addr, err := a.Allocate(bfcWorkloadSize(rng))
			var oom *OOMError
			switch {
			case errors.As(err, &oom):
				ooms++
				continue
			case err != nil:
				return ooms, err
			}
			n, _ := a.Size(addr)
			used += n
			live = append(live, addr)
			continue
		}
		i := rng.IntN(len(live))
		n, _ := a.Size(live[i])
		if err := a.Free(live[i]); err != nil {
			return ooms, err
		}
		used -= n
		live[i] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	return ooms, nil
}

// BenchmarkBFCWorkload runs a 10^6-step random workload (bfcWorkload) on
// an 80 GiB limit, preallocated and with growth; s/workload is the time
// of one run, ooms the failed allocations in it (each builds the full
// OOM report: dump, stats and occupancy).
func BenchmarkBFCWorkload(b *testing.B) {
	const steps = 1_000_000
	for _, growth := range []bool{false, true} {
		name := "prealloc"
		if growth {
			name = "growth"
		}
		b.Run(name, func(b *testing.B) {
			var ooms int
			var frag float64
			for b.Loop() {
				a, err := NewBFC(BFCOptions{Limit: 80 << 30, AllowGrowth: growth, DriverCost: 50 * time.Microsecond})
				if err != nil {
					b.Fatal(err)
				}
				if ooms, err = bfcWorkload(a, 1, steps); err != nil {
					b.Fatal(err)
				}
				frag = a.Stats().Fragmentation()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/workload")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
			b.ReportMetric(float64(ooms), "ooms")
			b.ReportMetric(frag, "frag")
		})
	}
}
