package assign

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

// occupancyNaive recomputes the bytes occupied at step t from the
// definition (occupancy.go), sharing no code with Occupancy: every
// allocation's occupied byte ranges at t, their union measured by sorting.
func occupancyNaive(as *Assignment, t int) int64 {
	n := len(as.Analysis.Sequence)
	var total int64
	for _, al := range as.Allocations {
		if !al.Temp {
			in := al.IsParameter() || al.Constant || al.ThreadLocal
			if !in {
				lo, hi := n, -1
				for _, s := range al.Slots {
					if !s.Value.Scheduled {
						lo, hi = 0, n-1
						break
					}
					lo, hi = min(lo, s.Value.Range.Start), max(hi, s.Value.Range.End)
				}
				in = lo <= t && t <= hi
			}
			if in {
				total += al.Size
			}
			continue
		}
		align := as.ColorAlign(al.Color)
		type iv struct{ lo, hi int64 }
		var ivs []iv
		for _, s := range al.Slots {
			v := s.Value
			if s.Size == 0 || v.Scheduled && !v.Range.Contains(t) {
				continue
			}
			hi := s.Offset + (s.Size+align-1)/align*align
			ivs = append(ivs, iv{s.Offset, min(hi, al.Size)})
		}
		slices.SortFunc(ivs, func(a, b iv) int { return int(a.lo - b.lo) })
		end := int64(-1)
		for _, x := range ivs {
			if x.lo >= end {
				total += x.hi - x.lo
				end = x.hi
			} else if x.hi > end {
				total += x.hi - end
				end = x.hi
			}
		}
	}
	return total
}

// checkOccupancy holds the invariants of the plan's occupancy (issue 27):
// the curve follows the definition (occupancyNaive), never exceeds the
// total, its peak is its maximum at the first step reaching it, the lower
// bound is no higher than the peak, and what occupies memory at the peak
// adds up to the peak.
func checkOccupancy(t testing.TB, name string, as *Assignment, naive bool) {
	t.Helper()
	o := as.Occupancy()
	require.Len(t, o.Bytes, len(as.Analysis.Sequence), name)
	var top int64
	first := -1
	for s, b := range o.Bytes {
		require.LessOrEqual(t, b, as.Stats.TotalBytes, "%s: step %d occupies more than the total", name, s)
		if naive {
			require.Equal(t, occupancyNaive(as, s), b, "%s: step %d", name, s)
		}
		if b > top {
			top, first = b, s
		}
	}
	require.Equal(t, top, o.Peak, name)
	require.Equal(t, first, o.PeakStep, name)
	require.LessOrEqual(t, as.Stats.LowerBound, o.Peak, "%s: the lower bound exceeds the plan's peak", name)
	require.LessOrEqual(t, o.Peak, as.Stats.TotalBytes, name)
	step, peak, at := as.Peak()
	require.Equal(t, o.PeakStep, step, name)
	require.Equal(t, o.Peak, peak, name)
	var sum int64
	for i, x := range at {
		sum += x.Bytes
		require.Positive(t, x.Bytes, name)
		require.NotEmpty(t, x.Buffers, name)
		require.LessOrEqual(t, x.Offset+x.Bytes, x.Allocation.Size, name)
		if i > 0 {
			require.GreaterOrEqual(t, at[i-1].Bytes, x.Bytes, name)
		}
	}
	require.Equal(t, peak, sum, "%s: what occupies memory at the peak adds up to it", name)
}

// TestOccupancyCorpus checks checkOccupancy on every corpus module and
// paired dump of up to 5,000 instructions, with XLA's packer and the
// default one (the naive recomputation of every step up to 2,000
// instructions), and logs how far the peak sits below the total.
func TestOccupancyCorpus(t *testing.T) {
	files := corpusModuleFiles(t)
	modules := 0
	var peak, total int64
	for _, f := range files {
		mods, err := hlo.ParseFile(f)
		if err != nil {
			continue // the one file without a module; hlo's tests cover it
		}
		for _, m := range mods {
			if m.NumInstructions() > 5000 {
				continue
			}
			for _, algo := range []string{"xla", "auto"} {
				as := assignModule(t, m.Clone(), Options{Algorithm: algo, Budget: 20 * time.Millisecond})
				name := fmt.Sprintf("%s/%s %s", filepath.Base(f), m.Name, algo)
				checkOccupancy(t, name, as, m.NumInstructions() <= 2000)
				if algo == "xla" {
					modules++
					peak += as.Occupancy().Peak
					total += as.Stats.TotalBytes
				}
			}
		}
	}
	require.NotZero(t, modules)
	t.Logf("%d modules: the peaks sum to %.2f%% of the XLA-packed totals", modules, 100*float64(peak)/float64(total))
}

// occupancyHLO has a parameter used only at the start, a constant used
// only at the end, an output and temps of odd sizes.
const occupancyHLO = `HloModule occ, is_scheduled=true
ENTRY e {
  p = f32[100]{0} parameter(0)
  a = f32[100]{0} negate(p)
  b = f32[10]{0} slice(a), slice={[0:10]}
  c = f32[10]{0} exponential(b)
  k = f32[10]{0} constant({1,2,3,4,5,6,7,8,9,10})
  ROOT r = f32[10]{0} add(c, k)
}`

// TestOccupancySmall: the curve of a small plan, step by step, from the
// definition: the parameter (400 B) and the constant (40 B) throughout,
// the temps' chunks rounded to the 128-byte alignment over their live
// ranges, the output from its definition.
func TestOccupancySmall(t *testing.T) {
	m, err := hlo.ParseModule("occ.hlo", occupancyHLO)
	require.NoError(t, err)
	as := assignModule(t, m, Options{})
	checkOccupancy(t, "occ", as, true)
	o := as.Occupancy()
	// Steps: p a b c k r. a (400 B -> 512) lives 1-2, b (40 B -> 128)
	// 2-3 unless it takes a's place, c 3-5 unless it takes b's, r (the
	// output, 40 B) from 5.
	for s, b := range o.Bytes {
		t.Logf("step %d %-3s %d", s, as.Analysis.Sequence[s].Name, b)
	}
	require.Equal(t, as.Stats.ParameterBytes+as.Stats.ConstantBytes, o.Bytes[0], "step 0: the parameter and the constant")
	step, peak, at := as.Peak()
	require.Equal(t, o.PeakStep, step)
	kinds := map[string]int64{}
	for _, x := range at {
		kinds[x.Kind()] += x.Bytes
	}
	require.Equal(t, peak, kinds["parameter"]+kinds["constant"]+kinds["maybe-live-out"]+kinds["preallocated-temp"])
	require.EqualValues(t, 400, kinds["parameter"])
	require.EqualValues(t, 40, kinds["constant"])
}
