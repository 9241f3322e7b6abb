package gpualias_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign/gpualias"
	"github.com/hlomem/hlomem/hlo"
)

// TestFusionCanShare: the fusion %f's output may take over its operand
// %a when every path from the fused parameter to the root is element-wise
// and the shapes hold as many elements of one bit width.
func TestFusionCanShare(t *testing.T) {
	for _, c := range []struct {
		name, fused, out string
		want             bool
	}{
		{"element-wise", "%n = f32[8,16] negate(%x)\n  ROOT %r = f32[8,16] exponential(%n)", "f32[8,16]", true},
		{"bitcast to another shape", "%n = f32[8,16] negate(%x)\n  ROOT %r = f32[128] bitcast(%n)", "f32[128]", true},
		{"transpose", "ROOT %r = f32[16,8] transpose(%x), dimensions={1,0}", "f32[16,8]", false},
		{"other bit width", "ROOT %r = f16[8,16] convert(%x)", "f16[8,16]", false},
		{"fewer elements", "ROOT %r = f32[4,16] slice(%x), slice={[0:4], [0:16]}", "f32[4,16]", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `HloModule m

%fused (x: f32[8,16]) -> ` + c.out + ` {
  %x = f32[8,16] parameter(0)
  ` + c.fused + `
}

ENTRY %main (p: f32[8,16]) -> ` + c.out + ` {
  %p = f32[8,16] parameter(0)
  %a = f32[8,16] sqrt(%p)
  ROOT %f = ` + c.out + ` fusion(%a), kind=kLoop, calls=%fused
}
`
			m, err := hlo.ParseModule(c.name, src)
			require.NoError(t, err, src)
			e := m.Entry
			f, a := e.Root, e.Root.Operands[0]
			require.Equal(t, c.want, gpualias.FusionCanShare(a, nil, f, nil))
		})
	}
}
