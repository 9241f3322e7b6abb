package fusion

// Common-subexpression elimination, after XLA's HloCSE. Within a
// computation two instructions compute the same value when they have the
// same opcode, the same shape (layout and all, as printed), the very same
// operands in the same order and the same attributes, and neither has an
// effect beyond its value. The later one is replaced by the earlier one.
//
// Instructions are visited in order with a hash table of the ones kept so
// far. Because a replaced instruction's users take the kept one at once,
// and users come after their operands, a user that only now matches an
// earlier instruction is found when the walk reaches it: one walk per
// computation reaches the fixed point. Called computations are compared by
// identity, so no computation depends on another's result.

import (
	"hash/maphash"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// maxCSEConstant bounds the printed literal of a constant that CSE merges;
// XLA also leaves huge constants alone, comparing them costs more than it saves.
const maxCSEConstant = 1000

// CSE replaces every instruction of m that computes the same value as an
// earlier instruction of its computation by that instruction, and removes
// it. It reports whether it changed the module; when it did not, the
// module is untouched. Replacements only point users at instructions that
// come earlier, so a schedule stays a schedule.
func CSE(m *hlo.Module) (changed bool, err error) {
	if m == nil {
		return false, nil
	}
	defer recoverPass("cse", &changed, &err)
	m.Renumber() // operand IDs feed the hash
	pure := newPurity()
	seed := maphash.MakeSeed()
	var gone marks // the module's, reset for each computation
	for _, c := range m.Computations {
		if cseComputation(c, pure, seed, &gone) {
			changed = true
		}
	}
	if changed {
		m.Renumber()
	}
	return changed, nil
}

// cseComputation merges the equal instructions of c and reports whether it
// did; gone is scratch space by instruction ID, reset here.
func cseComputation(c *hlo.Computation, pure *purity, seed maphash.Seed, gone *marks) bool {
	table := make(map[uint64][]*hlo.Instruction, len(c.Instructions))
	gone.reset()
	for _, in := range c.Instructions {
		if !cseCandidate(in, pure) {
			continue
		}
		h := cseHash(in, seed)
		var same *hlo.Instruction
		for _, k := range table[h] {
			if cseEqual(k, in) {
				same = k
				break
			}
		}
		if same == nil {
			table[h] = append(table[h], in)
			continue
		}
		in.ReplaceAllUsesWith(same)
		gone.mark(in.ID)
	}
	if gone.size() == 0 {
		return false
	}
	// The replaced instructions have no users left (their users were
	// pointed at the kept ones) and are not roots any more; drop them
	// from the list and from their operands' users in one sweep.
	dropInstructions(c, func(in *hlo.Instruction) bool { return gone.has(in.ID) })
	return true
}

// cseCandidate reports whether in may be merged with an equal instruction.
func cseCandidate(in *hlo.Instruction, pure *purity) bool {
	if in.Opcode == hlo.OpParameter || hasControl(in) || in.ImplicitGTE {
		return false
	}
	if in.Opcode == hlo.OpFusion || in.Opcode == hlo.OpRngBitGenerator {
		return false
	}
	if in.Opcode == hlo.OpConstant {
		l := in.Literal()
		return l != nil && !l.Elided && len(l.Text) < maxCSEConstant
	}
	return pureInstruction(in, pure)
}

// cseHash hashes what cseEqual compares, but for the attributes kept as
// text and the literal, whose equality is checked on a hash match.
func cseHash(in *hlo.Instruction, seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [8]byte
	word := func(v uint64) {
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
		h.Write(buf[:])
	}
	word(uint64(in.Opcode))
	hashShape(&h, word, in.Shape)
	word(uint64(len(in.Operands)))
	for _, op := range in.Operands {
		word(uint64(op.ID))
	}
	word(uint64(in.TupleIndex))
	for _, d := range in.Dimensions {
		word(uint64(d))
	}
	if l := in.Literal(); l != nil {
		h.WriteString(l.Text)
	}
	return h.Sum64()
}

func hashShape(h *maphash.Hash, word func(uint64), s hlo.Shape) {
	word(uint64(s.Elem))
	word(uint64(len(s.Dims)))
	for _, d := range s.Dims {
		word(uint64(d))
	}
	if s.Layout != nil {
		for _, d := range s.Layout.MinorToMajor {
			word(uint64(d))
		}
		word(uint64(s.Layout.MemorySpace))
	}
	for _, e := range s.Tuple {
		hashShape(h, word, e)
	}
}

// cseEqual reports whether a and b compute the same value: same opcode,
// shape as printed, operands, and every attribute but metadata and name.
func cseEqual(a, b *hlo.Instruction) bool {
	if a.Opcode != b.Opcode || a.HasDimensions != b.HasDimensions || a.TupleIndex != b.TupleIndex ||
		a.ParameterNumber != b.ParameterNumber || a.ImplicitGTE != b.ImplicitGTE {
		return false
	}
	if !slices.Equal(a.Operands, b.Operands) || !slices.Equal(a.Dimensions, b.Dimensions) ||
		!slices.Equal(a.Attrs, b.Attrs) {
		return false
	}
	if !extEqual(a.Ext, b.Ext) {
		return false
	}
	return a.Shape.String() == b.Shape.String()
}

// extEqual compares the typed rarer attributes; control edges are not
// compared because instructions with any are never merged.
func extEqual(a, b *hlo.Ext) bool {
	if a == nil || b == nil {
		return a == nil && b == nil || isEmptyExt(a) && isEmptyExt(b)
	}
	if a.UnknownOpcode != b.UnknownOpcode || a.FusionKind != b.FusionKind ||
		a.CustomCallTarget != b.CustomCallTarget || a.HasCustomCallTarget != b.HasCustomCallTarget ||
		a.BackendConfig != b.BackendConfig || a.PredicatedBranches != b.PredicatedBranches ||
		a.ToApply != b.ToApply || a.Condition != b.Condition || a.Body != b.Body ||
		a.Select != b.Select || a.Scatter != b.Scatter {
		return false
	}
	if !slices.Equal(a.Calls, b.Calls) || !slices.Equal(a.Branches, b.Branches) ||
		!slices.Equal(a.CalledComputations, b.CalledComputations) || !slices.Equal(a.Slice, b.Slice) {
		return false
	}
	if (a.Literal == nil) != (b.Literal == nil) || a.Literal != nil && (a.Literal.Elided || b.Literal.Elided || a.Literal.Text != b.Literal.Text) {
		return false
	}
	if (a.Dot == nil) != (b.Dot == nil) || a.Dot != nil && !dotEqual(a.Dot, b.Dot) {
		return false
	}
	if len(a.OutputOperandAliasing) != len(b.OutputOperandAliasing) {
		return false
	}
	for i, x := range a.OutputOperandAliasing {
		y := b.OutputOperandAliasing[i]
		if x.Operand != y.Operand || !x.Output.Equal(y.Output) || !x.OperandIndex.Equal(y.OperandIndex) {
			return false
		}
	}
	return true
}

// isEmptyExt reports whether x holds no attribute (an Ext left behind by
// control edges that were since removed, say).
func isEmptyExt(x *hlo.Ext) bool {
	return x == nil || extEqual(x, &hlo.Ext{})
}

func dotEqual(a, b *hlo.DotDims) bool {
	return slices.Equal(a.LhsBatch, b.LhsBatch) && slices.Equal(a.LhsContracting, b.LhsContracting) &&
		slices.Equal(a.RhsBatch, b.RhsBatch) && slices.Equal(a.RhsContracting, b.RhsContracting)
}
