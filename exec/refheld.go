package exec

import (
	"fmt"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
)

// tablePointer is the bytes of one element of a tuple's index table.
const tablePointer = 8

// referenceHeld is the reference run (plan-free, every result in fresh
// memory of its own) counting the memory it holds, from its own
// allocations and frees and nothing of the analysis: it walks the entry's
// schedule, one instruction a step, and
//
//   - allocates the storage of every array and tuple index table (8 bytes
//     an element) a step's result holds that no earlier result held, at
//     that step: an instruction that forwards its operand's (a tuple, a
//     get-tuple-element) allocates nothing;
//   - frees a storage after the step of the last instruction that reads a
//     result holding it, counting each instruction's reads of each
//     operand; a result nothing reads is freed after its own step;
//   - holds the entry's parameters and the constants, the program's
//     inputs and data, for the whole run, but a parameter the module
//     donates to an output (input_output_alias), which it frees as any
//     other; and the storage of the root from its step to the end.
//
// Held[t] is the bytes allocated and not yet freed during step t. A
// while, conditional or call in the entry is an error: the steps of the
// computations they run are not the entry's.
func (x *executor) referenceHeld(entry *hlo.Computation) (*Result, error) {
	seq := x.a.Schedule.Sequence(entry)
	if seq == nil {
		seq = entry.Instructions
	}
	reads := make(map[*hlo.Instruction]int, len(seq))
	for _, in := range seq {
		switch in.Opcode {
		case hlo.OpWhile, hlo.OpConditional, hlo.OpCall:
			return nil, fmt.Errorf("runtime: %s: the held bytes of a run are counted on an entry without %s", in.Name, in.Opcode)
		}
		for _, o := range in.Operands {
			reads[o]++
		}
	}
	end := len(seq)
	type donation struct {
		param int64
		index string
	}
	donated := make(map[donation]bool)
	for _, al := range x.a.Module.InputOutputAlias {
		donated[donation{al.Param, al.ParamIndex.String()}] = true
	}
	type storage struct {
		size     int64
		from, to int
		resident bool
		refs     int // the live results holding it
	}
	stores := make(map[any]*storage)
	holds := make(map[*hlo.Instruction][]*storage, len(seq))
	vals := make(map[*hlo.Instruction]eval.Literal, len(seq))
	release := func(in *hlo.Instruction, t int) {
		for _, s := range holds[in] {
			if s.refs--; s.refs == 0 && !s.resident {
				s.to = t
			}
		}
		delete(holds, in)
		delete(vals, in)
	}
	for t, in := range seq {
		var out eval.Literal
		if in.Opcode == hlo.OpParameter {
			if in.ParameterNumber < 0 || int(in.ParameterNumber) >= len(x.params) {
				return nil, fmt.Errorf("runtime: no argument for %s", in.Name)
			}
			out = x.params[in.ParameterNumber]
		} else {
			if err := x.ev.Tick(in); err != nil {
				return nil, err
			}
			ops := make([]eval.Literal, len(in.Operands))
			for i, o := range in.Operands {
				l, ok := vals[o]
				if !ok {
					return nil, fmt.Errorf("runtime: %s: operand %s has no value", in.Name, o.Name)
				}
				ops[i] = l
			}
			var err error
			if out, err = x.ev.Instruction(in, ops); err != nil {
				return nil, err
			}
		}
		vals[in] = out
		// Inputs and data are held from the start, the root's storage
		// from where it is made; all three to the end, but for the
		// parameters donated to an output.
		input := in.Opcode == hlo.OpParameter || in.Opcode == hlo.OpConstant
		seen := make(map[*storage]bool)
		hold := func(key any, size int64, ix hlo.ShapeIndex) {
			resident := input && !(in.Opcode == hlo.OpParameter && donated[donation{in.ParameterNumber, ix.String()}]) || in == entry.Root
			s := stores[key]
			if s == nil {
				s = &storage{size: size, from: t, to: end}
				if input {
					s.from = 0
				}
				stores[key] = s
			}
			if resident {
				s.resident, s.to = true, end
			}
			if !seen[s] {
				seen[s] = true
				s.refs++
				holds[in] = append(holds[in], s)
			}
		}
		var walk func(l eval.Literal, ix hlo.ShapeIndex)
		walk = func(l eval.Literal, ix hlo.ShapeIndex) {
			switch {
			case l.IsTuple():
				if len(l.Elems) > 0 {
					hold(&l.Elems[0], tablePointer*int64(len(l.Elems)), ix)
				}
				for i, e := range l.Elems {
					walk(e, append(ix[:len(ix):len(ix)], int64(i)))
				}
			case len(l.Data) > 0:
				// A dynamic array's buffer carries its dimension sizes
				// after the data (hlo.BufferSize, as XLA:GPU and CPU size it).
				size := int64(len(l.Data))
				if full, err := hlo.BufferSize(l.Shape); err == nil {
					if data, err := hlo.ByteSize(l.Shape); err == nil && full > data {
						size += full - data
					}
				}
				hold(&l.Data[0], size, ix)
			}
		}
		walk(out, nil)
		for _, o := range in.Operands {
			if reads[o]--; reads[o] == 0 && o != entry.Root {
				release(o, t)
			}
		}
		if reads[in] == 0 && in != entry.Root {
			release(in, t)
		}
	}
	root, ok := vals[entry.Root]
	if !ok {
		return nil, fmt.Errorf("runtime: %s: the root has no value", entry.Name)
	}
	diff := make([]int64, end+2)
	for _, s := range stores {
		diff[s.from] += s.size
		diff[s.to+1] -= s.size
	}
	held := make([]int64, end+1)
	var cur int64
	for t := range held {
		cur += diff[t]
		held[t] = cur
	}
	return &Result{Outputs: root.Leaves(), Steps: x.ev.Steps, Held: held}, nil
}
