package liveness

// May-share: whether a user may write its result over an operand's buffer
// that dies at the user (XLA's CanShareOperandBufferWithUser,
// hlo_dataflow_analysis.cc). This is an optimisation, never a requirement:
//
//  1. a constant operand is never shared;
//  2. equal shapes and an in-place pair (dynamic-update-slice, scatter,
//     output_to_operand_aliasing, in-place fusions): yes;
//  3. different shapes (layouts included): no;
//  4. a loop or input fusion: yes when every transitive use of the fused
//     parameter is element-wise or a tuple; an output fusion whose root
//     adds a dot or convolution to the parameter: yes for that addend only;
//  5. while and conditional: yes;
//  6. dynamic-update-slice, scatter and set-dimension-size: only operand 0
//     (triangular-solve: operand 1), used once;
//  7. otherwise: when the user is element-wise on that operand.

import "github.com/hlomem/hlomem/hlo"

// CanShareOperandBufferWithUser reports whether user's output at userIx may
// reuse the buffer of operand's output at opIx.
func CanShareOperandBufferWithUser(operand *hlo.Instruction, opIx hlo.ShapeIndex, user *hlo.Instruction, userIx hlo.ShapeIndex) bool {
	if operand.Opcode == hlo.OpConstant {
		return false
	}
	opSub, ok1 := operand.Shape.Subshape(opIx)
	userSub, ok2 := user.Shape.Subshape(userIx)
	if !ok1 || !ok2 || !hlo.SameShape(opSub, userSub) {
		return false
	}
	for _, p := range InPlacePairs(user) {
		if p.Output.Equal(userIx) && p.Operand < len(user.Operands) && user.Operands[p.Operand] == operand && p.OperandIndex.Equal(opIx) {
			return true
		}
	}
	idx := operandIndices(user, operand)
	if len(idx) == 0 {
		return false
	}
	switch user.Opcode {
	case hlo.OpFusion:
		fc := user.FusedComputation()
		if fc == nil || idx[0] >= len(fc.Params) || fc.Params[idx[0]] == nil {
			return false
		}
		param := fc.Params[idx[0]]
		switch user.FusionKind() {
		case hlo.FusionLoop, hlo.FusionInput:
			return usesElementwiseOrTuple(param)
		case hlo.FusionOutput:
			root := fc.Root
			if root == nil || root.Opcode != hlo.OpAdd || len(root.Operands) != 2 {
				return false
			}
			other := -1
			for k, o := range root.Operands {
				if o.Opcode == hlo.OpDot || o.Opcode == hlo.OpConvolution {
					other = 1 - k
					break
				}
			}
			if other < 0 {
				return false
			}
			return len(param.Users) == 1 && param.Users[0] == root && len(operandIndices(root, param)) == 1 && root.Operands[other] == param
		}
		return false
	case hlo.OpWhile, hlo.OpConditional:
		return true
	case hlo.OpDynamicUpdateSlice, hlo.OpScatter, hlo.OpSetDimensionSize, hlo.OpTriangularSolve:
		want := 0
		if user.Opcode == hlo.OpTriangularSolve {
			want = 1
		}
		return len(idx) == 1 && idx[0] == want
	case hlo.OpSort:
		// Only a single-use operand, at its own tuple element.
		if len(operand.Users) != 1 || len(idx) != 1 {
			return false
		}
		if !user.Shape.IsTuple() {
			return true
		}
		return len(userIx) == 1 && userIx[0] == int64(idx[0])
	}
	return isElementwiseOnOperand(user, idx[0])
}

// operandIndices returns the operand numbers at which user takes op.
func operandIndices(user, op *hlo.Instruction) []int {
	var idx []int
	for k, o := range user.Operands {
		if o == op {
			idx = append(idx, k)
		}
	}
	return idx
}

// isElementwiseOnOperand is XLA's IsElementwiseOnOperand: for a fusion,
// whether the fused parameter reaches the root only through element-wise
// operations.
func isElementwiseOnOperand(in *hlo.Instruction, k int) bool {
	if in.Opcode != hlo.OpFusion {
		return in.IsElementwise()
	}
	fc := in.FusedComputation()
	if fc == nil || k >= len(fc.Params) || fc.Params[k] == nil {
		return false
	}
	return elementwiseChain(fc.Params[k])
}

// elementwiseChain reports whether every transitive user of p is
// element-wise on it, so that a fusion is element-wise on p.
func elementwiseChain(p *hlo.Instruction) bool { return transitiveUses(p, false) }

// usesElementwiseOrTuple is XLA's AreTransitiveUsesElementwiseOrTuple.
func usesElementwiseOrTuple(p *hlo.Instruction) bool { return transitiveUses(p, true) }

// transitiveUses reports whether every transitive user of p takes it
// element-wise (or, with tuples, through a tuple).
func transitiveUses(p *hlo.Instruction, tuples bool) bool {
	seen := map[*hlo.Instruction]bool{p: true}
	stack := []*hlo.Instruction{p}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range cur.Users {
			for _, k := range operandIndices(u, cur) {
				if !isElementwiseOnOperand(u, k) && !(tuples && u.Opcode == hlo.OpTuple) {
					return false
				}
			}
			if !seen[u] {
				seen[u] = true
				stack = append(stack, u)
			}
		}
	}
	return true
}
