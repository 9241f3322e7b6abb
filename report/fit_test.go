package report

import (
	"context"
	"fmt"
	"testing"

	"github.com/hlomem/hlomem/fit"
	"github.com/hlomem/hlomem/hlo"
)

// fitChain is remat/plan_test.go's chainText at 1024 times the sizes:
// x = negate(exp(p)) read at the start and at the end over a 16 MiB
// temporary, which rematerialization recomputes before its later use
// (XLA's hlo_rematerialization_test.cc recomputes such single-use
// chains).
const fitChain = `HloModule chain, is_scheduled=true

ENTRY %main (p: f32[1048576]) -> f32[2097152] {
  %p = f32[1048576]{0} parameter(0)
  %y = f32[1048576]{0} exponential(%p)
  %x = f32[1048576]{0} negate(%y)
  %u = f32[1048576]{0} add(%x, %p)
  %t = f32[4194304]{0} concatenate(%u, %u, %u, %u), dimensions={0}
  %tn = f32[4194304]{0} tanh(%t)
  %s = f32[1048576]{0} slice(%tn), slice={[0:1048576]}
  ROOT %r = f32[2097152]{0} concatenate(%x, %s), dimensions={0}
}
`

// TestFitRow: the report's fit row is hlomem fit's cheapest combination
// on the device: its total, levers, need and limit are the ones
// fit.Analyze gives, and its command is the combination's.
func TestFitRow(t *testing.T) {
	m, err := hlo.ParseModule("chain.hlo", fitChain)
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "XLA_PYTHON_CLIENT_ALLOCATOR" {
			return "platform"
		}
		return ""
	}
	ctx := context.Background()
	big, err := fit.Analyze(ctx, m, fit.Options{Device: "custom:1GiB", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	dev := fmt.Sprintf("custom:%d", big.Verdict.Need-1<<20)
	want, err := fit.Analyze(ctx, m, fit.Options{Device: dev, Getenv: getenv, File: "chain.hlo"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(ctx, m, Options{File: "chain.hlo", Getenv: getenv, WhatIf: []Lever{{"fit", dev}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.WhatIf) != 1 || r.WhatIf[0].Fit == nil {
		t.Fatalf("what-ifs %+v", r.WhatIf)
	}
	w, c := r.WhatIf[0], want.Combination
	if w.Err != "" {
		t.Fatal(w.Err)
	}
	if !c.Fits || len(c.Levers) == 0 {
		t.Fatalf("the chain does not fit on %s with a lever: %+v", dev, c)
	}
	f := w.Fit
	if w.Total != c.Total || f.Fits != c.Fits || f.Need != c.Need || f.Limit != c.Limit || fmt.Sprint(f.Levers) != fmt.Sprint(c.Levers) {
		t.Errorf("row %d %+v, fit says %+v", w.Total, f, c)
	}
	if got := shellQuote(w.Command); got != c.Commands[0] {
		t.Errorf("command %q, want %q", got, c.Commands[0])
	}
}
