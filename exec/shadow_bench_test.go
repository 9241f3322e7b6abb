package exec

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// BenchmarkShadowLargestPaired: shadow execution (the check alone, not the
// planning) of the largest paired module of the corpus by instruction
// count.
func BenchmarkShadowLargestPaired(b *testing.B) {
	files := corpus.Glob(b, "paired*/*/*after_optimizations.txt")
	sort.Slice(files, func(i, j int) bool {
		si, _ := os.Stat(files[i])
		sj, _ := os.Stat(files[j])
		return si.Size() > sj.Size()
	})
	plans := plan(b, files[0], assign.Options{Budget: 50 * time.Millisecond})
	require.NotEmpty(b, plans)
	as := plans[0]
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Shadow(context.Background(), as)
		require.NoError(b, err)
		require.Nil(b, rep.Violation)
	}
	b.ReportMetric(float64(len(as.Analysis.Sequence)), "steps")
	b.ReportMetric(float64(len(as.Analysis.Values)), "values")
}
