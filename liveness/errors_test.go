package liveness

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

// TestErrorKinds: the errors the package returns match their sentinels
// under errors.Is, with their messages unchanged.
func TestErrorKinds(t *testing.T) {
	parse := func(src string) *hlo.Module {
		t.Helper()
		m, err := hlo.ParseModule("k.hlo", src)
		require.NoError(t, err)
		return m
	}
	_, err := Analyze(nil, Options{})
	require.ErrorIs(t, err, ErrNoModule)
	require.EqualError(t, err, "liveness: no module")
	_, err = AnalyzeUnscheduled(context.Background(), nil, CheckAll)
	require.ErrorIs(t, err, ErrNoModule)

	_, err = Analyze(parse("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] frobnicate(p)\n}\n"), Options{})
	require.ErrorIs(t, err, ErrUnknownOpcode)
	require.False(t, errors.Is(err, ErrUnsizedShape))
	require.Contains(t, err.Error(), "unknown opcode frobnicate")

	notFlat := `HloModule m
f {
  ROOT x = f32[] parameter(0)
}
ENTRY e {
  p = f32[] parameter(0)
  a = f32[] call(p), to_apply=f
  ROOT b = f32[] call(a), to_apply=f
}
`
	_, err = Analyze(parse(notFlat), Options{})
	require.ErrorIs(t, err, ErrNotFlat)
	require.EqualError(t, err, "liveness: computation f is called from a and b; flatten the call graph first (hlo.FlattenCallGraph)")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "m", e.Module)
	require.True(t, e.Pos.IsValid())
	_, err = prepare(parse(notFlat))
	require.NoError(t, err, "flattened first")

	a, err := Analyze(parse("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"), Options{})
	require.NoError(t, err)
	s := NewSchedule("reversed")
	c := a.Module.Entry
	s.Set(c, []*hlo.Instruction{c.Instructions[1], c.Instructions[0]})
	err = a.Reschedule(s)
	require.ErrorIs(t, err, ErrInvalidSchedule)
	require.EqualError(t, err, "liveness: schedule of e runs n before its operand p")
	require.ErrorIs(t, a.Reschedule(nil), ErrInvalidSchedule)
	require.False(t, errors.Is(fmt.Errorf("x"), ErrInvalidSchedule))
}
