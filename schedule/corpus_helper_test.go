package schedule

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// corpusFiles returns the corpus files the patterns match, pattern by
// pattern.
func corpusFiles(tb testing.TB, patterns ...string) []string {
	var files []string
	for _, p := range patterns {
		files = append(files, corpus.Glob(tb, p)...)
	}
	return files
}

// forCorpusModules parses every corpus file the patterns match and runs
// f on each module, in order, as a subtest of t named for the file (and
// the module's index when the file holds several): a module's failure
// names it, and -run 'Corpus/NAME' runs one. Files that do not parse
// (those without a module; the hlo package tests them) are skipped. The
// subtests run one after another: the callers tally across modules.
func forCorpusModules(t *testing.T, patterns []string, f func(t *testing.T, file string, m *hlo.Module)) {
	t.Helper()
	for _, file := range corpusFiles(t, patterns...) {
		mods, err := hlo.ParseFile(file)
		if err != nil {
			continue
		}
		for i, m := range mods {
			t.Run(moduleName(file, i), func(t *testing.T) { f(t, file, m) })
		}
	}
}

// moduleName names the i-th module of a corpus file for a subtest: the
// file's base name, or its directory's for the paired dumps, with #i
// after the first module (testing adds #01 to a name used twice).
func moduleName(file string, i int) string {
	name := filepath.Base(file)
	if strings.HasSuffix(name, "_optimizations.txt") {
		name = filepath.Base(filepath.Dir(file))
	}
	if i > 0 {
		name += "#" + strconv.Itoa(i)
	}
	return name
}
