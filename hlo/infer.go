package hlo

// Shape inference for instructions written without a shape, as XLA's
// hand-written test inputs allow ("t = tuple(a, b)"). It covers the forms
// whose result shape follows from the operands or the called computation;
// others must be written with their shape.

// inferShape fills in.Shape if it was left out. depth guards against
// cycles through called computations.
func (p *parser) inferShape(in *Instruction, depth int) bool {
	if in.Shape.Elem != InvalidType {
		return true
	}
	if depth > 64 {
		p.errorf(in.Pos, "cannot infer the shape of %s: dependency cycle", in.Name)
		return false
	}
	operand := func(i int) (Shape, bool) {
		if i >= len(in.Operands) || in.Operands[i] == nil {
			return Shape{}, false
		}
		if !p.inferShape(in.Operands[i], depth+1) {
			return Shape{}, false
		}
		return in.Operands[i].Shape, true
	}
	root := func(c *Computation) (Shape, bool) {
		if c == nil || c.Root == nil || !p.inferShape(c.Root, depth+1) {
			return Shape{}, false
		}
		return c.Root.Shape, true
	}
	var s Shape
	ok := false
	switch {
	case in.Opcode == OpTuple:
		elems := make([]Shape, len(in.Operands))
		ok = true
		for i := range in.Operands {
			if elems[i], ok = operand(i); !ok {
				break
			}
		}
		s = Shape{Elem: Tuple, Tuple: elems}
	case in.Opcode == OpGetTupleElement:
		var t Shape
		if t, ok = operand(0); ok {
			s, ok = t.Subshape(ShapeIndex{in.TupleIndex})
		}
	case in.Opcode == OpCompare:
		if s, ok = operand(0); ok {
			s = Shape{Elem: PRED, Dims: s.Dims, Dynamic: s.Dynamic, Layout: s.Layout}
		}
	case in.Opcode == OpSelect:
		s, ok = operand(1)
	case in.Opcode == OpClamp:
		s, ok = operand(1)
	case in.IsElementwise() && in.Opcode != OpConvert, in.Opcode == OpCopy, in.Opcode == OpOptBarrier,
		in.Opcode == OpAddDependency, in.Opcode == OpWhile:
		s, ok = operand(0)
	case in.Opcode == OpFusion || in.Opcode == OpCall:
		if len(in.Calls()) > 0 {
			s, ok = root(in.Calls()[0])
		} else {
			s, ok = root(in.ToApply())
		}
	case in.Opcode == OpConditional && len(in.Branches()) > 0:
		s, ok = root(in.Branches()[0])
	}
	if !ok {
		p.errorf(in.Pos, "cannot infer the shape of %s %s; write its shape", in.OpName(), in.Name)
		in.Shape = Shape{Elem: Tuple, Tuple: []Shape{}} // keep later passes from tripping
		return false
	}
	in.Shape = s
	return true
}
