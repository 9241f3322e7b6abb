package pack

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// benchPack packs p b.N times with opts and reports height/LB, the exact
// search's nodes and buffers per second. Every packing is checked.
func benchPack(b *testing.B, p *Problem, opts Options) {
	b.ReportAllocs()
	var sol *Solution
	var err error
	for b.Loop() {
		sol, err = Pack(context.Background(), p, opts)
		require.NoError(b, err)
	}
	require.NoError(b, Check(p, sol.Packing))
	b.ReportMetric(float64(sol.Height())/float64(sol.LowerBound()), "height/lb")
	b.ReportMetric(float64(sol.Nodes), "nodes")
	b.ReportMetric(float64(len(p.Buffers))*float64(b.N)/b.Elapsed().Seconds(), "buffers/s")
}

// BenchmarkIdealloc: the five real traces with the portfolio and with auto.
func BenchmarkIdealloc(b *testing.B) {
	for _, path := range corpus.Glob(b, "alloc/idealloc/*.csv") {
		p := readCorpusCSV(b, path)
		for _, algo := range []string{"portfolio", "auto"} {
			b.Run(fmt.Sprintf("%s/%s", filepath.Base(path), algo), func(b *testing.B) {
				benchPack(b, p, Options{Algorithm: algo})
			})
		}
	}
}

// BenchmarkMinimalloc: MiniMalloc's challenging instances at their capacity.
func BenchmarkMinimalloc(b *testing.B) {
	for _, path := range corpus.Glob(b, "alloc/minimalloc/*.csv") {
		p := readCorpusCSV(b, path)
		b.Run(filepath.Base(path), func(b *testing.B) {
			benchPack(b, p, Options{Capacity: 1048576})
		})
	}
}

// BenchmarkSynthetic: all synthetic instances, packed to their optimum.
func BenchmarkSynthetic(b *testing.B) {
	var ps []*Problem
	for _, path := range corpus.Glob(b, "alloc/synthetic/*.csv") {
		ps = append(ps, readCorpusCSV(b, path))
	}
	var worst float64
	for b.Loop() {
		for _, p := range ps {
			sol, err := Pack(context.Background(), p, Options{})
			require.NoError(b, err)
			worst = max(worst, float64(sol.Height())/float64(sol.LowerBound()))
		}
	}
	b.ReportMetric(worst, "worst-height/lb")
}

// peakHeap samples the heap in use while f runs and returns its peak.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

// BenchmarkScale: seeded trace-like problems (traceProblem) of 10^3 to 10^6
// buffers with the portfolio, and with auto up to 10^5; reports height/LB,
// buffers per second and the peak heap in use.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		p := traceProblem(int64(n), n)
		for _, algo := range []string{"portfolio", "auto"} {
			if algo == "auto" && n > 100_000 {
				continue // auto would spend its whole budget
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, algo), func(b *testing.B) {
				runtime.GC()
				var sol *Solution
				peak := peakHeap(func() {
					for b.Loop() {
						var err error
						sol, err = Pack(context.Background(), p, Options{Algorithm: algo})
						require.NoError(b, err)
					}
				})
				require.NoError(b, Check(p, sol.Packing))
				b.ReportMetric(float64(sol.Height())/float64(sol.LowerBound()), "height/lb")
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "buffers/s")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			})
		}
	}
}

// BenchmarkPackScale: the seeded shapes of scaleProblem at 10^4 to 10^6
// buffers with the portfolio, the large packers, auto and xla. Reports ns
// and bytes allocated per buffer, the peak heap in use and height/LB; the
// packing is checked. Run one size with -bench 'PackScale/.*/n=100000/'.
// From 131,072 buffers the portfolio is the large packers (layered.go), so
// large at 10^6 repeats it and is left out.
func BenchmarkPackScale(b *testing.B) {
	for _, shape := range scaleShapes {
		for _, n := range []int{10_000, 100_000, 300_000, 1_000_000} {
			var p *Problem
			for _, algo := range []string{"portfolio", "large", "auto", "xla"} {
				if algo == "large" && n >= layeredItems {
					continue
				}
				b.Run(fmt.Sprintf("%s/n=%d/%s", shape, n, algo), func(b *testing.B) {
					if p == nil {
						var err error
						p, err = scaleProblem(shape, int64(n), n)
						require.NoError(b, err)
					}
					benchPackScale(b, p, algo)
				})
			}
		}
	}
}

// benchPackScale packs p b.N times with algo and reports per-buffer costs.
func benchPackScale(b *testing.B, p *Problem, algo string) {
	n := float64(len(p.Buffers))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var sol *Solution
	peak := peakHeap(func() {
		for b.Loop() {
			var err error
			sol, err = Pack(context.Background(), p, Options{Algorithm: algo})
			require.NoError(b, err)
		}
	})
	runtime.ReadMemStats(&after)
	require.NoError(b, Check(p, sol.Packing))
	runs := float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/runs/n, "ns/buffer")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/runs/n, "B/buffer")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(sol.Height())/float64(sol.LowerBound()), "height/lb")
}
