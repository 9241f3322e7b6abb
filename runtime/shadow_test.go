package runtime

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// plan parses, prepares and assigns every module of file.
func plan(t testing.TB, file string, opts assign.Options) []*assign.Assignment {
	mods, err := hlo.ParseFile(file)
	if err != nil {
		return nil
	}
	var out []*assign.Assignment
	for _, m := range mods {
		a, err := liveness.Prepare(m, "")
		if err != nil {
			continue
		}
		as, err := assign.Assign(context.Background(), a, opts)
		if err != nil {
			continue
		}
		out = append(out, as)
	}
	return out
}

// TestShadowCorpus: the plan of every paired module and of every module
// of hlo/ that assigns runs without a violation, under every packer.
func TestShadowCorpus(t *testing.T) {
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	algos := pack.Algorithms()
	if testing.Short() {
		algos = []string{"auto", "xla"}
	}
	runs := 0
	for _, f := range files {
		for _, algo := range algos {
			for _, as := range plan(t, f, assign.Options{Algorithm: algo, Budget: 20 * time.Millisecond}) {
				rep, err := Shadow(context.Background(), as)
				require.NoError(t, err, f)
				require.Nil(t, rep.Violation, "%s --algo=%s: %v", f, algo, rep.Violation)
				require.Equal(t, len(as.Analysis.Sequence), rep.Steps)
				runs++
			}
		}
	}
	require.Greater(t, runs, 300)
	t.Logf("%d runs (%d packers)", runs, len(algos))
}

// TestShadowCatchesMovedValues: moving one value onto a value of another
// buffer that is live at the same time is caught, for values of each kind:
// temps, outputs, in-place updates, loop-carried values and conditional
// branch results.
func TestShadowCatchesMovedValues(t *testing.T) {
	files := corpus.Glob(t, "paired*/*/*after_optimizations.txt")
	kinds := map[string]func(v *liveness.Value, al *assign.Allocation) bool{
		"temp":     func(v *liveness.Value, al *assign.Allocation) bool { return al.Temp },
		"output":   func(v *liveness.Value, al *assign.Allocation) bool { return v.LiveOut },
		"in-place": func(v *liveness.Value, al *assign.Allocation) bool { return len(liveness.InPlacePairs(v.Inst)) > 0 },
		"while-carried": func(v *liveness.Value, al *assign.Allocation) bool {
			for _, u := range v.Buffer.Values {
				if u.IsPhi {
					return true
				}
			}
			return false
		},
		"branch-result": func(v *liveness.Value, al *assign.Allocation) bool {
			c := v.Inst.Parent
			return c != nil && c.Root == v.Inst && !c.IsEntry && len(c.Params) > 0 && isBranch(c)
		},
	}
	caught := map[string]int{}
	for _, f := range files {
		for _, as := range plan(t, f, assign.Options{Budget: 20 * time.Millisecond}) {
			for name, is := range kinds {
				if caught[name] >= 3 {
					continue
				}
				al, vs, to, ws, ok := findClash(as, is)
				if !ok {
					continue
				}
				// Move v's slot into the allocation of w, onto w.
				moved := al.Slots[vs]
				orig := slices.Clone(al.Slots)
				origTo := slices.Clone(to.Slots)
				al.Slots = slices.Delete(al.Slots, vs, vs+1)
				moved.Offset = to.Slots[ws].Offset
				w := to.Slots[ws].Value
				to.Slots = append(to.Slots, moved)
				rep, err := Shadow(context.Background(), as)
				require.NoError(t, err)
				require.NotNil(t, rep.Violation, "%s: %s %s moved onto %s went unnoticed", f, name, moved.Value.Name(), w.Name())
				t.Logf("%s: %s: %v", name, f, rep.Violation)
				al.Slots, to.Slots = orig, origTo
				rep, err = Shadow(context.Background(), as)
				require.NoError(t, err)
				require.Nil(t, rep.Violation, "%s: restored plan", f)
				caught[name]++
			}
		}
	}
	for name := range kinds {
		require.Positive(t, caught[name], "no %s value found to move", name)
	}
}

// isBranch reports whether c is a conditional's branch somewhere in its
// module.
func isBranch(c *hlo.Computation) bool {
	for _, x := range c.Module.Computations {
		for _, in := range x.Instructions {
			if in.Opcode == hlo.OpConditional {
				for _, b := range in.Branches() {
					if b == c {
						return true
					}
				}
			}
		}
	}
	return false
}

// findClash finds a slot (in al, index i) of a value of the wanted kind
// and a slot (in to, index j) of another buffer's value whose live range
// overlaps it strictly, where the first still fits at the second's offset.
func findClash(as *assign.Assignment, is func(*liveness.Value, *assign.Allocation) bool) (*assign.Allocation, int, *assign.Allocation, int, bool) {
	for _, al := range as.Allocations {
		for i, s := range al.Slots {
			v := s.Value
			if s.Size == 0 || !v.Scheduled || v.IsPhi || !is(v, al) {
				continue
			}
			for _, to := range as.Allocations {
				for j, o := range to.Slots {
					w := o.Value
					if o.Size == 0 || !w.Scheduled || w.Buffer == v.Buffer || w.IsPhi || (to == al && o.Offset == s.Offset) {
						continue
					}
					if o.Offset+s.Size > to.Size {
						continue
					}
					if v.Range.Start < w.Range.End && w.Range.Start < v.Range.End {
						return al, i, to, j, true
					}
				}
			}
		}
	}
	return nil, 0, nil, 0, false
}

// TestTimelineMatchesLiveness: on every paired module and every module of
// hlo/ that assigns, the bytes the shadow run holds at each step equal the
// liveness curve's (buffers live at the step plus the memory owned for
// the whole run), and the peak is at least the lower bound.
func TestTimelineMatchesLiveness(t *testing.T) {
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	n := 0
	for _, f := range files {
		for _, as := range plan(t, f, assign.Options{Budget: 10 * time.Millisecond}) {
			rep, err := Shadow(context.Background(), as)
			require.NoError(t, err)
			require.Nil(t, rep.Violation, f)
			tl := rep.Timeline
			curve := as.Analysis.LowerBoundCurve(nil, nil)
			require.Len(t, tl.Live, len(curve), f)
			for i, c := range curve {
				require.Equal(t, c.Live+c.Fixed, tl.Live[i], "%s: step %d", f, i)
			}
			require.GreaterOrEqual(t, tl.Peak, as.Analysis.LowerBound(nil).Bytes, f)
			n++
		}
	}
	require.Greater(t, n, 300)
}
