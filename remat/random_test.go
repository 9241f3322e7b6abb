package remat

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
)

// peakOf is the tracker's module peak with no limit to meet.
func peakOf(t testing.TB, m *hlo.Module) int64 {
	res, err := Rematerialize(context.Background(), m, math.MaxInt64, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed && len(res.Recomputed) > 0 {
		t.Fatalf("rematerialized without a limit: %+v", res.Recomputed)
	}
	return res.PeakBefore
}

// Random scheduled modules (calls, whiles, conditionals, fusions,
// tuples, control edges) at 90%..60% of their tracker peak: every
// rewrite is valid, round-trips, computes the same outputs bit for bit,
// reaches a peak no higher than before; when it says it fits, the
// tracker's peak is within the limit. The plan's total (less the entry
// parameters, which the limit leaves to the caller) is compared with the
// limit and the disagreements counted and logged: the plan packs a heap
// with 256-byte alignment and copy insertion, the tracker adds sizes.
func TestRandomModules(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	var fits, over, runs, recomputed int
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		text := randhlo.Generate(seed, randhlo.Options{Instructions: 40, Scheduled: true})
		peak := peakOf(t, mustParse(t, text))
		for _, pct := range []int64{90, 80, 70, 60} {
			limit := peak * pct / 100
			t.Run(fmt.Sprintf("seed%d/%d%%", seed, pct), func(t *testing.T) {
				res := run(t, text, limit, Options{}, true)
				runs++
				recomputed += len(res.Recomputed)
				if res.PeakAfter > res.PeakBefore {
					t.Errorf("peak rose %d -> %d", res.PeakBefore, res.PeakAfter)
				}
				if res.Fits != (res.PeakAfter <= limit) || res.Fits != (res.Message == "") {
					t.Errorf("fits %v, peak %d, limit %d, message %q", res.Fits, res.PeakAfter, limit, res.Message)
				}
				if !res.Fits {
					return
				}
				fits++
				total, params := planTotal(t, res.Module)
				if total-params > limit {
					over++
					t.Logf("fits by the tracker (%d <= %d) but the plan's total less parameters is %d", res.PeakAfter, limit, total-params)
				}
			})
		}
	}
	t.Logf("%d runs, %d recomputations, %d fit by the tracker, %d of those with plan total - params > limit", runs, recomputed, fits, over)
}

// chain returns a scheduled module of n f32[256] element-wise
// instructions, each reading the one before and one of the 16 before
// that, and a root adding the last two: a long chain whose values live
// a few steps each.
func chain(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("HloModule chain, is_scheduled=true\n\nENTRY %main (p: f32[]) -> f32[256] {\n  %p = f32[] parameter(0)\n  %v0 = f32[256]{0} broadcast(%p), dimensions={}\n")
	ops := []string{"add", "multiply", "maximum", "subtract"}
	for i := 1; i < n; i++ {
		back := max(0, i-2-rng.IntN(16))
		fmt.Fprintf(&b, "  %%v%d = f32[256]{0} %s(%%v%d, %%v%d)\n", i, ops[rng.IntN(len(ops))], i-1, back)
	}
	fmt.Fprintf(&b, "  ROOT %%r = f32[256]{0} add(%%v%d, %%v%d)\n}\n", n-1, n-2)
	return b.String()
}

// BenchmarkRematerialize times the pass at 60% of the tracker's peak on
// scheduled modules of about 10^3, 10^4 and 10^5 instructions: "chain"
// (chain above) and "graph" (randhlo: values read from anywhere before,
// with calls, loops, conditionals and fusions; its instruction count
// includes the called computations).
func BenchmarkRematerialize(b *testing.B) {
	for _, kind := range []string{"chain", "graph"} {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				text := chain(n, 7)
				if kind == "graph" {
					text = randhlo.Generate(7, randhlo.Options{Instructions: n, Scheduled: true})
				}
				m, err := hlo.ParseModule("bench.hlo", text)
				if err != nil {
					b.Fatal(err)
				}
				peak := peakOf(b, m)
				insts := m.NumInstructions()
				b.ResetTimer()
				var res *Result
				for i := 0; i < b.N; i++ {
					res, err = Rematerialize(context.Background(), m, peak*60/100, Options{})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(insts), "ns/instruction")
				b.ReportMetric(float64(len(res.Recomputed)), "remats")
				b.ReportMetric(float64(insts), "instructions")
			})
		}
	}
}
