package liveness

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/stretchr/testify/require"
)

const mixtral = "hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_2x8.hlo"

func loadModule(b *testing.B, rel string) *hlo.Module {
	mods, err := hlo.ParseFile(corpus.Path(b, rel))
	require.NoError(b, err)
	_, err = hlo.FlattenCallGraph(mods[0])
	require.NoError(b, err)
	return mods[0]
}

// BenchmarkAnalyzeMixtral measures values, buffers, live ranges and the
// lower bound of the 43,714-instruction Mixtral module in its own order.
// peak-MB is the heap in use right after one analysis (the module included).
func BenchmarkAnalyzeMixtral(b *testing.B) {
	m := loadModule(b, mixtral)
	b.ReportAllocs()
	var lb int64
	for b.Loop() {
		a, err := Analyze(m, Options{})
		require.NoError(b, err)
		lb = a.LowerBound(nil).Bytes
	}
	b.ReportMetric(float64(lb), "lower-bound-bytes")
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	a, _ := Analyze(m, Options{})
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "alloc-MB/analysis")
	runtime.KeepAlive(a)
}

// BenchmarkAnalyzeScale measures the analysis on random scheduled modules
// of about 10^3 to 10^6 instructions in all (the generator writes about 6.7
// instructions, in loop bodies, branches, called computations and fusions,
// per entry instruction), so the growth of the cost with size shows:
// ns/instruction stays flat for a linear-time analysis.
func BenchmarkAnalyzeScale(b *testing.B) {
	for _, n := range []int{150, 1_500, 15_000, 150_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			mods, err := hlo.Parse("scale.hlo", []byte(randhlo.Generate(uint64(n), randhlo.Options{Instructions: n, Scheduled: true})))
			require.NoError(b, err)
			m := mods[0]
			_, err = hlo.FlattenCallGraph(m)
			require.NoError(b, err)
			b.ReportAllocs()
			var values int
			for b.Loop() {
				a, err := Analyze(m, Options{})
				require.NoError(b, err)
				values = len(a.Values)
			}
			total := m.NumInstructions()
			b.ReportMetric(float64(total), "instructions")
			b.ReportMetric(float64(values), "values")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(total), "ns/instruction")
		})
	}
}
