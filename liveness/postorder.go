package liveness

import (
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

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
	marks := newInstMarks(c)
	out := make([]*hlo.Instruction, 0, len(c.Instructions))
	var stack []*hlo.Instruction
	dfs := func(root *hlo.Instruction) {
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			cur := stack[len(stack)-1]
			if s := marks.get(cur); s != 0 {
				stack = stack[:len(stack)-1]
				if s == visiting {
					marks.set(cur, visited)
					out = append(out, cur)
				}
				continue
			}
			marks.set(cur, visiting)
			for i := len(cur.Operands) - 1; i >= 0; i-- {
				if op := cur.Operands[i]; op != nil { // nil only in an unverified module
					stack = append(stack, op)
				}
			}
			for _, p := range cur.ControlPredecessors() {
				if p != nil {
					stack = append(stack, p)
				}
			}
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
			if marks.get(in) == 0 {
				dfs(in)
			}
		}
	}
	return out
}

// instMarks holds a small mark per instruction of one computation, in a
// slice by the computation's hlo.InstructionIndex; instructions from
// elsewhere (operands of an unverified module) go to a map.
type instMarks struct {
	idx     hlo.InstructionIndex
	marks   []uint8
	foreign map[*hlo.Instruction]uint8
}

func newInstMarks(c *hlo.Computation) *instMarks {
	return &instMarks{idx: hlo.NewInstructionIndex(c), marks: make([]uint8, len(c.Instructions))}
}

func (s *instMarks) get(in *hlo.Instruction) uint8 {
	if k := s.idx.Of(in); k >= 0 {
		return s.marks[k]
	}
	return s.foreign[in]
}

func (s *instMarks) set(in *hlo.Instruction, v uint8) {
	if k := s.idx.Of(in); k >= 0 {
		s.marks[k] = v
		return
	}
	if s.foreign == nil {
		s.foreign = map[*hlo.Instruction]uint8{}
	}
	s.foreign[in] = v
}

// valueOrder is the computation order in which XLA's dataflow analysis
// numbers values. XLA walks the computations depth-first from the ones
// nothing calls, visiting each computation's callees in the order of the
// instructions that call them in memory (creation order, which the text
// does not show), callees before callers. A dumped module prints its
// computations in that same walk, except that the printer visits a
// while's body before its condition and the numbering visits the
// condition first (the paired dumps of the corpus show both). So the walk
// here takes each computation's call sites in the order their callees
// appear in the text, and puts a while's condition before its body.
//
// m is renumbered: a computation's text position is its ID, and called
// and seen are by ID.
func valueOrder(m *hlo.Module) []*hlo.Computation {
	called := make([]bool, len(m.Computations))
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				if callee != nil {
					called[callee.ID] = true
				}
			}
		}
	}
	key := func(in *hlo.Instruction) int {
		k := len(m.Computations)
		for _, callee := range in.Callees() {
			if callee != nil && callee.ID < k {
				k = callee.ID
			}
		}
		return k
	}
	textPos := func(c *hlo.Computation) int {
		if c == nil {
			return 0
		}
		return c.ID
	}
	var out []*hlo.Computation
	seen := make([]bool, len(m.Computations))
	var visit func(c *hlo.Computation)
	visit = func(c *hlo.Computation) {
		if c == nil || seen[c.ID] {
			return
		}
		seen[c.ID] = true
		var sites []*hlo.Instruction
		for _, in := range c.Instructions {
			if in.Ext != nil && len(in.Callees()) > 0 {
				sites = append(sites, in)
			}
		}
		if len(sites) > 1 {
			sort.SliceStable(sites, func(i, j int) bool { return key(sites[i]) < key(sites[j]) })
		}
		for _, in := range sites {
			if in.Opcode == hlo.OpWhile {
				visit(in.Condition())
				visit(in.Body())
				continue
			}
			callees := in.Callees()
			if len(callees) > 1 {
				callees = append([]*hlo.Computation(nil), callees...)
				sort.SliceStable(callees, func(i, j int) bool { return textPos(callees[i]) < textPos(callees[j]) })
			}
			for _, callee := range callees {
				visit(callee)
			}
		}
		out = append(out, c)
	}
	for _, c := range m.Computations {
		if !called[c.ID] {
			visit(c)
		}
	}
	for _, c := range m.Computations {
		visit(c) // computations only reachable through a cycle
	}
	return out
}

// PostOrder returns XLA's post-order schedule of every computation
// (InstructionPostOrder), named "postorder" as the scheduler of that name
// (schedule.PostOrder). The analysis lays a module out in it when the
// module's text is not an order (LayoutModuleOrder).
func PostOrder(m *hlo.Module) *Schedule {
	s := NewSchedule("postorder")
	for _, c := range m.Computations {
		s.Set(c, InstructionPostOrder(c))
	}
	return s
}
