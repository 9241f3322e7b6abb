package schedule

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
)

// benchSearch runs the named searching scheduler on a (copies inserted)
// once per iteration, each from the heuristics (the schedule a is laid
// out under is forgotten first, so every iteration does the same work),
// and reports the bound reached, XLA's choice's, their ratio and the
// expansions.
func benchSearch(b *testing.B, a *liveness.Analysis, exact bool, opts Options) {
	b.Helper()
	var r *SearchResult
	var err error
	for b.Loop() {
		a.Schedule = nil
		if exact {
			r, err = RunOptimal(context.Background(), a, opts)
		} else {
			r, err = RunSearch(context.Background(), a, opts)
		}
		require.NoError(b, err)
	}
	b.ReportMetric(float64(r.LowerBound), "lower-bound-bytes")
	b.ReportMetric(float64(r.XLABest), "heuristic-bytes")
	b.ReportMetric(float64(r.LowerBound)/float64(r.XLABest), "bound/heuristic")
	b.ReportMetric(float64(r.Expansions), "expansions")
	total := a.Module.NumInstructions()
	b.ReportMetric(float64(total), "instructions")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(total), "ns/instruction")
}

const mixtral = "hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_2x8.hlo"

func loadModule(b *testing.B, rel string) *hlo.Module {
	mods, err := hlo.ParseFile(corpus.Path(b, rel))
	require.NoError(b, err)
	_, err = hlo.FlattenCallGraph(mods[0])
	require.NoError(b, err)
	return mods[0]
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
			a, err := liveness.Analyze(m, liveness.Options{})
			require.NoError(b, err)
			var lb int64
			for b.Loop() {
				_, err = ByName(context.Background(), a, Best, Options{})
				require.NoError(b, err)
				lb = a.LowerBound(nil).Bytes
			}
			b.ReportMetric(float64(lb), "lower-bound-bytes")
			b.ReportMetric(float64(m.NumInstructions()), "instructions")
		})
	}
}

func copiesInserted(b *testing.B, m *hlo.Module) *liveness.Analysis {
	b.Helper()
	_, err := hlo.FlattenCallGraph(m)
	require.NoError(b, err)
	a, _, err := liveness.AnalyzeInsertingCopies(m)
	require.NoError(b, err)
	return a
}

// BenchmarkSearchMixtral: search (best) on the 43,714-instruction Mixtral
// module, within 5 s and never above XLA's choice.
func BenchmarkSearchMixtral(b *testing.B) {
	a := copiesInserted(b, loadModule(b, mixtral))
	benchSearch(b, a, false, Options{})
}

// BenchmarkSearchCorpus: search and optimal on a few large corpus modules.
func BenchmarkSearchCorpus(b *testing.B) {
	for _, tc := range []struct{ name, path string }{
		{"llama2_neuron", "hlo/neuron/llama2__llama2_dp-1_tp-1_pp-1.hlo"},
		{"bert_dp_2", "hlo/neuron/bert__bert_dp_graph_2.hlo"},
		{"llama31_70b", "hlo/xla/tools__benchmarks__hlo__hlo_llama31_70b_bf16_16x8.hlo"},
		{"llama31_8b", "hlo/xla/tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo"},
	} {
		for _, exact := range []bool{false, true} {
			name := tc.name + "/search"
			if exact {
				name = tc.name + "/optimal"
			}
			b.Run(name, func(b *testing.B) {
				mods, err := hlo.ParseFile(corpus.Path(b, tc.path))
				require.NoError(b, err)
				benchSearch(b, copiesInserted(b, mods[0]), exact, Options{})
			})
		}
	}
}

// BenchmarkSearchDAG: search on one random DAG of 10^3, 10^4 and 10^5
// instructions in a single computation (randomDAGWith, small outputs, so
// that the order decides the peak), where the windows do all the work.
func BenchmarkSearchDAG(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			m, err := hlo.ParseModule("dag.hlo", randomDAGWith(uint64(n), n, true))
			require.NoError(b, err)
			benchSearch(b, copiesInserted(b, m), false, Options{})
		})
	}
}
