package tpu

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
)

const oneHot = `HloModule onehot

ENTRY e {
  p = s32[29360128,1]{1,0} parameter(0)
  i = s32[29360128,10]{1,0} iota(), iota_dimension=1, metadata={op_type="OneHot" op_name="model/loss/one_hot"}
  q = s32[29360128]{0} bitcast(p)
  b = s32[29360128,10]{1,0} broadcast(q), dimensions={0}
  c = pred[29360128,10]{1,0} compare(i, b), direction=EQ
  ROOT r = f32[29360128,10]{1,0} convert(c)
}
`

func assignTPU(t *testing.T, text string, gen Generation) *assign.Assignment {
	t.Helper()
	m, err := hlo.ParseModule("m.hlo", text)
	require.NoError(t, err)
	a, err := tpuPrepare(m, gen)
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{Target: assign.TPU})
	require.NoError(t, err)
	require.NoError(t, assign.Check(as))
	return as
}

// TestCompileOOM: the one-hot of the published message, on a 16 GiB
// chip, fails as XLA:TPU says, with the padding of the iota spelled out.
func TestCompileOOM(t *testing.T) {
	as := assignTPU(t, oneHot, V4)
	require.NoError(t, CompileOOM(as, Generation{Name: "big", HBM: 1 << 40}, 5), "fits 1 TiB")
	err := CompileOOM(as, V5e, 3)
	require.Error(t, err)
	msg := err.Error()
	require.True(t, strings.HasPrefix(msg, "Ran out of memory in memory space hbm. Used "), msg)
	require.Contains(t, msg, " of 16.00G hbm. Exceeded hbm capacity by ")
	require.Contains(t, msg, "HLO temp ")
	require.Contains(t, msg, "% utilization: Unpadded (")
	require.Contains(t, msg, "Largest program allocations in hbm:\n  1. Size: 14.00G\n")
	require.Contains(t, msg, "     Shape: s32[29360128,10]{1,0:T(8,128)}\n     Unpadded size: 1.09G\n     Extra memory due to padding: 12.91G (12.8x expansion)\n")
	require.Contains(t, msg, `op_name="model/loss/one_hot"`)
	require.Contains(t, msg, "XLA label: %i = s32[29360128,10]{1,0:T(8,128)} iota()")

	p := as.Padding()
	require.Greater(t, p.Padded, p.Unpadded)
	var b strings.Builder
	require.NoError(t, p.Write(&b, 2))
	require.Contains(t, b.String(), "TPU padding: ")
	require.Equal(t, 3, strings.Count(b.String(), "\n"))
}

// TestLiveBytes: per step, the padded bytes are the unpadded bytes of the
// tiled values rounded up to their tiles.
func TestLiveBytes(t *testing.T) {
	as := assignTPU(t, `HloModule m, is_scheduled=true

ENTRY e {
  p = f32[3,5]{1,0} parameter(0)
  a = f32[3,5]{1,0} negate(p)
  ROOT b = f32[3,5]{1,0} exponential(a)
}
`, V4)
	steps := LiveBytes(as.Analysis)
	require.Len(t, steps, 3)
	for _, s := range steps {
		require.Equal(t, s.Padded, s.Unpadded/60*4096, s)
	}
	require.Equal(t, int64(2*60), steps[1].Unpadded)
	require.Nil(t, LiveBytes(nil))
}
