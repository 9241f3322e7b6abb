package liveness

import "github.com/hlomem/hlomem/hlo"

// InstructionPostOrder returns c's instructions in XLA's
// HloComputation::MakeInstructionPostOrder order: for every instruction
// without users, in text order, an iterative depth-first search that pushes
// the operands in reverse (so the first operand is visited first) and then
// the control predecessors (visited before the operands).
func InstructionPostOrder(c *hlo.Computation) []*hlo.Instruction {
	const (
		visiting = 1
		visited  = 2
	)
	state := make(map[*hlo.Instruction]uint8, len(c.Instructions))
	out := make([]*hlo.Instruction, 0, len(c.Instructions))
	var stack []*hlo.Instruction
	dfs := func(root *hlo.Instruction) {
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			cur := stack[len(stack)-1]
			if s := state[cur]; s != 0 {
				stack = stack[:len(stack)-1]
				if s == visiting {
					state[cur] = visited
					out = append(out, cur)
				}
				continue
			}
			state[cur] = visiting
			for i := len(cur.Operands) - 1; i >= 0; i-- {
				stack = append(stack, cur.Operands[i])
			}
			stack = append(stack, cur.ControlPredecessors()...)
		}
	}
	for _, in := range c.Instructions {
		if len(in.Users) == 0 {
			dfs(in)
		}
	}
	if len(out) < len(c.Instructions) {
		// Only in a module with a dependency cycle: add what is left.
		for _, in := range c.Instructions {
			if state[in] == 0 {
				dfs(in)
			}
		}
	}
	return out
}

// ComputationPostOrder returns the module's computations with every callee
// before its callers, as XLA's MakeComputationPostOrder: for each
// computation in text order, its instructions' called computations first.
func ComputationPostOrder(m *hlo.Module) []*hlo.Computation {
	var out []*hlo.Computation
	seen := map[*hlo.Computation]bool{}
	var visit func(c *hlo.Computation)
	visit = func(c *hlo.Computation) {
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
