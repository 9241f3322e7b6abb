package assign

import (
	"context"
	"errors"
	"testing"

	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// analysedForValidate returns the analysis of a small valid module, which
// each case below then spoils as a caller changing the module after
// liveness.Analyze could.
func analysedForValidate(t *testing.T) *liveness.Analysis {
	t.Helper()
	m, err := hlo.ParseModule("in.hlo", "HloModule m, is_scheduled=true\nENTRY e {\n  p = f32[4] parameter(0)\n  n = f32[4] negate(p)\n  ROOT b = f32[4,4] broadcast(n), dimensions={1}\n}")
	require.NoError(t, err)
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	return a
}

// TestAssignRefusesWhatItCannotSize: a value whose byte size overflows
// int64 or is unbounded must stop Assign with the instruction's position;
// it used to be planned in 0 bytes, which Check cannot notice.
func TestAssignRefusesWhatItCannotSize(t *testing.T) {
	for _, tc := range []struct{ dims, want string }{
		{"4611686018427387904,4", "in.hlo:5:8: b: size of shape f32[4611686018427387904,4] overflows int64"},
		{"?,4", "in.hlo:5:8: b: unbounded dynamic shape f32[?,4]: its size is unknown"},
	} {
		a := analysedForValidate(t)
		s, err := hlo.ParseModule("s.hlo", "HloModule s\nENTRY e {\n  ROOT p = f32["+tc.dims+"] parameter(0)\n}")
		require.NoError(t, err)
		for _, v := range a.Values {
			if v.Inst.Name == "b" {
				v.Shape = s.Entry.Root.Shape
			}
		}
		_, err = Assign(context.Background(), a, Options{})
		require.EqualError(t, err, tc.want)
	}
}

// TestAssignRefusesUnknownOpcode: liveness.Analyze refuses an opcode it
// does not know; Assign does too, should the module change after it.
func TestAssignRefusesUnknownOpcode(t *testing.T) {
	a := analysedForValidate(t)
	n := a.Module.Entry.Instruction("n")
	n.Opcode = hlo.OpUnknown
	n.EnsureExt().UnknownOpcode = "frobnicate"
	_, err := Assign(context.Background(), a, Options{})
	want := "in.hlo:4:3: n: unknown opcode frobnicate: its buffer semantics are unknown, so it cannot be planned"
	require.EqualError(t, err, want)
}

// TestAssignWithoutAnalysis: a nil analysis is an error, not a panic.
func TestAssignWithoutAnalysis(t *testing.T) {
	_, err := Assign(context.Background(), nil, Options{})
	require.ErrorContains(t, err, "no analysis")
}

// TestAssignRefusesUnknownAlgorithm: an unknown packer is an error even
// for a module with no temporaries to pack (it used to plan silently).
func TestAssignRefusesUnknownAlgorithm(t *testing.T) {
	m, err := hlo.ParseModule("p.hlo", "HloModule p, is_scheduled=true\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")
	require.NoError(t, err)
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	_, err = Assign(context.Background(), a, Options{Algorithm: "nope"})
	require.ErrorIs(t, err, pack.ErrUnknownAlgorithm)
	require.ErrorContains(t, err, `assign: pack: unknown algorithm "nope" (want one of auto, portfolio, exact, xla,`)
}

// TestAssignRefusesUnbounded: an analysis made with
// liveness.AllowUnbounded (live ranges only: XLA's HloLiveRange takes
// unbounded shapes) has values whose size is unknown (XLA's
// kUnboundedSize is INT64_MIN, shape.h, not a count); Assign refuses it
// with every such value's instruction and position instead of planning it
// in 0 bytes.
func TestAssignRefusesUnbounded(t *testing.T) {
	m, err := hlo.ParseModule("dyn.hlo", "HloModule dyn, is_scheduled=true\nENTRY e {\n  p = f32[?,4]{1,0} parameter(0)\n  n = f32[?,4]{1,0} negate(p)\n  ROOT t = (f32[?,4]{1,0}, f32[<=3]{0}) tuple(n, c)\n  c = f32[<=3]{0} parameter(1)\n}")
	require.NoError(t, err)
	a, err := liveness.AnalyzeUnscheduled(context.Background(), m, liveness.CheckAll|liveness.AllowUnbounded)
	require.NoError(t, err)
	require.NoError(t, a.LayoutModuleOrder())
	_, err = Assign(context.Background(), a, Options{})
	require.True(t, errors.Is(err, hlo.ErrUnboundedShape))
	require.EqualError(t, err, "dyn.hlo:3:3: p: unbounded dynamic shape f32[?,4]{1,0}: its size is unknown\n"+
		"dyn.hlo:4:3: n: unbounded dynamic shape f32[?,4]{1,0}: its size is unknown")
}
