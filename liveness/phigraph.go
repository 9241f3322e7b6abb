package liveness

// The phi graph, after XLA's PhiGraph (hlo_phi_graph.cc): every phi value
// is a node whose operands are the nodes of the values flowing into it.
// Once propagation is done, optimize removes phis that stand for a single
// value:
//
//   - phi(A, A, ..., self) is A;
//   - a closed group of phis whose only non-phi input is A (a loop state
//     element that the body passes through, seen from the condition, the
//     body and the while at once) is A.
//
// A replaced node forwards to its replacement, so resolve follows the
// chain. Node order is creation order, as in XLA, because the order in
// which groups are examined decides which phi survives when two phis
// resolve into each other.

type phiNode struct {
	valueID  int
	isPhi    bool
	dead     bool
	operands []*phiNode
	users    []*phiNode
	// values are the value IDs mapped to this node (after replacement,
	// those of the nodes it replaced too).
	values []int
	// Stamps instead of sets in optimize: checked == the fixpoint
	// round's stamp marks the node checked for closure in that round,
	// inGroup == the closure walk's stamp puts it in that walk's group.
	checked, inGroup int
}

type phiGraph struct {
	nodes   []*phiNode
	byValue []*phiNode // by value ID: its node (after replacement: the replacing node), or nil
}

func newPhiGraph() *phiGraph {
	return &phiGraph{}
}

// lookup returns the node of value id, or nil.
func (g *phiGraph) lookup(id int) *phiNode {
	if id < 0 || id >= len(g.byValue) {
		return nil
	}
	return g.byValue[id]
}

func (g *phiGraph) node(id int) *phiNode {
	if n := g.lookup(id); n != nil {
		return n
	}
	n := &phiNode{valueID: id, values: []int{id}}
	g.nodes = append(g.nodes, n)
	for id >= len(g.byValue) {
		g.byValue = append(g.byValue, nil)
	}
	g.byValue[id] = n
	return n
}

// register records the phi id with the given inputs (replacing earlier ones).
func (g *phiGraph) register(id int, inputs []int) {
	n := g.node(id)
	n.isPhi = true
	n.operands = n.operands[:0]
	for _, in := range inputs {
		n.operands = append(n.operands, g.node(in))
	}
}

// inputsEqual reports whether the phi id already has exactly the inputs of
// vs, compared as sets.
func (g *phiGraph) inputsEqual(id int, vs []*Value) bool {
	n := g.lookup(id)
	if n == nil {
		return false
	}
	have := map[int]bool{}
	for _, o := range n.operands {
		have[o.valueID] = true
	}
	want := map[int]bool{}
	for _, v := range vs {
		want[v.XLAID] = true
	}
	if len(have) != len(want) {
		return false
	}
	for id := range want {
		if !have[id] {
			return false
		}
	}
	return true
}

// resolve returns the value the phi id stands for after optimize.
func (g *phiGraph) resolve(id int) int {
	n := g.lookup(id)
	if n == nil {
		return id
	}
	return n.valueID
}

func replaceAll(s []*phiNode, old, repl *phiNode) {
	for i, x := range s {
		if x == old {
			s[i] = repl
		}
	}
}

func (g *phiGraph) replace(n, repl *phiNode) {
	for depth := 0; repl.dead && depth < len(g.nodes); depth++ {
		repl = g.byValue[repl.valueID]
	}
	if n.dead || repl.dead || n == repl {
		return
	}
	for _, u := range n.users {
		replaceAll(u.operands, n, repl)
	}
	for _, o := range n.operands {
		replaceAll(o.users, n, repl)
	}
	for _, id := range n.values {
		g.byValue[id] = repl
	}
	repl.values = append(repl.values, n.values...)
	n.values = nil
	n.dead = true
}

func removeAll(s []*phiNode, x *phiNode) []*phiNode {
	out := s[:0]
	for _, y := range s {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

// optimize runs XLA's PhiGraph::Optimize to its fixed point.
func (g *phiGraph) optimize() {
	for _, n := range g.nodes {
		for _, o := range n.operands {
			o.users = append(o.users, n)
		}
	}
	// Rounds and closure walks are numbered from one stamp counter, so a
	// node's stamps never match a later round or walk by accident. The
	// walks are XLA's, queue order and early stop included: which nodes
	// a walk marks checked decides which phis are examined later.
	stamp := 0
	var queue []*phiNode
	var order []*phiNode
	for changed := true; changed; {
		changed = false
		stamp++
		round := stamp
		for _, n := range g.nodes {
			if !n.isPhi || n.dead {
				continue
			}
			n.operands = removeAll(n.operands, n)
			n.users = removeAll(n.users, n)
			if len(n.operands) == 0 {
				continue
			}
			same := true
			for _, o := range n.operands {
				same = same && o == n.operands[0]
			}
			if same {
				g.replace(n, n.operands[0])
				changed = true
				continue
			}
			if n.checked == round {
				continue
			}
			// A closed group of phis reached through operands, with one
			// non-phi value feeding it, collapses into that value.
			stamp++
			walk := stamp
			order = order[:0]
			queue = append(queue[:0], n)
			var nonPhi *phiNode
			for head := 0; head < len(queue); head++ {
				x := queue[head]
				if x.inGroup == walk {
					continue
				}
				x.checked = round
				x.inGroup = walk
				order = append(order, x)
				queue = append(queue, x.operands...)
				if !x.isPhi {
					if nonPhi != nil && nonPhi != x {
						nonPhi = nil
						break
					}
					nonPhi = x
				}
			}
			if nonPhi != nil {
				for _, x := range order {
					if x.isPhi {
						g.replace(x, nonPhi)
						changed = true
					}
				}
			}
		}
	}
}
