package remat

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
)

// FuzzRematerialize runs the pass on random scheduled modules toward a
// limit of pct% of their peak: either an honest refusal (an error) or a
// rewrite that verifies, round-trips, never raises the peak, says it fits
// exactly when the tracker's peak is within the limit, and computes the
// same outputs bit for bit where the evaluator can run the module.
func FuzzRematerialize(f *testing.F) {
	for seed := uint64(1); seed <= 8; seed++ {
		f.Add([]byte(randhlo.Generate(seed, randhlo.Options{Instructions: 20 + int(seed), Scheduled: true})), uint8(50+5*seed))
	}
	f.Fuzz(func(t *testing.T, src []byte, pct uint8) {
		m, err := hlo.ParseModule("fuzz.hlo", string(src))
		if err != nil || !m.IsScheduled || m.NumInstructions() > 300 {
			return
		}
		free, err := Rematerialize(context.Background(), m, math.MaxInt64, Options{})
		if err != nil {
			return // refused, with a reason
		}
		limit := free.PeakBefore * int64(pct%101) / 100
		orig := m.String()
		res, err := Rematerialize(context.Background(), m, limit, Options{})
		if err != nil {
			return
		}
		if m.String() != orig {
			t.Fatal("the input module changed")
		}
		if err := hlo.Verify(res.Module); err != nil {
			t.Fatalf("rewritten module invalid: %v", err)
		}
		out := res.Module.String()
		back, err := hlo.ParseModule("back.hlo", out)
		if err != nil || back.String() != out {
			t.Fatalf("the rewritten module does not round-trip: %v", err)
		}
		if res.PeakAfter > res.PeakBefore || res.Fits != (res.PeakAfter <= limit) || res.Fits != (res.Message == "") {
			t.Fatalf("peak %d -> %d, limit %d, fits %v, message %q", res.PeakBefore, res.PeakAfter, limit, res.Fits, res.Message)
		}
		args := eval.RandomArgs(m, rand.New(rand.NewPCG(1, 2)))
		ev := eval.NewEvaluator(1)
		ev.MaxWork = 1 << 22
		x, err := ev.Computation(m.Entry, args)
		if err != nil {
			return // the evaluator cannot run it (or the budget ran out)
		}
		ev2 := eval.NewEvaluator(1)
		ev2.MaxWork = 1 << 22
		y, err := ev2.Computation(res.Module.Entry, args)
		if err != nil {
			t.Fatalf("the original evaluates but the rewrite does not: %v", err)
		}
		if !x.Identical(y) {
			t.Fatal("outputs differ")
		}
	})
}
