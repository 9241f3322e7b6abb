package compile_test

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
)

// A compiler whose own IR is not HLO builds a two-layer perceptron with
// hlo.Builder (shapes, users, IDs and names follow from the calls),
// compiles it through the one pipeline and reads the checked plan.
func Example_builder() {
	f32 := func(dims ...int64) hlo.Shape { return hlo.ArrayShape(hlo.F32, dims...) }
	matmul := hlo.DotDims{LhsContracting: []int64{1}, RhsContracting: []int64{0}}

	b := hlo.NewBuilder("mlp")
	c := b.Entry("main")
	x, w1, b1, w2 := c.Parameter("x", f32(8, 784)), c.Parameter("w1", f32(784, 128)), c.Parameter("b1", f32(128)), c.Parameter("w2", f32(128, 10))
	h := c.Binary(hlo.OpAdd, c.Dot(x, w1, matmul), c.Broadcast(b1, []int64{8, 128}, 1))
	h = c.Binary(hlo.OpMaximum, h, c.Broadcast(c.Constant(f32(), 0), []int64{8, 128}))
	c.Dot(h, w2, matmul)
	m, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := compile.Compile(context.Background(), m, compile.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range r.Assignment.Analysis.Values {
		al, slot, _ := r.Assignment.AllocationOf(v)
		fmt.Printf("%-11s %-12s allocation %d offset %4d\n", v.Inst.Name, v.Shape.StringNoLayout(), al.Index, slot.Offset)
	}
	// Output:
	// x           f32[8,784]   allocation 1 offset    0
	// w1          f32[784,128] allocation 0 offset    0
	// dot         f32[8,128]   allocation 6 offset    0
	// b1          f32[128]     allocation 3 offset    0
	// broadcast   f32[8,128]   allocation 6 offset 4096
	// add         f32[8,128]   allocation 6 offset    0
	// constant    f32[]        allocation 5 offset    0
	// broadcast.1 f32[8,128]   allocation 6 offset 4096
	// maximum     f32[8,128]   allocation 6 offset    0
	// w2          f32[128,10]  allocation 2 offset    0
	// dot.1       f32[8,10]    allocation 4 offset    0
}

// The lower bound and what the plan holds at its peak.
func Example_peak() {
	m, err := hlo.ParseModule("peak.hlo", `HloModule peak
ENTRY main {
  p = f32[256] parameter(0)
  e = f32[256] exponential(p)
  n = f32[256] negate(e)
  ROOT a = f32[256] add(e, n)
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := compile.Compile(context.Background(), m, compile.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("lower bound:", r.Analysis.MinBytes())
	for _, b := range r.Assignment.PeakBuffers() {
		fmt.Println(b.Values[0].Inst.Name, b.Size)
	}
	// Output:
	// lower bound: 3072
	// p 1024
	// e 1024
	// n 1024
}
