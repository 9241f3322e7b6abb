package assign

import (
	"context"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// TestDynamicBufferSize: XLA:GPU sizes the buffer of a bounded dynamic
// array at its bound plus one S32 per dimension for the runtime sizes
// (GetSizeOfShape, xla/service/gpu; XLA:CPU's ShapeSizeBytes does the
// same). XLA's own test backends/gpu/tests/calling_convention.hlo, this
// module, expects the kernel's arguments dereferenceable(32) for param,
// (4) for each constant and (44) for the s32[2,<=2,2] result: 2*2*2*4
// bytes of elements and 3*4 of sizes.
func TestDynamicBufferSize(t *testing.T) {
	m, err := hlo.ParseModule("cc.hlo", `HloModule SliceToDynamic, is_scheduled=true

ENTRY main {
  %param = s32[2,2,2]{2,0,1} parameter(0)
  %dynamic = s32[] constant(1)
  %static = s32[] constant(2)
  ROOT %custom-call = s32[2,<=2, 2]{2,0,1} custom-call(s32[2,2,2]{2,0,1} %param,
                                                  s32[] %static,
                                                  s32[] %dynamic,
                                                  s32[] %static),
                                      custom_call_target="SliceToDynamic",
                                      backend_config=""
}
`)
	require.NoError(t, err)
	a, err := liveness.Analyze(m, liveness.Options{})
	require.NoError(t, err)
	for _, target := range []Target{GPU, CPU} {
		as, err := Assign(context.Background(), a, Options{Target: target})
		require.NoError(t, err)
		want := map[string]int64{"param": 32, "dynamic": 4, "static": 4, "custom-call": 44}
		for _, v := range a.Values {
			al, s, ok := as.AllocationOf(v)
			require.True(t, ok, v.Name())
			require.Equal(t, want[v.Inst.Name], s.Size, "%s %s", target.Name, v.Name())
			require.Equal(t, want[v.Inst.Name], al.Size, "%s %s", target.Name, v.Name())
		}
	}
}
