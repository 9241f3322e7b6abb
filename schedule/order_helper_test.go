package schedule

import (
	"math/rand/v2"

	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
)

// randomSchedule orders every sequential computation of a at random.
func randomSchedule(a *liveness.Analysis, rng *rand.Rand) *liveness.Schedule {
	s := liveness.NewSchedule("random")
	for _, c := range a.Module.Computations {
		if a.Kinds[c.ID] == liveness.Sequential {
			s.Set(c, randhlo.Order(c, rng))
		}
	}
	return s
}
