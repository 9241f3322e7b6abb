package schedule

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/liveness/boundtest"
	"github.com/stretchr/testify/require"
)

// checkSchedule verifies independently of Schedule.Validate that every
// sequential computation's sequence is a permutation of its instructions
// with operands and control predecessors first.
func checkSchedule(t *testing.T, a *liveness.Analysis, s *liveness.Schedule) {
	t.Helper()
	for _, c := range a.Module.Computations {
		if a.Kinds[c.ID] != liveness.Sequential {
			continue
		}
		seq := s.Sequence(c)
		pos := map[*hlo.Instruction]int{}
		for i, in := range seq {
			_, dup := pos[in]
			require.False(t, dup, "%s: %s: %s scheduled twice", s.Name, c.Name, in.Name)
			pos[in] = i
		}
		require.Equal(t, len(c.Instructions), len(seq), "%s: %s", s.Name, c.Name)
		for _, in := range c.Instructions {
			p, ok := pos[in]
			require.True(t, ok, "%s: %s missing from the schedule of %s", s.Name, in.Name, c.Name)
			for _, o := range in.Operands {
				require.Less(t, pos[o], p, "%s: %s runs before its operand %s", s.Name, in.Name, o.Name)
			}
			for _, cp := range in.ControlPredecessors() {
				require.Less(t, pos[cp], p, "%s: %s runs before its control predecessor %s", s.Name, in.Name, cp.Name)
			}
		}
	}
}

// bruteBound recomputes the lower bound time step by time step.
func bruteBound(a *liveness.Analysis) (int64, map[int]bool) {
	best, bestT := int64(0), -1
	for t := 0; t <= a.EndTime(); t++ {
		var sum int64
		for _, b := range a.Buffers {
			if r, ok := b.Range(); ok && r.Contains(t) {
				sum += b.Size
			}
		}
		if sum > best {
			best, bestT = sum, t
		}
	}
	live := map[int]bool{}
	for _, b := range a.Buffers {
		if r, ok := b.Range(); ok && r.Contains(bestT) {
			live[b.ID] = true
		}
	}
	return best, live
}

func TestSchedulersOnRandomModules(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	for seed := uint64(0); seed < uint64(n); seed++ {
		src := randhlo.Generate(seed, randhlo.Options{Instructions: 5 + int(seed%60)})
		m, err := hlo.ParseModule("rand.hlo", src)
		require.NoError(t, err)
		a, err := liveness.Analyze(m, liveness.Options{})
		require.NoError(t, err, "seed %d", seed)
		for _, name := range []string{Keep, PostOrder, DFS, List} {
			s, err := ByName(context.Background(), a, name, Options{})
			require.NoError(t, err)
			checkSchedule(t, a, s)
			require.NoError(t, a.Reschedule(s))
			lb := a.LivePeak()
			want, live := bruteBound(a)
			require.Equal(t, want, lb.Bytes, "seed %d %s", seed, name)
			got := map[int]bool{}
			for _, b := range lb.Live {
				got[b.ID] = true
			}
			require.Equal(t, live, got, "seed %d %s: buffers live at the peak", seed, name)
			boundtest.Check(t, a)
		}
		x, xc, err := HeuristicBest(a)
		require.NoError(t, err)
		checkSchedule(t, a, x)
		for _, c := range xc {
			require.LessOrEqual(t, a.LivePeak().Bytes, c.LivePeak, "XLA's best is no worse than %s by its own figure", c.Name)
		}
		// The search, on the module with its copies.
		m, err = hlo.ParseModule("rand.hlo", src)
		require.NoError(t, err)
		a, _, err = liveness.AnalyzeInsertingCopies(m)
		require.NoError(t, err, "seed %d", seed)
		r, err := RunSearch(context.Background(), a, Options{})
		require.NoError(t, err)
		checkSchedule(t, a, r.Schedule)
		if r.NeedsCopies {
			continue // the pipeline adds them and searches on (TestPrepareMatchesSteps)
		}
		require.Equal(t, r.LowerBound, a.LowerBound(nil).Bytes, "seed %d: the search's figure is LowerBound's", seed)
		require.Empty(t, a.Interference(), "seed %d: the search's order needs no copies", seed)
		if r.XLABest >= 0 {
			require.LessOrEqual(t, r.LowerBound, r.XLABest, "seed %d: best is no worse than XLA's best", seed)
		}
		for _, c := range r.Candidates {
			if c.AfterCopies >= 0 {
				require.LessOrEqual(t, r.LowerBound, c.AfterCopies, "seed %d: best is no worse than %s", seed, c.Name)
			}
		}
	}
}

// TestSchedulersOnCorpus schedules every corpus module (call graph
// flattened) with each scheduler and checks the result is a valid order.
func TestSchedulersOnCorpus(t *testing.T) {
	corpusmod.ForModules(t, []string{"hlo/*/*.hlo", "paired/*/*after_optimizations.txt"}, func(t *testing.T, f string, m *hlo.Module) {
		_, err := hlo.FlattenCallGraph(m)
		require.NoError(t, err)
		a, err := liveness.Analyze(m, liveness.Options{})
		require.NoError(t, err, "%s", filepath.Base(f))
		for _, name := range []string{PostOrder, DFS, List} {
			s, err := ByName(context.Background(), a, name, Options{})
			require.NoError(t, err)
			checkSchedule(t, a, s)
		}
	})
}

// TestListSchedulerSavesMemory: two independent chains that each shrink a
// large input; running each chain to its end before starting the other
// keeps only one large temporary live.
func TestListSchedulerSavesMemory(t *testing.T) {
	m, err := hlo.ParseModule("chains.hlo", `HloModule chains
ENTRY e {
  p = f32[4] parameter(0)
  a1 = f32[256,4] broadcast(p), dimensions={1}
  b1 = f32[256,4] broadcast(p), dimensions={1}
  a2 = f32[256,4] negate(a1)
  b2 = f32[256,4] negate(b1)
  z = f32[] constant(0)
  ra = f32[] reduce(a2, z), dimensions={0,1}, to_apply=add
  rb = f32[] reduce(b2, z), dimensions={0,1}, to_apply=add
  ROOT t = (f32[], f32[]) tuple(ra, rb)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}`)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	keep := a.LivePeak().Bytes
	s, err := ByName(context.Background(), a, Best, Options{})
	require.NoError(t, err)
	best := a.LivePeak().Bytes
	require.Less(t, best, keep, "interleaved text order keeps both chains live")
	// p, one chain's two temporaries, the constant and the first result.
	require.EqualValues(t, 16+2*4096+4+4, best)
	_ = s
}
