package liveness

import (
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// Schedule gives the execution order of each sequential computation: a
// permutation of its instructions in which every operand and control
// predecessor comes before its users.
type Schedule struct {
	seqs map[*hlo.Computation][]*hlo.Instruction
	// Name says which scheduler made the schedule ("module order", "list", ...).
	Name string
}

// NewSchedule returns an empty schedule.
func NewSchedule(name string) *Schedule {
	return &Schedule{seqs: map[*hlo.Computation][]*hlo.Instruction{}, Name: name}
}

// ModuleOrder returns the schedule in which every computation runs in its
// text order; for a scheduled module that is XLA's schedule.
func ModuleOrder(m *hlo.Module) *Schedule {
	s := NewSchedule("module order")
	for _, c := range m.Computations {
		s.seqs[c] = c.Instructions
	}
	return s
}

// Set sets the sequence of c.
func (s *Schedule) Set(c *hlo.Computation, seq []*hlo.Instruction) { s.seqs[c] = seq }

// Lookup returns the sequence set for c, and false when none was (then
// Sequence gives c's text order).
func (s *Schedule) Lookup(c *hlo.Computation) ([]*hlo.Instruction, bool) {
	seq, ok := s.seqs[c]
	return seq, ok
}

// Sequence returns the sequence of c (its text order when none was set;
// nil for a nil computation).
func (s *Schedule) Sequence(c *hlo.Computation) []*hlo.Instruction {
	if seq, ok := s.seqs[c]; ok {
		return seq
	}
	if c == nil {
		return nil
	}
	return c.Instructions
}

// Validate checks that the sequence of every sequential computation is a
// permutation of its instructions that respects data and control
// dependencies. It takes any module, verified or not, and reports what
// keeps the schedule from being one, never panicking.
//
// kinds, when not nil, is Analysis.Kinds (by computation ID, current
// IDs): only the sequential computations are checked.
func (s *Schedule) Validate(m *hlo.Module, kinds []CompKind) error {
	if s == nil {
		return newError(ErrInvalidSchedule, m, hlo.Pos{}, "liveness: no schedule", nil)
	}
	if m == nil {
		return newError(ErrNoModule, nil, hlo.Pos{}, "liveness: no module to schedule", nil)
	}
	for _, c := range m.Computations {
		if c == nil || kinds != nil && (c.ID < 0 || c.ID >= len(kinds) || kinds[c.ID] != Sequential) {
			continue
		}
		if err := validSequence(c, s.Sequence(c)); err != nil {
			return newError(ErrInvalidSchedule, m, c.Pos, err.Error(), nil)
		}
	}
	return nil
}

func validSequence(c *hlo.Computation, seq []*hlo.Instruction) error {
	if len(seq) != len(c.Instructions) {
		return fmt.Errorf("liveness: schedule of %s has %d instructions, the computation %d", c.Name, len(seq), len(c.Instructions))
	}
	idx := hlo.NewInstructionIndex(c)
	done := make([]bool, len(c.Instructions))
	isDone := func(in *hlo.Instruction) bool {
		k := idx.Of(in)
		return k >= 0 && done[k]
	}
	for _, in := range seq {
		if in == nil {
			return fmt.Errorf("liveness: schedule of %s holds a nil instruction", c.Name)
		}
		if in.Parent != c {
			return fmt.Errorf("liveness: schedule of %s holds %s from another computation", c.Name, in.Name)
		}
		k := idx.Of(in)
		if k < 0 {
			return fmt.Errorf("liveness: schedule of %s holds %s, which is not among its instructions", c.Name, in.Name)
		}
		if done[k] {
			return fmt.Errorf("liveness: schedule of %s lists %s twice", c.Name, in.Name)
		}
		for _, o := range in.Operands {
			switch {
			case o == nil:
				return fmt.Errorf("liveness: schedule of %s: %s has an undefined operand", c.Name, in.Name)
			case o.Parent != c:
				return fmt.Errorf("liveness: schedule of %s: operand %s of %s is not in the computation", c.Name, o.Name, in.Name)
			case !isDone(o):
				return fmt.Errorf("liveness: schedule of %s runs %s before its operand %s", c.Name, in.Name, o.Name)
			}
		}
		for _, p := range in.ControlPredecessors() {
			switch {
			case p == nil || p.Parent != c:
				return fmt.Errorf("liveness: schedule of %s: a control predecessor of %s is not in the computation", c.Name, in.Name)
			case !isDone(p):
				return fmt.Errorf("liveness: schedule of %s runs %s before its control predecessor %s", c.Name, in.Name, p.Name)
			}
		}
		done[k] = true
	}
	return nil
}

// Apply reorders the instructions of every scheduled computation of m to
// the schedule and marks the module scheduled, so that printing it gives
// XLA's scheduled form.
func (s *Schedule) Apply(m *hlo.Module) {
	for _, c := range m.Computations {
		if seq, ok := s.seqs[c]; ok && len(seq) == len(c.Instructions) {
			c.Instructions = append([]*hlo.Instruction(nil), seq...)
		}
	}
	m.IsScheduled = true
	m.Renumber()
}
