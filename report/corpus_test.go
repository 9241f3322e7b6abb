package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// corpusWhatIfLimit: modules of more instructions are reported without
// the what-ifs here (a dozen more plans each), to keep the test short; the
// CLI computes them for any module (hlomem report on every corpus module,
// what-ifs included, took 265 s on a 2-core machine).
const corpusWhatIfLimit = 4000

// TestReportCorpus: every corpus module gets a report in every output
// (text, JSON, SVG, HTML, pprof), with XLA's plan beside the paired
// after_optimizations modules (every one of XLA's values matched); the
// figures agree, the charts hold one
// rectangle per buffer, and every output states the same peak, the
// curve's maximum at the step it is first reached (checkPeakOutputs,
// issue 27).
func TestReportCorpus(t *testing.T) {
	files := corpus.Glob(t, "hlo/*/*.hlo")
	files = append(files, corpus.Glob(t, "paired*/*/*after_optimizations.txt")...)
	start := time.Now()
	n, withXLA, withWhatIf, visited, xlaFiles := 0, 0, 0, 0, 0
	// The alternatives that could not be planned (the report says so in
	// its what-if table and goes on): none on the corpus.
	var failed []string
	var largestHTML int
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		mods, err := hlo.ParseString(f, string(src))
		if err != nil && strings.Contains(err.Error(), "no HLO module") {
			continue
		}
		require.NoError(t, err, f)
		var x *assign.XLAAssignment
		if xf := strings.TrimSuffix(f, ".txt") + "-buffer-assignment.txt"; strings.HasSuffix(f, "after_optimizations.txt") {
			xsrc, err := os.ReadFile(xf)
			require.NoError(t, err, xf)
			x, err = assign.ReadXLA(xf, xsrc)
			require.NoError(t, err, xf)
			xlaFiles++
		}
		visited += len(mods)
		for _, m := range mods {
			name := filepath.Base(f) + "/" + m.Name
			t.Run(name, func(t *testing.T) {
				// Small search budgets (the searching schedulers' and the
				// packers') keep the test short; what is tested is that every
				// lever plans and the outputs agree, not how low they go.
				opts := Options{XLA: x, Compile: compile.Options{Assign: assign.Options{Budget: 50 * time.Millisecond}}}
				opts.Compile.Search.Budget = 20_000
				if strings.Contains(f, "paired-jax-cpu") {
					opts.Compile.Target = assign.CPU
				}
				if m.NumInstructions() <= corpusWhatIfLimit {
					opts.WhatIf = WhatIfs(m)
					withWhatIf++
				}
				t0 := time.Now()
				r, err := Build(context.Background(), m, opts)
				require.NoError(t, err, name)
				n++
				for _, w := range r.WhatIf {
					if w.Err != "" {
						failed = append(failed, name+": "+w.Lever.String()+": "+firstLine(w.Err))
					}
				}
				if r.XLA != nil {
					withXLA++
					require.Zero(t, r.XLA.Missing, name)
					require.Equal(t, r.XLA.Values, r.XLA.Matched, name)
					require.Positive(t, r.XLA.Values, name)
				}
				out := writeOutputs(t, name, r)
				require.Equal(t, len(r.Buffers)+xlaBuffers(r), rectCount(string(out.svg)), name)
				require.Equal(t, len(r.Buffers)+xlaBuffers(r), rectCount(string(out.html)), name)
				largestHTML = max(largestHTML, len(out.html))
				require.LessOrEqual(t, r.LowerBound, r.Total, name)
				checkPeakOutputs(t, name, out)
				t.Logf("%-70.70s %6d buffers total %14d bound %14d peak step %6d %v", name, len(r.Buffers), r.Total, r.LowerBound, r.PeakStep, time.Since(t0).Round(time.Millisecond))
			})
		}
	}
	t.Logf("%d modules reported in %v (%d with the what-ifs, %d beside XLA's plan); largest HTML %.1f MB", n, time.Since(start).Round(time.Millisecond), withWhatIf, withXLA, float64(largestHTML)/1e6)
	for _, f := range failed {
		t.Errorf("what-if not planned: %s", f)
	}
	require.GreaterOrEqual(t, n, corpus.Enough(301, visited))
	require.Equal(t, corpus.Enough(93, xlaFiles), withXLA)
}

func xlaBuffers(r *Report) int {
	if r.XLA == nil {
		return 0
	}
	return len(r.XLA.Buffers)
}
