package schedule

import (
	"slices"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// postOrder returns c's instructions in depth-first post-order, starting
// from the root and then from every instruction nothing depends on, in text
// order.
func postOrder(c *hlo.Computation) []*hlo.Instruction {
	var out []*hlo.Instruction
	// Each instruction's dependencies are cut from one arena, sized for
	// all of them: no allocation per instruction.
	edges := 0
	for _, in := range c.Instructions {
		edges += len(in.Operands) + len(in.ControlPredecessors())
	}
	arena := make([]*hlo.Instruction, 0, edges)
	deps := func(in *hlo.Instruction) []*hlo.Instruction {
		if len(arena)+len(in.Operands)+len(in.ControlPredecessors()) > cap(arena) {
			arena = make([]*hlo.Instruction, 0, len(in.Operands)+len(in.ControlPredecessors())) // not c's: unverified input
		}
		start := len(arena)
		arena = append(arena, in.ControlPredecessors()...)
		arena = appendDistinct(arena, in.Operands)
		return arena[start:len(arena):len(arena)]
	}
	visit := postOrderVisitor(c, deps, &out)
	if c.Root != nil {
		visit(c.Root)
	}
	for _, in := range c.Instructions {
		if len(in.Users) == 0 && len(in.ControlSuccessors()) == 0 {
			visit(in)
		}
	}
	for _, in := range c.Instructions {
		visit(in)
	}
	return out
}

// dfsVisit returns c's instructions in the order XLA's
// HloComputation::AcceptWithOperandOrder visits them: a depth-first
// post-order from every instruction without users or control successors
// other than the root, in instruction order, then from the root. Each
// instruction's operands and control predecessors not yet visited are
// sorted together by less (PostOrderDFS), the first visited first.
func dfsVisit(c *hlo.Computation, less func(x, y *hlo.Instruction) bool) []*hlo.Instruction {
	var out []*hlo.Instruction
	deps := func(in *hlo.Instruction) []*hlo.Instruction {
		d := distinct(append(append([]*hlo.Instruction(nil), in.Operands...), in.ControlPredecessors()...))
		sort.SliceStable(d, func(i, j int) bool { return less(d[i], d[j]) })
		return d
	}
	visit := postOrderVisitor(c, deps, &out)
	for _, in := range c.Instructions {
		if len(in.Users) == 0 && len(in.ControlSuccessors()) == 0 && in != c.Root {
			visit(in)
		}
	}
	if c.Root != nil {
		visit(c.Root)
	}
	// Only in an unverified module (a cycle, or an instruction reached
	// from no root): what is left, in instruction order.
	for _, in := range c.Instructions {
		visit(in)
	}
	return out
}

// postOrderVisitor returns a function that appends to *out, in
// depth-first post-order, the instruction it is given and every
// instruction it depends on (deps, visited in the order deps gives) not
// yet visited by an earlier call. It walks with a stack of its own, so a
// chain of a million instructions does not grow the goroutine's.
func postOrderVisitor(c *hlo.Computation, deps func(*hlo.Instruction) []*hlo.Instruction, out *[]*hlo.Instruction) func(*hlo.Instruction) {
	*out = slices.Grow(*out, len(c.Instructions))
	marks := newInstMarks(c)
	type frame struct {
		in   *hlo.Instruction
		deps []*hlo.Instruction
		next int
	}
	return func(start *hlo.Instruction) {
		if marks.get(start) != 0 {
			return
		}
		stack := []frame{{in: start, deps: deps(start)}}
		marks.set(start, 1)
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next < len(f.deps) {
				d := f.deps[f.next]
				f.next++
				if marks.get(d) == 0 {
					marks.set(d, 1)
					stack = append(stack, frame{in: d, deps: deps(d)})
				}
				continue
			}
			marks.set(f.in, 2)
			*out = append(*out, f.in)
			stack = stack[:len(stack)-1]
		}
	}
}

// distinct returns the instructions of ins without repeats, first
// occurrences in order, in a new slice.
func distinct(ins []*hlo.Instruction) []*hlo.Instruction {
	return appendDistinct(make([]*hlo.Instruction, 0, len(ins)), ins)
}

// appendDistinct appends to out the instructions of ins without repeats,
// first occurrences in order.
func appendDistinct(out, ins []*hlo.Instruction) []*hlo.Instruction {
	start := len(out)
	if len(ins) <= 16 {
	next:
		for _, in := range ins {
			for _, o := range out[start:] {
				if o == in {
					continue next
				}
			}
			out = append(out, in)
		}
		return out
	}
	seen := make(map[*hlo.Instruction]bool, len(ins))
	for _, in := range ins {
		if !seen[in] {
			seen[in] = true
			out = append(out, in)
		}
	}
	return out
}

// instMarks holds a small mark per instruction of one computation, in a
// slice by the computation's hlo.InstructionIndex; instructions from
// elsewhere (operands of an unverified module) go to a map. (liveness
// keeps its own for InstructionPostOrder.)
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
