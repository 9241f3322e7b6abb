package assign

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
	"github.com/stretchr/testify/require"
)

// BenchmarkAssignMixtral runs what `hlomem assign` does on the
// 43,714-instruction Mixtral module (parse; flatten, copy insertion and
// liveness; best schedule; assignment with the default packer) and
// reports each phase's share in milliseconds per run.
func BenchmarkAssignMixtral(b *testing.B) {
	src, err := os.ReadFile(corpus.Path(b, "hlo/xla/tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_2x8.hlo"))
	require.NoError(b, err)
	var phase [6]time.Duration
	var total int64
	for b.Loop() {
		t := time.Now()
		lap := func(i int) {
			now := time.Now()
			phase[i] += now.Sub(t)
			t = now
		}
		mods, err := hlo.Parse("mixtral.hlo", src)
		require.NoError(b, err)
		m := mods[0]
		lap(0)
		_, err = hlo.FlattenCallGraph(m)
		require.NoError(b, err)
		a, _, err := liveness.AnalyzeInsertingCopies(m)
		require.NoError(b, err)
		lap(1)
		_, err = schedule.ByName(context.Background(), a, schedule.Best, schedule.Options{})
		require.NoError(b, err)
		lap(3)
		as, err := Assign(context.Background(), a, Options{})
		require.NoError(b, err)
		lap(4)
		total = as.Stats.TotalBytes
	}
	n := float64(b.N)
	for i, name := range []string{"parse-ms", "copies+analyze-ms", "", "schedule-ms", "assign-ms"} {
		if name == "" {
			continue
		}
		b.ReportMetric(float64(phase[i].Milliseconds())/n, name)
	}
	b.ReportMetric(float64(total), "total-bytes")
}
