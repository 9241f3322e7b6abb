package liveness

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// benchSearch runs the named searching scheduler on a (copies inserted)
// once per iteration, each from the heuristics (the schedule a is laid
// out under is forgotten first, so every iteration does the same work),
// and reports the bound reached, XLA's choice's, their ratio and the
// expansions.
func benchSearch(b *testing.B, a *Analysis, exact bool, opts SearchOptions) {
	b.Helper()
	var r *SearchResult
	var err error
	for b.Loop() {
		a.Schedule = nil
		if exact {
			r, err = Optimal(context.Background(), a, opts)
		} else {
			r, err = Search(context.Background(), a, opts)
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

func copiesInserted(b *testing.B, m *hlo.Module) *Analysis {
	b.Helper()
	_, err := hlo.FlattenCallGraph(m)
	require.NoError(b, err)
	a, _, err := AnalyzeInsertingCopies(m)
	require.NoError(b, err)
	return a
}

// BenchmarkSearchMixtral: search (best) on the 43,714-instruction Mixtral
// module, within 5 s and never above XLA's choice.
func BenchmarkSearchMixtral(b *testing.B) {
	a := copiesInserted(b, loadModule(b, mixtral))
	benchSearch(b, a, false, SearchOptions{})
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
				benchSearch(b, copiesInserted(b, mods[0]), exact, SearchOptions{})
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
			benchSearch(b, copiesInserted(b, m), false, SearchOptions{})
		})
	}
}
