package report_test

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/report"
)

// Example builds the report of a small scheduled module: its totals, its
// peak and what occupies memory there, and what fusion would save.
func Example() {
	m, err := hlo.ParseModule("mlp.hlo", `HloModule jit_mlp, is_scheduled=true

ENTRY %main (x: f32[64,256], w: f32[256,256], b: f32[256]) -> f32[64,256] {
  %x = f32[64,256]{1,0} parameter(0)
  %w = f32[256,256]{1,0} parameter(1)
  %b = f32[256]{0} parameter(2)
  %h = f32[64,256]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bias = f32[64,256]{1,0} broadcast(%b), dimensions={1}
  %y = f32[64,256]{1,0} add(%h, %bias)
  ROOT %z = f32[64,256]{1,0} exponential(%y)
}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := report.Build(context.Background(), m, report.Options{
		Compile: compile.Options{Assign: assign.Options{Algorithm: "xla"}},
		WhatIf:  []report.Lever{{Kind: "fusion", Value: "on"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on %s, schedule %s, packer %s\n", r.Module, r.Target, r.Schedule, r.Algorithm)
	fmt.Printf("total %d bytes: parameters %d, outputs %d, temps %d; lower bound %d\n", r.Total, r.Parameters, r.Outputs, r.Temps, r.LowerBound)
	fmt.Printf("peak %d bytes at step %d: %s\n", r.PeakBytes, r.PeakStep, r.PeakInst)
	for _, o := range r.AtPeak {
		fmt.Printf("  %-17s %6d bytes  %s\n", o.Kind, o.Bytes, o.Buffer.Name)
	}
	for _, w := range r.WhatIf {
		fmt.Printf("with %s: total %d bytes\n", w.Lever, w.Total)
	}
	// Output:
	// jit_mlp on gpu, schedule keep, packer xla
	// total 459776 bytes: parameters 328704, outputs 65536, temps 65536; lower bound 459776
	// peak 459776 bytes at step 4: %bias = f32[64,256]{1,0} broadcast(%b), dimensions={1}
	//   parameter         262144 bytes  w{}
	//   parameter          65536 bytes  x{}
	//   maybe-live-out     65536 bytes  h{}
	//   preallocated-temp  65536 bytes  bias{}
	//   parameter           1024 bytes  b{}
	// with fusion=on: total 394240 bytes
}
