package hlo

import (
	"os"
	"testing"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// mixtral is the largest module in the corpus (4.1 MB, 43,714 instructions).
const mixtral = "hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_2x8.hlo"

// BenchmarkParseMixtral measures parsing throughput (MB/s from SetBytes) and
// reports allocated bytes per byte of input.
func BenchmarkParseMixtral(b *testing.B) {
	src, err := os.ReadFile(corpus.Path(b, mixtral))
	require.NoError(b, err)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	var ms runtimeMemStats
	ms.start()
	n := 0
	for b.Loop() {
		mods, err := Parse("mixtral.hlo", src)
		require.NoError(b, err)
		n = mods[0].NumInstructions()
	}
	b.ReportMetric(float64(ms.allocatedSince())/float64(b.N)/float64(len(src)), "alloc/inputbyte")
	b.ReportMetric(float64(n), "instructions")
}

// BenchmarkPrintMixtral measures printing the parsed module.
func BenchmarkPrintMixtral(b *testing.B) {
	mods, err := ParseFile(corpus.Path(b, mixtral))
	require.NoError(b, err)
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		size = len(mods[0].String())
	}
	b.SetBytes(int64(size))
}

// BenchmarkCloneMixtral measures Module.Clone, Computation.Clone, NewGraph
// and SortTopologically over every computation: the code that keeps side
// tables by instruction (by ID when the IDs are dense).
func BenchmarkCloneMixtral(b *testing.B) {
	mods, err := ParseFile(corpus.Path(b, mixtral))
	require.NoError(b, err)
	m := mods[0]
	b.ReportAllocs()
	for b.Loop() {
		nm := m.Clone()
		for _, c := range nm.Computations {
			c.Clone("c", &NameUniquer{})
			NewGraph(c)
			c.SortTopologically()
		}
	}
	b.ReportMetric(float64(m.NumInstructions()), "instructions")
}
