package hlogen

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

func TestModule(t *testing.T) {
	sizes := []int{1000, 10000, 100000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, shape := range Shapes {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n=%d", shape, n), func(t *testing.T) {
				text := Module(shape, n, 1)
				require.Equal(t, text, Module(shape, n, 1), "same seed, same text")
				require.NotEqual(t, text, Module(shape, n, 2), "another seed, another module")
				mods, err := hlo.Parse("gen.hlo", []byte(text))
				require.NoError(t, err)
				require.Len(t, mods, 1)
				m := mods[0]
				require.False(t, m.IsScheduled)
				require.NoError(t, hlo.Verify(m))
				got := m.NumInstructions()
				require.InDelta(t, n, got, 0.03*float64(n), "instructions")
			})
		}
	}
}

// TestShapes checks that each shape is what it says: loops nest whiles,
// calls nest calls deep, the DAG is wide and has dots and reductions.
func TestShapes(t *testing.T) {
	count := func(text, op string) int {
		m, err := hlo.ParseModule("gen.hlo", text)
		require.NoError(t, err)
		k := 0
		m.Instructions(func(in *hlo.Instruction) {
			if in.Opcode.String() == op {
				k++
			}
		})
		return k
	}
	const n = 20000
	require.Greater(t, count(Module("loops", n, 3), "while"), 2)
	require.Greater(t, count(Module("calls", n, 3), "call"), 100)
	dag := Module("dag", n, 3)
	require.Greater(t, count(dag, "dot"), 100)
	require.Greater(t, count(dag, "reduce"), 100)
	require.Greater(t, count(dag, "broadcast"), 100)
	require.Zero(t, count(Module("chain", n, 3), "call"))
}

func TestUnknownShape(t *testing.T) {
	require.Panics(t, func() { Module("ring", 1000, 1) })
}
