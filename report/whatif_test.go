package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/schedule"
)

// TestWhatIfScheduledNeverAboveOwnCorpus: on every module XLA scheduled in the
// corpus (the after_optimizations dumps of paired/, paired-jax/ and
// paired-jax-cpu/, and the scheduled modules of hlo/), the search and
// optimal what-ifs are never above the module's own order (keep), in the
// plan's total nor in its lower bound: they start from it and leave it
// only for an order whose plan costs no more. On jit_scan they used to
// show list's order, which ties keep's liveness bound and takes 225 MiB
// more. The searches run with a reduced budget; with -short, every
// fourth module (the jit_scan ones always).
func TestWhatIfScheduledNeverAboveOwnCorpus(t *testing.T) {
	files := corpus.Glob(t, "paired*/*/*after_optimizations.txt")
	files = append(files, corpus.Glob(t, "hlo/*/*.hlo")...)
	levers := []Lever{{"schedule", schedule.Keep}, {"schedule", schedule.Search}, {"schedule", schedule.Optimal}}
	start := time.Now()
	n, below := 0, 0
	for _, f := range files {
		mods, err := hlo.ParseFile(f)
		if err != nil {
			continue // no module (the hlo tests say which)
		}
		for _, m := range mods {
			if !m.IsScheduled {
				continue
			}
			name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f) + "/" + m.Name
			opts := Options{WhatIf: levers, Compile: compile.Options{Assign: assign.Options{Budget: 50 * time.Millisecond}}}
			opts.Compile.Search.Budget = 20_000
			if strings.Contains(f, "paired-jax-cpu") {
				opts.Compile.Target = assign.CPU
			}
			ws := whatIfs(context.Background(), m, opts, func(string) {})
			keep := ws[0]
			require.Empty(t, keep.Err, name)
			for _, w := range ws[1:] {
				require.Empty(t, w.Err, "%s: %s", name, w.Lever)
				require.LessOrEqual(t, w.Total, keep.Total, "%s: %s costs more than the module's own order", name, w.Lever)
				require.LessOrEqual(t, w.LowerBound, keep.LowerBound, "%s: %s", name, w.Lever)
				if w.Total < keep.Total {
					below++
				}
			}
			n++
		}
	}
	require.Positive(t, n)
	t.Logf("%d scheduled modules in %v; %d search or optimal what-ifs below keep", n, time.Since(start).Round(time.Millisecond), below)
}

// TestCommand: the command line of a what-if names every option of the
// plan that is not at its default, and the scheduler, target and packer
// always; a POSIX shell splits it back into its words.
func TestCommand(t *testing.T) {
	m, err := hlo.ParseModule("m.hlo", "HloModule m, is_scheduled=true\n\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")
	require.NoError(t, err)
	cmd := Command("", m, compile.Options{})
	require.Equal(t, []string{"hlomem", "assign", "--format=json", "--target=gpu", "--algo=auto", "--schedule=keep", "FILE"}, cmd)
	m.IsScheduled = false
	require.Equal(t, "--schedule=search", Command("", m, compile.Options{Scheduler: schedule.Best})[5])
	copts := compile.Options{Target: assign.CPU, Scheduler: schedule.Optimal, Search: schedule.Options{Budget: 5000}, Fuse: true, PlanCost: true,
		Assign: assign.Options{Algorithm: "xla", Budget: time.Second, Align: 256, Gap: -1}}
	cmd = Command("-dir/my model's.hlo", m, copts)
	require.Equal(t, []string{"hlomem", "assign", "--format=json", "--target=cpu", "--algo=xla", "--budget=1s", "--align=256", "--gap=0",
		"--schedule=optimal", "--schedule-budget=5000", "--fuse", "./-dir/my model's.hlo"}, cmd)
	require.Equal(t, `hlomem assign --format=json --target=cpu --algo=xla --budget=1s --align=256 --gap=0 --schedule=optimal --schedule-budget=5000 --fuse './-dir/my model'\''s.hlo'`, shellQuote(cmd))
	copts = compile.Options{Assign: assign.Options{Budget: assign.DefaultBudget, Gap: 0.01}}
	require.Equal(t, []string{"hlomem", "assign", "--format=json", "--target=gpu", "--algo=auto", "--gap=0.01", "--schedule=search", "-"}, Command("-", m, copts))
}

// TestWhatIfFusedBase: with fusion in the plan's options, every lever
// but fusion=off plans fused, with fusion passes of its own (they keep
// state from the simplification pass to the fusion pass, and the levers
// plan at once), and its command says --fuse.
func TestWhatIfFusedBase(t *testing.T) {
	m := parseFile(t, transformerHLO)
	opts := Options{Compile: compile.Options{Assign: assign.Options{Budget: 50 * time.Millisecond}, Search: schedule.Options{Budget: 2000}, Fuse: true, PlanCost: true}}
	opts.WhatIf = []Lever{{"schedule", schedule.DFS}, {"schedule", schedule.List}, {"fusion", "on"}, {"packer", "xla"}, {"packer", "portfolio"}}
	ws := whatIfs(context.Background(), m, opts, func(string) {})
	for _, w := range ws {
		require.Empty(t, w.Err, w.Lever.String())
		require.Contains(t, w.Command, "--fuse", w.Lever.String())
	}
	require.Equal(t, ws[2].Command[:5], []string{"hlomem", "assign", "--format=json", "--target=gpu", "--algo=auto"})
}

// TestWhatIfWithoutJit: a module XLA has not compiled gets the two
// without-jit rows (package eager, on EagerDevice: the platform allocator
// on a device it always fits); their totals are the op-by-op peaks and
// JitPeak the jitted run's, as eager.Compare gives them; a module XLA
// scheduled gets none. The rows are in the text, JSON and HTML alike.
func TestWhatIfWithoutJit(t *testing.T) {
	const src = `HloModule chain
ENTRY %e (a: f32[1024]) -> f32[1024] {
  %a = f32[1024]{0} parameter(0)
  %b = f32[1024]{0} negate(%a)
  %c = f32[1024]{0} exponential(%b)
  %d = f32[1024]{0} add(%b, %c)
  ROOT %r = f32[1024]{0} negate(%d)
}`
	m, err := hlo.ParseModule("chain.hlo", src)
	require.NoError(t, err)
	levers := WhatIfs(m)
	require.Contains(t, levers, Lever{"jit", "off-held"})
	require.Contains(t, levers, Lever{"jit", "off-last-use"})
	r, err := Build(context.Background(), m, Options{WhatIf: []Lever{{"jit", "off-held"}, {"jit", "off-last-use"}}, File: "chain.hlo"})
	require.NoError(t, err)
	require.Len(t, r.WhatIf, 2)
	// By hand: held keeps the five 4 KiB arrays, last use frees b and c
	// after d (a, b, c, d live while d runs); jitted, one fused op reads
	// a and writes the result.
	require.Equal(t, int64(5*4096), r.WhatIf[0].Total)
	require.Equal(t, int64(4*4096), r.WhatIf[1].Total)
	for _, w := range r.WhatIf {
		require.Empty(t, w.Err)
		require.Equal(t, int64(2*4096), w.JitPeak)
		require.Zero(t, w.LowerBound)
		require.Equal(t, "run", w.Command[1])
	}
	var text, js, html strings.Builder
	require.NoError(t, r.WriteText(&text))
	require.Contains(t, text.String(), "jit=off-held")
	require.Contains(t, text.String(), "2.50x the jitted run's peak, 8.0KiB")
	require.NoError(t, r.WriteJSON(&js))
	require.Contains(t, js.String(), `"jit_peak_bytes": 8192`)
	require.NoError(t, r.WriteHTML(&html))
	require.Contains(t, html.String(), "2.00x the jitted run&#39;s peak")

	m.IsScheduled = true
	for _, l := range WhatIfs(m) {
		require.NotEqual(t, "jit", l.Kind, "a module XLA scheduled is compiled already")
	}
}
