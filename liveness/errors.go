package liveness

import (
	"errors"

	"github.com/hlomem/hlomem/hlo"
)

// Sentinel errors: every error this package returns about a module it
// refuses matches one of them under errors.Is, so that callers can tell
// the cases apart without reading messages. The positioned input errors
// (an hlo.ErrorList from Analyze's input check) match ErrUnknownOpcode and
// ErrUnsizedShape through their entries; the others are *Error values.
var (
	// ErrNoModule: the module is nil.
	ErrNoModule = errors.New("liveness: no module")
	// ErrUnknownOpcode: an instruction's opcode is unknown, so how it
	// uses and aliases buffers is too (a positioned *hlo.Error).
	ErrUnknownOpcode = errors.New("liveness: unknown opcode")
	// ErrUnsizedShape: a shape's byte size cannot be computed (a positioned
	// *hlo.Error).
	ErrUnsizedShape = errors.New("liveness: shape without a byte size")
	// ErrTooManyValues: the module has more than MaxValues subshape
	// positions.
	ErrTooManyValues = errors.New("liveness: too many values")
	// ErrCallContext: a computation is called both sequentially and in a
	// parallel context (or as a fusion body), which XLA refuses too.
	ErrCallContext = errors.New("liveness: computation called in two contexts")
	// ErrNotFlat: a sequential computation has more than one call site;
	// hlo.FlattenCallGraph removes them.
	ErrNotFlat = errors.New("liveness: call graph not flat")
	// ErrCopiesUnsettled: copy insertion kept finding copies to add.
	ErrCopiesUnsettled = errors.New("liveness: copy insertion did not settle")
	// ErrInvalidSchedule: a schedule is missing, or is not an order of a
	// computation's instructions that respects their dependencies.
	ErrInvalidSchedule = errors.New("liveness: invalid schedule")
)

// Error is an error about a module this package refuses or cannot
// prepare. Its text is Msg; Kind is the sentinel errors.Is matches.
type Error struct {
	// Kind is one of the sentinel errors above, or package schedule's
	// (schedule.ErrUnknown).
	Kind error
	// Module is the name of the module concerned ("" when there is none).
	Module string
	// Pos is the position in the source text of what the error is about
	// (an instruction or computation), or the zero Pos.
	Pos hlo.Pos
	// Pass names the pipeline pass that failed, when one did (package
	// compile sets it).
	Pass string
	// Msg is the whole message, "liveness: ..." (or "schedule: ...").
	Msg string
	// Err is the underlying cause, or nil.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, e.Kind) true.
func (e *Error) Is(target error) bool { return target != nil && target == e.Kind }

// Unwrap returns the cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// newError returns an *Error of kind about module m with the message msg.
func newError(kind error, m *hlo.Module, pos hlo.Pos, msg string, cause error) *Error {
	e := &Error{Kind: kind, Pos: pos, Msg: msg, Err: cause}
	if m != nil {
		e.Module = m.Name
	}
	return e
}
