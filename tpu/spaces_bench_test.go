package tpu

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
)

// spacesChain returns a module of n element-wise instructions on
// f32[64,128] in which every eighth result is read again 64 steps later
// (a skip connection): short-lived values to produce in VMEM, long-lived
// ones to evict or prefetch, and two weights read throughout.
func spacesChain(n int) string {
	var b strings.Builder
	b.WriteString("HloModule chain\n\nENTRY main {\n  x0 = f32[64,128] parameter(0)\n  w0 = f32[64,128] parameter(1)\n  w1 = f32[64,128] parameter(2)\n")
	for i := 1; i <= n; i++ {
		prev := fmt.Sprintf("x%d", i-1)
		switch {
		case i%8 == 0 && i > 64:
			fmt.Fprintf(&b, "  x%d = f32[64,128] add(%s, x%d)\n", i, prev, i-64)
		case i%5 == 0:
			fmt.Fprintf(&b, "  x%d = f32[64,128] multiply(%s, w%d)\n", i, prev, i%2)
		default:
			fmt.Fprintf(&b, "  x%d = f32[64,128] negate(%s)\n", i, prev)
		}
	}
	fmt.Fprintf(&b, "  ROOT r = f32[64,128] add(x%d, w0)\n}\n", n)
	return b.String()
}

// BenchmarkAssignSpaces: AssignSpaces with 16 MiB of VMEM and 1 MiB of
// SMEM, tiles for v4, on chains of 10^3 to 10^5 instructions: its cost
// (two preparations and plans of the module, the candidates, the greedy
// choice and the packing check) against the module's size.
func BenchmarkAssignSpaces(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m, err := hlo.ParseModule("chain.hlo", spacesChain(n))
			if err != nil {
				b.Fatal(err)
			}
			gen := V4
			var rep *SpaceReport
			for b.Loop() {
				_, rep, err = AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, SMEM: 1 << 20}, &gen))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rep.Placed), "placed")
			b.ReportMetric(float64(rep.HBMTrafficSaved)/float64(n), "saved-B/inst")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/inst")
		})
	}
}
