package hlo

import (
	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/iterator"
)

// Graph is a gonum graph.Directed view of one computation. Its nodes are
// the computation's instructions, numbered by their position in
// Computation.Instructions; an edge runs from each operand and each control
// predecessor to the instruction that depends on it. The view is a snapshot:
// build a new one after changing the computation.
type Graph struct {
	c     *Computation
	nodes []Node
	pos   InstructionIndex
	succ  [][]int64 // successors by position, deduplicated, in order
	pred  [][]int64 // predecessors by position, deduplicated, in order
}

var _ graph.Directed = (*Graph)(nil)

// Node is an instruction as a graph node.
type Node struct {
	Inst *Instruction
	id   int64
}

// ID returns the node's position in its computation.
func (n Node) ID() int64 { return n.id }

// Edge is a dependency edge: From must run before To.
type Edge struct{ F, T Node }

// From returns the operand or control predecessor.
func (e Edge) From() graph.Node { return e.F }

// To returns the dependent instruction.
func (e Edge) To() graph.Node { return e.T }

// ReversedEdge returns the edge with its ends swapped.
func (e Edge) ReversedEdge() graph.Edge { return Edge{F: e.T, T: e.F} }

// NewGraph returns the dependency graph of c. Operands and control
// predecessors outside c (only possible in an invalid module) are ignored.
func NewGraph(c *Computation) *Graph {
	n := len(c.Instructions)
	g := &Graph{c: c, nodes: make([]Node, n), pos: NewInstructionIndex(c), succ: make([][]int64, n), pred: make([][]int64, n)}
	for i, in := range c.Instructions {
		g.nodes[i] = Node{Inst: in, id: int64(i)}
	}
	add := func(from *Instruction, to int64) {
		k := g.pos.Of(from)
		if k < 0 {
			return
		}
		f := int64(k)
		for _, p := range g.pred[to] {
			if p == f {
				return
			}
		}
		g.pred[to] = append(g.pred[to], f)
		g.succ[f] = append(g.succ[f], to)
	}
	for i, in := range c.Instructions {
		for _, op := range in.Operands {
			if op != nil {
				add(op, int64(i))
			}
		}
		for _, p := range in.ControlPredecessors() {
			if p != nil {
				add(p, int64(i))
			}
		}
	}
	return g
}

// Computation returns the computation the graph views.
func (g *Graph) Computation() *Computation { return g.c }

// NodeOf returns the node of an instruction of the computation.
func (g *Graph) NodeOf(in *Instruction) (Node, bool) {
	p := g.pos.Of(in)
	if p < 0 {
		return Node{}, false
	}
	return g.nodes[p], true
}

func (g *Graph) valid(id int64) bool { return id >= 0 && id < int64(len(g.nodes)) }

// Node returns the node with the given ID, or nil.
func (g *Graph) Node(id int64) graph.Node {
	if !g.valid(id) {
		return nil
	}
	return g.nodes[id]
}

// Nodes returns every node in instruction order.
func (g *Graph) Nodes() graph.Nodes {
	ns := make([]graph.Node, len(g.nodes))
	for i := range g.nodes {
		ns[i] = g.nodes[i]
	}
	return iterator.NewOrderedNodes(ns)
}

func (g *Graph) list(ids []int64) graph.Nodes {
	if len(ids) == 0 {
		return graph.Empty
	}
	ns := make([]graph.Node, len(ids))
	for i, id := range ids {
		ns[i] = g.nodes[id]
	}
	return iterator.NewOrderedNodes(ns)
}

// From returns the instructions that depend directly on node id.
func (g *Graph) From(id int64) graph.Nodes {
	if !g.valid(id) {
		return graph.Empty
	}
	return g.list(g.succ[id])
}

// To returns the direct dependencies (operands, control predecessors) of node id.
func (g *Graph) To(id int64) graph.Nodes {
	if !g.valid(id) {
		return graph.Empty
	}
	return g.list(g.pred[id])
}

// HasEdgeFromTo reports whether v depends directly on u.
func (g *Graph) HasEdgeFromTo(uid, vid int64) bool {
	if !g.valid(uid) || !g.valid(vid) {
		return false
	}
	for _, p := range g.pred[vid] {
		if p == uid {
			return true
		}
	}
	return false
}

// HasEdgeBetween reports whether x and y are joined by an edge either way.
func (g *Graph) HasEdgeBetween(xid, yid int64) bool {
	return g.HasEdgeFromTo(xid, yid) || g.HasEdgeFromTo(yid, xid)
}

// Edge returns the edge from u to v, or nil.
func (g *Graph) Edge(uid, vid int64) graph.Edge {
	if !g.HasEdgeFromTo(uid, vid) {
		return nil
	}
	return Edge{F: g.nodes[uid], T: g.nodes[vid]}
}
