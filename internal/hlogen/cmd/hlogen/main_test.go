package main

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/hlogen"

	"github.com/stretchr/testify/require"
)

// TestRunArgs: the command refuses a wrong count of arguments, an unknown
// shape, a count that is not positive and a seed that is not a number,
// each with a message saying what it wants.
func TestRunArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: hlogen [-scheduled] SHAPE N [SEED]"},
		{[]string{"chain", "10", "1", "x"}, "usage: hlogen [-scheduled] SHAPE N [SEED]"},
		{[]string{"ring", "10"}, `unknown shape "ring"`},
		{[]string{"chain", "0"}, `N must be a positive count, got "0"`},
		{[]string{"chain", "ten"}, `N must be a positive count, got "ten"`},
		{[]string{"chain", "10", "s"}, `SEED must be an integer, got "s"`},
	} {
		err := run(c.args)
		require.Error(t, err, "%q", c.args)
		require.Contains(t, err.Error(), c.want, "%q", c.args)
	}
}

// TestMarkScheduled: -scheduled marks the module scheduled, and hlomem
// then takes its text order as the schedule: it parses, says so, and the
// order is one (every operand defined before its user), for every shape.
func TestMarkScheduled(t *testing.T) {
	for _, shape := range hlogen.Shapes {
		text := markScheduled(hlogen.Module(shape, 2000, 1))
		mods, err := hlo.ParseString("gen.hlo", text)
		require.NoError(t, err, shape)
		m := mods[0]
		require.True(t, m.IsScheduled, shape)
		for _, c := range m.Computations {
			seen := map[*hlo.Instruction]bool{}
			for _, in := range c.Instructions {
				for _, op := range in.Operands {
					require.True(t, seen[op], "%s: %s reads %s before it is defined", shape, in.Name, op.Name)
				}
				seen[in] = true
			}
		}
	}
}
