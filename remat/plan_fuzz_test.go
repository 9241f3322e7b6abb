package remat

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/schedule"
)

// FuzzFit runs both algorithms on random scheduled modules toward pct% of
// their plan's total: either an honest refusal (ErrUnsupported) or a
// rewrite that verifies, round-trips, leaves the input as it was, plans
// to the total it reports (Fits exactly when that is within the limit),
// never raises the total (the plan algorithm), passes the shadow check,
// and computes the original's outputs bit for bit on the planned runtime
// where the evaluator can run the module.
func FuzzFit(f *testing.F) {
	for seed := uint64(1); seed <= 8; seed++ {
		f.Add([]byte(randhlo.Generate(seed, randhlo.Options{Instructions: 20 + 3*int(seed)})), uint8(50+5*seed), seed%2 == 0)
	}
	f.Fuzz(func(t *testing.T, src []byte, pct uint8, xla bool) {
		m, err := hlo.ParseModule("fuzz.hlo", string(src))
		if err != nil || m.NumInstructions() > 300 || !small(m) {
			return
		}
		// Scheduled as the pipeline would: copies inserted, XLA's
		// heuristic order, which the module then keeps.
		m.IsScheduled = false
		a, err := preptest.Prepare(m, schedule.Heuristic)
		if err != nil {
			return
		}
		a.Schedule.Apply(m)
		m.IsScheduled = true
		m, err = hlo.ParseModule("fuzz.hlo", m.String())
		if err != nil {
			t.Fatalf("the scheduled module does not parse: %v", err)
		}
		ctx := context.Background()
		if sh, err := exec.Shadow(ctx, planned(t, m)); err != nil || sh.Violation != nil {
			t.Fatalf("the input's own plan fails the shadow check: %v %v", err, sh.Violation)
		}
		before, err := DefaultPlan(ctx, m)
		if err != nil {
			return // not plannable: nothing to fit
		}
		algo := Plan
		if xla {
			algo = XLA
		}
		limit := before * int64(pct%101) / 100
		orig := m.String()
		res, err := Fit(ctx, m, limit, FitOptions{Algorithm: algo})
		if errors.Is(err, ErrUnsupported) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		if m.String() != orig {
			t.Fatal("the input module changed")
		}
		if err := hlo.Verify(res.Module); err != nil {
			t.Fatalf("rewrite invalid: %v", err)
		}
		out := res.Module.String()
		back, err := hlo.ParseModule("back.hlo", out)
		if err != nil || back.String() != out {
			t.Fatalf("the rewrite does not round-trip: %v", err)
		}
		as := planned(t, back)
		if as.Stats.TotalBytes != res.TotalAfter || res.Fits != (res.TotalAfter <= limit) || res.Fits != (res.Message == "") {
			t.Fatalf("%s: total %d (planned %d), limit %d, fits %v, message %q", algo, res.TotalAfter, as.Stats.TotalBytes, limit, res.Fits, res.Message)
		}
		if algo == Plan && res.TotalAfter > res.TotalBefore {
			t.Fatalf("total rose %d -> %d", res.TotalBefore, res.TotalAfter)
		}
		sh, err := exec.Shadow(ctx, as)
		if err != nil {
			t.Fatal(err)
		}
		if sh.Violation != nil {
			t.Fatalf("shadow check: %v\n%s", sh.Violation, out)
		}
		args := eval.RandomArgs(m, rand.New(rand.NewPCG(1, 2)))
		want, err := exec.Execute(ctx, planned(t, m), args, nil, exec.Options{Reference: true, MaxSteps: 1 << 16})
		if err != nil {
			return // the evaluator cannot run it (or the budget ran out)
		}
		got, err := exec.Execute(ctx, as, args, nil, exec.Options{MaxSteps: 1 << 16})
		if err != nil {
			t.Fatalf("the original runs but the rewrite does not: %v", err)
		}
		for i := range want.Outputs {
			if !got.Outputs[i].Identical(want.Outputs[i]) {
				t.Fatalf("output %d differs", i)
			}
		}
	})
}

// small reports whether every array of m is within 64 KiB: the fuzzer
// explores structure; large shapes only slow the runs down.
func small(m *hlo.Module) bool {
	ok := true
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			in.Shape.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
				if n, err := hlo.BufferSize(s); err != nil || n > 64<<10 {
					ok = false
				}
			})
		}
	}
	return ok
}
