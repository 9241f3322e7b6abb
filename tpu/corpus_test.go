package tpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/liveness"
)

// tpuPrepare is the preparation of --target=tpu: default tiles first.
func tpuPrepare(m *hlo.Module, gen Generation) (*liveness.Analysis, error) {
	return preptest.With(context.Background(), m, preptest.Options{Before: func(m *hlo.Module) (bool, error) { return ApplyLayouts(m, gen), nil }})
}

// TestCorpusTPU: every corpus module (the hlo/ sets and the paired dumps)
// is assigned for the TPU target with tiled, padded sizes; each plan
// passes assign.Check and exec's shadow execution; the test prints
// the unpadded and padded totals per module and over the corpus.
func TestCorpusTPU(t *testing.T) {
	files := corpus.Glob(t, "hlo/*/*.hlo")
	for _, set := range []string{"paired", "paired-jax", "paired-jax-cpu"} {
		files = append(files, corpus.Glob(t, set+"/*/*after_optimizations.txt")...)
	}
	var un, pad int64
	ran, refused := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		mods, err := hlo.ParseString(f, string(src))
		if err != nil && strings.Contains(err.Error(), "no HLO module") {
			t.Logf("%s holds no module", filepath.Base(f))
			continue
		}
		require.NoError(t, err, f)
		for _, m := range mods {
			name := filepath.Base(f) + "/" + m.Name
			// A module liveness refuses without tiles is not the TPU's
			// business; note it and go on.
			if _, err := preptest.Prepare(m.Clone(), ""); err != nil {
				t.Logf("%-60s refused by liveness before tiling: %v", name, err)
				refused++
				continue
			}
			start := time.Now()
			a, err := tpuPrepare(m, V4)
			require.NoError(t, err, name)
			as, err := assign.Assign(context.Background(), a, assign.Options{Target: assign.TPU, Budget: 20 * time.Millisecond})
			require.NoError(t, err, name)
			require.NoError(t, assign.Check(as), name)
			rep, err := exec.Shadow(context.Background(), as)
			require.NoError(t, err, name)
			require.Nil(t, rep.Violation, name)
			p := as.Padding()
			require.GreaterOrEqual(t, p.Padded, p.Unpadded, name)
			un += p.Unpadded
			pad += p.Padded
			ran++
			t.Logf("%-60s unpadded %14d padded %14d %6.2fx total %14d %v", name, p.Unpadded, p.Padded, p.Expansion(), as.Stats.TotalBytes, time.Since(start).Round(time.Millisecond))
		}
	}
	t.Logf("%d modules: unpadded %d, padded %d bytes (%.2fx); %d refused by liveness before tiling", ran, un, pad, float64(pad)/float64(un), refused)
	require.Zero(t, refused, "every corpus module prepares")
	require.Greater(t, pad, un)
}
