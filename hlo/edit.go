package hlo

import (
	"container/heap"
	"fmt"
	"slices"
)

// Editing a module in place: the few operations the transformation passes
// (fusion, simplification, copy insertion) build on. They keep Users and
// control successors right; they do not renumber (call Module.Renumber once
// the edits are done) and do not check names (use a NameUniquer).

// ReplaceAllUsesWith makes every user of in take with instead, in every
// operand slot, and makes with the root where in was. Control edges are
// not moved. with must not depend on in (that would make a cycle).
func (in *Instruction) ReplaceAllUsesWith(with *Instruction) {
	if in == with {
		return
	}
	users := append([]*Instruction(nil), in.Users...)
	for _, u := range users {
		for k, op := range u.Operands {
			if op == in {
				u.Operands[k] = with
			}
		}
		with.AddUser(u)
	}
	in.Users = in.Users[:0]
	if c := in.Parent; c != nil && c.Root == in {
		c.Root = with
	}
}

// AddUser records u as a user of in, once. Passes that set operands by
// hand keep Users right with it and RemoveUser.
func (in *Instruction) AddUser(u *Instruction) {
	if !slices.Contains(in.Users, u) {
		in.Users = append(in.Users, u)
	}
}

// RemoveUser forgets u as a user of in.
func (in *Instruction) RemoveUser(u *Instruction) {
	in.Users = removeFrom(in.Users, u)
}

// Remove deletes in from c. It must be in c, have no users, not be the
// root, not be a parameter and have no control successors; its operands
// forget it as a user and its control predecessors as a successor.
func (c *Computation) Remove(in *Instruction) error {
	switch {
	case in.Parent != c:
		return fmt.Errorf("hlo: remove %s: not in computation %s", in.Name, c.Name)
	case in.Opcode == OpParameter:
		return fmt.Errorf("hlo: remove %s: it is a parameter", in.Name)
	case c.Root == in:
		return fmt.Errorf("hlo: remove %s: it is the root of %s", in.Name, c.Name)
	case len(in.Users) > 0:
		return fmt.Errorf("hlo: remove %s: still used by %s", in.Name, in.Users[0].Name)
	case len(in.ControlSuccessors()) > 0:
		return fmt.Errorf("hlo: remove %s: %s has a control dependency on it", in.Name, in.ControlSuccessors()[0].Name)
	}
	at := -1
	for i, x := range c.Instructions {
		if x == in {
			at = i
			break
		}
	}
	if at < 0 {
		return fmt.Errorf("hlo: remove %s: not listed in %s", in.Name, c.Name)
	}
	c.Instructions = append(c.Instructions[:at], c.Instructions[at+1:]...)
	for _, op := range in.Operands {
		op.RemoveUser(in)
	}
	for _, p := range in.ControlPredecessors() {
		if p.Ext != nil {
			p.Ext.ControlSuccessors = removeFrom(p.Ext.ControlSuccessors, in)
		}
	}
	in.Parent = nil
	return nil
}

func removeFrom(list []*Instruction, x *Instruction) []*Instruction {
	return slices.DeleteFunc(list, func(y *Instruction) bool { return y == x })
}

// AddComputation adds c to m just before the computation before (at the
// end when before is nil or not in m), as XLA prints a called computation
// before its callers, and sets c.Module. It does not renumber.
func (m *Module) AddComputation(c, before *Computation) {
	c.Module = m
	pos := len(m.Computations)
	for i, x := range m.Computations {
		if x == before {
			pos = i
			break
		}
	}
	m.Computations = append(m.Computations, nil)
	copy(m.Computations[pos+1:], m.Computations[pos:])
	m.Computations[pos] = c
}

// RemoveComputation deletes c from m's list. The caller makes sure that
// nothing calls it any more. It does not renumber.
func (m *Module) RemoveComputation(c *Computation) {
	out := m.Computations[:0]
	for _, x := range m.Computations {
		if x != c {
			out = append(out, x)
		}
	}
	m.Computations = out
}

// SortTopologically reorders c's instructions so that each comes after its
// operands and control predecessors, moving as little as it can: of the
// instructions whose inputs are all placed, the one listed first goes
// next. An order that is already topological stays as it is. It reports
// false, leaving c unchanged, when c has a cycle.
func (c *Computation) SortTopologically() bool {
	n := len(c.Instructions)
	pos := NewInstructionIndex(c)
	indeg := make([]int, n)
	succ := make([][]int, n)
	edge := func(from *Instruction, to int) {
		if i := pos.Of(from); i >= 0 {
			succ[i] = append(succ[i], to)
			indeg[to]++
		}
	}
	for i, in := range c.Instructions {
		for _, op := range in.Operands {
			edge(op, i)
		}
		for _, p := range in.ControlPredecessors() {
			edge(p, i)
		}
	}
	// A min-heap of ready positions: the one listed first goes next.
	ready := &intHeap{}
	push := func(i int) { heap.Push(ready, i) }
	pop := func() int { return heap.Pop(ready).(int) }
	for i := range n {
		if indeg[i] == 0 {
			push(i)
		}
	}
	order := make([]*Instruction, 0, n)
	for ready.Len() > 0 {
		i := pop()
		order = append(order, c.Instructions[i])
		for _, j := range succ[i] {
			if indeg[j]--; indeg[j] == 0 {
				push(j)
			}
		}
	}
	if len(order) != n {
		return false
	}
	copy(c.Instructions, order)
	return true
}

// intHeap is a min-heap of ints for container/heap.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
