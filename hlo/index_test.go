package hlo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInstructionIndex: by ID on a parsed module, through the map once the
// IDs are stale, and never claiming an instruction of another computation.
func TestInstructionIndex(t *testing.T) {
	m, err := ParseModule("m.hlo", `HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}`)
	require.NoError(t, err)
	add, entry := m.Computation("add"), m.Entry
	for _, c := range []*Computation{add, entry} {
		x := NewInstructionIndex(c)
		require.Nil(t, x.m, "a parsed module is numbered contiguously")
		for i, in := range c.Instructions {
			require.Equal(t, i, x.Of(in))
		}
	}
	x := NewInstructionIndex(entry)
	for _, in := range add.Instructions {
		require.Equal(t, -1, x.Of(in), in.Name)
	}
	require.Equal(t, -1, x.Of(nil))
	// Stale IDs: a new instruction with another's ID, and IDs out of order.
	stray := &Instruction{Name: "stray", ID: entry.Instructions[1].ID}
	require.Equal(t, -1, x.Of(stray))
	entry.Instructions[0].ID, entry.Instructions[2].ID = entry.Instructions[2].ID, entry.Instructions[0].ID
	y := NewInstructionIndex(entry)
	require.NotNil(t, y.m)
	for i, in := range entry.Instructions {
		require.Equal(t, i, y.Of(in))
	}
	require.Equal(t, -1, y.Of(stray))
	require.Equal(t, -1, y.Of(add.Root))
}

// TestComputationIDs: computation IDs are dense in module order after
// parsing and stay so after FlattenCallGraph adds clones.
func TestComputationIDs(t *testing.T) {
	mods, err := Parse("ids.hlo", []byte(`HloModule m
f {
  ROOT x = f32[] parameter(0)
}
ENTRY e {
  p = f32[] parameter(0)
  a = f32[] call(p), to_apply=f
  ROOT b = f32[] call(a), to_apply=f
}
`))
	require.NoError(t, err)
	m := mods[0]
	check := func(want int) {
		t.Helper()
		require.Len(t, m.Computations, want, "got %d computations, want %d", len(m.Computations), want)
		for i, c := range m.Computations {
			require.Equal(t, i, c.ID, "computation %s has ID %d, want %d", c.Name, c.ID, i)
		}
	}
	check(2)
	changed, err := FlattenCallGraph(m)
	require.NoError(t, err, "FlattenCallGraph")
	require.True(t, changed, "FlattenCallGraph: changed %v", changed)
	check(3)
}
