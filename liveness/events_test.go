package liveness

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/hlomem/hlomem/internal/randhlo"
)

// randomSchedule orders every sequential computation of a at random.
func randomSchedule(a *Analysis, rng *rand.Rand) *Schedule {
	s := NewSchedule("random")
	for _, c := range a.Module.Computations {
		if a.Kinds[c.ID] == Sequential {
			s.Set(c, randhlo.Order(c, rng))
		}
	}
	return s
}

// TestEventsMatchLayout: the events of every value, resolved against a
// timeline, give layout's ranges (before the chaining of a buffer's
// values, which the test then applies as layout does) and end positions,
// on random modules with calls, loops, conditionals and in-place fusions,
// under random schedules.
func TestEventsMatchLayout(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	for seed := uint64(0); seed < uint64(n); seed++ {
		m, err := hlo.ParseModule("rand.hlo", randhlo.Generate(seed, randhlo.Options{Instructions: 5 + int(seed%40)}))
		require.NoError(t, err)
		_, err = hlo.FlattenCallGraph(m)
		require.NoError(t, err)
		a, err := Analyze(m, Options{})
		require.NoError(t, err)
		em := a.Events()
		rng := rand.New(rand.NewPCG(seed, 7))
		for k := 0; k < 3; k++ {
			s := randomSchedule(a, rng)
			require.NoError(t, s.Validate(a.Module, a.Kinds))
			tl := a.Layout(s)
			checkEvents(t, a, em, tl, seed)
		}
	}
}

func checkEvents(t *testing.T, a *Analysis, em *Events, tl *Timeline, seed uint64) {
	t.Helper()
	ranges, endPos := em.resolve(tl)
	for _, v := range a.Values {
		require.Equal(t, tl.Scheduled[v.ID], em.Scheduled[v.ID], "seed %d: %s scheduled", seed, v.Name())
		if !tl.Scheduled[v.ID] {
			continue
		}
		require.Equal(t, tl.EndPos[v.ID], v.Positions[endPos[v.ID]], "seed %d: end position of %s", seed, v.Name())
	}
	norm := normalizeRanges(a, ranges, em.Scheduled)
	for _, v := range a.Values {
		if tl.Scheduled[v.ID] {
			require.Equal(t, tl.Ranges[v.ID], norm[v.ID], "seed %d: range of %s", seed, v.Name())
		}
	}
}

// TestEventsMatchLayoutOnCorpus: the same on every corpus module (with
// its copies inserted), in its own order and in a random one.
func TestEventsMatchLayoutOnCorpus(t *testing.T) {
	corpusmod.ForModules(t, []string{"hlo/*/*.hlo", "paired*/*/*after_optimizations.txt"}, func(t *testing.T, f string, m *hlo.Module) {
		a, err := prepare(m)
		if err != nil {
			return // the pipeline's own tests cover these
		}
		em := a.Events()
		checkEvents(t, a, em, a.Layout(a.Schedule), 0)
		rng := rand.New(rand.NewPCG(uint64(m.NumInstructions()), 1))
		checkEvents(t, a, em, a.Layout(randomSchedule(a, rng)), 1)
	})
}
