package gpu_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// Run a plan on the BFC arena: exec.Execute asks the allocator for each of
// the plan's allocations, reads and writes the values at their slots there,
// and computes what the module computes (the argument "0" fills x with
// zeros). The allocator's stats show what the run took from the arena:
// the plan's two allocations, each rounded to 256 bytes.
func ExampleNewMemory() {
	m, err := hlo.ParseModule("example.hlo", `HloModule example

ENTRY main {
  x = f32[8] parameter(0)
  e = f32[8] exponential(x)
  ROOT n = f32[8] negate(e)
}
`)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	planned, err := compile.Compile(ctx, m, compile.Options{Target: assign.GPU})
	if err != nil {
		log.Fatal(err)
	}
	as := planned.Assignment
	bfc, err := gpu.NewBFC(gpu.BFCOptions{Limit: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	args, err := eval.ParseArgs(m, "args", "0")
	if err != nil {
		log.Fatal(err)
	}
	res, err := exec.Execute(ctx, as, args, gpu.NewMemory(bfc, exec.PoisonByte), exec.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Outputs[0])
	for _, al := range as.Allocations {
		fmt.Printf("allocation %d: %d bytes\n", al.Index, al.Size)
	}
	st := bfc.Stats()
	fmt.Println("allocations:", st.NumAllocs, "bytes in use:", st.BytesInUse)
	// Output:
	// f32[8] {-1, -1, -1, -1, -1, -1, -1, -1}
	// allocation 0: 32 bytes
	// allocation 1: 32 bytes
	// allocations: 2 bytes in use: 512
}
