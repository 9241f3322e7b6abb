// Package corpusmod runs a test over the HLO modules of the shared corpus,
// one subtest per module. It is apart from internal/corpus because it
// parses (imports hlo), and hlo's own tests use internal/corpus.
package corpusmod

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// Files returns the corpus files the patterns match (corpus.Glob: the
// sample under -short), pattern by pattern.
func Files(tb testing.TB, patterns ...string) []string {
	var files []string
	for _, p := range patterns {
		files = append(files, corpus.Glob(tb, p)...)
	}
	return files
}

// ForModules parses every corpus file the patterns match and runs f on
// each module, in order, as a subtest of t named by Name: a module's
// failure names it, and -run 'Corpus/NAME' runs one. Files that do not
// parse (those without a module; the hlo package tests them) are
// skipped. The subtests run one after another: callers tally across
// modules.
func ForModules(t *testing.T, patterns []string, f func(t *testing.T, file string, m *hlo.Module)) {
	t.Helper()
	for _, file := range Files(t, patterns...) {
		mods, err := hlo.ParseFile(file)
		if err != nil {
			continue
		}
		for i, m := range mods {
			t.Run(Name(file, i), func(t *testing.T) { f(t, file, m) })
		}
	}
}

// Name names the i-th module of a corpus file for a subtest: the file's
// base name, or its directory's for the paired dumps, with #i after the
// first module (testing adds #01 to a name used twice).
func Name(file string, i int) string {
	name := filepath.Base(file)
	if strings.HasSuffix(name, "_optimizations.txt") {
		name = filepath.Base(filepath.Dir(file))
	}
	if i > 0 {
		name += "#" + strconv.Itoa(i)
	}
	return name
}
