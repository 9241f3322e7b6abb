package remat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// The paired XLA:GPU dumps (torch-xla and JAX, scheduled after
// optimizations) at 90%..60% of their tracker peak: the pass refuses
// (asynchronous computations) with ErrUnsupported or returns a module
// that verifies and prints as a fixed point of parse and print, with a
// peak no higher than before. Outputs are not evaluated here (cuBLAS
// and cuDNN custom calls have no evaluator); the summary is logged.
func TestPairedCorpus(t *testing.T) {
	files := corpus.Files(t, "paired/*/*_gpu_after_optimizations.txt", "paired-jax/*/*_gpu_after_optimizations.txt")
	var refused, runs, fits, recomputed int
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.ParseModule(f, string(src))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !m.IsScheduled {
			continue
		}
		res, err := Rematerialize(context.Background(), m, math.MaxInt64, Options{})
		if errors.Is(err, ErrUnsupported) {
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, pct := range []int64{90, 80, 70, 60} {
			limit := res.PeakBefore * pct / 100
			t.Run(fmt.Sprintf("%s/%d%%", filepath.Base(filepath.Dir(f)), pct), func(t *testing.T) {
				r, err := Rematerialize(context.Background(), m, limit, Options{})
				if err != nil {
					t.Fatal(err)
				}
				runs++
				recomputed += len(r.Recomputed)
				if r.Fits {
					fits++
				}
				if r.PeakAfter > r.PeakBefore {
					t.Errorf("peak rose %d -> %d", r.PeakBefore, r.PeakAfter)
				}
				if err := hlo.Verify(r.Module); err != nil {
					t.Fatal(err)
				}
				out := r.Module.String()
				back, err := hlo.ParseModule("back", out)
				if err != nil || back.String() != out {
					t.Fatalf("round trip: %v", err)
				}
			})
		}
	}
	t.Logf("%d modules, %d refused, %d runs, %d fit, %d recomputations", len(files), refused, runs, fits, recomputed)
}
