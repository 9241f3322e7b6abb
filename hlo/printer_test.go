package hlo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStringWith: XLA's way of printing one instruction, as its dumps
// quote it: operand shapes when the module's text had them, /*index=N*/
// before every fifth operand, layouts everywhere.
func TestStringWith(t *testing.T) {
	const withShapes = `HloModule m
ENTRY e {
  a = f32[2]{0} parameter(0)
  b = f32[2]{0} parameter(1)
  ROOT t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(f32[2]{0} a, f32[2]{0} b, f32[2]{0} a, f32[2]{0} b, f32[2]{0} a, /*index=5*/f32[2]{0} b)
}
`
	const without = `HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a)
}
`
	m, err := ParseModule("shapes.hlo", withShapes)
	require.NoError(t, err)
	require.True(t, m.OperandShapes, "OperandShapes for a text with operand shapes")
	root := m.Entry.Root
	xla := PrintOptions{OperandShapes: m.OperandShapes, IndexComments: true, Layouts: true}
	for _, tc := range []struct {
		opts PrintOptions
		want string
	}{
		{PrintOptions{}, root.String()},
		{xla, "ROOT %t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(f32[2]{0} %a, f32[2]{0} %b, f32[2]{0} %a, f32[2]{0} %b, f32[2]{0} %a, /*index=5*/f32[2]{0} %b)"},
		{PrintOptions{IndexComments: true}, "ROOT %t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(%a, %b, %a, %b, %a, /*index=5*/%b)"},
	} {
		require.Equal(t, tc.want, root.StringWith(tc.opts), "%+v", tc.opts)
	}

	m, err = ParseModule("plain.hlo", without)
	require.NoError(t, err)
	require.False(t, m.OperandShapes, "OperandShapes for a text without operand shapes")
	n := m.Entry.Root
	require.Equal(t, "ROOT %n = f32[2]{0} negate(f32[2]{0} %a)", n.StringWith(PrintOptions{Layouts: true, OperandShapes: true}))
	require.Equal(t, "ROOT %n = f32[2] negate(%a)", n.String(), "String")
}
