package hlo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEdit(t *testing.T) {
	mods, err := Parse("t", []byte(`HloModule t
ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  b = f32[4] add(a, a)
  c = f32[4] abs(p)
  ROOT r = f32[4] multiply(b, a)
}`))
	require.NoError(t, err)
	m := mods[0]
	e := m.Entry
	a, b, c, r := e.Instruction("a"), e.Instruction("b"), e.Instruction("c"), e.Instruction("r")

	// Nothing can be removed while used, as root or as a parameter.
	require.ErrorContains(t, e.Remove(a), "still used by b")
	require.ErrorContains(t, e.Remove(r), "root")
	require.ErrorContains(t, e.Remove(e.Params[0]), "parameter")

	a.ReplaceAllUsesWith(c)
	require.Empty(t, a.Users)
	require.Equal(t, []*Instruction{c, c}, b.Operands)
	require.Equal(t, []*Instruction{b, c}, r.Operands)
	require.ElementsMatch(t, []*Instruction{b, r}, c.Users)
	require.NoError(t, e.Remove(a))
	require.Equal(t, []*Instruction{c}, e.Params[0].Users)
	require.Nil(t, e.Instruction("a"))

	r.ReplaceAllUsesWith(b)
	require.Equal(t, b, e.Root)
	require.NoError(t, e.Remove(r))
	require.True(t, e.SortTopologically())
	m.Renumber()
	require.NoError(t, Verify(m))
	require.Equal(t, []string{"p", "c", "b"}, instNames(e.Instructions))
	require.Contains(t, m.String(), "ROOT %b = f32[4] add(%c, %c)")
	// An order that is already topological stays.
	require.True(t, e.SortTopologically())
	require.Equal(t, []string{"p", "c", "b"}, instNames(e.Instructions))

	// Computations: added before their caller, removed again.
	x := e.Clone("x", NewNameUniquer(m))
	m.AddComputation(x, e)
	require.Equal(t, x, m.Computations[0])
	m.RemoveComputation(x)
	require.Equal(t, []*Computation{e}, m.Computations)
}

func instNames(ins []*Instruction) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Name)
	}
	return out
}
