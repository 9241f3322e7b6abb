package eager

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// TestEagerOrderCorpus runs every paired before_optimizations module of
// the corpus and the bundled examples op by op (both release rules) and
// jitted, on a device large enough for all, and holds the order the model
// implies: held at least last use (the same allocations, fewer frees),
// last use at least jitted (one program reuses buffers across ops and
// fuses them; op by op nothing is fused or shared). The ratios are logged.
func TestEagerOrderCorpus(t *testing.T) {
	files := corpus.All(t, "paired/*/*before_optimizations.txt")
	require.NotEmpty(t, files)
	files = corpus.Sample(t, files)
	files = append(files, "../testdata/demo.hlo", "../testdata/transformer.hlo")
	dev := gpu.Device{Name: "big", Memory: 1 << 40}
	newClient := func() (*gpu.Client, error) {
		return gpu.NewClient(dev, gpu.ClientConfig{MemFraction: 1, Allocator: gpu.Platform}, gpu.ClientOptions{})
	}
	copts := compile.Options{Fuse: true}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			mods, err := hlo.ParseFile(file)
			require.NoError(t, err)
			for _, m := range mods {
				held, err := Compare(context.Background(), m, newClient, Options{Release: Held, Compile: copts, LiveAt: -1})
				require.NoError(t, err)
				last, err := Compare(context.Background(), m, newClient, Options{Release: LastUse, Compile: copts, LiveAt: -1})
				require.NoError(t, err)
				require.True(t, held.Eager.Fits() && last.Eager.Fits() && held.Jit.Fits())
				require.GreaterOrEqual(t, held.Eager.Peak, last.Eager.Peak, "held below last use")
				require.GreaterOrEqual(t, last.Eager.Peak, last.Jit.Peak, "the jitted program above op by op (last use)")
				t.Logf("%s: held %d, last use %d, jitted %d bytes: held/jit %.2fx, last-use/jit %.2fx",
					m.Name, held.Eager.Peak, last.Eager.Peak, held.Jit.Peak, held.Ratio(), last.Ratio())
			}
		})
	}
}
