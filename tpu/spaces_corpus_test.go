package tpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
)

// TestAssignSpacesCorpus: on the paired dumps (XLA-scheduled) and the
// unscheduled XLA corpus, tiled as TPU v4 tiles them, AssignSpaces with
// 16 MiB of VMEM and 1 MiB of SMEM succeeds and its output passes every
// check of checkSpaces (verification, text round trip, preparation,
// assign.Check, the shadow run, VMEM and SMEM within capacity, and
// numerics where the evaluator runs the module within numericsMaxSteps
// instructions); across
// the corpus values are placed. The table gives, per module, the values
// prefetched, produced in VMEM and evicted, the bytes moved into VMEM
// (prefetched and produced), the bytes evicted, the HBM traffic saved, the
// HBM of the plan before and after, the VMEM peak and heap, and the
// scalars placed in SMEM.
func TestAssignSpacesCorpus(t *testing.T) {
	const vmem = 16 << 20
	gen := V4
	gen.VMEM = vmem
	files := corpus.Glob(t, "paired/*/*after_optimizations.txt")
	files = append(files, corpus.Glob(t, "paired-jax/*/*after_optimizations.txt")...)
	files = append(files, corpus.Glob(t, "hlo/xla/*.hlo")...)
	start := time.Now()
	var rows []string
	var (
		modules, placedIn, refused, numeric, unparsed   int
		sizable, sizablePlaced                          int
		nothing                                         []string
		placed, prefetches, produced, evicted, scalars  int
		moved, evictedBytes, saved, hbmBefore, hbmAfter int64
		unevaluated                                     = map[string]int{}
	)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		mods, err := hlo.ParseString(f, string(src))
		if err != nil {
			unparsed++ // not a module (a test of a tool's other input)
			continue
		}
		for _, m := range mods {
			name := filepath.Base(f)
			if len(mods) > 1 {
				name += "/" + m.Name
			}
			if _, err := preptest.Prepare(m.Clone(), ""); err != nil {
				refused++ // not AssignSpaces' business
				continue
			}
			t0 := time.Now()
			out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: vmem, SMEM: gen.SMEM}, &gen))
			took := time.Since(t0)
			require.NoError(t, err, name)
			c := checkSpaces(t, name, m, out, rep, vmem, numericsBounded)
			require.LessOrEqual(t, rep.SMEMHeap, gen.SMEM, name)
			modules++
			if rep.Placed > 0 {
				placedIn++
			}
			// A module whose entry has at least 8 instructions of its own
			// usually has room for a window; count those apart.
			if len(out.Entry.Instructions)-2*spacesInEntry(out, rep) >= 8 {
				sizable++
				if rep.Placed > 0 {
					sizablePlaced++
				} else {
					nothing = append(nothing, name)
				}
			}
			if c.numeric {
				numeric++
			}
			if c.unevaluated != nil {
				why := c.unevaluated.Error()
				if errors.Is(c.unevaluated, eval.ErrStepBudget) {
					why = "over numericsMaxSteps"
				}
				unevaluated[why]++
			}
			placed += rep.Placed
			prefetches += rep.Prefetches
			produced += rep.Produced
			evicted += rep.Evicted
			scalars += rep.SMEMScalars
			moved += rep.BytesPrefetched + rep.BytesProduced
			evictedBytes += rep.BytesEvicted
			saved += rep.HBMTrafficSaved
			hbmBefore += rep.HBMPeakBefore
			hbmAfter += rep.HBMPeakAfter
			rows = append(rows, fmt.Sprintf("%-50.50s %6d %5d %5d %5d %13d %12d %14d %13d %13d %9d %9d %4d %3d %6.2f",
				name, len(out.Entry.Instructions), rep.Prefetches, rep.Produced, rep.Evicted, rep.BytesPrefetched+rep.BytesProduced, rep.BytesEvicted,
				rep.HBMTrafficSaved, rep.HBMPeakBefore, rep.HBMPeakAfter, rep.VMEMPeak, rep.VMEMHeap, rep.SMEMScalars, rep.Dropped, took.Seconds()))
		}
	}
	t.Logf("%-50s %6s %5s %5s %5s %13s %12s %14s %13s %13s %9s %9s %4s %3s %6s", "module", "insts", "pref", "prod", "evict",
		"to VMEM B", "evicted B", "HBM saved B", "HBM peak bef", "HBM peak aft", "VMEM peak", "VMEM heap", "smem", "drp", "s")
	for _, r := range rows {
		t.Log(r)
	}
	t.Logf("%d modules in %v: %d with placements; %d values placed in VMEM (%d prefetched, %d produced there, %d of them evicted), %d bytes moved to VMEM, %d evicted, %d bytes of HBM traffic saved; the HBM peak %d -> %d bytes; %d scalar buffers in SMEM; outputs compared with the original on %d; skipped %d files that hold no module, %d modules liveness refuses",
		modules, time.Since(start).Round(time.Millisecond), placedIn, placed, prefetches, produced, evicted, moved, evictedBytes, saved, hbmBefore, hbmAfter, scalars, numeric, unparsed, refused)
	t.Logf("%d of the %d modules with at least 8 entry instructions have placements; none in %v", sizablePlaced, sizable, nothing)
	t.Logf("outputs not compared, by what stopped the reference run: %v", unevaluated)
	require.Positive(t, modules)
	require.GreaterOrEqual(t, placedIn, modules*2/5, "modules with placements")
	require.GreaterOrEqual(t, sizablePlaced, sizable*4/5, "modules of 8 or more entry instructions with placements")
	require.Positive(t, numeric)
}

// spacesInEntry counts the prefetches AssignSpaces put in out's entry.
func spacesInEntry(out *hlo.Module, rep *SpaceReport) int {
	n := 0
	for _, d := range rep.Decisions {
		if d.Computation == out.Entry.Name {
			n++
		}
	}
	return n
}
