package hlo

// The async chain rules. An async-start may bind fewer operands than its
// computation takes parameters and an async-update or async-done after it
// binds more (late binding): each op's tuple lists, in element {0}, the
// operands bound so far along the chain (XLA's
// async::GetAsyncBoundOperands, hlo_instruction_utils.cc: the start's
// operands, then each update's and the done's operands after the first,
// which is the previous op of the chain), and in element {1} the output,
// or () while it is not bound; the chain is fully bound once the operands
// match the computation's parameters and the output its root
// (async::AreOperandsAndOutputFullyBound). The async-done returns the
// output.

// asyncBoundOperands returns the operands bound along in's chain up to and
// including in, or false when in is not on a chain that starts with an
// async-start.
func asyncBoundOperands(in *Instruction) ([]*Instruction, bool) {
	var links []*Instruction
	for x := in; ; x = x.Operands[0] {
		if x == nil || len(links) > 1<<16 {
			return nil, false
		}
		links = append(links, x)
		if x.Opcode == OpAsyncStart {
			break
		}
		if x.Opcode != OpAsyncUpdate && x.Opcode != OpAsyncDone || len(x.Operands) == 0 {
			return nil, false
		}
	}
	var bound []*Instruction
	for i := len(links) - 1; i >= 0; i-- {
		x := links[i]
		first := 1
		if x.Opcode == OpAsyncStart {
			first = 0
		}
		bound = append(bound, x.Operands[first:]...)
	}
	return bound, true
}

// AsyncWrappedOpcode returns the opcode an async chain wraps: the root's
// of its computation, or call for the call-start form, whose computation
// is named by to_apply= (XLA's async_wrapped_opcode). OpUnknown when in
// is no async op or its computation is unknown.
func AsyncWrappedOpcode(in *Instruction) Opcode {
	start := AsyncChainStart(in)
	if start == nil {
		return OpUnknown
	}
	if start.ext().AsyncSugar == OpCall {
		return OpCall
	}
	if cs := start.Calls(); len(cs) == 1 && cs[0] != nil && cs[0].Root != nil {
		return cs[0].Root.Opcode
	}
	return OpUnknown
}

// asyncChain checks an async-start, -update or -done as XLA's parser and
// verifier do for the op's shape, the previous op of the chain, the short
// form's opcode, and the operands and output bound so far.
func (v *verifier) asyncChain(in *Instruction) {
	op := in.OpName()
	if in.Opcode != OpAsyncStart {
		if len(in.Operands) == 0 {
			v.errorf(in.Pos, "%s %s takes the previous op of its async chain as operand 0, got no operands", op, in.Name)
			return
		}
		if prev := in.Operands[0]; prev.Opcode != OpAsyncStart && prev.Opcode != OpAsyncUpdate {
			// hlo_parser.cc: "AsyncUpdate and AsyncDone expect a single
			// async op as their operand."
			v.errorf(in.Pos, "%s %s: operand 0 (%s) is a %s, not the async-start or async-update before it", op, in.Name, prev.Name, prev.OpName())
			return
		}
		if !asyncTupleShape(in.Operands[0].Shape) {
			return // reported at the previous op
		}
	}
	if in.Opcode != OpAsyncDone && !asyncTupleShape(in.Shape) {
		v.errorf(in.Pos, "%s %s has shape %s; an async op's shape is ((operands), output, context...)", op, in.Name, in.Shape)
		return
	}
	if s := in.ext().AsyncSugar; s != OpUnknown {
		if want := AsyncWrappedOpcode(in); want != OpUnknown && want != s {
			// hlo_parser.cc: "Expect async wrapped opcode to be %s, but got %s".
			v.errorf(in.Pos, "%s: expect async wrapped opcode to be %s, but got %s", in.Name, want, s)
		}
	}
	start := AsyncChainStart(in)
	if start == nil || len(start.Calls()) != 1 || start.Calls()[0] == nil {
		return
	}
	w := start.Calls()[0]
	bound, ok := asyncBoundOperands(in)
	if !ok {
		return
	}
	if len(bound) > len(w.Params) {
		v.errorf(in.Pos, "%s %s: its chain binds %d operands, but %s takes %d parameters", op, in.Name, len(bound), w.Name, len(w.Params))
		return
	}
	for i, o := range bound {
		if p := w.Params[i]; p != nil && o != nil && !compatible(p.Shape, o.Shape) {
			v.errorf(in.Pos, "%s %s: bound operand %d (%s) has shape %s, but parameter %d of %s has %s", op, in.Name, i, o.Name, o.Shape, i, w.Name, p.Shape)
		}
	}
	if in.Opcode == OpAsyncDone {
		v.asyncDone(in, w, len(bound))
		return
	}
	listed := in.Shape.Tuple[0].Tuple
	if len(listed) != len(bound) {
		v.errorf(in.Pos, "%s %s: element 0 of its shape lists %d operands, but its chain binds %d", op, in.Name, len(listed), len(bound))
	} else {
		for i, o := range bound {
			if o != nil && !compatible(listed[i], o.Shape) {
				v.errorf(in.Pos, "%s %s: element {0,%d} has shape %s, but the operand bound there (%s) has %s", op, in.Name, i, listed[i], o.Name, o.Shape)
			}
		}
	}
	if out := in.Shape.Tuple[1]; !unbound(out) && w.Root != nil && !compatible(out, w.Root.Shape) {
		v.errorf(in.Pos, "%s %s: element 1 has shape %s, but %s returns %s", op, in.Name, out, w.Name, w.Root.Shape)
	}
}

// asyncDone checks the end of a chain: every parameter of w bound, and
// the done's shape the output (element 1 of the previous op when it is
// bound there, else w's root).
func (v *verifier) asyncDone(in *Instruction, w *Computation, bound int) {
	if bound != len(w.Params) {
		v.errorf(in.Pos, "%s %s ends an async chain that binds %d of the %d parameters of %s", in.OpName(), in.Name, bound, len(w.Params), w.Name)
	}
	prev := in.Operands[0].Shape.Tuple[1]
	switch {
	case !unbound(prev):
		if !compatible(in.Shape, prev) {
			v.errorf(in.Pos, "%s %s has shape %s, but element 1 of operand %s is %s", in.OpName(), in.Name, in.Shape, in.Operands[0].Name, prev)
		}
	case w.Root != nil && !compatible(in.Shape, w.Root.Shape):
		v.errorf(in.Pos, "%s %s has shape %s, but %s returns %s", in.OpName(), in.Name, in.Shape, w.Name, w.Root.Shape)
	}
}

// asyncTupleShape reports whether s has the form of an async op's tuple:
// at least two elements, the first a tuple (hlo_parser.cc's
// is_async_shape_correct).
func asyncTupleShape(s Shape) bool {
	return s.IsTuple() && len(s.Tuple) >= 2 && s.Tuple[0].IsTuple()
}

// unbound reports whether an async op's output element is the empty
// tuple that stands for an output not yet bound.
func unbound(s Shape) bool { return s.IsTuple() && len(s.Tuple) == 0 }
