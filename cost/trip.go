package cost

import "github.com/hlomem/hlomem/hlo"

// scalarInt returns the value of a scalar integer constant.
func scalarInt(in *hlo.Instruction) (int64, bool) {
	if in == nil || in.Opcode != hlo.OpConstant || len(in.Shape.Dims) != 0 || !in.Shape.Elem.IsInteger() {
		return 0, false
	}
	l := in.Literal()
	if l == nil || len(l.Ints) != 1 {
		return 0, false
	}
	return l.Ints[0], true
}

// inductionGTE returns k when in is get-tuple-element(p, index=k) of the
// computation's only parameter p.
func inductionGTE(in *hlo.Instruction, c *hlo.Computation) (int64, bool) {
	if in == nil || in.Opcode != hlo.OpGetTupleElement || len(in.Operands) != 1 ||
		c == nil || len(c.Params) != 1 || in.Operands[0] != c.Params[0] {
		return 0, false
	}
	return in.TupleIndex, true
}

// patternTripCount matches the counted loop of XLA's
// MatchTrivialLoopTripCount (while_loop_analysis.cc): the condition's root
// is compare(gte(param, k), constant N) with direction LT or LE (or the
// operands swapped with GT or GE), the body's root tuple sets element k to
// add(gte(param, k), constant step) with step > 0, and the while's operand
// is a tuple whose element k is a constant init. The trip count is
// ⌈(N − init)/step⌉ for LT (N − init + 1 for LE), and 0 when init is past
// the bound.
func patternTripCount(w *hlo.Instruction) (int64, bool) {
	cond, body := w.Condition(), w.Body()
	if cond == nil || body == nil || len(w.Operands) != 1 || cond.Root == nil || body.Root == nil {
		return 0, false
	}
	cmp := cond.Root
	if cmp.Opcode != hlo.OpCompare || len(cmp.Operands) != 2 {
		return 0, false
	}
	dir, _ := cmp.Attr("direction")
	iv, bound := cmp.Operands[0], cmp.Operands[1]
	switch dir {
	case "GT":
		iv, bound, dir = bound, iv, "LT"
	case "GE":
		iv, bound, dir = bound, iv, "LE"
	}
	k, ok := inductionGTE(iv, cond)
	n, ok2 := scalarInt(bound)
	if !ok || !ok2 || (dir != "LT" && dir != "LE") {
		return 0, false
	}
	root, init := body.Root, w.Operands[0]
	if root.Opcode != hlo.OpTuple || init == nil || init.Opcode != hlo.OpTuple ||
		k < 0 || k >= int64(len(root.Operands)) || k >= int64(len(init.Operands)) {
		return 0, false
	}
	start, ok := scalarInt(init.Operands[k])
	inc := root.Operands[k]
	if !ok || inc == nil || inc.Opcode != hlo.OpAdd || len(inc.Operands) != 2 {
		return 0, false
	}
	x, s := inc.Operands[0], inc.Operands[1]
	if _, isConst := scalarInt(x); isConst {
		x, s = s, x
	}
	step, ok := scalarInt(s)
	if j, ok2 := inductionGTE(x, body); !ok || !ok2 || j != k || step <= 0 {
		return 0, false
	}
	if dir == "LE" {
		if n == 1<<63-1 {
			return 0, false
		}
		n++
	}
	if start >= n {
		return 0, true
	}
	span := uint64(n) - uint64(start) // no overflow: n > start
	return int64((span + uint64(step) - 1) / uint64(step)), true
}
