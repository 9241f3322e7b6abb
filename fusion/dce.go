package fusion

// Dead-code elimination, after XLA's HloDCE: an instruction whose value no
// one reads, that is not its computation's root or a parameter and whose
// only effect is its value, goes; so does every computation that nothing
// live calls any more. Removing an instruction can leave its operands
// unread, so a worklist carries them on until nothing changes; removals are
// collected and each computation's instruction list and users lists are
// compacted once, keeping the pass linear in the module's size.

import (
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// DCE removes the instructions of m whose results are never used and that
// have no effect beyond their result, then the computations no longer
// called from the entry. It reports whether it changed the module; when it
// did not, the module is untouched. The order of the remaining
// instructions is kept, so a schedule stays a schedule.
func DCE(m *hlo.Module) (changed bool, err error) {
	if m == nil {
		return false, nil
	}
	defer recoverPass("dce", &changed, &err)
	m.Renumber()
	pure := newPurity()
	n := m.NumInstructions()
	removed := make([]bool, n)
	users := make([]int, n)
	for _, c := range m.Computations {
		if dceComputation(c, removed, users, pure) {
			changed = true
		}
	}
	if removeUncalled(m) {
		changed = true
	}
	if changed {
		m.Renumber()
	}
	return changed, nil
}

// dceComputation removes c's dead instructions, marking them in removed
// (by instruction ID), and reports whether it removed any. users is
// scratch space by instruction ID: the users of each that remain.
func dceComputation(c *hlo.Computation, removed []bool, users []int, pure *purity) bool {
	for _, in := range c.Instructions {
		users[in.ID] = len(in.Users)
	}
	work := make([]*hlo.Instruction, 0, len(c.Instructions))
	for i := len(c.Instructions) - 1; i >= 0; i-- {
		work = append(work, c.Instructions[i])
	}
	any := false
	for len(work) > 0 {
		in := work[0]
		work = work[1:]
		if removed[in.ID] || users[in.ID] > 0 || !removable(in, pure) {
			continue
		}
		removed[in.ID] = true
		any = true
		for k, op := range in.Operands {
			if seenBefore(in.Operands, k) {
				continue
			}
			users[op.ID]--
			if users[op.ID] == 0 {
				work = append(work, op)
			}
		}
	}
	if !any {
		return false
	}
	dropInstructions(c, func(in *hlo.Instruction) bool { return removed[in.ID] })
	return true
}

// dropInstructions takes the instructions gone names out of c's list, and
// out of the users lists of those that stay, in one sweep, and detaches
// them from c.
func dropInstructions(c *hlo.Computation, gone func(*hlo.Instruction) bool) {
	kept := c.Instructions[:0]
	for _, in := range c.Instructions {
		if gone(in) {
			in.Parent = nil
			continue
		}
		kept = append(kept, in)
	}
	clear(c.Instructions[len(kept):])
	c.Instructions = kept
	for _, in := range kept {
		if slices.ContainsFunc(in.Users, gone) {
			in.Users = slices.DeleteFunc(in.Users, gone)
		}
	}
}

// seenBefore reports whether ops[k] already occurs in ops[:k]. Users lists
// hold a user once however many operand slots it fills.
func seenBefore(ops []*hlo.Instruction, k int) bool {
	for _, o := range ops[:k] {
		if o == ops[k] {
			return true
		}
	}
	return false
}

// removable reports whether in may go once nothing uses it: not a root or
// parameter, no control edges, and an opcode whose only effect is its value.
func removable(in *hlo.Instruction, pure *purity) bool {
	if in.IsRoot() || in.Opcode == hlo.OpParameter || hasControl(in) {
		return false
	}
	return pureInstruction(in, pure)
}

// hasControl reports whether in takes part in a control dependency.
func hasControl(in *hlo.Instruction) bool {
	return len(in.ControlPredecessors()) > 0 || len(in.ControlSuccessors()) > 0
}

// pureInstruction reports whether in computes nothing but its value: its
// opcode has no side effect, does not communicate and is not one of the
// opcodes kept whatever their users (custom calls, tokens, async ops),
// and every computation it calls is pure too. A call, while or
// conditional is pure when its computations are: XLA's HloDCE removes a
// dead one unless HloInstruction::HasSideEffect, which looks into the
// called computations (hlo_dce.cc, CanRemoveInstruction and
// IsRemovableWhile), so a jitted function's unused forward pass of nested
// jits goes.
func pureInstruction(in *hlo.Instruction, pure *purity) bool {
	op := in.Opcode
	if op.Has(hlo.SideEffect) || op.Has(hlo.Collective) || op.Has(hlo.AsyncStart) || op.Has(hlo.AsyncDone) {
		return false
	}
	switch op {
	case hlo.OpUnknown, hlo.OpCustomCall, hlo.OpRng, hlo.OpRngGetAndUpdateState,
		hlo.OpAfterAll, hlo.OpAddDependency,
		hlo.OpAsyncStart, hlo.OpAsyncUpdate, hlo.OpAsyncDone, hlo.OpDomain,
		hlo.OpOptBarrier, hlo.OpInfeed, hlo.OpOutfeed, hlo.OpSend, hlo.OpSendDone,
		hlo.OpRecv, hlo.OpRecvDone:
		return false
	}
	for _, callee := range in.Callees() {
		if !pure.computation(callee) {
			return false
		}
	}
	return true
}

// purity remembers which computations contain only pure instructions.
type purity struct {
	memo map[*hlo.Computation]uint8 // 1 visiting, 2 pure, 3 impure
}

func newPurity() *purity { return &purity{memo: map[*hlo.Computation]uint8{}} }

func (p *purity) computation(c *hlo.Computation) bool {
	switch p.memo[c] {
	case 1, 3: // a call cycle counts as impure
		return false
	case 2:
		return true
	}
	p.memo[c] = 1
	ok := true
	for _, in := range c.Instructions {
		if in.Opcode == hlo.OpParameter {
			continue
		}
		if !pureInstruction(in, p) {
			ok = false
			break
		}
	}
	if ok {
		p.memo[c] = 2
	} else {
		p.memo[c] = 3
	}
	return ok
}

// removeUncalled deletes the computations that the entry does not reach
// through the computations its instructions call, and reports whether
// there were any.
func removeUncalled(m *hlo.Module) bool {
	if m.Entry == nil {
		return false
	}
	reached := make([]bool, len(m.Computations))
	index := make(map[*hlo.Computation]int, len(m.Computations))
	for i, c := range m.Computations {
		index[c] = i
	}
	stack := []*hlo.Computation{m.Entry}
	if i, ok := index[m.Entry]; ok {
		reached[i] = true
	}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				if i, ok := index[callee]; ok && !reached[i] {
					reached[i] = true
					stack = append(stack, callee)
				}
			}
		}
	}
	kept := m.Computations[:0]
	any := false
	for i, c := range m.Computations {
		if reached[i] {
			kept = append(kept, c)
		} else {
			any = true
		}
	}
	if any {
		for i := len(kept); i < len(m.Computations); i++ {
			m.Computations[i] = nil
		}
		m.Computations = kept
	}
	return any
}

// recoverPass turns a panic inside a pass into an error naming it.
func recoverPass(name string, changed *bool, err *error) {
	if r := recover(); r != nil {
		*changed = true // the module may be half edited
		*err = fmt.Errorf("fusion: %s panicked: %v", name, r)
	}
}
