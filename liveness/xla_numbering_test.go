package liveness_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// valueLabelRe matches the value lines of an XLA buffer-assignment dump:
// <ID name{index} @color>, with {index} only for tuple-shaped instructions.
var valueLabelRe = regexp.MustCompile(`(?m)^ value: <(\d+) ([^ >{]+)(\{[0-9,]*\})?( \(phi\))? @`)

// TestXLABufferAssignmentCorpus holds assign's "xla" algorithm to XLA's own
// buffer assignment on every paired module of the corpus: with the
// analysis numbering non-phi values as the dump does (the in-memory
// computation order that decides XLA's numbering is not in the text), the
// whole allocation block of the dump (everything before "Total bytes
// used") must come out byte for byte: the allocations, their order, sizes
// and flags, and every value's offset. Every plan must also pass
// assign.Check.
func TestXLABufferAssignmentCorpus(t *testing.T) {
	for _, set := range []struct {
		dir, target string
		want        int
	}{{"paired", "gpu", 27}, {"paired-jax", "gpu", 57}, {"paired-jax-cpu", "cpu", 9}} {
		dirs := corpus.All(t, set.dir+"/*")
		require.Len(t, dirs, set.want, "found %d modules in %s, want %d", len(dirs), set.dir, set.want)
		dirs = corpus.Sample(t, dirs)
		same := 0
		for _, dir := range dirs {
			t.Run(set.dir+"/"+filepath.Base(dir), func(t *testing.T) {
				got, want := assignLikeXLA(t, dir, set.target)
				got, want = allocationBlock(t, got), allocationBlock(t, want)
				// Whole allocation blocks: a line diff, not require.Equal's dump of both.
				if got != want {
					require.Failf(t, "allocation block differs from XLA's", "(-xla +ours):\n%s",
						cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")))
				}
				same++
			})
		}
		t.Logf("%s: allocation block identical to XLA's on %d/%d modules", set.dir, same, len(dirs))
	}
}

// assignLikeXLA assigns the module of a paired dump directory with the
// "xla" algorithm and XLA's value numbering, and returns our
// buffer-assignment dump and XLA's.
func assignLikeXLA(t *testing.T, dir, target string) (got, want string) {
	t.Helper()
	as, want := planLikeXLA(t, dir, target)
	var b strings.Builder
	require.NoError(t, as.WriteXLA(&b))
	return b.String(), want
}

// planLikeXLA assigns the module of a paired dump directory with the "xla"
// algorithm and XLA's value numbering, and returns the plan and XLA's
// buffer-assignment dump.
func planLikeXLA(t *testing.T, dir, target string) (*assign.Assignment, string) {
	t.Helper()
	hloFile := globOne(t, filepath.Join(dir, "*after_optimizations.txt"))
	baFile := globOne(t, filepath.Join(dir, "*after_optimizations-buffer-assignment.txt"))
	text, err := os.ReadFile(baFile)
	require.NoError(t, err)
	ids := map[string]int{}
	for _, m := range valueLabelRe.FindAllStringSubmatch(string(text), -1) {
		if m[4] != "" {
			continue // phis: the analysis numbers them as XLA does
		}
		id, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		ids[m[2]+m[3]] = id
	}
	mods, err := hlo.ParseFile(hloFile)
	require.NoError(t, err)
	m := mods[0]
	_, err = hlo.FlattenCallGraph(m)
	require.NoError(t, err)
	// The paired dumps come from 2024-2025 XLA: its older async rule.
	opts := liveness.Options{XLARules: liveness.Rules2025}
	liveness.WithNumbering(&opts, func(in *hlo.Instruction, ix hlo.ShapeIndex) (int, bool) {
		k := in.Name
		if in.Shape.IsTuple() {
			k += ix.String()
		}
		id, ok := ids[k]
		return id, ok
	})
	a, err := liveness.Analyze(m, opts)
	require.NoError(t, err)
	tgt, err := assign.TargetByName(target)
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{Algorithm: "xla", Target: tgt})
	require.NoError(t, err)
	require.NoError(t, assign.Check(as), "plan fails the check")
	return as, string(text)
}

// allocationBlock returns the part of a buffer-assignment dump before
// "Total bytes used".
func allocationBlock(t *testing.T, s string) string {
	t.Helper()
	i := strings.Index(s, "\nTotal bytes used")
	require.GreaterOrEqual(t, i, 0, "no \"Total bytes used\" line in the dump")
	return s[:i]
}

func globOne(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.Len(t, m, 1, "%s: %d matches, want 1", pattern, len(m))
	return m[0]
}
