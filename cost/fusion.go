package cost

import "github.com/hlomem/hlomem/hlo"

// fusion is HandleFusion: the fused computation's compute, and bytes only
// at the fusion's boundary.
func (w *walker) fusion(in *hlo.Instruction) Cost {
	body := in.FusedComputation()
	var c Cost
	c.setSub(w.computation(body), 1)
	if body == nil {
		d := defaultBytes(in)
		c.BytesRead, c.BytesWritten = d.BytesRead, d.BytesWritten
		return c
	}
	root := body.Root
	in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if !sub.IsArray() {
			return
		}
		switch {
		case len(ix) == 0 && root != nil && root.Opcode == hlo.OpDynamicUpdateSlice:
			c.BytesWritten = add(c.BytesWritten, size(operandShape(root, 1)))
		case len(ix) == 1 && root != nil && root.Opcode == hlo.OpTuple &&
			isDUS(operand(root, int(ix[0]))):
			c.BytesWritten = add(c.BytesWritten, size(operandShape(operand(root, int(ix[0])), 1)))
		default:
			c.BytesWritten = add(c.BytesWritten, size(sub))
		}
	})
	// FusionCountConstantsMemoryAccess: constants of more than one element
	// (immediate_constant_max_elements) are read from memory.
	for _, k := range body.Instructions {
		if k != nil && k.Opcode == hlo.OpConstant && elems(k.Shape) > 1 {
			c.BytesRead = add(c.BytesRead, size(k.Shape))
		}
	}
	for _, p := range body.Params {
		if p != nil {
			c.BytesRead = add(c.BytesRead, w.paramBytes(p, 0))
		}
	}
	return c
}

func isDUS(in *hlo.Instruction) bool {
	return in != nil && in.Opcode == hlo.OpDynamicUpdateSlice
}

// paramBytes is FusionProcessOperandBytesRead for one fused parameter: an
// array parameter's reads, or for a tuple parameter the sum over its leaf
// indices of the reads of the get-tuple-element chain that reaches the
// leaf (the parameter itself, or the deepest element found, when the
// chain stops short, as XLA does).
func (w *walker) paramBytes(p *hlo.Instruction, depth int) int64 {
	if !p.Shape.IsTuple() {
		return w.paramReads(p, depth)
	}
	var n int64
	p.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if sub.IsTuple() {
			return
		}
		g := p
		for _, k := range ix {
			for _, u := range g.Users {
				if u.Opcode == hlo.OpGetTupleElement && u.TupleIndex == k {
					g = u
					break
				}
			}
		}
		n = add(n, w.paramReads(g, depth))
	})
	return n
}

// paramReads is FusionParameterReadBytes: the bytes a fused parameter (or
// a get-tuple-element of a tuple parameter) is read with.
func (w *walker) paramReads(p *hlo.Instruction, depth int) int64 {
	var n int64
	shared := false
	own := size(p.Shape)
	once := func() {
		if !shared {
			shared = true
			n = add(n, own)
		}
	}
	for _, u := range p.Users {
		switch u.Opcode {
		case hlo.OpFusion:
			body := u.FusedComputation()
			for k, op := range u.Operands {
				if op == p && body != nil && k < len(body.Params) && body.Params[k] != nil && depth < 8 {
					n = add(n, w.paramBytes(body.Params[k], depth+1))
				}
			}
		case hlo.OpSlice:
			n = add(n, size(u.Shape))
		case hlo.OpDynamicSlice:
			if operand(u, 0) == p {
				n = add(n, size(u.Shape))
			} else {
				once()
			}
		case hlo.OpDynamicUpdateSlice:
			if operand(u, 0) != p {
				once()
			}
		case hlo.OpBroadcast, hlo.OpReshape:
			n = add(n, own)
		default:
			once()
		}
	}
	return n
}
