package assign

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

// checkBounds holds the invariant of issue 9: no lower bound hlomem prints
// exceeds the plan it bounds.
//   - liveness' LowerBoundWith the target's reuse rule (every buffer,
//     before any decision of which operand to reuse) bounds the total, and
//     is what Stats.LowerBound reports; LowerBound (any target) is no
//     higher;
//   - each temp heap's lower bound bounds its height, and their sum
//     (Stats.TempLowerBound) the temp bytes.
//
// XLA's minimum (Stats.XLAMinimumBytes) is not a bound and is not checked.
func checkBounds(t testing.TB, name string, as *Assignment) {
	t.Helper()
	lb := as.Analysis.LowerBoundWith(nil, as.canShare)
	require.Equal(t, lb.Bytes, as.Stats.LowerBound, "%s: Stats.LowerBound is liveness' bound with the target's reuse", name)
	require.LessOrEqual(t, lb.Bytes, as.Stats.TotalBytes, "%s: lower bound above the total", name)
	any := as.Analysis.LowerBound(nil)
	require.LessOrEqual(t, any.Bytes, lb.Bytes, "%s: the target's rule only raises the bound", name)
	var temp int64
	for _, h := range as.Heaps {
		require.LessOrEqual(t, h.LowerBound, h.Solution.Height(), "%s: heap %d", name, h.Color)
		temp += h.LowerBound
	}
	require.Equal(t, temp, as.Stats.TempLowerBound, "%s", name)
	require.LessOrEqual(t, temp, as.Stats.TempBytes, "%s: temp lower bound above the temp bytes", name)
	require.GreaterOrEqual(t, as.Stats.TempFragmentation, int64(0), "%s", name)
}

// TestBoundsBelowPlansCorpus checks checkBounds with XLA's packer on every corpus
// module and paired dump of up to 5,000 instructions (assignModule checks
// them too, so the corpus and paired tests cover the other packers and the
// larger modules), and logs how close the bound comes to the totals.
func TestBoundsBelowPlansCorpus(t *testing.T) {
	files := corpusModuleFiles(t)
	modules := 0
	var bound, total int64
	for _, f := range files {
		mods, err := hlo.ParseFile(f)
		if err != nil {
			continue // the one file without a module; hlo's tests cover it
		}
		for _, m := range mods {
			if m.NumInstructions() > 5000 {
				continue
			}
			modules++
			as := assignModule(t, m, Options{Algorithm: "xla"})
			checkBounds(t, fmt.Sprintf("%s/%s", filepath.Base(f), m.Name), as)
			if r := float64(as.Stats.LowerBound) / float64(as.Stats.TotalBytes); r < 0.9 {
				t.Logf("LOOSE %.3f %s %s %d %d xlamin %d", r, f, m.Name, as.Stats.LowerBound, as.Stats.TotalBytes, as.Stats.XLAMinimumBytes)
			}
			bound += as.Stats.LowerBound
			total += as.Stats.TotalBytes
		}
	}
	require.NotZero(t, modules)
	t.Logf("%d modules: the lower bounds sum to %.2f%% of XLA-packed totals", modules, 100*float64(bound)/float64(total))
}
