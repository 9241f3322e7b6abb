package gpu

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// TestPairedCorpusOnA100: every module of every paired dump (the programs
// XLA ran: torch-xla and JAX on XLA:GPU, JAX on XLA:CPU) runs on an A100
// 80 GB model with JAX's defaults and verification on: the plan's shadow
// execution and a check that no two device allocations overlap. After
// each run the bytes in use are exactly the arguments' and outputs'
// buffers, and after deleting them nothing is in use.
func TestPairedCorpusOnA100(t *testing.T) {
	var files []string
	for _, pat := range []string{"paired/*/*after_optimizations.txt", "paired-jax/*/*after_optimizations.txt", "paired-jax-cpu/*/*after_optimizations.txt"} {
		files = append(files, corpus.Glob(t, pat)...)
	}
	require.GreaterOrEqual(t, len(files), corpus.Enough(90, 1))
	ran, tooBig := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		mods, err := hlo.ParseString(f, string(src))
		require.NoError(t, err, f)
		for _, m := range mods {
			name := filepath.Base(filepath.Dir(f)) + "/" + m.Name
			planned, err := compile.Compile(context.Background(), m, compile.Options{Assign: assign.Options{Target: assign.GPU}})
			require.NoError(t, err, name)
			as := planned.Assignment
			require.NoError(t, err, name)
			p, err := NewProgram(m.Name, as)
			require.NoError(t, err, name)
			// JAX's defaults first; a program that needs more than their
			// 75% gets the whole device (XLA_PYTHON_CLIENT_MEM_FRACTION=1),
			// and one that needs more than the device must fail with an
			// OOM that is not fragmentation.
			var c *Client
			var params int64
			var res *RunResult
			setting := "default"
			for _, frac := range []float64{0.75, 1} {
				cfg := DefaultConfig()
				cfg.MemFraction = frac
				c, err = NewClient(A100_80GB, cfg, ClientOptions{Verify: true})
				require.NoError(t, err)
				params = 0
				for _, l := range p.Params {
					if _, err = c.Put(l.Name, l.Bytes, l.Shape.String()); err != nil {
						break
					}
					params += RoundBytes(l.Bytes)
				}
				if err == nil {
					res, err = c.Run(context.Background(), p, ParamNames(p), nil)
				}
				if err == nil {
					break
				}
				var oom *OOMError
				require.ErrorAs(t, err, &oom, name)
				require.False(t, oom.Fragmented(), "%s: %v", name, err)
				setting = "fraction 1"
			}
			if err != nil {
				require.Greater(t, as.Stats.TotalBytes, A100_80GB.Memory, "%s: fails although the plan fits the device: %v", name, err)
				require.True(t, p.shadowed, name)
				t.Logf("%-70s needs %d bytes, more than the device: out of memory", name, as.Stats.TotalBytes)
				tooBig++
				continue
			}
			// What is in use is the arrays' buffers, each once.
			st := c.Stats()
			require.Equal(t, heldBytes(c), st.BytesInUse, name)
			require.GreaterOrEqual(t, st.PeakBytesInUse, params+RoundBytes(p.TempBytes)-RoundBytes(0), name)
			for _, arr := range c.Arrays() {
				require.NoError(t, c.Delete(arr.Name), name)
			}
			require.Equal(t, int64(0), c.Stats().BytesInUse, name)
			require.True(t, p.shadowed, name)
			ran++
			t.Logf("%-70s %-10s params %12d temps %12d allocated %12d peak %12d", name, setting, params, p.TempBytes, res.Allocated, st.PeakBytesInUse)
		}
	}
	t.Logf("%d modules ran on %s, %d need more than the device", ran, A100_80GB.Name, tooBig)
	require.Less(t, tooBig, ran)
}
