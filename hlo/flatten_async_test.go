package hlo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An async-done that repeats its chain's calls= (as XLA prints it, e.g.
// hlo_live_range_test.cc ThreadedAsyncCall) is part of its async-start's
// call site: flattening neither clones the computation for it nor leaves
// it calling another computation than its start.
func TestFlattenAsyncDoneRepeatingCalls(t *testing.T) {
	m, err := ParseModule("t.hlo", `HloModule m, is_scheduled=true

%sub (param: f32[4]) -> f32[4] {
  %param = f32[4] parameter(0)
  ROOT %neg = f32[4] negate(%param)
}

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %s = ((f32[4]), f32[4], u32[]) async-start(%p0), calls=%sub
  %d = f32[4] async-done(%s), calls=%sub
  ROOT %r = f32[4] copy(%d)
}`)
	require.NoError(t, err)
	changed, err := FlattenCallGraph(m)
	require.NoError(t, err)
	require.False(t, changed)
	require.Len(t, m.Computations, 2)
	e := m.Entry
	require.Same(t, e.Instruction("s").Calls()[0], e.Instruction("d").Calls()[0])
}
