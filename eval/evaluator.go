package eval

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// DefaultSeed seeds the random state of rng when nothing else is said, so
// that two evaluations of one module compute the same numbers.
const DefaultSeed = 0x686c6f6d656d // "hlomem"

// ErrStepBudget is returned when an evaluation runs more instructions than
// its budget allows (a loop that does not end, or ends too late).
var ErrStepBudget = errors.New("runtime: step budget exhausted")

// Evaluator evaluates instructions and computations on literals, without a
// plan: every value is a fresh Go slice. It carries what an evaluation keeps
// between instructions: the random state of rng, the context, and the count
// of instructions run against a budget. An Evaluator is not safe for
// concurrent use.
type Evaluator struct {
	// Ctx, when set, stops a long evaluation (checked at every loop
	// iteration and every 1024 instructions).
	Ctx context.Context
	// MaxSteps bounds the instructions run (0: no bound), so that a loop
	// that never ends is an error and not a hang.
	MaxSteps int64
	// Steps counts the instructions run so far.
	Steps int64
	// MaxWork bounds the element operations run (0: no bound; see Work),
	// so that a run can be bounded by how much it computes, whatever the
	// machine's speed.
	MaxWork int64
	// Work counts the element operations of the instructions run so far
	// (InstructionWork each).
	Work  int64
	state *rand.Rand
}

// NewEvaluator returns an evaluator whose rng draws from seed.
func NewEvaluator(seed uint64) *Evaluator {
	return &Evaluator{state: newRand(seed)}
}

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Instruction computes the result of in from its operands' literals
// with a fresh Evaluator (seeded with DefaultSeed). Unsupported opcodes or
// element types give an error, never a wrong answer.
func Instruction(in *hlo.Instruction, operands []Literal) (Literal, error) {
	return NewEvaluator(DefaultSeed).Instruction(in, operands)
}

// Computation evaluates computation c on args (one literal per
// parameter) with a fresh Evaluator (seeded with DefaultSeed).
func Computation(c *hlo.Computation, args []Literal) (Literal, error) {
	return NewEvaluator(DefaultSeed).Computation(c, args)
}

type unsupportedError struct{ in *hlo.Instruction }

func (e unsupportedError) Error() string {
	return fmt.Sprintf("cannot evaluate opcode %s", e.in.OpName())
}

// Instruction computes the result of in (an array or a tuple) from its
// operands' literals. An error names the instruction and its opcode.
func (ev *Evaluator) Instruction(in *hlo.Instruction, operands []Literal) (Literal, error) {
	out, err := ev.instruction(in, operands)
	if err != nil {
		var se *stepError
		if errors.As(err, &se) {
			return Literal{}, err
		}
		return Literal{}, fmt.Errorf("%s: %s: %w", in.Name, in.OpName(), err)
	}
	return out, nil
}

// stepError is an error that already names where it happened (a budget
// or a cancellation), passed up through nested computations unchanged.
type stepError struct{ err error }

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// Tick counts one instruction against MaxSteps and polls Ctx (every 1024
// instructions). Computation calls it for every instruction it runs; a
// caller that walks a computation itself, as the executor of package exec
// does, calls it for each of its own steps, so that its steps and the
// evaluator's count against one budget. The error, ErrStepBudget or the
// context's, names where the run stopped; Instruction and Computation pass
// it up unchanged.
func (ev *Evaluator) Tick(in *hlo.Instruction) error {
	ev.Steps++
	if ev.MaxSteps > 0 && ev.Steps > ev.MaxSteps {
		return &stepError{fmt.Errorf("%w: %d instructions run, at %s", ErrStepBudget, ev.MaxSteps, in.Name)}
	}
	if ev.MaxWork > 0 {
		ev.Work += InstructionWork(in)
		if ev.Work > ev.MaxWork {
			return &stepError{fmt.Errorf("%w: over %d element operations, at %s", ErrStepBudget, ev.MaxWork, in.Name)}
		}
	}
	if ev.Ctx != nil && ev.Steps&1023 == 0 {
		if err := ev.Ctx.Err(); err != nil {
			return &stepError{err}
		}
	}
	return nil
}

// InstructionWork is the element operations the evaluator counts for one
// run of in, a measure of its time proportional to what it computes: the
// elements of its result and of its operands, a dot's result elements
// times its contraction, a convolution's times the kernel elements per
// output feature, a sort's elements times the log of the sorted
// dimension. A fusion or a called computation counts only its result
// here; its instructions count as they run.
func InstructionWork(in *hlo.Instruction) int64 {
	elems := func(s hlo.Shape) int64 {
		var n int64
		s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
			if sub.IsArray() {
				if k, ok := sub.Elements(); ok {
					n += k
				}
			}
		})
		return n
	}
	out := elems(in.Shape)
	switch in.Opcode {
	case hlo.OpFusion, hlo.OpCall, hlo.OpWhile, hlo.OpConditional:
		return max(out, 1)
	case hlo.OpDot:
		k := int64(1)
		if d := in.Dot(); d != nil && len(in.Operands) > 0 {
			for _, c := range d.LhsContracting {
				if c >= 0 && int(c) < len(in.Operands[0].Shape.Dims) {
					k *= max(in.Operands[0].Shape.Dims[c], 1)
				}
			}
		}
		return max(out*k, 1)
	case hlo.OpConvolution:
		if len(in.Operands) == 2 && len(in.Shape.Dims) > 0 {
			kernel := elems(in.Operands[1].Shape)
			features := max(in.Shape.Dims[len(in.Shape.Dims)-1], 1)
			return max(out*max(kernel/features, 1), 1)
		}
	case hlo.OpSort:
		n := int64(0)
		for _, o := range in.Operands {
			n += elems(o.Shape)
		}
		return max(n*int64(bits.Len64(uint64(max(n, 1)))), 1)
	}
	for _, o := range in.Operands {
		out += elems(o.Shape)
	}
	return max(out, 1)
}

func (ev *Evaluator) random() *rand.Rand {
	if ev.state == nil {
		ev.state = newRand(DefaultSeed)
	}
	return ev.state
}

// Computation evaluates c on args (one literal per parameter) by walking
// its instructions in order and returns its root's value.
func (ev *Evaluator) Computation(c *hlo.Computation, args []Literal) (Literal, error) {
	if c == nil {
		return Literal{}, errors.New("no computation to evaluate")
	}
	if len(args) != len(c.Params) {
		return Literal{}, fmt.Errorf("computation %s takes %d arguments, %d given", c.Name, len(c.Params), len(args))
	}
	vals := make(map[*hlo.Instruction]Literal, len(c.Instructions))
	for _, in := range c.Instructions {
		if in.Opcode == hlo.OpParameter {
			if in.ParameterNumber < 0 || int(in.ParameterNumber) >= len(args) {
				return Literal{}, fmt.Errorf("%s: parameter %d of %d", in.Name, in.ParameterNumber, len(args))
			}
			a := args[in.ParameterNumber]
			if !hlo.Compatible(a.Shape, in.Shape) {
				return Literal{}, fmt.Errorf("%s: argument is %s, parameter is %s", in.Name, a.Shape.StringNoLayout(), in.Shape.StringNoLayout())
			}
			vals[in] = a
			continue
		}
		if err := ev.Tick(in); err != nil {
			return Literal{}, err
		}
		ops := make([]Literal, len(in.Operands))
		for i, o := range in.Operands {
			v, ok := vals[o]
			if !ok {
				return Literal{}, fmt.Errorf("%s: operand %s has no value", in.Name, o.Name)
			}
			ops[i] = v
		}
		v, err := ev.Instruction(in, ops)
		if err != nil {
			return Literal{}, err
		}
		vals[in] = v
	}
	v, ok := vals[c.Root]
	if !ok {
		return Literal{}, fmt.Errorf("computation %s: root has no value", c.Name)
	}
	return v, nil
}

// instruction dispatches on the opcode: the ones that take or make tuples
// here, every other through array.
func (ev *Evaluator) instruction(in *hlo.Instruction, ops []Literal) (Literal, error) {
	for i, o := range ops {
		if err := o.Check(); err != nil {
			return Literal{}, fmt.Errorf("operand %d: %v", i, err)
		}
	}
	if a := in.Opcode.Arity(); a >= 0 && a != len(ops) && in.Opcode != hlo.OpUnknown {
		return Literal{}, fmt.Errorf("has %d operands, want %d", len(ops), a)
	}
	// Every array the instruction makes is sized from its shape: one
	// that does not compute, or is absurd, is an error before anything
	// is allocated for it.
	var sizeErr error
	in.Shape.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if sizeErr == nil && sub.IsArray() {
			sizeErr = checkArraySize(sub)
		}
	})
	if sizeErr != nil {
		return Literal{}, sizeErr
	}
	var out Literal
	var err error
	switch in.Opcode {
	case hlo.OpTuple:
		out = TupleLiteral(ops...)
	case hlo.OpGetTupleElement:
		t := ops[0]
		if !t.IsTuple() || in.TupleIndex < 0 || in.TupleIndex >= int64(len(t.Elems)) {
			return Literal{}, fmt.Errorf("index %d of %s", in.TupleIndex, t.Shape)
		}
		out = t.Elems[in.TupleIndex]
	case hlo.OpOptBarrier:
		out = ops[0]
	case hlo.OpAddDependency:
		out = ops[0]
	case hlo.OpAfterAll:
		out = Literal{Shape: in.Shape}
	case hlo.OpCopyStart:
		// (destination, source, context): the copy is made at once.
		if !in.Shape.IsTuple() || len(in.Shape.Tuple) < 2 {
			return Literal{}, fmt.Errorf("copy-start of shape %s", in.Shape)
		}
		elems := []Literal{{Shape: ops[0].Shape, Data: append([]byte(nil), ops[0].Data...), Elems: ops[0].Elems}, ops[0]}
		for _, s := range in.Shape.Tuple[2:] {
			z, err := zeroLiteral(s)
			if err != nil {
				return Literal{}, err
			}
			elems = append(elems, z)
		}
		out = TupleLiteral(elems...)
	case hlo.OpCopyDone:
		if !ops[0].IsTuple() || len(ops[0].Elems) == 0 {
			return Literal{}, fmt.Errorf("copy-done of %s", ops[0].Shape)
		}
		out = ops[0].Elems[0]
	case hlo.OpCall:
		out, err = ev.Computation(in.ToApply(), ops)
	case hlo.OpFusion:
		fc := in.FusedComputation()
		if fc == nil {
			return Literal{}, errors.New("fusion without a computation")
		}
		out, err = ev.Computation(fc, ops)
	case hlo.OpWhile:
		out, err = ev.while(in, ops[0])
	case hlo.OpConditional:
		out, err = ev.conditional(in, ops)
	case hlo.OpSort:
		out, err = ev.sort(in, ops)
	case hlo.OpScatter:
		out, err = ev.scatter(in, ops)
	case hlo.OpCustomCall:
		if isShardingAnnotation(in, ops) {
			// Its own result, as any instruction's (the reference run
			// counts every result's storage apart): its operand's bytes.
			out = Literal{Shape: ops[0].Shape, Data: slices.Clone(ops[0].Data)}
		} else {
			out, err = ev.array(in, ops)
		}
	case hlo.OpReduce:
		if in.Shape.IsTuple() {
			out, err = ev.reduceVariadic(in, ops)
		} else {
			out, err = ev.array(in, ops)
		}
	default:
		out, err = ev.array(in, ops)
	}
	if err != nil {
		return Literal{}, err
	}
	if !hlo.Compatible(out.Shape, in.Shape) {
		return Literal{}, fmt.Errorf("computed %s, the instruction's shape is %s", out.Shape.StringNoLayout(), in.Shape.StringNoLayout())
	}
	if !out.IsTuple() && out.Shape.Layout != nil && in.Shape.Layout != nil && !sameLayout(out.Shape, in.Shape) {
		// A forwarded value (a call's, a loop's) in another layout.
		if out, err = relayout(in.Shape, out); err != nil {
			return Literal{}, err
		}
	}
	if out.IsTuple() {
		out.Shape = in.Shape
	}
	return out, nil
}

// zeroLiteral is a literal of shape s with every byte zero.
func zeroLiteral(s hlo.Shape) (Literal, error) {
	switch {
	case s.IsTuple():
		elems := make([]Literal, len(s.Tuple))
		for i, e := range s.Tuple {
			z, err := zeroLiteral(e)
			if err != nil {
				return Literal{}, err
			}
			elems[i] = z
		}
		return Literal{Shape: s, Elems: elems}, nil
	case s.Elem == hlo.Token:
		return Literal{Shape: s}, nil
	}
	return NewLiteral(s)
}

// while runs the body while the condition holds, on a state that starts as
// init.
func (ev *Evaluator) while(in *hlo.Instruction, init Literal) (Literal, error) {
	cond, body := in.Condition(), in.Body()
	if cond == nil || body == nil {
		return Literal{}, errors.New("while without condition or body")
	}
	state := init
	err := ev.Loop(func() (bool, error) {
		p, err := ev.Computation(cond, []Literal{state})
		if err != nil {
			return false, err
		}
		ok, err := Predicate(p)
		if err != nil {
			return false, fmt.Errorf("condition %s: %v", cond.Name, err)
		}
		return ok, nil
	}, func() (err error) {
		state, err = ev.Computation(body, []Literal{state})
		return err
	})
	if err != nil {
		return Literal{}, err
	}
	return state, nil
}

// Loop runs body while cond gives true, polling Ctx (when not nil) before
// every test of the condition: a while instruction's loop, for the
// evaluator and for a caller that runs a loop's computations itself.
func (ev *Evaluator) Loop(cond func() (bool, error), body func() error) error {
	for {
		if ev.Ctx != nil {
			if err := ev.Ctx.Err(); err != nil {
				return &stepError{err}
			}
		}
		ok, err := cond()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := body(); err != nil {
			return err
		}
	}
}

// Predicate reads a pred[] literal: a while condition's result, a sort
// comparator's.
func Predicate(p Literal) (bool, error) {
	if p.IsTuple() || p.Shape.Elem != hlo.PRED || len(p.Shape.Dims) != 0 || len(p.Data) != 1 {
		return false, fmt.Errorf("condition gives %s, not pred[]", p.Shape)
	}
	return p.Data[0] != 0, nil
}

// BranchIndex picks a conditional's branch from its first operand: a pred
// picks the first branch when true, the second when false; an s32 index
// out of [0, n) picks the last branch, as XLA defines.
func BranchIndex(sel Literal, n int) (int, error) {
	if sel.IsTuple() || len(sel.Shape.Dims) != 0 {
		return 0, fmt.Errorf("branch selector is %s, not a scalar", sel.Shape)
	}
	switch sel.Shape.Elem {
	case hlo.PRED:
		if n != 2 {
			return 0, fmt.Errorf("pred selector with %d branches", n)
		}
		if sel.Data[0] != 0 {
			return 0, nil
		}
		return 1, nil
	case hlo.S32:
		i := decodeI(hlo.S32, sel.Data)[0]
		if i < 0 || i >= int64(n) {
			return n - 1, nil
		}
		return int(i), nil
	}
	return 0, fmt.Errorf("branch selector of type %s", sel.Shape.Elem)
}

// conditional runs the branch the first operand selects on its operand.
func (ev *Evaluator) conditional(in *hlo.Instruction, ops []Literal) (Literal, error) {
	br := in.Branches()
	if len(br) == 0 || len(ops) != len(br)+1 {
		return Literal{}, fmt.Errorf("%d branches, %d operands", len(br), len(ops))
	}
	k, err := BranchIndex(ops[0], len(br))
	if err != nil {
		return Literal{}, err
	}
	return ev.Computation(br[k], []Literal{ops[k+1]})
}

// isShardingAnnotation reports whether in is custom-call "Sharding" on one
// array of its own shape: XLA's annotation of its operand's sharding for
// the SPMD partitioner, which computes nothing (the partitioner replaces
// it by its operand). Other custom-calls are a backend's kernels, which
// the evaluator does not know.
func isShardingAnnotation(in *hlo.Instruction, ops []Literal) bool {
	return in.CustomCallTarget() == "Sharding" && len(ops) == 1 && !ops[0].IsTuple() && !in.Shape.IsTuple() && hlo.Compatible(ops[0].Shape, in.Shape)
}
