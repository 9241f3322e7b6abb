package assign_test

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
)

// ExampleAssign plans a small module as hlomem assign does: parse, prepare
// (flatten, insert copies, schedule, analyse), assign, check.
func ExampleAssign() {
	const src = `HloModule mlp, is_scheduled=true

ENTRY %main (x: f32[64,256], w: f32[256,256], b: f32[256]) -> f32[64,256] {
  %x = f32[64,256]{1,0} parameter(0)
  %w = f32[256,256]{1,0} parameter(1)
  %b = f32[256]{0} parameter(2)
  %h = f32[64,256]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bias = f32[64,256]{1,0} broadcast(%b), dimensions={1}
  %y = f32[64,256]{1,0} add(%h, %bias)
  ROOT %z = f32[64,256]{1,0} exponential(%y)
}
`
	mods, err := hlo.Parse("mlp.hlo", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The pipeline up to the schedule: the module analysed, ready to plan.
	res, err := compile.Compile(context.Background(), mods[0], compile.Options{Until: "schedule"})
	if err != nil {
		fmt.Println(err)
		return
	}
	as, err := assign.Assign(context.Background(), res.Analysis, assign.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := assign.Check(as); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("target %s, alignment %d\n", as.Options.Target.Name, as.Options.Align)
	fmt.Printf("%d allocations, %d bytes in total, %d of them temps\n", len(as.Allocations), as.Stats.TotalBytes, as.Stats.TempBytes)
	for _, al := range as.Allocations {
		fmt.Printf("allocation %d: %d bytes, %s\n", al.Index, al.Size, al.Kind())
	}
	// Output:
	// target gpu, alignment 128
	// 5 allocations, 459776 bytes in total, 65536 of them temps
	// allocation 0: 262144 bytes, parameter
	// allocation 1: 65536 bytes, maybe-live-out
	// allocation 2: 65536 bytes, parameter
	// allocation 3: 1024 bytes, parameter
	// allocation 4: 65536 bytes, preallocated-temp
}
