package randhlo

import (
	"math/rand/v2"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// Order returns a random topological order of c (operands and
// control predecessors first), drawn with rng.
func Order(c *hlo.Computation, rng *rand.Rand) []*hlo.Instruction {
	ix := hlo.NewInstructionIndex(c)
	n := len(c.Instructions)
	deps := make([]int, n)
	for i, in := range c.Instructions {
		deps[i] = len(Distinct(in.Operands)) + len(in.ControlPredecessors())
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

// Distinct returns the instructions of ins without repeats, first
// occurrences in order.
func Distinct(ins []*hlo.Instruction) []*hlo.Instruction {
	var out []*hlo.Instruction
	for _, in := range ins {
		if !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	return out
}
