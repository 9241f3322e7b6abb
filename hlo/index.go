package hlo

// InstructionIndex numbers a computation's instructions 0..n-1 in their
// order and tells whether an instruction is one of them. It goes by
// instruction ID when the computation's IDs are contiguous (as the parser
// and Renumber leave them) and through a map otherwise, so it is right on
// any module, and fast (no hashing of a million pointers) on the usual
// ones. It reflects the computation as it was when made.
type InstructionIndex struct {
	c    *Computation
	base int
	m    map[*Instruction]int32
}

// NewInstructionIndex returns the index of c's instructions.
func NewInstructionIndex(c *Computation) InstructionIndex {
	x := InstructionIndex{c: c}
	if len(c.Instructions) > 0 && c.Instructions[0] != nil {
		x.base = c.Instructions[0].ID
	}
	for i, in := range c.Instructions {
		if in == nil || in.ID != x.base+i {
			x.m = make(map[*Instruction]int32, len(c.Instructions))
			for j, in := range c.Instructions {
				if _, dup := x.m[in]; !dup {
					x.m[in] = int32(j)
				}
			}
			break
		}
	}
	return x
}

// Of returns in's number in the computation, or -1 when in is not one of
// its instructions.
func (x InstructionIndex) Of(in *Instruction) int {
	if in == nil {
		return -1
	}
	if x.m != nil {
		if i, ok := x.m[in]; ok {
			return int(i)
		}
		return -1
	}
	i := in.ID - x.base
	if i < 0 || i >= len(x.c.Instructions) || x.c.Instructions[i] != in {
		return -1
	}
	return i
}
