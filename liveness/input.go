package liveness

import (
	"context"
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// checkInput reports why m cannot be analysed: every violation hlo.Verify
// finds, and then, as positioned errors too, every instruction whose
// opcode is unknown (how it uses and aliases buffers is unknown with it,
// so no plan could be trusted) and every shape whose byte size cannot be
// computed (an unbounded dimension, a size beyond int64): a plan must not
// give such a value 0 bytes.
//
// Analyze runs it first, so that it takes any module without panicking.
func checkInput(m *hlo.Module) error {
	return checkInputVerified(context.Background(), m, checkAll)
}

// checkInputVerified is checkInput as check says: with checkVerified,
// hlo.Verify accepted m and m has changed since only by a transformation
// that keeps it valid (hlo.FlattenCallGraph), so Verify need not run
// again; with checkUnbounded, unbounded dimensions pass (AllowUnbounded).
func checkInputVerified(ctx context.Context, m *hlo.Module, check inputCheck) error {
	if m == nil {
		return newError(ErrNoModule, nil, hlo.Pos{}, ErrNoModule.Error(), nil)
	}
	if check&^checkUnbounded != checkVerified {
		if err := hlo.VerifyContext(ctx, m); err != nil {
			return err
		}
	}
	allowUnbounded := check&checkUnbounded != 0
	var errs hlo.ErrorList
	m.Instructions(func(in *hlo.Instruction) {
		if in.Opcode == hlo.OpUnknown {
			errs = append(errs, &hlo.Error{File: m.File, Pos: in.Pos, Err: ErrUnknownOpcode,
				Msg: fmt.Sprintf("%s: unknown opcode %s: its buffer semantics are unknown, so it cannot be planned", in.Name, in.OpName())})
		}
		bad := false
		in.Shape.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
			if bad || s.IsTuple() {
				return
			}
			if _, err := hlo.BufferSize(s); err != nil {
				if allowUnbounded && errors.Is(err, hlo.ErrUnboundedShape) {
					return
				}
				bad = true // one message per instruction
				kind := ErrUnsizedShape
				if errors.Is(err, hlo.ErrUnboundedShape) {
					kind = errors.Join(ErrUnsizedShape, hlo.ErrUnboundedShape)
				}
				errs = append(errs, &hlo.Error{File: m.File, Pos: in.Pos, Msg: fmt.Sprintf("%s: %v", in.Name, err), Err: kind})
			}
		})
	})
	return errs.Err()
}
