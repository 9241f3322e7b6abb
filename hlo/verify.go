package hlo

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/topo"
)

// Verify checks the structural invariants the rest of the pipeline relies
// on and returns every violation as a positioned ErrorList (nil when the
// module is valid). It accepts any module Parse returns, or one built or
// changed by code, and never panics on it. It checks that:
//
//   - computation names are unique in the module, instruction names unique
//     in their computation (XLA's parser accepts the same instruction name
//     in different computations and renames one; so does this package);
//   - every operand and control predecessor is an instruction of the same
//     computation, and none is the instruction itself;
//   - operand counts match the opcode table;
//   - every instruction names the computations its opcode needs (a while
//     its condition and body, a conditional at least one branch, a fusion
//     or async-start what it calls, call, reduce, sort and the other
//     ToApply opcodes a to_apply=) and only opcodes that call computations
//     name any; called computations exist and calls form no cycle;
//   - call sites agree with their callees as XLA's ShapeVerifier requires:
//     parameter counts; a while's state, condition and body shapes and a
//     pred[] condition; a conditional's pred[] (two branches) or s32[]
//     selector and its branches' parameter and result shapes; a sort's
//     comparator returning pred[]; a call's tuple structure (XLA compares
//     the whole shapes, but XLA's own test inputs do not always agree);
//   - each computation has one root that belongs to it, and its parameter
//     numbers are 0..n-1 without gaps or repeats;
//   - get-tuple-element indices are in range of a tuple operand;
//   - element-wise operands have the output's dimensions;
//   - no computation has a dependency cycle (found with gonum's topo.Sort,
//     reported as the cycle's instructions);
//   - every shape's byte size fits in int64.
//
// Opcodes this package does not know (OpUnknown) pass: their operands are
// checked, their semantics cannot be, and the analyses refuse them. A
// shape with an unbounded dimension passes too (it is valid HLO); the
// analyses refuse to size it.
func Verify(m *Module) error {
	return VerifyContext(context.Background(), m)
}

// VerifyContext is Verify that stops, returning ctx's error, once ctx is
// done (checked every few thousand instructions).
func VerifyContext(ctx context.Context, m *Module) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	v := &verifier{m: m, ctx: ctx}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopVerify); !ok {
				panic(r)
			}
			err = ctx.Err()
		}
	}()
	v.run()
	return v.errs.Err()
}

type verifier struct {
	m      *Module
	errs   ErrorList
	ctx    context.Context
	polled int
}

// stopVerify unwinds the verifier when its context is done.
type stopVerify struct{}

// poll stops the verification once the context is done.
func (v *verifier) poll() {
	if v.polled++; v.polled < pollEvery {
		return
	}
	v.polled = 0
	if v.ctx.Err() != nil {
		panic(stopVerify{})
	}
}

func (v *verifier) errorf(pos Pos, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.m.File, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (v *verifier) run() {
	m := v.m
	if m.Entry == nil {
		v.errorf(m.Pos, "module %s has no entry computation", m.Name)
	}
	comps := make(map[*Computation]bool, len(m.Computations))
	names := make(map[string]*Computation, len(m.Computations))
	for _, c := range m.Computations {
		comps[c] = true
		if prev := names[c.Name]; prev != nil {
			v.errorf(c.Pos, "duplicate computation name %s", c.Name)
		}
		names[c.Name] = c
	}
	if m.Entry != nil && !comps[m.Entry] {
		v.errorf(m.Pos, "entry computation %s is not in the module", m.Entry.Name)
	}
	for _, c := range m.Computations {
		v.computation(c, comps)
	}
	v.callCycles()
	v.fusedOnly()
	if m.Entry != nil {
		v.aliases()
	}
}

func (v *verifier) computation(c *Computation, comps map[*Computation]bool) {
	if len(c.Instructions) == 0 {
		v.errorf(c.Pos, "computation %s has no instructions", c.Name)
		return
	}
	member := NewInstructionIndex(c)
	switch {
	case c.Root == nil:
		v.errorf(c.Pos, "computation %s has no ROOT", c.Name)
	case member.Of(c.Root) < 0:
		v.errorf(c.Pos, "root %s of computation %s is not one of its instructions", c.Root.Name, c.Name)
	}
	seen := make(map[string]*Instruction, len(c.Instructions))
	var params []*Instruction
	for _, in := range c.Instructions {
		if prev := seen[in.Name]; prev != nil && !in.ImplicitGTE {
			v.errorf(in.Pos, "duplicate instruction name %s in computation %s", in.Name, c.Name)
		}
		seen[in.Name] = in
		if in.Parent != c {
			v.errorf(in.Pos, "instruction %s is listed in computation %s but its parent is another", in.Name, c.Name)
		}
		if in.Opcode == OpParameter {
			params = append(params, in)
		}
		v.poll()
		v.instruction(in, member, comps)
	}
	v.parameters(c, params)
	v.cycles(c)
}

func (v *verifier) parameters(c *Computation, params []*Instruction) {
	byNum := make(map[int64]*Instruction, len(params))
	for _, p := range params {
		if prev := byNum[p.ParameterNumber]; prev != nil {
			v.errorf(p.Pos, "parameter number %d is used twice in computation %s (%s and %s)", p.ParameterNumber, c.Name, prev.Name, p.Name)
			return
		}
		byNum[p.ParameterNumber] = p
	}
	for i := int64(0); i < int64(len(params)); i++ {
		if byNum[i] == nil {
			at := c.Pos
			for _, p := range params {
				if p.ParameterNumber > i {
					at = p.Pos
					break
				}
			}
			v.errorf(at, "computation %s has %d parameters but no parameter(%d)", c.Name, len(params), i)
			break
		}
	}
}

func (v *verifier) instruction(in *Instruction, member InstructionIndex, comps map[*Computation]bool) {
	for i, op := range in.Operands {
		switch {
		case op == nil:
			v.errorf(in.Pos, "%s: operand %d is undefined", in.Name, i)
		case op == in:
			// gonum's topo.Sort orders a node with an edge to itself, so
			// this cycle is found here.
			v.errorf(in.Pos, "%s is its own operand (operand %d)", in.Name, i)
		case member.Of(op) < 0:
			v.errorf(in.Pos, "%s: operand %d (%s) belongs to another computation", in.Name, i, op.Name)
		}
	}
	for _, p := range in.ControlPredecessors() {
		switch {
		case p == in:
			v.errorf(in.Pos, "%s is its own control predecessor", in.Name)
		case p == nil || member.Of(p) < 0:
			v.errorf(in.Pos, "%s: control predecessor is not an instruction of the same computation", in.Name)
		}
	}
	if a := in.Opcode.Arity(); a != Variadic && len(in.Operands) != a {
		v.errorf(in.Pos, "%s %s takes %d operands, got %d", in.OpName(), in.Name, a, len(in.Operands))
	}
	for _, c := range in.Callees() {
		if c == nil {
			v.errorf(in.Pos, "%s: called computation is undefined", in.Name)
		} else if !comps[c] {
			v.errorf(in.Pos, "%s: called computation %s is not in the module", in.Name, c.Name)
		}
	}
	v.calls(in)
	if !v.operandsDefined(in) {
		return
	}
	switch in.Opcode {
	case OpGetTupleElement:
		if len(in.Operands) == 1 {
			t := in.Operands[0].Shape
			switch {
			case !t.IsTuple():
				v.errorf(in.Pos, "get-tuple-element %s: operand %s is not a tuple (shape %s)", in.Name, in.Operands[0].Name, t)
			case in.TupleIndex < 0 || in.TupleIndex >= int64(len(t.Tuple)):
				v.errorf(in.Pos, "get-tuple-element %s: index %d out of range for a tuple of %d elements", in.Name, in.TupleIndex, len(t.Tuple))
			case !compatible(in.Shape, t.Tuple[in.TupleIndex]):
				v.errorf(in.Pos, "get-tuple-element %s has shape %s, but element %d of %s is %s", in.Name, in.Shape, in.TupleIndex, in.Operands[0].Name, t.Tuple[in.TupleIndex])
			}
		}
	case OpTuple:
		switch {
		case !in.Shape.IsTuple():
			v.errorf(in.Pos, "tuple %s has shape %s, which is not a tuple", in.Name, in.Shape)
		case len(in.Shape.Tuple) != len(in.Operands):
			v.errorf(in.Pos, "tuple %s has %d operands but its shape has %d elements", in.Name, len(in.Operands), len(in.Shape.Tuple))
		default:
			for i, op := range in.Operands {
				if !compatible(in.Shape.Tuple[i], op.Shape) {
					v.errorf(in.Pos, "tuple %s: element %d has shape %s, but operand %s has %s", in.Name, i, in.Shape.Tuple[i], op.Name, op.Shape)
				}
			}
		}
	case OpBroadcast:
		v.broadcast(in)
	case OpAsyncStart, OpAsyncUpdate, OpAsyncDone:
		v.asyncChain(in)
	default:
		v.forwarded(in)
	}
	v.aliasing(in)
	if in.IsElementwise() && in.Shape.IsArray() {
		for i, op := range in.Operands {
			if !op.Shape.IsArray() {
				v.errorf(in.Pos, "element-wise %s %s: operand %d (%s) is not an array", in.OpName(), in.Name, i, op.Name)
				continue
			}
			// clamp may take scalar bounds, select a scalar predicate.
			if op.Shape.Rank() == 0 && (in.Opcode == OpClamp && i != 1 || in.Opcode == OpSelect && i == 0) {
				continue
			}
			if !SameDims(op.Shape, in.Shape) {
				v.errorf(in.Pos, "element-wise %s %s: operand %d (%s) has dimensions %s, want %s", in.OpName(), in.Name, i, op.Name, dimsString(op.Shape), dimsString(in.Shape))
			}
		}
	}
	in.Shape.ForEachSubshape(func(s Shape, _ ShapeIndex) {
		if s.IsTuple() {
			return
		}
		if _, err := ByteSize(s); err != nil && strings.Contains(err.Error(), "overflows") {
			v.errorf(in.Pos, "%s: %v", in.Name, err)
		}
	})
}

// broadcast checks a broadcast's dimensions= as XLA's
// ShapeVerifier::HandleBroadcast does: one entry per operand dimension,
// each naming a dimension of the result of the same size, and the same
// element type. (A broadcast printed without dimensions= is XLA's scalar
// shorthand: a scalar operand.)
func (v *verifier) broadcast(in *Instruction) {
	if len(in.Operands) != 1 || !in.Shape.IsArray() {
		return
	}
	op := in.Operands[0].Shape
	if !op.IsArray() {
		v.errorf(in.Pos, "broadcast %s: operand %s is not an array (shape %s)", in.Name, in.Operands[0].Name, op)
		return
	}
	if op.Elem != in.Shape.Elem {
		v.errorf(in.Pos, "broadcast %s has element type %s, but operand %s has %s", in.Name, in.Shape.Elem, in.Operands[0].Name, op.Elem)
	}
	dims := in.Dimensions
	if !in.HasDimensions && op.Rank() == 0 {
		return
	}
	if len(dims) != op.Rank() {
		v.errorf(in.Pos, "broadcast %s: dimensions={%s} has %d entries for an operand of rank %d (%s)", in.Name, joinInts(dims), len(dims), op.Rank(), op)
		return
	}
	for i, d := range dims {
		switch {
		case d < 0 || d >= int64(in.Shape.Rank()):
			v.errorf(in.Pos, "broadcast %s: dimensions={%s}: %d is not a dimension of the result %s", in.Name, joinInts(dims), d, in.Shape)
		case in.Shape.Dims[d] != op.Dims[i]:
			v.errorf(in.Pos, "broadcast %s: operand dimension %d (size %d) maps to result dimension %d of size %d (%s from %s)", in.Name, i, op.Dims[i], d, in.Shape.Dims[d], in.Shape, op)
		}
	}
}

// joinInts writes v as "1,2,3".
func joinInts(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ",")
}

// forwarded checks the shapes of instructions whose result is (part of)
// an operand's buffer, as XLA's ShapeVerifier does: the analyses forward
// the operand's values, sized by the operand's shape, so a result that
// claimed more bytes would be planned in too few.
func (v *verifier) forwarded(in *Instruction) {
	if len(in.Operands) == 0 {
		return
	}
	op := in.Operands[0]
	same := func(want Shape, what string) {
		if !compatible(in.Shape, want) {
			v.errorf(in.Pos, "%s %s has shape %s, but %s is %s", in.OpName(), in.Name, in.Shape, what, want)
		}
	}
	element := func(k int64) (Shape, bool) {
		if !op.Shape.IsTuple() || int64(len(op.Shape.Tuple)) <= k {
			v.errorf(in.Pos, "%s %s: operand %s has shape %s, want a tuple of at least %d elements", in.OpName(), in.Name, op.Name, op.Shape, k+1)
			return Shape{}, false
		}
		return op.Shape.Tuple[k], true
	}
	switch in.Opcode {
	case OpCopy, OpOptBarrier, OpAddDependency, OpDomain, OpAllReduceDone, OpDynamicUpdateSlice:
		same(op.Shape, "operand "+op.Name)
	case OpBitcast:
		a, okA := ByteSize(in.Shape)
		b, okB := ByteSize(op.Shape)
		if !sameTree(in.Shape, op.Shape) || okA == nil && okB == nil && a != b && in.Shape.IsArray() {
			v.errorf(in.Pos, "bitcast %s has shape %s, which does not take the bytes of operand %s, %s", in.Name, in.Shape, op.Name, op.Shape)
		}
	case OpCopyDone:
		if e, ok := element(0); ok {
			same(e, "element 0 of operand "+op.Name)
		}
	case OpCollectivePermuteDone:
		if e, ok := element(1); ok {
			same(e, "element 1 of operand "+op.Name)
		}
	case OpCopyStart:
		if !in.Shape.IsTuple() || len(in.Shape.Tuple) < 2 {
			v.errorf(in.Pos, "copy-start %s has shape %s, want a tuple of at least 2 elements", in.Name, in.Shape)
			return
		}
		for k := range 2 {
			if !compatible(in.Shape.Tuple[k], op.Shape) {
				v.errorf(in.Pos, "copy-start %s: element %d has shape %s, but operand %s is %s", in.Name, k, in.Shape.Tuple[k], op.Name, op.Shape)
			}
		}
	}
}

// aliasing checks output_to_operand_aliasing (in-place fusions and
// custom-calls, XLA's HandleFusion and HandleCustomCall): each pair names
// an operand and indices both shapes have, and the two subshapes agree,
// since the output is planned in the operand's buffer.
func (v *verifier) aliasing(in *Instruction) {
	for _, al := range in.OutputOperandAliasing() {
		if al.Operand < 0 || al.Operand >= int64(len(in.Operands)) {
			v.errorf(in.Pos, "%s %s: output_to_operand_aliasing names operand %d of %d", in.OpName(), in.Name, al.Operand, len(in.Operands))
			continue
		}
		op := in.Operands[al.Operand]
		out, ok := in.Shape.Subshape(al.Output)
		if !ok {
			v.errorf(in.Pos, "%s %s: output_to_operand_aliasing names output %s, which its shape %s lacks", in.OpName(), in.Name, al.Output, in.Shape)
			continue
		}
		src, ok := op.Shape.Subshape(al.OperandIndex)
		if !ok {
			v.errorf(in.Pos, "%s %s: output_to_operand_aliasing names %s of operand %s, which its shape %s lacks", in.OpName(), in.Name, al.OperandIndex, op.Name, op.Shape)
			continue
		}
		if !compatible(out, src) {
			v.errorf(in.Pos, "%s %s: output %s (%s) aliases %s of operand %s (%s), a different shape", in.OpName(), in.Name, al.Output, out, al.OperandIndex, op.Name, src)
		}
	}
}

func dimsString(s Shape) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s.Dims {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case d == UnboundedDim:
			b.WriteByte('?') // as the shape prints it, not INT64_MIN
		case s.IsDynamic(i):
			b.WriteString("<=")
			fallthrough
		default:
			b.WriteString(strconv.FormatInt(d, 10))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func (v *verifier) operandsDefined(in *Instruction) bool {
	for _, op := range in.Operands {
		if op == nil {
			return false
		}
	}
	return true
}

// calls checks that in names the computations its opcode needs and no
// others, and the call site against its callees where XLA's ShapeVerifier
// fixes the number of parameters or the shapes (HandleWhile,
// HandleConditional, HandleCall, HandleFusion, HandleSort, Preprocess).
// Shapes are compared as ShapeUtil::Compatible does: element types,
// dimensions and tuple structure, not layouts.
func (v *verifier) calls(in *Instruction) {
	op := in.Opcode
	if op == OpUnknown {
		return // nothing is known of what it calls; the analyses refuse it
	}
	if !op.Has(Caller) && len(in.Callees()) > 0 {
		v.errorf(in.Pos, "%s %s calls a computation, which a %s cannot", in.OpName(), in.Name, in.OpName())
		return
	}
	nparams := func(c *Computation) int {
		if c == nil {
			return -1
		}
		return len(c.Params)
	}
	switch op {
	case OpWhile:
		v.while(in)
	case OpConditional:
		v.conditional(in)
	case OpFusion:
		c := in.FusedComputation()
		if c == nil {
			v.errorf(in.Pos, "fusion %s does not name its fused computation (calls=)", in.Name)
			return
		}
		if n := len(in.Callees()); n != 1 {
			v.errorf(in.Pos, "fusion %s calls %d computations, want 1", in.Name, n)
			return
		}
		if n := nparams(c); n != len(in.Operands) {
			v.errorf(in.Pos, "fusion %s passes %d operands to %s, which takes %d parameters", in.Name, len(in.Operands), c.Name, n)
			return
		}
		// As for call, only the tuple structure of the parameters: one of
		// XLA's own test inputs (tools/print_indexing_test) passes an array
		// of other dimensions.
		for i, p := range c.Params {
			if p != nil && in.Operands[i] != nil && !sameTree(p.Shape, in.Operands[i].Shape) {
				v.errorf(in.Pos, "fusion %s: operand %d has shape %s, but parameter %d of %s has %s", in.Name, i, in.Operands[i].Shape, i, c.Name, p.Shape)
			}
		}
		if c.Root != nil && !compatible(c.Root.Shape, in.Shape) {
			v.errorf(in.Pos, "fusion %s has shape %s, but %s returns %s", in.Name, in.Shape, c.Name, c.Root.Shape)
		}
	case OpCall:
		c := in.ToApply()
		if c == nil && len(in.Calls()) > 0 {
			c = in.Calls()[0]
		}
		if c == nil {
			v.errorf(in.Pos, "call %s does not name the computation it calls (to_apply=)", in.Name)
			return
		}
		if n := nparams(c); n != len(in.Operands) {
			v.errorf(in.Pos, "call %s passes %d operands to %s, which takes %d parameters", in.Name, len(in.Operands), c.Name, n)
			return
		}
		// XLA compares the shapes; XLA's own test inputs pass arrays of
		// other dimensions (tools/tests/generate_hlo_test_checks), so only
		// the tuple structure, which the analyses map position by
		// position, must agree.
		for i, p := range c.Params {
			if p != nil && in.Operands[i] != nil && !sameTree(p.Shape, in.Operands[i].Shape) {
				v.errorf(in.Pos, "call %s: operand %d has shape %s, but parameter %d of %s has %s", in.Name, i, in.Operands[i].Shape, i, c.Name, p.Shape)
			}
		}
		if c.Root != nil && !sameTree(c.Root.Shape, in.Shape) {
			v.errorf(in.Pos, "call %s has shape %s, but %s returns %s", in.Name, in.Shape, c.Name, c.Root.Shape)
		}
	case OpAsyncStart:
		if len(in.Calls()) == 0 {
			v.errorf(in.Pos, "async-start %s does not name the computation it runs (calls=)", in.Name)
		}
	case OpSelectAndScatter:
		if x := in.Ext; x == nil || x.Select == nil || x.Scatter == nil {
			v.errorf(in.Pos, "select-and-scatter %s needs select= and scatter=", in.Name)
		}
	default:
		if !op.Has(ToApply) {
			return
		}
		c := in.ToApply()
		if c == nil {
			v.errorf(in.Pos, "%s %s needs to_apply=", in.OpName(), in.Name)
			return
		}
		if op == OpSort {
			if n := nparams(c); n != 2*len(in.Operands) {
				v.errorf(in.Pos, "sort %s has %d operands, so its comparator %s must take %d parameters, not %d", in.Name, len(in.Operands), c.Name, 2*len(in.Operands), n)
			}
			if c.Root != nil && !isPredScalar(c.Root.Shape) {
				v.errorf(in.Pos, "sort %s: comparator %s returns %s, want pred[]", in.Name, c.Name, c.Root.Shape)
			}
		}
	}
}

// while checks a while against its condition and body: both named, each
// taking one parameter of the loop state's shape, the condition returning
// pred[] and the body the loop state (XLA's HandleWhile).
func (v *verifier) while(in *Instruction) {
	cond, body := in.Condition(), in.Body()
	switch {
	case cond == nil && body == nil:
		v.errorf(in.Pos, "while %s needs condition= and body=", in.Name)
		return
	case cond == nil:
		v.errorf(in.Pos, "while %s needs condition=", in.Name)
		return
	case body == nil:
		v.errorf(in.Pos, "while %s needs body=", in.Name)
		return
	}
	var state *Shape
	if len(in.Operands) == 1 && in.Operands[0] != nil {
		state = &in.Operands[0].Shape
	}
	for _, c := range []*Computation{cond, body} {
		if n := len(c.Params); n != 1 {
			v.errorf(in.Pos, "while %s: computation %s takes %d parameters, want 1", in.Name, c.Name, n)
		} else if p := c.Params[0]; p != nil && state != nil && !compatible(p.Shape, *state) {
			v.errorf(in.Pos, "while %s: the loop state has shape %s, but the parameter of %s has %s", in.Name, *state, c.Name, p.Shape)
		}
	}
	if r := cond.Root; r != nil && !isPredScalar(r.Shape) {
		v.errorf(in.Pos, "while %s: condition %s returns %s, want pred[]", in.Name, cond.Name, r.Shape)
	}
	if r := body.Root; r != nil && !compatible(r.Shape, in.Shape) {
		v.errorf(in.Pos, "while %s has shape %s, but its body %s returns %s", in.Name, in.Shape, body.Name, r.Shape)
	}
	if state != nil && !compatible(*state, in.Shape) {
		v.errorf(in.Pos, "while %s has shape %s, but its operand has %s", in.Name, in.Shape, *state)
	}
}

// conditional checks a conditional against its branches: a pred[] selector
// with two branches or an s32[] index with at least one, one operand per
// branch of the shape its branch takes, every branch returning the
// conditional's shape (XLA's HandleConditional).
func (v *verifier) conditional(in *Instruction) {
	branches := in.Branches()
	if len(branches) == 0 {
		v.errorf(in.Pos, "conditional %s has no branch computations", in.Name)
		return
	}
	if len(in.Operands) != len(branches)+1 {
		v.errorf(in.Pos, "conditional %s has %d branches but %d operands, want %d", in.Name, len(branches), len(in.Operands), len(branches)+1)
		return
	}
	if sel := in.Operands[0]; sel != nil {
		switch s := sel.Shape; {
		case s.Rank() != 0 || s.Elem != PRED && s.Elem != S32:
			v.errorf(in.Pos, "conditional %s: selector %s has shape %s, want pred[] or s32[]", in.Name, sel.Name, s)
		case s.Elem == PRED && len(branches) != 2:
			v.errorf(in.Pos, "conditional %s has a pred[] selector and %d branches, want 2", in.Name, len(branches))
		}
	}
	for j, c := range branches {
		if c == nil {
			continue // reported as undefined
		}
		if n := len(c.Params); n != 1 {
			v.errorf(in.Pos, "conditional %s: branch %s takes %d parameters, want 1", in.Name, c.Name, n)
		} else if p, op := c.Params[0], in.Operands[j+1]; p != nil && op != nil && !compatible(p.Shape, op.Shape) {
			v.errorf(in.Pos, "conditional %s: operand %d has shape %s, but branch %s takes %s", in.Name, j+1, op.Shape, c.Name, p.Shape)
		}
		if c.Root != nil && !compatible(c.Root.Shape, in.Shape) {
			v.errorf(in.Pos, "conditional %s has shape %s, but branch %s returns %s", in.Name, in.Shape, c.Name, c.Root.Shape)
		}
	}
}

// compatible reports whether a and b have the same element types,
// dimensions and tuple structure, layouts and dynamic markers aside (XLA's
// ShapeUtil::Compatible).
func compatible(a, b Shape) bool {
	if a.Elem != b.Elem || len(a.Tuple) != len(b.Tuple) || !SameDims(a, b) {
		return false
	}
	for i := range a.Tuple {
		if !compatible(a.Tuple[i], b.Tuple[i]) {
			return false
		}
	}
	return true
}

// sameTree reports whether a and b have the same tuple structure: both
// tuples of the same arity with elements of the same structure, or both
// leaves.
func sameTree(a, b Shape) bool {
	if a.IsTuple() != b.IsTuple() || len(a.Tuple) != len(b.Tuple) {
		return false
	}
	for i := range a.Tuple {
		if !sameTree(a.Tuple[i], b.Tuple[i]) {
			return false
		}
	}
	return true
}

func isPredScalar(s Shape) bool { return s.Elem == PRED && s.Rank() == 0 }

// cycles reports a dependency cycle in c, found with gonum's topo.Sort on
// the graph view. Acyclic computations, which is all of them in valid
// input, are recognised first by a cheaper count of ready instructions
// (Kahn's algorithm over positions); only a computation that fails it
// pays for the graph view and the strongly connected components.
func (v *verifier) cycles(c *Computation) {
	if acyclic(c) {
		return
	}
	g := NewGraph(c)
	_, err := topo.Sort(g)
	if err == nil {
		return
	}
	unorderable, ok := err.(topo.Unorderable)
	if !ok {
		v.errorf(c.Pos, "computation %s: %v", c.Name, err)
		return
	}
	for _, comp := range unorderable {
		cycle := findCycle(g, comp)
		if len(cycle) == 0 {
			continue
		}
		var names []string
		for _, in := range cycle {
			names = append(names, "%"+in.Name)
		}
		names = append(names, "%"+cycle[0].Name)
		v.errorf(cycle[0].Pos, "dependency cycle in computation %s: %s", c.Name, strings.Join(names, " -> "))
		return // one cycle per computation is enough to act on
	}
}

// acyclic reports whether the operands and control predecessors of c's
// instructions that belong to c form no cycle: Kahn's algorithm over
// positions, releasing each instruction once all its dependencies are
// ready. An operand listed twice is an edge counted twice on both ends.
func acyclic(c *Computation) bool {
	n := len(c.Instructions)
	pos := NewInstructionIndex(c)
	deps := func(in *Instruction, f func(d int32)) {
		for _, op := range in.Operands {
			if d := pos.Of(op); d >= 0 {
				f(int32(d))
			}
		}
		for _, p := range in.ControlPredecessors() {
			if d := pos.Of(p); d >= 0 {
				f(int32(d))
			}
		}
	}
	// users[start[d]:start[d+1]] are the dependents of position d.
	pending := make([]int32, n)
	start := make([]int32, n+1)
	for i, in := range c.Instructions {
		deps(in, func(d int32) {
			pending[i]++
			start[d+1]++
		})
	}
	for i := 0; i < n; i++ {
		start[i+1] += start[i]
	}
	users := make([]int32, start[n])
	fill := append([]int32(nil), start[:n]...)
	for i, in := range c.Instructions {
		deps(in, func(d int32) {
			users[fill[d]] = int32(i)
			fill[d]++
		})
	}
	ready := make([]int32, 0, n)
	for i := range pending {
		if pending[i] == 0 {
			ready = append(ready, int32(i))
		}
	}
	for k := 0; k < len(ready); k++ {
		i := ready[k]
		for _, u := range users[start[i]:start[i+1]] {
			if pending[u]--; pending[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return len(ready) == n
}

// findCycle returns the instructions of one cycle inside a strongly
// connected component, in dependency order, starting from its earliest
// instruction.
func findCycle(g *Graph, comp []graph.Node) []*Instruction {
	in := make(map[int64]bool, len(comp))
	start := int64(-1)
	for _, n := range comp {
		in[n.ID()] = true
		if start < 0 || n.ID() < start {
			start = n.ID()
		}
	}
	// Walk successors within the component until we return to a node on
	// the current path.
	onPath := map[int64]int{}
	var path []int64
	cur := start
	for {
		if at, ok := onPath[cur]; ok {
			ids := path[at:]
			out := make([]*Instruction, len(ids))
			for i, id := range ids {
				out[i] = g.nodes[id].Inst
			}
			return out
		}
		onPath[cur] = len(path)
		path = append(path, cur)
		next := int64(-1)
		for _, s := range g.succ[cur] {
			if in[s] {
				next = s
				break
			}
		}
		if next < 0 {
			return nil
		}
		cur = next
	}
}

// fusedOnly reports a fused computation (the computation of a fusion)
// that an instruction other than a fusion calls too: XLA keeps fused
// computations apart, and an analysis cannot say both that its values
// need no memory and that they do.
func (v *verifier) fusedOnly() {
	fusedBy := map[*Computation]*Instruction{}
	for _, c := range v.m.Computations {
		for _, in := range c.Instructions {
			if f := in.FusedComputation(); f != nil && fusedBy[f] == nil {
				fusedBy[f] = in
			}
		}
	}
	if len(fusedBy) == 0 {
		return
	}
	for _, c := range v.m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == OpFusion || in.Ext == nil {
				continue
			}
			for _, callee := range in.Callees() {
				if f := fusedBy[callee]; f != nil {
					v.errorf(in.Pos, "%s %s calls %s, the fused computation of fusion %s; only fusions may call it", in.OpName(), in.Name, callee.Name, f.Name)
				}
			}
		}
	}
}

// callCycles reports a computation that calls itself, directly or not.
func (v *verifier) callCycles() {
	if in, cycle := FindCallCycle(v.m); in != nil {
		v.errorf(in.Pos, "computation call cycle: %s", cycle)
	}
}

// FindCallCycle returns the first call instruction (in module order) that
// closes a cycle of computations calling one another, and the cycle as
// "%a -> %b -> %a"; nil when there is none.
func FindCallCycle(m *Module) (*Instruction, string) {
	const (
		white = iota
		grey
		black
	)
	color := make(map[*Computation]int, len(m.Computations))
	var stack []*Computation
	var found *Instruction
	var cycle string
	var visit func(c *Computation) bool
	visit = func(c *Computation) bool {
		color[c] = grey
		stack = append(stack, c)
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				if callee == nil {
					continue
				}
				switch color[callee] {
				case grey:
					var names []string
					for i := len(stack) - 1; i >= 0; i-- {
						names = append([]string{"%" + stack[i].Name}, names...)
						if stack[i] == callee {
							break
						}
					}
					names = append(names, "%"+callee.Name)
					found, cycle = in, strings.Join(names, " -> ")
					return true
				case white:
					if visit(callee) {
						return true
					}
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[c] = black
		return false
	}
	for _, c := range m.Computations {
		if color[c] == white && visit(c) {
			break
		}
	}
	return found, cycle
}

// aliases checks input_output_alias and buffer_donor against the entry's
// parameter and root shapes.
func (v *verifier) aliases() {
	e := v.m.Entry
	param := func(n int64, ix ShapeIndex, what string) {
		if n < 0 || n >= int64(len(e.Params)) || e.Params[n] == nil {
			v.errorf(v.m.Pos, "%s names parameter %d, but the entry has %d parameters", what, n, len(e.Params))
			return
		}
		if _, ok := e.Params[n].Shape.Subshape(ix); !ok {
			v.errorf(v.m.Pos, "%s names parameter %d at %s, which its shape %s lacks", what, n, ix, e.Params[n].Shape)
		}
	}
	for _, a := range v.m.InputOutputAlias {
		param(a.Param, a.ParamIndex, "input_output_alias")
		if e.Root != nil {
			if _, ok := e.Root.Shape.Subshape(a.Output); !ok {
				v.errorf(v.m.Pos, "input_output_alias names output %s, which the entry's result %s lacks", a.Output, e.Root.Shape)
			}
		}
	}
	for _, d := range v.m.BufferDonors {
		param(d.Param, d.ParamIndex, "buffer_donor")
	}
}
