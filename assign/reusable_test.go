package assign

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
)

// planOf lists, per buffer, its allocation's index and size and the
// buffer's offset there.
func planOf(as *Assignment) [][3]int64 {
	plan := make([][3]int64, len(as.Analysis.Buffers))
	for _, b := range as.Analysis.Buffers {
		v := b.Values[0]
		al, slot, ok := as.AllocationOf(v)
		if !ok {
			plan[b.ID] = [3]int64{-1, -1, -1}
			continue
		}
		plan[b.ID] = [3]int64{int64(al.Index), al.Size, slot.Offset}
	}
	return plan
}

// TestReuseIndexKeepsXLAsChoiceCorpus: the reusable-allocation index (busy
// bits, or tails and busy counts when the bits would be too large) changes
// nothing but the time taken. Every corpus module of
// up to 5,000 instructions, Mixtral, the paired dumps and random modules
// get the same plan with the index as with XLA's plain scan.
func TestReuseIndexKeepsXLAsChoiceCorpus(t *testing.T) {
	files := corpusModuleFiles(t)
	compare := func(name string, a *liveness.Analysis) {
		opts := Options{Algorithm: "xla"}
		with, err := Assign(context.Background(), a, opts)
		require.NoError(t, err, name)
		reuseNoBits = true
		fallback, err := Assign(context.Background(), a, opts)
		reuseNoBits = false
		require.NoError(t, err, name)
		reuseScan = true
		defer func() { reuseScan = false }()
		without, err := Assign(context.Background(), a, opts)
		require.NoError(t, err, name)
		require.Equal(t, planOf(without), planOf(with), name)
		require.Equal(t, without.Stats, with.Stats, name)
		require.Equal(t, planOf(without), planOf(fallback), "%s, without the bit index", name)
	}
	n, visited := 0, 0
	for _, f := range files {
		mods, err := hlo.ParseFile(f)
		if err != nil {
			continue
		}
		visited += len(mods)
		for _, m := range mods {
			// Mixtral, with 979 reusable allocations, the case the index
			// is for; the other large modules add time, not cases.
			if m.NumInstructions() > 5000 && filepath.Base(f) != "tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_1x8.hlo" {
				continue
			}
			compare(filepath.Base(f), analyze(t, m))
			n++
		}
	}
	for seed := uint64(0); seed < 200; seed++ {
		m, err := hlo.ParseModule("rand.hlo", randhlo.Generate(seed, randhlo.Options{Instructions: 20 + int(seed%80)}))
		require.NoError(t, err)
		compare("random", analyze(t, m))
		n++
		visited++
	}
	require.GreaterOrEqual(t, n, corpus.Enough(301, visited))
}
