package liveness_test

import (
	"fmt"
	"log"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Analyze a small scheduled module in its own order: its values and
// buffers, each value's live range (inclusive, as XLA prints them; the
// entry parameter, which nothing donates, lives to the end, and so do the
// values the result tuple holds) and the lower bound of any plan (the
// parameter keeps its own allocation, the rest peaks at step 4).
func ExampleAnalyze() {
	m, err := hlo.ParseModule("example.hlo", `HloModule example, is_scheduled=true

ENTRY main {
  p = f32[256] parameter(0)
  a = f32[256] add(p, p)
  n = f32[256] negate(a)
  e = f32[256] exponential(p)
  ROOT t = (f32[256], f32[256]) tuple(n, e)
}
`)
	if err != nil {
		log.Fatal(err)
	}
	a, err := liveness.Analyze(m, liveness.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("values:", len(a.Values), "buffers:", len(a.Buffers), "steps:", a.EndTime())
	for _, v := range a.Values {
		fmt.Printf("%-5s live %d-%d, %d bytes\n", v.Name(), v.Range.Start, v.Range.End, v.Size)
	}
	lb := a.LowerBound(nil)
	fmt.Println("lower bound:", lb.Bytes, "bytes at step", lb.Time)
	// Output:
	// values: 5 buffers: 5 steps: 5
	// p{}   live 0-5, 1024 bytes
	// a{}   live 1-2, 1024 bytes
	// n{}   live 2-5, 1024 bytes
	// e{}   live 3-5, 1024 bytes
	// t{}   live 4-5, 16 bytes
	// lower bound: 3088 bytes at step 4
}
