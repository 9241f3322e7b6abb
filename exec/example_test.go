package exec_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
)

// Plan a small module, check the plan step by step with Shadow, then run
// it for real on the plan's bytes and compare with a run without a plan.
// The plan puts the sum, its negation and the product on the same 16
// bytes, each written over an operand read for the last time: the shadow
// check accepts that, and the planned run computes what the reference run
// computes. A nil Memory runs the plan on a HostArena; a tpu.Chip or a
// gpu.Memory runs it on a modelled device instead.
func ExampleExecute() {
	m, err := hlo.ParseModule("example.hlo", `HloModule example

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] add(x, y)
  n = f32[4] negate(s)
  ROOT m = f32[4] multiply(n, x)
}
`)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	c, err := compile.Compile(ctx, m, compile.Options{})
	if err != nil {
		log.Fatal(err)
	}
	as := c.Assignment

	for _, al := range as.Allocations {
		fmt.Printf("allocation %d, %d bytes:", al.Index, al.Size)
		for _, sl := range al.Slots {
			fmt.Printf(" %s@%d", sl.Value.Name(), sl.Offset)
		}
		fmt.Println()
	}
	sh, err := exec.Shadow(ctx, as)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("shadow: %d steps, %d writes, %d reads, violation: %v, peak %d bytes at step %d\n",
		sh.Steps, sh.Writes, sh.Reads, sh.Violation, sh.Timeline.Peak, sh.Timeline.PeakStep)

	args, err := eval.ParseArgs(m, "args", "{1, 2, 3, 4}; {10, 20, 30, 40}")
	if err != nil {
		log.Fatal(err)
	}
	planned, err := exec.Execute(ctx, as, args, nil, exec.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ref, err := exec.Execute(ctx, as, args, nil, exec.Options{Reference: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("planned:  ", planned.Outputs[0])
	fmt.Println("reference:", ref.Outputs[0])
	// Output:
	// allocation 0, 16 bytes: s{}@0 n{}@0 m{}@0
	// allocation 1, 16 bytes: x{}@0
	// allocation 2, 16 bytes: y{}@0
	// shadow: 5 steps, 5 writes, 5 reads, violation: <nil>, peak 48 bytes at step 2
	// planned:   f32[4] {-11, -44, -99, -176}
	// reference: f32[4] {-11, -44, -99, -176}
}
