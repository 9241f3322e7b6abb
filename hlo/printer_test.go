package hlo

import "testing"

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
	if err != nil {
		t.Fatal(err)
	}
	if !m.OperandShapes {
		t.Errorf("OperandShapes = false for a text with operand shapes")
	}
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
		if got := root.StringWith(tc.opts); got != tc.want {
			t.Errorf("%+v:\ngot  %s\nwant %s", tc.opts, got, tc.want)
		}
	}

	m, err = ParseModule("plain.hlo", without)
	if err != nil {
		t.Fatal(err)
	}
	if m.OperandShapes {
		t.Errorf("OperandShapes = true for a text without operand shapes")
	}
	n := m.Entry.Root
	if got, want := n.StringWith(PrintOptions{Layouts: true, OperandShapes: true}), "ROOT %n = f32[2]{0} negate(f32[2]{0} %a)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := n.String(), "ROOT %n = f32[2] negate(%a)"; got != want {
		t.Errorf("String: got %s, want %s", got, want)
	}
}
