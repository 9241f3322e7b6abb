package report

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/hlomem/hlomem/fit"
	"github.com/hlomem/hlomem/hlo"
)

// TestFitRow: the report's fit row is hlomem fit's cheapest combination
// on the device: its total, levers, need and limit are the ones
// fit.Analyze gives, and its command is the combination's.
func TestFitRow(t *testing.T) {
	// fit's TestRemat chain: x = negate(exp(p)) read at the start and
	// at the end over a 16 MiB temporary, which rematerialization
	// recomputes before its later use.
	b, err := os.ReadFile("../testdata/remat-chain.hlo")
	if err != nil {
		t.Fatal(err)
	}
	m, err := hlo.ParseModule("chain.hlo", string(b))
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
