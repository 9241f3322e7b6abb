package hlo

// ComputationPostOrder returns the module's computations with every callee
// before its callers, as XLA's MakeComputationPostOrder: for each
// computation in module order, its callees (in the order of the
// instructions that call them) depth first, then itself; each once.
func (m *Module) ComputationPostOrder() []*Computation {
	var out []*Computation
	seen := make(map[*Computation]bool, len(m.Computations))
	var visit func(c *Computation)
	visit = func(c *Computation) {
		if c == nil || seen[c] {
			return
		}
		seen[c] = true
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				visit(callee)
			}
		}
		out = append(out, c)
	}
	for _, c := range m.Computations {
		visit(c)
	}
	return out
}
