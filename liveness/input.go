package liveness

import (
	"context"
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
	return checkInputVerified(context.Background(), m, false)
}

// checkInputVerified is checkInput; verified says hlo.Verify accepted m
// and m has changed since only by a transformation that keeps it valid
// (hlo.FlattenCallGraph), so Verify need not run again.
func checkInputVerified(ctx context.Context, m *hlo.Module, verified bool) error {
	if m == nil {
		return newError(ErrNoModule, nil, hlo.Pos{}, ErrNoModule.Error(), nil)
	}
	if !verified {
		if err := hlo.VerifyContext(ctx, m); err != nil {
			return err
		}
	}
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
			if _, err := hlo.ByteSize(s); err != nil {
				bad = true // one message per instruction
				errs = append(errs, &hlo.Error{File: m.File, Pos: in.Pos, Msg: fmt.Sprintf("%s: %v", in.Name, err), Err: ErrUnsizedShape})
			}
		})
	})
	return errs.Err()
}
