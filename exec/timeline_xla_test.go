package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// xlaPlan is what XLA's buffer-assignment dump says XLA's own plan holds,
// read from the dump alone: XLA's allocations, the offset and size at
// which each holds its values, and XLA's BufferLiveRange of each value
// (inclusive). Nothing of it comes from hlomem's analysis.
type xlaPlan struct {
	// Held[t] is the bytes the plan holds at step t (0..Max): in each
	// allocation, the bytes covered by its values live at t (values on
	// the same bytes count once); a constant, a thread-local and an entry
	// parameter that no output reuses hold theirs for the whole run.
	Held []int64
	// Takeovers are the steps where the instruction run at the step puts
	// a value it defines on bytes of a value whose range ends there: both
	// are live at the step, on the same bytes.
	Takeovers []takeover
}

// takeover is one value placed at step Step on bytes of a value ending
// there: To on From's bytes, Bytes of them shared (To, From are
// name{index}).
type takeover struct {
	Step     int
	To, From string
	Bytes    int64
}

// readXLAPlan reads xlaPlan from XLA's dump. It fails when a value XLA
// places has no live range in the dump.
func readXLAPlan(t *testing.T, name string, x *assign.XLAAssignment) xlaPlan {
	t.Helper()
	lr := x.LiveRange
	require.NotNil(t, lr, "%s: no HloLiveRange block", name)
	type span struct{ start, end int }
	ranges := make(map[string]span, len(lr.Ranges))
	for _, r := range lr.Ranges {
		ranges[r.Name+r.Index.String()] = span{r.Start, r.End}
	}
	p := xlaPlan{Held: make([]int64, lr.Max+1)}
	for _, al := range x.Allocations {
		resident := al.Constant || al.ThreadLocal || al.Parameter >= 0 && !al.ParameterAliased
		type chunk struct {
			lo, hi     int64
			start, end int
			inst, key  string
		}
		var chunks []chunk
		for _, v := range al.Values {
			key := v.Name + v.Index.String()
			c := chunk{v.Offset, v.Offset + v.Size, 0, lr.Max, v.Name, key}
			if !resident {
				r, ok := ranges[key]
				require.True(t, ok, "%s: XLA places %s (allocation %d) and gives it no live range", name, key, al.Index)
				c.start, c.end = r.start, r.end
			}
			chunks = append(chunks, c)
		}
		for step := 0; step <= lr.Max; step++ {
			var live []chunk
			for _, c := range chunks {
				if c.start <= step && step <= c.end && c.hi > c.lo {
					live = append(live, c)
				}
			}
			sort.Slice(live, func(i, j int) bool { return live[i].lo < live[j].lo })
			var top int64 // the union of the live chunks' bytes
			for _, c := range live {
				if lo := max(c.lo, top); c.hi > lo {
					p.Held[step] += c.hi - lo
				}
				top = max(top, c.hi)
			}
		}
		if resident {
			continue
		}
		for _, to := range chunks {
			if to.start >= len(lr.Sequence) || lr.Sequence[to.start] != to.inst {
				continue
			}
			for _, from := range chunks {
				if from.end == to.start && from.start < to.start && from.inst != to.inst {
					if n := min(to.hi, from.hi) - max(to.lo, from.lo); n > 0 {
						p.Takeovers = append(p.Takeovers, takeover{to.start, to.key, from.key, n})
					}
				}
			}
		}
	}
	return p
}

// TestTimelineMatchesXLACorpus holds the shadow run's Timeline to XLA's
// own figures, on every paired module planned with --algo=xla (the
// after_optimizations modules are scheduled, so the steps are XLA's, and
// the allocations are XLA's): at every step the Timeline's bytes must be
// the bytes XLA's plan holds there as its dump says (xlaPlan), hlomem's
// analysis computing none of them, with one counted difference:
//
//   - the Timeline counts every buffer at its size, so at a step where an
//     instruction puts its output on the bytes of an operand that dies
//     there (an elementwise fusion reusing its operand's slot), it counts
//     both, where XLA's plan holds the bytes once. Where the two values
//     are one buffer of hlomem's analysis (a dynamic-update-slice in
//     place, a loop's state), the Timeline counts them once, as XLA's
//     plan does; which takeovers are two buffers is all the test takes
//     from hlomem's analysis. So the Timeline overstates the bytes the
//     plan holds at those steps, by the bytes taken over (logged).
//
// XLA's "Live ranges at T (peak)" section checks the reading of the
// ranges: the values it lists are exactly those whose BufferLiveRange
// holds T (by name; the legacy layout prints no shape index). Its byte
// figures are not the Timeline's and are only logged: they count each
// value apart (aliases twice) and, in the legacy layout, at its
// instruction's whole shape.
func TestTimelineMatchesXLACorpus(t *testing.T) {
	files := corpus.Glob(t, "paired*/*/*after_optimizations.txt")
	var modules, steps, same, takeovers, twice, overSteps, peakOver, overTotal, peakSame int
	var overBytes, worst int64
	worstAt := ""
	for _, f := range files {
		dir := filepath.Dir(f)
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		target := assign.GPU
		if strings.HasPrefix(name, "paired-jax-cpu/") {
			target = assign.CPU
		}
		mods, err := hlo.ParseFile(f)
		require.NoError(t, err, name)
		require.True(t, mods[0].IsScheduled, name)
		// The dumps' XLA used the live-range rules of 2025.
		a, err := preptest.With(context.Background(), mods[0], preptest.Options{XLARules: liveness.Rules2025})
		require.NoError(t, err, name)
		as, err := assign.Assign(context.Background(), a, assign.Options{Algorithm: "xla", Target: target})
		require.NoError(t, err, name)
		rep, err := Shadow(context.Background(), as)
		require.NoError(t, err, name)
		require.Nil(t, rep.Violation, name)
		tl := rep.Timeline

		ba, err := filepath.Glob(strings.TrimSuffix(f, ".txt") + "-buffer-assignment.txt")
		require.NoError(t, err)
		require.Len(t, ba, 1, name)
		src, err := os.ReadFile(ba[0])
		require.NoError(t, err)
		x, err := assign.ReadXLA(ba[0], src)
		require.NoError(t, err, name)
		p := readXLAPlan(t, name, x)
		require.Len(t, tl.Live, len(p.Held), "%s: steps", name)

		buffer := make(map[string]int, len(a.Values))
		for _, v := range a.Values {
			if v.Buffer != nil {
				buffer[v.Name()] = v.Buffer.ID
			}
		}
		twiceAt := make([]int64, len(p.Held))
		for _, o := range p.Takeovers {
			takeovers++
			bt, okT := buffer[o.To]
			bf, okF := buffer[o.From]
			require.True(t, okT && okF, "%s: %s or %s is not a value of the analysis", name, o.To, o.From)
			if bt != bf {
				twice++
				twiceAt[o.Step] += o.Bytes
			}
		}
		var xlaPeak int64
		for step, held := range p.Held {
			require.Equal(t, held, tl.Live[step],
				"%s: step %d (%s): the bytes XLA's plan holds (%d; of them %d taken over in place from an operand of another buffer), against the Timeline's",
				name, step, stepName(x, step), held, twiceAt[step])
			if twiceAt[step] > 0 {
				overSteps++
				overBytes += twiceAt[step]
			} else {
				same++
			}
			xlaPeak = max(xlaPeak, held)
		}
		if tl.Peak > as.Stats.TotalBytes {
			overTotal++
		}
		if tl.Peak > xlaPeak {
			peakOver++
			if tl.Peak-xlaPeak > worst {
				worst, worstAt = tl.Peak-xlaPeak, fmt.Sprintf("%s (Timeline %d bytes at step %d, XLA's plan at most %d)", name, tl.Peak, tl.PeakStep, xlaPeak)
			}
		}

		lr := x.LiveRange
		require.GreaterOrEqual(t, lr.PeakTime, 0, "%s: no peak section", name)
		var live, listed []string
		for _, r := range lr.Ranges {
			if r.Start <= lr.PeakTime && lr.PeakTime <= r.End {
				live = append(live, r.Name)
			}
		}
		var xlaBytes int64
		for _, pv := range lr.Peak {
			listed = append(listed, pv.Name)
			xlaBytes += pv.Bytes
		}
		slices.Sort(live)
		slices.Sort(listed)
		require.Equal(t, listed, live, "%s: the values XLA lists at its peak %d, and those its live ranges hold there", name, lr.PeakTime)
		if tl.PeakStep == lr.PeakTime {
			peakSame++
		}
		if testing.Verbose() {
			t.Logf("%s: %d steps; XLA's peak section: step %d, %d values, %d bytes as it counts them; XLA's plan holds %d bytes there and at most %d; the Timeline holds %d there, at most %d (step %d)",
				name, len(p.Held), lr.PeakTime, len(lr.Peak), xlaBytes, p.Held[lr.PeakTime], xlaPeak, tl.Live[lr.PeakTime], tl.Peak, tl.PeakStep)
		}
		modules++
		steps += len(p.Held)
	}
	require.GreaterOrEqual(t, modules, corpus.Enough(93, len(files)))
	t.Logf("%d paired modules, %d steps: the Timeline is the bytes XLA's plan holds at %d steps without a takeover of another buffer's bytes, and at %d with one (%d bytes taken over "+
		"at them; %d of XLA's %d takeovers are two buffers of hlomem's analysis); its peak step is XLA's peak moment on %d modules",
		modules, steps, same, overSteps, overBytes, twice, takeovers, peakSame)
	t.Logf("the Timeline's peak exceeds the most XLA's plan holds at a step on %d modules, and all the bytes of the plan on %d; most by %d bytes: %s",
		peakOver, overTotal, worst, worstAt)
}

// stepName is the instruction XLA's schedule runs at step ("" past its
// end).
func stepName(x *assign.XLAAssignment, step int) string {
	if step < len(x.LiveRange.Sequence) {
		return x.LiveRange.Sequence[step]
	}
	return ""
}
