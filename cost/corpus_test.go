package cost

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// TestCorpusModules costs every paired XLA dump (the modules before and
// after XLA's optimizations): the checks of checkModule hold, every module
// moves bytes, and a module with a dot or convolution has FLOPs.
func TestCorpusModules(t *testing.T) {
	files := corpus.Files(t, "paired/*/*.txt", "paired-jax/*/*.txt", "paired-jax-cpu/*/*.txt")
	n := 0
	for _, f := range files {
		base := filepath.Base(f)
		if !(filepath.Ext(base) == ".txt" && (contains(base, "before_optimizations.txt") || contains(base, "after_optimizations.txt"))) {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		m, err := hlo.ParseModule(f, string(src))
		require.NoError(t, err, f)
		checkModule(t, m)
		c := Module(m)
		require.Positive(t, c.Bytes(), f)
		if hasOp(m, hlo.OpDot, hlo.OpConvolution) {
			require.Positive(t, c.FLOPs, f)
		}
		n++
		t.Logf("%s: %d FLOPs, %d transcendentals, %d bytes read, %d written, loop %v", base, c.FLOPs, c.Transcendentals, c.BytesRead, c.BytesWritten, c.Loop)
	}
	require.Positive(t, n)
}

func contains(s, sub string) bool { return len(s) >= len(sub) && s[len(s)-len(sub):] == sub }

func hasOp(m *hlo.Module, ops ...hlo.Opcode) bool {
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, op := range ops {
				if in.Opcode == op {
					return true
				}
			}
		}
	}
	return false
}
