package fusion_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

var largest struct {
	once sync.Once
	file string
	src  string
	n    int
}

// largestUnscheduled returns the text of the unscheduled module of the
// corpus' hlo/ with the most instructions, and that count.
func largestUnscheduled(b *testing.B) (string, string, int) {
	files := corpus.Glob(b, "hlo/*/*.hlo")
	largest.once.Do(func() {
		for _, f := range files {
			mods, err := hlo.ParseFile(f)
			if err != nil {
				continue
			}
			for _, m := range mods {
				if m.IsScheduled {
					continue
				}
				if n := m.NumInstructions(); n > largest.n {
					largest.file, largest.src, largest.n = f, m.String(), n
				}
			}
		}
	})
	require.NotEmpty(b, largest.src, "no unscheduled module in hlo/")
	return largest.file, largest.src, largest.n
}

func benchFuseLargest(b *testing.B, opts fusion.Options) {
	file, src, n := largestUnscheduled(b)
	b.Logf("%s: %d instructions", file, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m, err := hlo.ParseModule(file, src)
		require.NoError(b, err)
		require.False(b, m.IsScheduled)
		b.StartTimer()
		if !opts.NoGuard && opts.Measure == nil {
			opts.Measure = compile.FusionMeasure(context.Background(), compile.Options{})
		}
		changed, err := fusion.Run(context.Background(), m, opts)
		b.StopTimer()
		require.NoError(b, err)
		require.True(b, changed)
		b.StartTimer()
	}
	b.ReportMetric(float64(n), "instructions")
}

// BenchmarkFuseLargest: fusion.Run with the lower-bound guard on the
// largest unscheduled module of the corpus (parsing is not timed).
func BenchmarkFuseLargest(b *testing.B) { benchFuseLargest(b, fusion.Options{}) }

// BenchmarkFuseLargestNoGuard: the same without the guard, the cost of the
// fusion rules and edits alone.
func BenchmarkFuseLargestNoGuard(b *testing.B) { benchFuseLargest(b, fusion.Options{NoGuard: true}) }

// chainModule returns a module of about n instructions: a chain of
// element-wise ops over f32[64] where each binary op reads the two values
// before it, with a reduce every 50 instructions.
func chainModule(n int) string {
	var s strings.Builder
	s.WriteString("HloModule chain\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n")
	s.WriteString("ENTRY %main (p0: f32[64], p1: f32[64]) -> f32[64] {\n  %p0 = f32[64] parameter(0)\n  %p1 = f32[64] parameter(1)\n  %zero = f32[] constant(0)\n")
	prev, prev2 := "p1", "p0"
	unary := []string{"negate", "exponential", "tanh"}
	binary := []string{"add", "multiply", "subtract", "maximum"}
	for i := 0; i < n-4; i++ {
		name := fmt.Sprintf("v%d", i)
		switch {
		case i%50 == 49:
			fmt.Fprintf(&s, "  %%r%d = f32[] reduce(%%%s, %%zero), dimensions={0}, to_apply=%%add\n", i, prev)
			fmt.Fprintf(&s, "  %%%s = f32[64] broadcast(%%r%d), dimensions={}\n", name, i)
			i++
		case i%3 == 0:
			fmt.Fprintf(&s, "  %%%s = f32[64] %s(%%%s)\n", name, unary[(i/3)%len(unary)], prev)
		default:
			fmt.Fprintf(&s, "  %%%s = f32[64] %s(%%%s, %%%s)\n", name, binary[i%len(binary)], prev, prev2)
		}
		prev, prev2 = name, prev
	}
	fmt.Fprintf(&s, "  ROOT %%out = f32[64] add(%%%s, %%%s)\n}\n", prev, prev2)
	return s.String()
}

// BenchmarkFuseChain: how fusion.Run's cost grows with the size of the
// module, from 10^3 to 10^6 instructions, without the guard (the rules and
// edits alone), and with it up to 10^4: on this chain every input fusion
// into a reduce raises the lower bound by the reduce's 4 bytes, so the
// guard searches for each such fusion in turn (a bisection of full
// preparations per fusion declined, up to its cap of rounds), 20 s at 10^4.
func BenchmarkFuseChain(b *testing.B) {
	for _, guard := range []bool{false, true} {
		for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
			if guard && n > 10_000 {
				continue
			}
			name := fmt.Sprintf("noguard/%d", n)
			if guard {
				name = fmt.Sprintf("guard/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				src := chainModule(n)
				var count int
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					m, err := hlo.ParseModule("chain.hlo", src)
					require.NoError(b, err)
					count = m.NumInstructions()
					b.StartTimer()
					opts := fusion.Options{NoGuard: !guard}
					if guard {
						opts.Measure = compile.FusionMeasure(context.Background(), compile.Options{})
					}
					changed, err := fusion.Run(context.Background(), m, opts)
					b.StopTimer()
					require.NoError(b, err)
					require.True(b, changed)
					b.StartTimer()
				}
				b.ReportMetric(float64(count), "instructions")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(count), "ns/instruction")
			})
		}
	}
}
