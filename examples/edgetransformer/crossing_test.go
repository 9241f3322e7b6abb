package main

import (
	"context"
	"testing"

	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/gpu"
	"github.com/stretchr/testify/require"
)

// TestCrossingA100: dm-haiku #778's case on the A100 80 GB model with
// JAX's defaults (75% preallocated BFC), batch 1, hidden 192, 12 heads,
// one layer, f32. Without jit, init fits up to 393 nodes when every result
// is held until init returns and up to 426 when each is freed at its last
// use (the published failure at 414 lies between the two); jitted, the
// forward pass is dead code and init fits at 500, 1,000 and 2,000 nodes.
// The README's table comes from `go run ./examples/edgetransformer
// --table=a100-80gb`, which finds these by bisection.
func TestCrossingA100(t *testing.T) {
	dev, err := gpu.DeviceByName("a100-80gb")
	require.NoError(t, err)
	cfg := config{batch: 1, hidden: 192, heads: 12, layers: 1}
	ctx := context.Background()
	at := func(n int64, rules ...eager.Release) outcome {
		c := cfg
		c.nodes = n
		o, err := evaluate(ctx, c, dev, rules...)
		require.NoError(t, err)
		return o
	}
	require.True(t, at(393, eager.Held).held.Fits())
	o := at(394, eager.Held)
	require.False(t, o.held.Fits())
	require.Equal(t, "multiply", o.held.FailedInst().OpName(), "the held run fails in the layer norm after the attention")
	require.Greater(t, o.held.Live[0].Bytes, int64(40<<30), "the largest array alive is val, b·n³·d·4 bytes")
	require.True(t, at(426, eager.LastUse).lastUse.Fits())
	o = at(427, eager.LastUse)
	require.False(t, o.lastUse.Fits())
	require.Equal(t, "call", o.lastUse.FailedInst().OpName(), "the last-use run fails at val's einsum")
	for _, n := range []int64{500, 1000, 2000} {
		o := at(n)
		require.True(t, o.jit.Fits(), "%d nodes jitted", n)
		require.Less(t, o.jit.Peak, int64(4<<30))
	}
}
