package hlo_test

import (
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

func Example() {
	m, err := hlo.ParseModule("ex.hlo", `HloModule ex
ENTRY main {
  p = f32[100] parameter(0)
  l = f32[100] log(p)
  ROOT r = f32[100] reverse(l), dimensions={0}
}`)
	if err != nil {
		panic(err)
	}
	if err := hlo.Verify(m); err != nil {
		panic(err)
	}
	fmt.Print(m)
	for _, in := range m.Entry.Instructions {
		size, _ := hlo.ByteSize(in.Shape)
		fmt.Printf("%s: %d bytes, %d users\n", in.Name, size, len(in.Users))
	}
	// Output:
	// HloModule ex
	//
	// ENTRY %main (p: f32[100]) -> f32[100] {
	//   %p = f32[100] parameter(0)
	//   %l = f32[100] log(%p)
	//   ROOT %r = f32[100] reverse(%l), dimensions={0}
	// }
	// p: 400 bytes, 1 users
	// l: 400 bytes, 1 users
	// r: 400 bytes, 0 users
}

func ExampleByteSize() {
	m, _ := hlo.ParseModule("tpu.hlo", `HloModule tpu
ENTRY e {
  ROOT iota = s32[29360128,10]{1,0:T(8,128)} parameter(0)
}`)
	s := m.Entry.Root.Shape
	padded, _ := hlo.ByteSize(s)
	unpadded, _ := hlo.UnpaddedByteSize(s)
	fmt.Println(padded, unpadded)
	// Output: 15032385536 1174405120
}

func ExampleParse_error() {
	_, err := hlo.Parse("bad.hlo", []byte("HloModule m\nENTRY e {\n  ROOT n = f32[2] negate(q)\n}\n"))
	fmt.Println(err)
	// Output: bad.hlo:3:26: unknown operand %q
}
