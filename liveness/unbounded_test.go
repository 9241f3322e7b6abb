package liveness

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// unboundedModule has unbounded dynamic shapes (f32[?], XLA's
// kUnboundedSize) and XLA's own schedule, so no copy is added.
const unboundedModule = `HloModule dyn, is_scheduled=true

ENTRY main {
  p0 = f32[?]{0} parameter(0)
  p1 = f32[?,8]{1,0} parameter(1)
  n = f32[?]{0} negate(p0)
  ROOT t = (f32[?]{0}, f32[?,8]{1,0}) tuple(n, p1)
}
`

func analyzeAllowingUnbounded(t *testing.T, src string) *Analysis {
	t.Helper()
	m, err := hlo.ParseModule("dyn.hlo", src)
	require.NoError(t, err)
	a, err := AnalyzeUnscheduled(context.Background(), m, CheckAll|AllowUnbounded)
	require.NoError(t, err)
	require.NoError(t, a.LayoutModuleOrder())
	return a
}

// XLA's HloLiveRange::ToString (hlo/utils/hlo_live_range.cc) prints the
// sequence and every live range, and when ComputePeakMemoryMoment meets a
// value whose defining instruction's shape is_unbounded_dynamic (it
// returns -1) the line "Peak memory could not be determined due to
// unbounded dynamic shape." in place of the peak section, and nothing
// after. The ranges follow XLA's CalculateBufferStartEndMap: entry
// parameters that are not donated live to the schedule's end (4), as does
// what the root holds; values in XLA's ID order (post-order from the
// root: p0, n, p1, t).
func TestWriteXLAUnbounded(t *testing.T) {
	a := analyzeAllowingUnbounded(t, unboundedModule)
	const want = `HloLiveRange (max 4):
  InstructionSequence:
    0:p0
    1:p1
    2:n
    3:t
  BufferLiveRange:
    p0{}:0-4
    n{}:2-4
    p1{}:0-4
    t{}:3-4
  Peak memory could not be determined due to unbounded dynamic shape.
`
	for _, pf := range []PeakFormat{PeakCumulative, PeakLegacy} {
		var b bytes.Buffer
		require.NoError(t, a.WriteXLAWith(&b, XLAOptions{Peak: pf}))
		require.Equal(t, want, b.String())
	}
	pk := a.XLAPeak()
	require.True(t, pk.Undetermined)
	require.Equal(t, -1, pk.Time)
	require.Zero(t, pk.Bytes)
	require.Empty(t, pk.Live)
}

// ComputePeakMemoryMoment tests value->instruction()->shape(), the whole
// shape of the defining instruction: a tuple with an unbounded element
// is_unbounded_dynamic (shape.cc), so its own index-table value, whose
// size is known, still makes the peak undetermined.
func TestXLAPeakUnboundedTupleElement(t *testing.T) {
	a := analyzeAllowingUnbounded(t, `HloModule m, is_scheduled=true

ENTRY e {
  p = f32[4]{0} parameter(0)
  ROOT t = (f32[4]{0}, (f32[?]{0})) parameter(1)
}
`)
	require.True(t, a.XLAPeak().Undetermined)
	var b bytes.Buffer
	require.NoError(t, a.WriteXLA(&b))
	require.Contains(t, b.String(), "    t{}:0-2\n")
	require.Contains(t, b.String(), "\n  Peak memory could not be determined due to unbounded dynamic shape.\n")
	require.NotContains(t, b.String(), "(peak)")
}

// Without AllowUnbounded the analysis refuses the module, one positioned
// error per instruction; with it, what needs sizes refuses the analysis.
func TestUnboundedRefusedWithoutAllowance(t *testing.T) {
	m, err := hlo.ParseModule("dyn.hlo", unboundedModule)
	require.NoError(t, err)
	_, err = Analyze(m, Options{})
	require.True(t, errors.Is(err, hlo.ErrUnboundedShape))
	require.Contains(t, err.Error(), "dyn.hlo:4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown")

	a := analyzeAllowingUnbounded(t, unboundedModule)
	require.Len(t, a.Unbounded(), 4)
	var b bytes.Buffer
	err = a.WriteJSON(&b)
	require.True(t, errors.Is(err, hlo.ErrUnboundedShape))
	require.Contains(t, err.Error(), "dyn.hlo:4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown")
	require.Zero(t, b.Len())
}

// A bounded dynamic dimension counts at its bound (XLA's
// ShapeUtil::ByteSizeOf multiplies the dimensions, which hold the bounds).
// The peak of the dump uses ByteSizeOf(shape, 8) alone
// (HloLiveRange::ComputePeakMemoryMoment, ToString); a value's buffer
// also holds one S32 runtime size per dimension (XLA:GPU's
// GetSizeOfShape, XLA:CPU's ShapeSizeBytes), which the plan sizes.
func TestBoundedDynamicSizes(t *testing.T) {
	a := analyzeAllowingUnbounded(t, `HloModule m, is_scheduled=true

ENTRY e {
  p = f32[<=8,3]{1,0} parameter(0)
  ROOT n = f32[<=8,3]{1,0} negate(p)
}
`)
	require.Nil(t, a.Unbounded())
	for _, v := range a.Values {
		require.EqualValues(t, 8*3*4+2*4, v.Size, v.Name())
	}
	pk := a.XLAPeak()
	require.False(t, pk.Undetermined)
	require.EqualValues(t, 2*96, pk.Bytes)
	var b bytes.Buffer
	require.NoError(t, a.WriteXLA(&b))
	require.Contains(t, b.String(), "    n{}: 96 bytes (cumulative: 96 bytes)\n    p{}: 96 bytes (cumulative: 192 bytes)\n")
}
