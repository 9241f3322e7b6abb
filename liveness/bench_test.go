package liveness

import (
	"runtime"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

const mixtral = "hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_2x8.hlo"

func loadModule(b *testing.B, rel string) *hlo.Module {
	mods, err := hlo.ParseFile(corpus.Path(b, rel))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := hlo.FlattenCallGraph(mods[0]); err != nil {
		b.Fatal(err)
	}
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
		if err != nil {
			b.Fatal(err)
		}
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

// BenchmarkBestSchedule measures the best-of-three scheduler on the largest
// unscheduled corpus modules.
func BenchmarkBestSchedule(b *testing.B) {
	for _, tc := range []struct{ name, path string }{
		{"mixtral_8x7b", mixtral},
		{"llama31_8b", "hlo/xla/tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo"},
		{"torax", "hlo/xla/tools__benchmarks__hlo__hlo_torax_iterhybrid_predictor_corrector_f64.hlo"},
		{"gemma3_4b", "hlo/xla/backends__cpu__benchmarks__huge_hlo__gemma3_4b_text_keras_jax_batch1_in8_out100.hlo"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := loadModule(b, tc.path)
			a, err := Analyze(m, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var lb int64
			for b.Loop() {
				if _, _, err := Best(a); err != nil {
					b.Fatal(err)
				}
				lb = a.LowerBound(nil).Bytes
			}
			b.ReportMetric(float64(lb), "lower-bound-bytes")
			b.ReportMetric(float64(m.NumInstructions()), "instructions")
		})
	}
}
