package tpu

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/internal/randhlo"
)

// spacesRandomCase runs AssignSpaces on the random module of seed, tiled
// for v4, with the given VMEM and SMEM and window, and holds the result to
// every promise of checkSpaces, numerics included; nil when liveness
// refuses the module itself.
func spacesRandomCase(t *testing.T, seed uint64, vmem, smem int64, window int, prefetchOnly bool) *SpaceReport {
	t.Helper()
	src := randhlo.Generate(seed, randhlo.Options{Instructions: 12 + int(seed%40), Scheduled: seed%3 == 0})
	m, err := hlo.ParseModule(fmt.Sprintf("rand_%d.hlo", seed), src)
	require.NoError(t, err)
	if _, err := preptest.Prepare(m.Clone(), ""); err != nil {
		return nil // not AssignSpaces' business
	}
	gen := V4
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: vmem, SMEM: smem, MinWindow: window, PrefetchOnly: prefetchOnly}, &gen))
	require.NoError(t, err, src)
	c := checkSpaces(t, fmt.Sprintf("rand_%d", seed), m, out, rep, vmem, requireNumerics)
	if rep.Placed > 0 || rep.SMEMScalars > 0 {
		require.True(t, c.numeric, "rand_%d: the module did not evaluate", seed)
	}
	require.LessOrEqual(t, rep.SMEMHeap, max(smem, 0))
	return rep
}

// TestAssignSpacesRandom: on 150 random modules (element-wise chains,
// reductions, tuples, in-place updates, calls, while loops, conditionals),
// with VMEM from a few KiB to a few MiB and SMEM from none to plenty,
// every output verifies, round-trips, fits, passes the shadow run and
// computes what the module computes; across them every kind of placement
// happens.
func TestAssignSpacesRandom(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 30
	}
	var prefetches, produced, evicted, scalars, refused int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		vmem := int64(4096) << (seed % 10) // 4 KiB .. 2 MiB
		smem := []int64{0, 4, 64, 1 << 20}[seed%4]
		rep := spacesRandomCase(t, seed, vmem, smem, int(seed%3), seed%7 == 0)
		if rep == nil {
			refused++
			continue
		}
		prefetches += rep.Prefetches
		produced += rep.Produced
		evicted += rep.Evicted
		scalars += rep.SMEMScalars
	}
	t.Logf("%d modules (%d that liveness refuses skipped): %d prefetches, %d produced in VMEM (%d evicted), %d scalar buffers in SMEM", n, refused, prefetches, produced, evicted, scalars)
	// Liveness refuses the random modules marked scheduled whose
	// interference its repair does not settle (they never went through
	// copy insertion, as XLA's scheduled modules have): about a third.
	require.Less(t, refused, n/2)
	require.Positive(t, prefetches)
	require.Positive(t, produced)
	require.Positive(t, evicted)
	require.Positive(t, scalars)
}

// FuzzAssignSpaces: random modules and capacities; AssignSpaces never
// fails on a module liveness prepares, and what it returns keeps every
// promise (checkSpaces, numerics included).
func FuzzAssignSpaces(f *testing.F) {
	f.Add(uint64(1), uint32(1<<20), uint32(64), uint8(0))
	f.Add(uint64(7), uint32(4096), uint32(0), uint8(1))
	f.Add(uint64(42), uint32(65536), uint32(4), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, vmem, smem uint32, window uint8) {
		if vmem == 0 {
			return
		}
		spacesRandomCase(t, seed, int64(vmem), int64(smem), int(window%8), window&8 != 0)
	})
}
