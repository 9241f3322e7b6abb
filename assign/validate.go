package assign

// What Assign checks of its input before it plans anything. The analysis
// comes from liveness.Analyze, which verified the module and refused what
// it cannot analyse; but the module may have changed since, and a plan
// that gives a value no bytes is wrong without any check noticing it (the
// checker sees only the sizes it is given). So Assign looks again, cheaply,
// at what would make a plan silently wrong, and refuses with the
// instruction's position.

import (
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// validate reports why a cannot be assigned: no analysis, an instruction of unknown opcode, a value whose byte
// size cannot be computed (an unbounded dimension, a size beyond int64), or, with a target's size function
// (Target.Size, nil for hlo.BufferSize), a value whose size on the target is not the analysis's.
func validate(a *liveness.Analysis, size func(hlo.Shape) (int64, error)) error {
	if a == nil || a.Module == nil {
		return errors.New("assign: no analysis to assign (liveness.Analyze makes one)")
	}
	m := a.Module
	var errs hlo.ErrorList
	m.Instructions(func(in *hlo.Instruction) {
		if in.Opcode == hlo.OpUnknown {
			errs = append(errs, &hlo.Error{File: m.File, Pos: in.Pos,
				Msg: fmt.Sprintf("%s: unknown opcode %s: its buffer semantics are unknown, so it cannot be planned", in.Name, in.OpName())})
		}
	})
	sizeOf := size
	if sizeOf == nil {
		sizeOf = hlo.BufferSize
	}
	for _, v := range a.Values {
		if v == nil || v.Inst == nil {
			return errors.New("assign: the analysis holds a value without an instruction")
		}
		if n, err := sizeOf(v.Shape); err != nil {
			var kind error
			if errors.Is(err, hlo.ErrUnboundedShape) {
				kind = hlo.ErrUnboundedShape // an analysis made with liveness.AllowUnbounded
			}
			errs = append(errs, &hlo.Error{File: m.File, Pos: v.Inst.Pos, Msg: fmt.Sprintf("%s: %v", v.Inst.Name, err), Err: kind})
		} else if size != nil && n != v.Size {
			errs = append(errs, &hlo.Error{File: m.File, Pos: v.Inst.Pos,
				Msg: fmt.Sprintf("%s: %d bytes on the target, %d in the analysis", v.Inst.Name, n, v.Size)})
		}
	}
	return errs.Err()
}
