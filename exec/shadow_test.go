package exec

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// prepared parses and prepares every module of file (the ones that
// parse and prepare).
func prepared(file string) []*liveness.Analysis {
	mods, err := hlo.ParseFile(file)
	if err != nil {
		return nil
	}
	var out []*liveness.Analysis
	for _, m := range mods {
		a, err := preptest.Prepare(m, "")
		if err != nil {
			continue
		}
		out = append(out, a)
	}
	return out
}

// eachFile runs f on every file as a parallel subtest of t (named for
// the file, its directory for a paired dump) and returns once all have
// ended, so that the caller asserts on what they tallied (under its own
// lock: f runs concurrently).
func eachFile(t *testing.T, files []string, f func(t *testing.T, file string)) {
	t.Helper()
	t.Run("modules", func(t *testing.T) {
		for _, file := range files {
			name := filepath.Base(file)
			if strings.HasSuffix(name, "_optimizations.txt") {
				name = filepath.Base(filepath.Dir(file))
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f(t, file)
			})
		}
	})
}

// plan parses, prepares and assigns every module of file.
func plan(t testing.TB, file string, opts assign.Options) []*assign.Assignment {
	var out []*assign.Assignment
	for _, a := range prepared(file) {
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
	var mu sync.Mutex
	runs, tried := 0, 0
	eachFile(t, files, func(t *testing.T, f string) {
		// Each module is prepared once (under the default scheduler, the
		// search) and planned by every packer.
		for _, a := range prepared(f) {
			for _, algo := range algos {
				mu.Lock()
				tried++
				mu.Unlock()
				as, err := assign.Assign(context.Background(), a, assign.Options{Algorithm: algo, Budget: 20 * time.Millisecond})
				if err != nil {
					continue
				}
				rep, err := Shadow(context.Background(), as)
				require.NoError(t, err, f)
				require.Nil(t, rep.Violation, "%s --algo=%s: %v", f, algo, rep.Violation)
				require.Equal(t, len(as.Analysis.Sequence), rep.Steps)
				mu.Lock()
				runs++
				mu.Unlock()
			}
		}
	})
	require.GreaterOrEqual(t, runs, corpus.Enough(301, tried))
	t.Logf("%d runs (%d packers)", runs, len(algos))
}

// TestShadowCatchesMovedValuesCorpus: moving one value onto a value of another
// buffer that is live at the same time is caught, for values of each kind:
// temps, outputs, in-place updates, loop-carried values and conditional
// branch results.
func TestShadowCatchesMovedValuesCorpus(t *testing.T) {
	files := corpus.Glob(t, "paired*/*/*after_optimizations.txt")
	kinds := valueKinds()
	caught := map[string]int{}
	for _, f := range files {
		for _, as := range plan(t, f, assign.Options{Budget: 20 * time.Millisecond}) {
			for name, is := range kinds {
				if caught[name] >= 3 {
					continue
				}
				cs := clashes(as, is)
				if len(cs) == 0 {
					continue
				}
				v, w, restore := cs[0].move()
				rep, err := Shadow(context.Background(), as)
				require.NoError(t, err)
				require.NotNil(t, rep.Violation, "%s: %s %s moved onto %s went unnoticed", f, name, v.Name(), w.Name())
				t.Logf("%s: %s: %v", name, f, rep.Violation)
				restore()
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

// valueKinds are the kinds of value a corrupted-plan test moves, each with
// the test that picks them.
func valueKinds() map[string]func(v *liveness.Value, al *assign.Allocation) bool {
	return map[string]func(v *liveness.Value, al *assign.Allocation) bool{
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

// clash is a slot (in al, index i) of a value of the wanted kind and a
// slot (in to, index j) of another buffer's value whose live range overlaps
// it strictly, where the first still fits at the second's offset.
type clash struct {
	al *assign.Allocation
	i  int
	to *assign.Allocation
	j  int
}

// clashes lists every clash of a value of the wanted kind, in allocation and
// slot order.
func clashes(as *assign.Assignment, is func(*liveness.Value, *assign.Allocation) bool) []clash {
	var out []clash
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
						out = append(out, clash{al, i, to, j})
					}
				}
			}
		}
	}
	return out
}

// move puts c's value at the offset of its neighbour, in the neighbour's
// allocation, and returns the moved value, the neighbour and a function that
// restores the plan.
func (c clash) move() (v, w *liveness.Value, restore func()) {
	orig, origTo := slices.Clone(c.al.Slots), slices.Clone(c.to.Slots)
	moved := c.al.Slots[c.i]
	w = c.to.Slots[c.j].Value
	// Read the target offset before deleting: al may be to.
	moved.Offset = c.to.Slots[c.j].Offset
	c.al.Slots = slices.Delete(c.al.Slots, c.i, c.i+1)
	c.to.Slots = append(c.to.Slots, moved)
	return moved.Value, w, func() { c.al.Slots, c.to.Slots = orig, origTo }
}

// TestTimelineSumsLiveRangesCorpus is a self-consistency check, not a
// comparison with an independent figure: on every paired module and every
// module of hlo/ that assigns, the Timeline's bytes at each step equal
// liveness' LowerBoundCurve (buffers live at the step plus the memory
// owned for the whole run), both sums over the same Value.Range data, so
// it checks the Timeline's bookkeeping (which buffers stay resident, live
// outputs to the end, a buffer's values merged) and nothing the ranges get
// wrong; and the peak is at least the lower bound.
// TestTimelineMatchesXLACorpus holds the Timeline to XLA's own plan.
func TestTimelineSumsLiveRangesCorpus(t *testing.T) {
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	var mu sync.Mutex
	n, visited := 0, 0
	eachFile(t, files, func(t *testing.T, f string) {
		if mods, err := hlo.ParseFile(f); err == nil {
			mu.Lock()
			visited += len(mods)
			mu.Unlock()
		}
		for _, as := range plan(t, f, assign.Options{Budget: 10 * time.Millisecond}) {
			rep, err := Shadow(context.Background(), as)
			require.NoError(t, err)
			require.Nil(t, rep.Violation, f)
			tl := rep.Timeline
			curve := as.Analysis.LowerBoundCurve(nil, nil)
			require.Len(t, tl.Live, len(curve), f)
			// A step where no value starts has no handover: there the
			// Timeline is the curve's sum; elsewhere it may count bytes
			// one buffer hands to the next once, below the sum.
			starts := make([]bool, len(curve))
			for _, v := range as.Analysis.Values {
				if v.Scheduled && v.Range.Start >= 0 && v.Range.Start < len(starts) {
					starts[v.Range.Start] = true
				}
			}
			for i, c := range curve {
				if starts[i] {
					require.LessOrEqual(t, tl.Live[i], c.Live+c.Fixed, "%s: step %d", f, i)
				} else {
					require.Equal(t, c.Live+c.Fixed, tl.Live[i], "%s: step %d", f, i)
				}
			}
			require.GreaterOrEqual(t, tl.Peak, as.Analysis.LowerBound(nil).Bytes, f)
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	require.GreaterOrEqual(t, n, corpus.Enough(301, visited))
}

// TestEvaluatorCatchesMovedValues: the same corruption makes the planned
// run compute a wrong output, for a value of each kind. testdata/moved.hlo
// holds all five kinds (temps, outputs, a dynamic-update-slice in place, a
// loop's carried state, a conditional's branch results); every move of a
// value onto a live neighbour is tried with both branch selectors, the
// shadow check must catch each one, and for each kind some move must give
// an output that differs from the reference run's (or a loop that no
// longer ends). Not every move can: a tuple's index table is bookkeeping
// the evaluator never materialises, a branch that is not taken writes
// nothing, and an entry parameter overwritten after its last read changes
// no number (the shadow check still refuses all three).
func TestEvaluatorCatchesMovedValues(t *testing.T) {
	plans := plan(t, "testdata/moved.hlo", assign.Options{})
	require.Len(t, plans, 1)
	as := plans[0]
	var argSets [][]eval.Literal
	for _, sel := range []string{"true", "false"} {
		args, err := eval.ParseArgs(as.Module, "args", "{0.5, -1, 2, 0.25, 3, -0.75, 1.5, 4, -2, 0.125, 6, -3, 0.3, 7, -0.4, 1}; {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8}; 5; "+sel)
		require.NoError(t, err)
		argSets = append(argSets, args)
	}
	refs := make([][]uint64, len(argSets))
	for i, args := range argSets {
		ref, err := Execute(context.Background(), as, args, nil, Options{Reference: true})
		require.NoError(t, err)
		got, err := Execute(context.Background(), as, args, nil, Options{})
		require.NoError(t, err)
		for _, o := range ref.Outputs {
			refs[i] = append(refs[i], o.Checksum())
		}
		for k, o := range got.Outputs {
			require.Equal(t, refs[i][k], o.Checksum(), "the intact plan's output %d", k)
		}
	}
	for name, is := range valueKinds() {
		cs := clashes(as, is)
		require.NotEmpty(t, cs, "no %s value to move", name)
		wrong := 0
		for _, c := range cs {
			v, w, restore := c.move()
			rep, err := Shadow(context.Background(), as)
			require.NoError(t, err)
			require.NotNil(t, rep.Violation, "%s %s moved onto %s went unnoticed by the shadow check", name, v.Name(), w.Name())
			for i, args := range argSets {
				// A moved loop counter may never reach its bound: a run
				// that does not end is as wrong as a wrong number.
				got, err := Execute(context.Background(), as, args, nil, Options{MaxSteps: 10000})
				if errors.Is(err, eval.ErrStepBudget) {
					wrong++
					continue
				}
				require.NoError(t, err)
				for k, o := range got.Outputs {
					if o.Checksum() != refs[i][k] {
						wrong++
						break
					}
				}
			}
			restore()
		}
		t.Logf("%s: %d moves, all caught by the shadow check; %d runs with a wrong output", name, len(cs), wrong)
		require.Positive(t, wrong, "no move of a %s value made the planned run compute a wrong output", name)
	}
}
