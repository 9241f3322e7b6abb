package assign

// Whether a value may take over the buffer of a dying operand value, as
// XLA's HloDataflowAnalysis::CanShareOperandBufferWithUser decides it with
// the backend's AliasInfo. The generic rules are liveness's; the backend's
// say on a fusion user is its Target's FusionCanShare (XLA:GPU's,
// GpuAliasInfo::MayAlias, is package assign/gpualias, which the predefined
// GPU target uses). One rule does not depend on the target and stays
// here: the workspace output {1} of a cuBLASLt matmul custom call never
// takes over an operand (a rule of the dataflow analysis itself).

import (
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// canShare reports whether user's value at userIx may reuse the buffer of
// operand's value at opIx, for the assignment's target.
func (as *Assignment) canShare(operand *hlo.Instruction, opIx hlo.ShapeIndex, user *hlo.Instruction, userIx hlo.ShapeIndex) bool {
	return canShareFor(&as.Options.Target, operand, opIx, user, userIx)
}

// shareFunc returns the replay's operand-reuse rule: nil when
// NoOperandReuse is set.
func (as *Assignment) shareFunc() shareFunc {
	if as.Options.NoOperandReuse {
		return nil
	}
	return as.canShare
}

func canShareFor(target *Target, operand *hlo.Instruction, opIx hlo.ShapeIndex, user *hlo.Instruction, userIx hlo.ShapeIndex) bool {
	if user.Opcode == hlo.OpCustomCall && len(userIx) == 1 && userIx[0] == 1 {
		if t := user.CustomCallTarget(); t == "__cublas$lt$matmul" || t == "__cublas$lt$matmul$f8" {
			return false
		}
	}
	if target.FusionCanShare == nil || user.Opcode != hlo.OpFusion || operand.Opcode == hlo.OpConstant {
		return liveness.CanShareOperandBufferWithUser(operand, opIx, user, userIx)
	}
	return target.FusionCanShare(operand, opIx, user, userIx)
}
