package gpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkClientReplay replays a random session of 10^6 steps through the
// client (puts of 256 B to 128 MiB, deletes of random live arrays, and
// every 50th step a run of a program with a 2 MiB temp and a 1 MiB output)
// on an A100 80 GB model with JAX's defaults, at 10^4, 10^5 and 10^6
// steps, so the cost per step shows as the session grows.
func BenchmarkClientReplay(b *testing.B) {
	p := program(b, "s.hlo", `HloModule s

ENTRY e {
  p = f32[262144]{0} parameter(0)
  a = f32[262144]{0} exponential(p)
  b = f32[524288]{0} concatenate(a, a), dimensions={0}
  ROOT c = f32[262144]{0} slice(b), slice={[0:262144]}
}
`)
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		w := &Workload{File: "bench"}
		var live []string
		w.Steps = append(w.Steps, Step{Put: "arg", Bytes: 1 << 20})
		for i := 0; len(w.Steps) < n; i++ {
			switch {
			case i%50 == 49:
				w.Steps = append(w.Steps, Step{Run: "s", Args: []string{"arg"}, HasArgs: true, Outputs: []string{"out"}})
			case len(live) > 0 && (rng.IntN(2) == 0 || len(live) > 2000):
				k := rng.IntN(len(live))
				w.Steps = append(w.Steps, Step{Delete: live[k]})
				live[k] = live[len(live)-1]
				live = live[:len(live)-1]
			default:
				name := fmt.Sprintf("a%d", i)
				size := int64(256) << rng.IntN(19)
				w.Steps = append(w.Steps, Step{Put: name, Bytes: size + rng.Int64N(size)})
				live = append(live, name)
			}
		}
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				c, err := NewClient(A100_80GB, DefaultConfig(), ClientOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Replay(context.Background(), w, map[string]*Program{"s": p}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/session")
		})
	}
}
