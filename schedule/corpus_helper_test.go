package schedule

import (
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

// forCorpusModules parses every corpus file the patterns match and calls
// f with each module, in order. Files that do not parse (those without a
// module; the hlo package tests them) are skipped.
func forCorpusModules(tb testing.TB, patterns []string, f func(file string, m *hlo.Module)) {
	for _, file := range corpusFiles(tb, patterns...) {
		mods, err := hlo.ParseFile(file)
		if err != nil {
			continue
		}
		for _, m := range mods {
			f(file, m)
		}
	}
}
