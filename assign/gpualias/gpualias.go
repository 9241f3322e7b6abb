// Package gpualias is XLA:GPU's say in whether the output of a fusion may
// take over the buffer of an operand that dies there: GpuAliasInfo::MayAlias
// (xla/service/gpu/alias_info.cc, FusionCanShareBufferHint), which XLA's
// HloDataflowAnalysis::CanShareOperandBufferWithUser asks for a fusion user
// once the must-alias in-place pairs have been checked. The operand and the
// output may differ in shape when they have as many elements of the same
// bit width, and every path from the fused parameter to the output must be
// element-wise (or bitcasts, tuples, the hero of a reduction, a scatter or
// sort root on its own operand, a dynamic-update-slice root on its first
// operand).
//
// It is the rule a backend supplies through assign.Target.FusionCanShare:
// assign.GPU sets FusionCanShare; a Target of one's own may too. The
// package reads the IR (hlo) and liveness' in-place pairs only, so that
// package assign can use it for its predefined GPU target while a backend
// package (gpu) imports assign.
package gpualias

import (
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// FusionCanShare is XLA:GPU's rule for a fusion output taking over an
// operand's buffer (assign.GPU's Target.FusionCanShare): a must-alias
// in-place pair of the same shape may, and otherwise GpuAliasInfo::MayAlias
// decides.
func FusionCanShare(operand *hlo.Instruction, opIx hlo.ShapeIndex, user *hlo.Instruction, userIx hlo.ShapeIndex) bool {
	opSub, ok1 := operand.Shape.Subshape(opIx)
	userSub, ok2 := user.Shape.Subshape(userIx)
	if ok1 && ok2 && hlo.SameShape(opSub, userSub) {
		for _, p := range liveness.InPlacePairs(user) {
			if p.Output.Equal(userIx) && p.Operand < len(user.Operands) && user.Operands[p.Operand] == operand && p.OperandIndex.Equal(opIx) {
				return true
			}
		}
	}
	return gpuFusionMayAlias(operand, user, userIx)
}

// gpuFusionMayAlias is XLA:GPU's FusionCanShareBufferHint. Like XLA it
// compares the operand's whole shape (not the subshape at the operand
// index) with the output's.
func gpuFusionMayAlias(operand, fusion *hlo.Instruction, userIx hlo.ShapeIndex) bool {
	userSub, ok := fusion.Shape.Subshape(userIx)
	if !ok {
		return false
	}
	opShape := operand.Shape
	if !hlo.SameShape(opShape, userSub) {
		if !opShape.IsArray() || !userSub.IsArray() {
			return false
		}
		n1, ok1 := opShape.Elements()
		n2, ok2 := userSub.Elements()
		if !ok1 || !ok2 || n1 != n2 || opShape.Elem.BitWidth() != userSub.Elem.BitWidth() {
			return false
		}
	}
	fc := fusion.FusedComputation()
	k := operandIndex(fusion, operand)
	if fc == nil || fc.Root == nil || k < 0 || k >= len(fc.Params) || fc.Params[k] == nil {
		return false
	}
	roots := fusionRoots(fc)
	reductionHero := findHeroReduction(roots)
	param := fc.Params[k]
	output := fc.Root
	for _, i := range userIx {
		if output.Opcode != hlo.OpTuple || int(i) >= len(output.Operands) {
			break
		}
		output = output.Operands[i]
	}
	nonBitcastRoot := output
	if nonBitcastRoot.Opcode == hlo.OpBitcast && len(nonBitcastRoot.Operands) == 1 {
		nonBitcastRoot = nonBitcastRoot.Operands[0]
	}
	visited := map[*hlo.Instruction]bool{param: true}
	queue := []*hlo.Instruction{param}
	found := false
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == output {
			found = true
		}
		if cur == reductionHero {
			continue
		}
		for _, u := range cur.Users {
			if !visited[u] {
				visited[u] = true
				queue = append(queue, u)
			}
			ui := operandIndex(u, cur)
			if u == nonBitcastRoot && u.Opcode == hlo.OpScatter {
				inputs := 1
				if u.Shape.IsTuple() {
					inputs = len(u.Shape.Tuple)
				}
				if ui < inputs && countOperand(u, cur) == 1 {
					continue
				}
			}
			if u == nonBitcastRoot && u.Opcode == hlo.OpSort && countOperand(u, cur) == 1 {
				if len(userIx) != 1 || int(userIx[0]) != ui {
					return false
				}
				continue
			}
			if nonBitcastRoot.Opcode == hlo.OpDynamicUpdateSlice && u.Opcode == hlo.OpDynamicSlice &&
				len(u.Operands) > 0 && len(nonBitcastRoot.Operands) > 1 &&
				nonBitcastRoot.Operands[0] == u.Operands[0] && hlo.SameShape(u.Shape, nonBitcastRoot.Operands[1].Shape) {
				if !effectiveScalar(u.Shape) || !effectiveScalar(nonBitcastRoot.Operands[1].Shape) {
					for i := 1; i < len(u.Operands); i++ {
						if i+1 >= len(nonBitcastRoot.Operands) || u.Operands[i] != nonBitcastRoot.Operands[i+1] {
							return false
						}
					}
				}
			} else if (!elementwiseOnOperand(u, ui) || u.Opcode == hlo.OpCopy) &&
				u.Opcode != hlo.OpBitcast && u.Opcode != hlo.OpTuple && u != reductionHero {
				if u != nonBitcastRoot || u.Opcode != hlo.OpDynamicUpdateSlice || ui != 1 {
					return false
				}
			}
		}
	}
	if fc.Root.Opcode == hlo.OpTuple {
		otherReached, transposeHero := false, false
		for _, r := range roots {
			if !visited[r] {
				continue
			}
			if r != output {
				otherReached = true
			}
			if h := fusionHero(r); h.Opcode == hlo.OpTranspose || h.Opcode == hlo.OpCopy {
				transposeHero = true
			}
		}
		if otherReached && (!nonBitcastRoot.IsElementwise() || transposeHero) {
			return false
		}
	}
	return found
}

// fusionRoots returns the outputs of a fused computation: the operands of
// a tuple root, or the root.
func fusionRoots(fc *hlo.Computation) []*hlo.Instruction {
	if fc.Root.Opcode == hlo.OpTuple {
		return fc.Root.Operands
	}
	return []*hlo.Instruction{fc.Root}
}

// fusionHero follows a fusion root up through the operations the GPU
// emitters treat as trivial (bitcasts, reshapes and one-operand
// element-wise operations) to the operation that decides the emitter.
func fusionHero(r *hlo.Instruction) *hlo.Instruction {
	for {
		trivial := r.Opcode == hlo.OpBitcast || r.Opcode == hlo.OpReshape ||
			(len(r.Operands) == 1 && r.IsElementwise())
		if !trivial || len(r.Operands) != 1 || r.Operands[0].Opcode == hlo.OpParameter {
			return r
		}
		r = r.Operands[0]
	}
}

// findHeroReduction is HloFusionAnalysis::FindHeroReduction: the first
// reduction hero among the roots, or nil when the reduction emitter does not
// run.
func findHeroReduction(roots []*hlo.Instruction) *hlo.Instruction {
	for _, r := range roots {
		if h := fusionHero(r); h.Opcode == hlo.OpReduce {
			return h
		}
	}
	return nil
}

// elementwiseOnOperand is HloInstruction::IsElementwiseOnOperand outside
// fusions: a dynamic-update-slice is element-wise on its first operand, a
// bitcast-convert when it keeps the bit width.
func elementwiseOnOperand(in *hlo.Instruction, k int) bool {
	switch in.Opcode {
	case hlo.OpDynamicUpdateSlice:
		return k == 0
	case hlo.OpFusion:
		return false
	}
	return in.IsElementwise()
}

func operandIndex(user, op *hlo.Instruction) int {
	for k, o := range user.Operands {
		if o == op {
			return k
		}
	}
	return -1
}

func countOperand(user, op *hlo.Instruction) int {
	n := 0
	for _, o := range user.Operands {
		if o == op {
			n++
		}
	}
	return n
}

// effectiveScalar reports whether a shape holds one element.
func effectiveScalar(s hlo.Shape) bool {
	n, ok := s.Elements()
	return s.IsArray() && ok && n == 1
}
