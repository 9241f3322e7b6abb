package remat

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
)

// trainStep returns a scheduled module shaped like a training step of
// n instructions: a forward pass of element-wise f32[256] activations,
// each read again, in reverse order, by the backward pass, so that all
// of them are live where the two passes meet (what rematerialization is
// for).
func trainStep(n int) string {
	k := max(1, (n-3)/3)
	var b strings.Builder
	b.WriteString("HloModule train, is_scheduled=true\n\nENTRY %main (p: f32[]) -> f32[256] {\n  %p = f32[] parameter(0)\n  %a0 = f32[256]{0} broadcast(%p), dimensions={}\n")
	ops := []string{"tanh", "sine", "exponential", "negate"}
	for i := 1; i <= k; i++ {
		fmt.Fprintf(&b, "  %%a%d = f32[256]{0} %s(%%a%d)\n", i, ops[i%len(ops)], i-1)
	}
	fmt.Fprintf(&b, "  %%g%d = f32[256]{0} multiply(%%a%d, %%a%d)\n", k, k, k)
	for i := k; i >= 1; i-- {
		fmt.Fprintf(&b, "  %%m%d = f32[256]{0} multiply(%%g%d, %%a%d)\n", i, i, i-1)
		fmt.Fprintf(&b, "  %%g%d = f32[256]{0} add(%%m%d, %%a%d)\n", i-1, i, i-1)
	}
	b.WriteString("  ROOT %r = f32[256]{0} negate(%g0)\n}\n")
	return b.String()
}

// BenchmarkFit times the plan algorithm (Fit, Plan) at 60% of the plan's
// total on scheduled modules of about 10^3, 10^4 and 10^5 instructions:
// "train" (trainStep), "chain" (chain: values living a few steps) and
// "graph" (randhlo: calls, loops, conditionals, fusions). Each module is
// measured with the pipeline's default plan (packer=auto: DefaultPlan)
// and with XLA's packer (packer=xla), which shows the pass's own growth:
// Fit plans at least twice (the input, the result), and the auto packer's
// time dominates at scale. It reports the time per instruction, the
// recomputations and the total reached as a share of the total before.
func BenchmarkFit(b *testing.B) {
	xlaPlan := func(ctx context.Context, m *hlo.Module) (int64, error) {
		m = m.Clone()
		if _, err := hlo.FlattenCallGraphContext(ctx, m); err != nil {
			return 0, err
		}
		a, err := liveness.Analyze(m, liveness.Options{})
		if err != nil {
			return 0, err
		}
		as, err := assign.Assign(ctx, a, assign.Options{Algorithm: "xla"})
		if err != nil {
			return 0, err
		}
		return as.Stats.TotalBytes, nil
	}
	for _, kind := range []string{"train", "chain", "graph"} {
		for _, packer := range []string{"xla", "auto"} {
			for _, n := range []int{1000, 10000, 100000} {
				plan := PlanFunc(DefaultPlan)
				if packer == "xla" {
					plan = xlaPlan
				}
				b.Run(fmt.Sprintf("%s/packer=%s/n=%d", kind, packer, n), func(b *testing.B) {
					var text string
					switch kind {
					case "train":
						text = trainStep(n)
					case "chain":
						text = chain(n, 7)
					default:
						text = randhlo.Generate(7, randhlo.Options{Instructions: n, Scheduled: true})
					}
					m, err := hlo.ParseModule("bench.hlo", text)
					if err != nil {
						b.Fatal(err)
					}
					before, err := plan(context.Background(), m)
					if err != nil {
						b.Fatal(err)
					}
					insts := m.NumInstructions()
					b.ResetTimer()
					var res *FitResult
					for i := 0; i < b.N; i++ {
						res, err = Fit(context.Background(), m, before*60/100, FitOptions{Plan: plan})
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(insts), "ns/instruction")
					b.ReportMetric(float64(len(res.Recomputed)), "remats")
					b.ReportMetric(float64(res.TotalAfter)/float64(res.TotalBefore), "total/before")
					b.ReportMetric(float64(insts), "instructions")
				})
			}
		}
	}
}
