package assign

import (
	"context"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// TestTempHeapBufferOrder: a temp heap's allocation lists its buffers by
// ID, not in the order of a map, so every run of Assign builds the same
// allocation.
func TestTempHeapBufferOrder(t *testing.T) {
	m, err := hlo.ParseModule("t.hlo", `HloModule t, is_scheduled=true
ENTRY e {
  p = f32[64] parameter(0)
  a = f32[64] negate(p)
  b = f32[64] exponential(p)
  c = f32[64] add(a, b)
  d = f32[64] multiply(c, a)
  f = f32[64] subtract(d, b)
  ROOT r = f32[64] add(f, c)
}`)
	require.NoError(t, err)
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	as, err := Assign(context.Background(), a, Options{Algorithm: "xla"})
	require.NoError(t, err)
	heaps := 0
	for _, al := range as.Allocations {
		if !al.Temp {
			continue
		}
		heaps++
		require.GreaterOrEqual(t, len(al.buffers), 2, "temp allocation %d holds %d buffers; the test needs two or more", al.Index, len(al.buffers))
		for i := 1; i < len(al.buffers); i++ {
			require.Less(t, al.buffers[i-1].ID, al.buffers[i].ID, "temp allocation %d: buffer %d listed before buffer %d", al.Index, al.buffers[i-1].ID, al.buffers[i].ID)
		}
	}
	require.NotZero(t, heaps, "no temp allocation")
}
