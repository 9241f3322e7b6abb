package schedule

import (
	"context"
	"errors"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// An unbounded dynamic dimension (f32[?]) has no size (XLA's
// kUnboundedSize, shape.h): a scheduler that weighs sizes cannot order the
// module, and Apply's default keeps the module's own order instead of
// searching. Keep and postorder (XLA's MakeInstructionPostOrder) weigh
// nothing and run.
func TestSchedulersRefuseUnbounded(t *testing.T) {
	const src = `HloModule dyn

ENTRY main {
  p0 = f32[?]{0} parameter(0)
  n = f32[?]{0} negate(p0)
  ROOT a = f32[?]{0} add(n, p0)
}
`
	analyse := func() *liveness.Analysis {
		m, err := hlo.ParseModule("dyn.hlo", src)
		require.NoError(t, err)
		a, _, err := liveness.InsertCopiesUnscheduled(context.Background(), m, liveness.CheckAll|liveness.AllowUnbounded)
		require.NoError(t, err)
		return a
	}
	a := analyse()
	require.Equal(t, Keep, Effective("", a.Module))
	for _, name := range []string{DFS, List, Heuristic, Best, Search, Optimal} {
		_, _, err := Apply(context.Background(), analyse(), name, Options{})
		require.True(t, errors.Is(err, hlo.ErrUnboundedShape), name)
		require.EqualError(t, err, "dyn.hlo:4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown, so scheduler "+name+", which weighs sizes, cannot order the module (keep and postorder can)")
		_, err = ByName(context.Background(), analyse(), name, Options{})
		require.Error(t, err, name)
	}
	for _, name := range []string{"", Keep, PostOrder} {
		b, _, err := Apply(context.Background(), analyse(), name, Options{})
		require.NoError(t, err, name)
		require.Len(t, b.Sequence, 3, name)
	}
	// A bounded module keeps the usual default.
	m, err := hlo.ParseModule("b.hlo", "HloModule b\nENTRY e {\n  ROOT p = f32[<=4]{0} parameter(0)\n}")
	require.NoError(t, err)
	require.Equal(t, Best, Effective("", m))
}
