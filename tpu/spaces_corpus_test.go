package tpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
)

// spacesCorpusMaxInstructions keeps the corpus test fast: larger modules
// are skipped.
const spacesCorpusMaxInstructions = 20000

// TestAssignSpacesCorpus: on the paired dumps (XLA-scheduled) and the
// unscheduled XLA corpus, AssignSpaces with 16 MiB of VMEM succeeds and
// its output passes every check of checkSpaces (verification, text round
// trip, preparation, assign.Check, the shadow run, VMEM within capacity,
// and numerics where the evaluator runs the module within a second);
// across the corpus values are placed.
func TestAssignSpacesCorpus(t *testing.T) {
	const vmem = 16 << 20
	files := corpus.Glob(t, "paired/*/*after_optimizations.txt")
	files = append(files, corpus.Glob(t, "paired-jax/*/*after_optimizations.txt")...)
	files = append(files, corpus.Glob(t, "hlo/xla/*.hlo")...)
	start := time.Now()
	var rows []string
	var (
		modules, placedIn, refused, large, numeric, unparsed int
		sizable, sizablePlaced                               int
		nothing                                              []string
		placed                                               int
		prefetched, saved                                    int64
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
			if m.NumInstructions() > spacesCorpusMaxInstructions {
				large++
				continue
			}
			if _, err := liveness.PrepareWith(m.Clone(), liveness.PrepareOptions{}); err != nil {
				refused++ // not AssignSpaces' business
				continue
			}
			t0 := time.Now()
			out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: vmem})
			took := time.Since(t0)
			require.NoError(t, err, name)
			c := checkSpaces(t, name, m, out, rep, vmem, time.Second)
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
			placed += rep.Placed
			prefetched += rep.BytesPrefetched
			saved += rep.HBMTrafficSaved
			rows = append(rows, fmt.Sprintf("%-60.60s %6d %6d %14d %14d %10d %10d %3d %7.2f",
				name, len(out.Entry.Instructions), rep.Placed, rep.BytesPrefetched, rep.HBMTrafficSaved, rep.VMEMPeak, rep.VMEMHeap, rep.Dropped, took.Seconds()))
		}
	}
	t.Logf("%-60s %6s %6s %14s %14s %10s %10s %3s %7s", "module", "insts", "placed", "prefetched B", "HBM saved B", "VMEM peak", "VMEM heap", "drp", "s")
	for _, r := range rows {
		t.Log(r)
	}
	t.Logf("%d modules in %v: %d with placements, %d values placed, %d bytes prefetched, %d HBM bytes saved; outputs compared with the original on %d; skipped %d files that hold no module, %d modules liveness refuses and %d over %d instructions",
		modules, time.Since(start).Round(time.Millisecond), placedIn, placed, prefetched, saved, numeric, unparsed, refused, large, spacesCorpusMaxInstructions)
	t.Logf("%d of the %d modules with at least 8 entry instructions have placements; none in %v", sizablePlaced, sizable, nothing)
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
