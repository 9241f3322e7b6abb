package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// TestWhatIfSharedSame: the rows Build computes, sharing the plan's work
// (the plan's own options, fusion that changes nothing, a packer lever
// on the plan's analysis, remat from the plan's schedule, one jitted
// run), are the rows each lever planned alone from the module gives:
// the same figures, errors and commands. Unscheduled modules (the fuzz
// set) and XLA-scheduled ones (paired-jax) both.
func TestWhatIfSharedSame(t *testing.T) {
	files := corpus.Files(t, "hlo/fuzz/*.hlo", "paired-jax/*/*after_optimizations.txt")
	ctx := context.Background()
	n, scheduled := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		mods, err := hlo.ParseString(f, string(src))
		require.NoError(t, err, f)
		for _, m := range mods {
			if m.NumInstructions() > 300 {
				continue // kept quick: the sharing does not depend on size
			}
			name := filepath.Base(f) + "/" + m.Name
			opts := Options{Compile: compile.Options{PlanCost: true, Target: assign.GPU}, File: f, WhatIf: WhatIfs(m)}
			r, err := Build(ctx, m, opts)
			require.NoError(t, err, name)
			alone := opts
			alone.total = r.Total // what Build gives the remat rows; no shared work
			for i, l := range opts.WhatIf {
				want, got := l.plan(ctx, m, alone), r.WhatIf[i]
				require.Equal(t, want.Err, got.Err, "%s %s", name, l)
				require.Equal(t, want.Total, got.Total, "%s %s", name, l)
				require.Equal(t, want.LowerBound, got.LowerBound, "%s %s", name, l)
				require.Equal(t, want.JitPeak, got.JitPeak, "%s %s", name, l)
				require.Equal(t, strings.Join(want.Command, " "), strings.Join(got.Command, " "), "%s %s", name, l)
				require.Equal(t, want.Remat, got.Remat, "%s %s", name, l)
			}
			n++
			if m.IsScheduled {
				scheduled++
			}
		}
	}
	t.Logf("%d modules, %d of them scheduled", n, scheduled)
	require.Positive(t, scheduled)
	require.Positive(t, n-scheduled)
}
