package schedule

import (
	"math/rand/v2"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// randomOrder returns a random topological order of c (operands and
// control predecessors first), drawn with rng.
func randomOrder(c *hlo.Computation, rng *rand.Rand) []*hlo.Instruction {
	ix := hlo.NewInstructionIndex(c)
	n := len(c.Instructions)
	deps := make([]int, n)
	for i, in := range c.Instructions {
		deps[i] = len(distinct(in.Operands)) + len(in.ControlPredecessors())
	}
	var ready []int
	for i := range deps {
		if deps[i] == 0 {
			ready = append(ready, i)
		}
	}
	out := make([]*hlo.Instruction, 0, n)
	seen := make([]int, n)
	for len(ready) > 0 {
		k := rng.IntN(len(ready))
		i := ready[k]
		ready[k] = ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		in := c.Instructions[i]
		out = append(out, in)
		release := func(u *hlo.Instruction) {
			j := ix.Of(u)
			if j < 0 {
				return
			}
			deps[j]--
			if deps[j] == 0 {
				ready = append(ready, j)
			}
		}
		for _, u := range in.Users {
			if j := ix.Of(u); j >= 0 && seen[j] != len(out) {
				seen[j] = len(out)
				release(u)
			}
		}
		for _, u := range in.ControlSuccessors() {
			release(u)
		}
	}
	return out
}

// randomSchedule orders every sequential computation of a at random.
func randomSchedule(a *liveness.Analysis, rng *rand.Rand) *liveness.Schedule {
	s := liveness.NewSchedule("random")
	for _, c := range a.Module.Computations {
		if a.Kinds[c.ID] == liveness.Sequential {
			s.Set(c, randomOrder(c, rng))
		}
	}
	return s
}
