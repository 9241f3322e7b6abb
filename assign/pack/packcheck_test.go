package pack

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/packcheck"
	"github.com/stretchr/testify/require"
)

// publishedBounds are the lower bounds (the most bytes live at once) the
// corpus' README gives for its real traces and MiniMalloc's instances,
// from their sources (idealloc's and MiniMalloc's papers and data).
var publishedBounds = map[string]int64{
	"resnet50.csv":   1_515_472_556,
	"pangu_2.6B.csv": 5_530_099_775,
	"G_1.csv":        3_030_937_746,
	"S_1.csv":        1_498_635_932,
	"Y_1.csv":        497_261_190_115,
	"A.1048576.csv":  1_048_576,
	"B.1048576.csv":  1_048_576,
	"C.1048576.csv":  1_039_360,
	"D.1048576.csv":  986_112,
	"E.1048576.csv":  1_048_576,
	"F.1048576.csv":  1_048_576,
	"G.1048576.csv":  1_048_576,
	"H.1048576.csv":  1_048_576,
	"I.1048576.csv":  1_048_576,
	"J.1048576.csv":  989_184,
	"K.1048576.csv":  1_048_576,
}

// publishedBound returns the bound published for the instance at path
// and checks that hlomem's lower bound of p is that figure.
func publishedBound(t *testing.T, p *Problem, sol *Solution, path string) int64 {
	t.Helper()
	name := filepath.Base(path)
	want, ok := publishedBounds[name]
	require.True(t, ok, "%s: no published bound on record", name)
	require.Equal(t, want, sol.LowerBound(), "%s: hlomem's lower bound is not the published one", name)
	return want
}

// outsideChecker is the outside checker (internal/packcheck); the test
// skips without it, or fails under packcheck.EnvRequire.
func outsideChecker(t *testing.T) *packcheck.Checker {
	t.Helper()
	corpus.Path(t) // skips without the corpus
	c, err := packcheck.Find()
	if err != nil {
		if packcheck.Required() {
			t.Fatal(err)
		}
		t.Skipf("%v; CI sets %s", err, packcheck.EnvRequire)
	}
	return c
}

// writeSolution writes pk as hlomem pack prints it and returns the file.
func writeSolution(t *testing.T, p *Problem, pk Packing) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "solution.csv")
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, p, pk))
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	return out
}

// outsideCheck has the outside checker verify sol against the problem
// file: every buffer placed, no two overlapping in time and space, and the
// height and lower bound hlomem reports.
func outsideCheck(t *testing.T, path string, p *Problem, sol *Solution) {
	t.Helper()
	r, err := outsideChecker(t).Check(path, writeSolution(t, p, sol.Packing))
	require.NoError(t, err, filepath.Base(path))
	require.Equal(t, len(p.Buffers), r.Buffers, "%s: buffers", filepath.Base(path))
	require.Equal(t, sol.Height(), r.Height, "%s: height, hlomem against packcheck.py", filepath.Base(path))
	require.Equal(t, sol.LowerBound(), r.LowerBound, "%s: lower bound, hlomem against packcheck.py", filepath.Base(path))
}

// TestOutsideCheckRefusesOverlap: the outside checker is not a formality.
// A packing of rand_1 with one buffer moved onto another that lives at
// the same time is refused by packcheck.py as by Check.
func TestOutsideCheckRefusesOverlap(t *testing.T) {
	path := corpus.Path(t, "alloc", "synthetic", "rand_1.cap294.csv")
	checker := outsideChecker(t)
	p := readCorpusCSV(t, path)
	sol, err := Pack(context.Background(), p, Options{Budget: corpusBudget})
	require.NoError(t, err)
	pk := Packing{Offsets: slices.Clone(sol.Offsets)}
	// The first pair that overlaps in time: put j where i is.
	moved := false
	for i := range p.Buffers {
		for j := range p.Buffers {
			a, b := p.Buffers[i], p.Buffers[j]
			if i != j && a.Start < b.End && b.Start < a.End && !moved {
				pk.Offsets[j] = pk.Offsets[i]
				moved = true
			}
		}
	}
	require.True(t, moved)
	require.Error(t, Check(p, pk))
	r, err := checker.Check(path, writeSolution(t, p, pk))
	require.Error(t, err, "packcheck.py accepted an overlapping packing:\n%s", r.Output)
	require.ErrorContains(t, err, "overlap")
}
