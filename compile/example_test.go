package compile_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
)

// A module goes through the pipeline: the passes that ran (with the
// optimization passes, as --fuse asks), whether each changed the module,
// and the checked plan's figures.
func Example() {
	m, err := hlo.ParseModule("mlp.hlo", `HloModule mlp

ENTRY main {
  x = f32[64,128] parameter(0)
  w = f32[128,256] parameter(1)
  b = f32[256] parameter(2)
  h = f32[64,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bias = f32[64,256] broadcast(b), dimensions={1}
  y = f32[64,256] add(h, bias)
  ROOT z = f32[64,256] exponential(y)
}
`)
	if err != nil {
		log.Fatal(err)
	}
	res, err := compile.Compile(context.Background(), m, compile.Options{Fuse: true, VerifyEach: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Passes {
		fmt.Printf("%-18s changed=%v\n", p.Name, p.Changed)
	}
	as := res.Assignment
	fmt.Printf("lower bound %d bytes, plan %d bytes (%d of them temps)\n",
		res.Analysis.LowerBound(nil).Bytes, as.Stats.TotalBytes, as.Stats.TempBytes)
	fmt.Println("root:", m.Entry.Root.Opcode)
	// Output:
	// flatten-call-graph changed=false
	// simplify           changed=false
	// cse                changed=false
	// dce                changed=false
	// fusion             changed=true
	// copy-insertion     changed=false
	// schedule           changed=false
	// assign             changed=false
	// check              changed=false
	// lower bound 230400 bytes, plan 230400 bytes (0 of them temps)
	// root: fusion
}
