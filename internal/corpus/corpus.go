// Package corpus locates the shared test corpus of real HLO modules, XLA dumps
// and packing problems for the project's tests and benchmarks.
//
// The corpus lives beside the project root in ../shared/corpus, or wherever
// the environment variable HLOMEM_CORPUS points. When HLOMEM_CORPUS is set the
// corpus is required: a missing directory fails the test instead of skipping
// it, so that CI (which sets it through make test) can never skip silently.
package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvVar names the environment variable that points at the corpus.
const EnvVar = "HLOMEM_CORPUS"

// Dir returns the corpus directory, or "" when none is found.
func Dir() string {
	if d := os.Getenv(EnvVar); d != "" {
		return d
	}
	root := moduleRoot()
	if root == "" {
		return ""
	}
	d := filepath.Join(root, "..", "shared", "corpus")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Path returns the path of rel inside the corpus, skipping the test with a
// clear message when the corpus is absent and failing it when HLOMEM_CORPUS
// names a directory that does not exist.
func Path(tb testing.TB, rel ...string) string {
	tb.Helper()
	d := Dir()
	if d == "" {
		tb.Skipf("corpus not found: set %s or place it at ../shared/corpus beside the project root", EnvVar)
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		tb.Fatalf("%s=%q is not a directory", EnvVar, d)
	}
	p := filepath.Join(append([]string{d}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("corpus entry missing: %v", err)
	}
	return p
}

// Glob returns the corpus files matching pattern (relative to the corpus
// root), sorted; it fails the test when nothing matches.
func Glob(tb testing.TB, pattern string) []string {
	tb.Helper()
	root := Path(tb)
	m, err := filepath.Glob(filepath.Join(root, pattern))
	if err != nil {
		tb.Fatal(err)
	}
	if len(m) == 0 {
		tb.Fatalf("no corpus files match %s", pattern)
	}
	return m
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}
