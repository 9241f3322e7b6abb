package hlo

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/topo"
)

func TestGraphView(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  a = f32[2] negate(p)
  b = f32[2] add(a, a)
  c = f32[2] exponential(p), control-predecessors={b}
  ROOT r = f32[2] add(b, c)
}`)
	g := NewGraph(m.Entry)
	var _ graph.Directed = g
	id := func(name string) int64 {
		n, ok := g.NodeOf(m.Entry.Instruction(name))
		require.True(t, ok)
		return n.ID()
	}
	require.True(t, g.HasEdgeFromTo(id("p"), id("a")))
	require.False(t, g.HasEdgeFromTo(id("a"), id("p")))
	require.True(t, g.HasEdgeBetween(id("a"), id("p")))
	require.True(t, g.HasEdgeFromTo(id("b"), id("c")), "control predecessors are edges")
	require.Equal(t, 1, g.To(id("b")).Len(), "a used twice by b is one edge")
	require.Equal(t, 2, g.From(id("p")).Len())
	require.Nil(t, g.Edge(id("r"), id("p")))
	require.Equal(t, g.Node(id("c")), g.Edge(id("b"), id("c")).To())
	order, err := topo.Sort(g)
	require.NoError(t, err)
	pos := map[string]int{}
	for i, n := range order {
		pos[n.(Node).Inst.Name] = i
	}
	require.Less(t, pos["b"], pos["c"])
	require.Less(t, pos["c"], pos["r"])
}

func TestVerifyAcceptsValidModules(t *testing.T) {
	// Clamp with scalar bounds and select with a scalar predicate are
	// element-wise but may broadcast those operands.
	mustParse(t, `HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  lo = f32[] parameter(1)
  pr = pred[] parameter(2)
  c = f32[4] clamp(lo, x, lo)
  ROOT s = f32[4] select(pr, c, x)
}`)
}
