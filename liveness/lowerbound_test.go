package liveness_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/liveness/boundtest"
)

// TestLowerBoundReuse: an element-wise chain may run in place, each op
// writing over the operand it consumes, so one buffer is enough however
// long the chain besides the parameter, which keeps its own; the live
// peak counts three at every step.
func TestLowerBoundReuse(t *testing.T) {
	m, err := hlo.ParseModule("chain.hlo", `HloModule chain, is_scheduled=true
ENTRY e {
  p = f32[256] parameter(0)
  a = f32[256] negate(p)
  b = f32[256] exponential(a)
  c = f32[256] negate(b)
  ROOT d = f32[256] add(c, p)
}`)
	require.NoError(t, err)
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	lb := a.LowerBound(nil)
	// p lives throughout and one of a..d holds memory at any time.
	require.EqualValues(t, 2*1024, lb.Bytes)
	require.Len(t, lb.Live, 2)
	require.EqualValues(t, 3*1024, a.LivePeak().Bytes)
	boundtest.Check(t, a)
}

// TestLowerBoundEmpty: a module whose one value starts and ends at step 0
// still needs that value's bytes.
func TestLowerBoundEmpty(t *testing.T) {
	m, err := hlo.ParseModule("one.hlo", `HloModule one, is_scheduled=true
ENTRY e {
  ROOT p = f32[8] parameter(0)
}`)
	require.NoError(t, err)
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	lb := a.LowerBound(nil)
	require.EqualValues(t, 32, lb.Bytes, "a single point value still needs its bytes")
	require.Equal(t, 0, lb.Time)
	boundtest.Check(t, a)
}
