package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// ExecOptions configures Execute.
type ExecOptions struct {
	// Reference gives every value a region of its own instead of the
	// plan's slot: the run to compare a planned run with.
	Reference bool
}

// ExecResult is what a run computed.
type ExecResult struct {
	// Outputs are the array leaves of the entry's result, in shape-index
	// pre-order.
	Outputs []Literal
	// Steps is the number of instructions run.
	Steps int
}

// ErrControlFlow is returned for a module whose entry runs while,
// conditional, call or asynchronous instructions, which Execute does not
// evaluate yet.
var ErrControlFlow = errors.New("runtime: control flow is not evaluated yet")

// Execute evaluates the entry computation of as's module for real on the
// bytes of mem: each value is read from and written to the address its
// slot names (allocation base + offset), so a plan that puts two live
// values on the same bytes computes wrong numbers. args holds one literal
// per array leaf of the entry parameters, parameter by parameter in
// shape-index pre-order. An instruction it cannot evaluate is an error
// naming it; never a guess.
func Execute(ctx context.Context, as *assign.Assignment, args []Literal, mem Memory, opts ExecOptions) (*ExecResult, error) {
	if as == nil || as.Analysis == nil || as.Module == nil || as.Module.Entry == nil {
		return nil, errors.New("runtime: no assignment")
	}
	if mem == nil {
		mem = NewHostArena()
	}
	a := as.Analysis
	addr := make([]int64, len(a.Values))
	placed := make([]bool, len(a.Values))
	if opts.Reference {
		// A region per buffer: its values alias one another, as the
		// analysis says they must, and nothing else.
		for _, b := range a.Buffers {
			var size int64
			for _, v := range b.Values {
				size = max(size, v.Size)
			}
			if size == 0 {
				continue
			}
			p, err := mem.Allocate(size, 64)
			if err != nil {
				return nil, err
			}
			for _, v := range b.Values {
				addr[v.ID], placed[v.ID] = p, true
			}
		}
	} else {
		for _, al := range as.Allocations {
			base, err := mem.Allocate(max(al.Size, 1), 256)
			if err != nil {
				return nil, err
			}
			for _, s := range al.Slots {
				if s.Value != nil && s.Value.ID < len(addr) {
					addr[s.Value.ID], placed[s.Value.ID] = base+s.Offset, true
				}
			}
		}
	}
	valueOf := func(in *hlo.Instruction, ix hlo.ShapeIndex) (*liveness.Value, error) {
		v := a.ValueAt(in, ix)
		if v == nil || !placed[v.ID] {
			return nil, fmt.Errorf("runtime: %s%v has no place in the plan", in.Name, ix)
		}
		return v, nil
	}
	read := func(in *hlo.Instruction, ix hlo.ShapeIndex, shape hlo.Shape) (Literal, error) {
		l, err := NewLiteral(shape)
		if err != nil {
			return Literal{}, err
		}
		if len(l.Data) == 0 {
			return l, nil
		}
		v, err := valueOf(in, ix)
		if err != nil {
			return Literal{}, err
		}
		return l, mem.ReadAt(l.Data, addr[v.ID])
	}
	write := func(in *hlo.Instruction, ix hlo.ShapeIndex, l Literal) error {
		if len(l.Data) == 0 {
			return nil
		}
		v, err := valueOf(in, ix)
		if err != nil {
			return err
		}
		if int64(len(l.Data)) > v.Size {
			return fmt.Errorf("runtime: %s%v: %d bytes computed for a %d-byte value", in.Name, ix, len(l.Data), v.Size)
		}
		return mem.WriteAt(l.Data, addr[v.ID])
	}

	entry := as.Module.Entry
	seq := a.Schedule.Sequence(entry)
	if seq == nil {
		seq = entry.Instructions
	}
	// Arguments by parameter: leaves in pre-order.
	next := 0
	argFor := map[*hlo.Instruction][]Literal{}
	for _, p := range entry.Params {
		var leaves []Literal
		var err error
		p.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			if sub.IsTuple() || err != nil {
				return
			}
			if next >= len(args) {
				err = fmt.Errorf("runtime: %d arguments given, the entry takes more", len(args))
				return
			}
			if args[next].Shape.StringNoLayout() != sub.StringNoLayout() {
				err = fmt.Errorf("runtime: argument %d is %s, parameter %s%v is %s", next, args[next].Shape.StringNoLayout(), p.Name, ix, sub.StringNoLayout())
				return
			}
			leaves = append(leaves, args[next])
			next++
		})
		if err != nil {
			return nil, err
		}
		argFor[p] = leaves
	}
	if next != len(args) {
		return nil, fmt.Errorf("runtime: %d arguments given, the entry takes %d", len(args), next)
	}

	res := &ExecResult{}
	for _, in := range seq {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res.Steps++
		switch in.Opcode {
		case hlo.OpParameter:
			leaves := argFor[in]
			k := 0
			var err error
			in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
				if sub.IsTuple() || err != nil {
					return
				}
				err = write(in, append(hlo.ShapeIndex(nil), ix...), leaves[k])
				k++
			})
			if err != nil {
				return nil, err
			}
			continue
		case hlo.OpTuple, hlo.OpGetTupleElement, hlo.OpBitcast:
			// Aliases: the values are the operands' own bytes.
			if in.Opcode != hlo.OpBitcast || a.ValueAt(in, nil) == a.ValueAt(in.Operands[0], nil) {
				continue
			}
		case hlo.OpWhile, hlo.OpConditional, hlo.OpCall, hlo.OpAsyncStart, hlo.OpAsyncDone:
			return nil, fmt.Errorf("%w: %s (%s)", ErrControlFlow, in.Name, in.OpName())
		}
		if in.Shape.IsTuple() {
			return nil, fmt.Errorf("runtime: %s: cannot evaluate opcode %s with a tuple result", in.Name, in.OpName())
		}
		ops := make([]Literal, len(in.Operands))
		for i, o := range in.Operands {
			if o.Shape.IsTuple() {
				return nil, fmt.Errorf("runtime: %s: cannot evaluate opcode %s on a tuple operand", in.Name, in.OpName())
			}
			l, err := read(o, nil, o.Shape)
			if err != nil {
				return nil, err
			}
			ops[i] = l
		}
		var out Literal
		var err error
		if in.Opcode == hlo.OpFusion {
			fc := in.FusedComputation()
			if fc == nil {
				return nil, fmt.Errorf("runtime: %s: fusion without a computation", in.Name)
			}
			out, err = EvalComputation(fc, ops)
			if err != nil {
				err = fmt.Errorf("%s: %w", in.Name, err)
			}
		} else {
			out, err = EvalInstruction(in, ops)
		}
		if err != nil {
			return nil, err
		}
		out.Shape = in.Shape
		if err := write(in, nil, out); err != nil {
			return nil, err
		}
	}
	var err error
	root := entry.Root
	root.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if sub.IsTuple() || err != nil {
			return
		}
		var l Literal
		l, err = read(root, append(hlo.ShapeIndex(nil), ix...), sub)
		res.Outputs = append(res.Outputs, l)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// RandomArgs returns a random literal for every array leaf of m's entry
// parameters, in the order Execute takes its arguments.
func RandomArgs(m *hlo.Module, rng *rand.Rand) []Literal {
	var args []Literal
	for _, p := range m.Entry.Params {
		p.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			if !sub.IsTuple() {
				args = append(args, RandomLiteral(sub, rng))
			}
		})
	}
	return args
}
