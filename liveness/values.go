package liveness

// Values: XLA's HloDataflowAnalysis in SSA form (hlo_dataflow_analysis.cc).
//
// A value is an (instruction, shape index) pair that defines storage. Every
// position (instruction, shape index) of every instruction outside fusion
// bodies holds at most one value: either one the instruction defines, or one
// it forwards from an operand or a called computation. Which positions an
// instruction defines (XLA's InitializeInstructionValueSets, definesAt):
//
//   - bitcast, get-tuple-element, while, call, conditional, domain,
//     add-dependency, opt-barrier, copy-done and all-reduce-done define
//     nothing and forward;
//   - tuple and copy define only their top level {};
//   - a parameter of a computation called as control flow (while condition
//     and body, call, conditional branch, async computation) defines
//     nothing: its values are the caller's; entry, embedded (thread-local,
//     fusion) and uncalled computations' parameters define everything;
//   - async-start defines its tuple nodes and its contexts ({2} on), and
//     forwards {0,i} from operand i and {1} from the async computation's
//     root; async-update and async-done define only tuple nodes;
//   - copy-start defines {}, {0} and {2}; all-gather-start its tuple nodes
//     and {1,...}; collective-permute-start {}, {1}, its contexts and, with
//     several operands, {1,i}; all-gather-done and collective-permute-done
//     their top level when it is a tuple; send {}, {1}, {2}; recv-done {}
//     and {1};
//   - everything else defines every position, tuple nodes included.
//
// Values are numbered as XLA creates them: computations in post-order
// (callees first), instructions in post-order, positions in pre-order,
// counting the values of fusion bodies too; then the phis, in the order
// the propagation creates them (dataflow.go). Phis that the propagation
// or the phi-graph optimisation removes keep their numbers, so XLA's
// value IDs have gaps and so do ours.
//
// A use is (instruction, operand number, operand shape index) and is
// derived from a value's positions (XLA's HloValue::ComputeUses): every
// user of a position uses the value, except that tuple and domain pass it
// through and get-tuple-element and copy read only their operand's top
// level; a computation's root uses every value that appears in it.

import (
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// Position is a place where a value appears: an instruction and a shape index.
type Position struct {
	Inst  *hlo.Instruction
	Index hlo.ShapeIndex
}

// Use is an instruction reading a value through one of its operands.
type Use struct {
	Inst    *hlo.Instruction
	Operand int
	Index   hlo.ShapeIndex // index within the operand's shape
}

// HandsOn reports a use that reads no bytes at its instruction's step: an
// operand handed to a called computation (call, while, a conditional's
// branch operands), where the callee's parameter aliases it and the reads
// happen at the callee's own steps, scheduled before the call site.
func (u Use) HandsOn() bool {
	switch u.Inst.Opcode {
	case hlo.OpCall, hlo.OpWhile:
		return true
	case hlo.OpConditional:
		return u.Operand > 0
	}
	return false
}

// Value is one defined piece of storage: an (instruction, shape index).
type Value struct {
	// ID is dense over the analysis: 0..len(Values)-1.
	ID int
	// XLAID is the number XLA's dataflow analysis gives the value (it also
	// counts fusion-body values); printed in XLA's dump formats.
	XLAID int
	Inst  *hlo.Instruction
	Index hlo.ShapeIndex
	Shape hlo.Shape
	// Size is hlo.BufferSize of Shape, the bytes of its buffer (a dynamic
	// array's bound plus its runtime sizes), 0 when it has none (an
	// unbounded dimension, under AllowUnbounded).
	Size int64
	// Positions lists where the value appears; the first is its definition.
	Positions []Position
	Uses      []Use
	// Buffer is the buffer (alias set) holding the value.
	Buffer *Buffer
	// Range is the value's live range in the flattened schedule; only
	// meaningful when Scheduled.
	Range Range
	// EndPosition is the latest of the value's positions in time (XLA's
	// TimeBound::end_position; uses do not move it), the place where its
	// buffer may be handed to a user.
	EndPosition Position
	// Color is the memory space of the value's layout (S(n)).
	Color int64

	// The flags and ord share one word (a Value is one of the analysis'
	// largest structures: one per subshape position of the module).
	IsPhi bool
	// LiveOut is true when the value appears in the entry's result.
	LiveOut   bool
	Scheduled bool
	ord       int32 // pre-order ordinal of Index in Inst's shape
}

// Name returns the value as XLA's live-range dump prints it: name{index}.
func (v *Value) Name() string { return v.Inst.Name + v.Index.String() }

// String returns XLA's short form: <ID name{index} @color>, with (phi) for phis.
func (v *Value) String() string {
	phi := ""
	if v.IsPhi {
		phi = " (phi)"
	}
	return fmt.Sprintf("<%d %s%s @%d>", v.XLAID, v.Name(), phi, v.Color)
}

// CompKind classifies a computation by how it runs, as XLA's
// GatherComputationsByAllocationType does.
type CompKind uint8

const (
	// Unreachable computations are not called from the entry, or run on
	// an execution thread the analysis leaves out (Options.ExecutionThreads).
	Unreachable CompKind = iota
	// Sequential computations run in the caller's thread in schedule order:
	// the entry and the bodies of call, while, conditional and async ops.
	Sequential
	// ThreadLocal computations run in a parallel context (reduce, map,
	// sort, scatter to_apply and the like); their values never share storage.
	ThreadLocal
	// Fusion computations are fused into an instruction; their inner values
	// need no memory.
	Fusion
)

func (k CompKind) String() string {
	return [...]string{"unreachable", "sequential", "thread-local", "fusion"}[k]
}

// classify assigns every computation its kind, walking the call graph
// from the entry, and lists the computations entered from a parallel
// context (the roots of thread-local regions), in module order. A
// computation reached both sequentially and in a parallel context is an
// error, as in XLA. The kinds are indexed by computation ID, which must be
// current (Module.Renumber).
func classify(m *hlo.Module) ([]CompKind, []*hlo.Computation, error) {
	kinds := make([]CompKind, len(m.Computations))
	visited := make([]bool, len(m.Computations))
	parallelRoot := make([]bool, len(m.Computations))
	var visit func(c *hlo.Computation, k CompKind) error
	visit = func(c *hlo.Computation, k CompKind) error {
		if c == nil {
			return nil
		}
		if visited[c.ID] {
			if prev := kinds[c.ID]; prev != k {
				return newError(ErrCallContext, m, c.Pos, fmt.Sprintf("liveness: computation %s is called both as %s and as %s", c.Name, prev, k), nil)
			}
			return nil
		}
		visited[c.ID] = true
		kinds[c.ID] = k
		for _, in := range c.Instructions {
			if in.Ext == nil {
				continue
			}
			for _, callee := range in.Callees() {
				var ck CompKind
				switch {
				case in.Opcode == hlo.OpFusion:
					ck = Fusion
				case in.Opcode == hlo.OpCall || in.Opcode == hlo.OpWhile || in.Opcode == hlo.OpConditional ||
					in.Opcode == hlo.OpAsyncStart || in.Opcode == hlo.OpAsyncUpdate || in.Opcode == hlo.OpAsyncDone:
					// Sequential calls inherit the caller's context (an
					// async-update or async-done may repeat its chain's
					// calls=); a fusion body's callees run inside one thread.
					ck = k
					if k == Fusion {
						ck = ThreadLocal
					}
				default:
					ck = ThreadLocal
					if callee != nil && kinds[callee.ID] == Unreachable {
						parallelRoot[callee.ID] = true
					}
				}
				if ck == ThreadLocal && k != ThreadLocal && callee != nil {
					parallelRoot[callee.ID] = true
				}
				if err := visit(callee, ck); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(m.Entry, Sequential); err != nil {
		return nil, nil, err
	}
	var roots []*hlo.Computation
	for _, c := range m.Computations {
		if parallelRoot[c.ID] && kinds[c.ID] == ThreadLocal {
			roots = append(roots, c)
		}
	}
	return kinds, roots, nil
}
