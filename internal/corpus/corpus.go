// Package corpus locates the shared test corpus of real HLO modules, XLA dumps
// and packing problems for the project's tests and benchmarks.
//
// The corpus lives beside the project root in ../shared/corpus, or wherever
// the environment variable HLOMEM_CORPUS points. When HLOMEM_CORPUS is set the
// corpus is required: a missing directory fails the test instead of skipping
// it, so that CI (which sets it through make test) can never skip silently.
//
// Two tiers. Glob (and Files) is the one place that decides how much of
// the corpus a test sees: every matching file in a full run, and under
// -short (make test, the fast tier) only the files of Representative
// among them, a fixed sample chosen so that the fast tier still meets
// loops, conditionals, async pairs, XLA's paired dumps and every allocator
// problem kind. Tests call Glob and never limit the corpus themselves;
// make test-corpus runs them on every module.
package corpus

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// root), sorted; it fails the test when nothing matches. Under -short it
// returns only the sample of them (Sample).
func Glob(tb testing.TB, pattern string) []string {
	tb.Helper()
	return Sample(tb, All(tb, pattern))
}

// Files is Glob over several patterns, in the order given.
func Files(tb testing.TB, patterns ...string) []string {
	tb.Helper()
	var out []string
	for _, p := range patterns {
		out = append(out, Glob(tb, p)...)
	}
	return out
}

// All returns every corpus file matching pattern, sorted, in -short mode
// too; it fails the test when nothing matches. Only a test that needs one
// named set whole, whatever the tier, calls it.
func All(tb testing.TB, pattern string) []string {
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

// Representative is the fast tier's sample of the corpus: paths relative
// to the corpus root, each a file or a directory (every file under it).
// Each earns its place by what it exercises; all are small.
var Representative = []string{
	"hlo/fuzz/rand_35.hlo",          // while
	"hlo/fuzz/rand_95.hlo",          // conditional
	"hlo/fuzz/rand_84.hlo",          // straight-line random ops
	"hlo/neuron/gpt__gpt2_tp-1.hlo", // a torch-xla graph
	"hlo/xla/backends__cpu__benchmarks__hlo__layer_norm_1x4096x768_bf16.hlo", // a JAX benchmark, reductions
	"hlo/xla/tools__data__must_alias.hlo",                                    // input_output_alias
	"hlo/xla/tools__hlo_opt__tests__list_passes.hlo",                         // no module at all
	"paired/dump_rms.module_0000.SyncTensorsGraph.7",                         // XLA:GPU dump with its assignment
	"paired/module_0012.SyncTensorsGraph.147",                                // a larger one
	"paired-jax/module_0035.jit_scatter.0103",                                // scatter
	"paired-jax/module_0481.jit__solve_w.0008",                               // async collectives
	"paired-jax/module_0379.jit_scan.0064",                                   // while loops (scan)
	"paired-jax/module_0693.jit__project_tau_onto_omega.0036",                // conditional
	"paired-jax-cpu/module_0209.jit__batched_chol.0000",                      // XLA:CPU, loops
	"alloc/minimalloc/A.1048576.csv",
	"alloc/idealloc/G_1.csv",
	"alloc/synthetic/cnn_1.cap4374.csv",
	"alloc/synthetic/rand_2.cap630.csv",
	"alloc/synthetic/stress_2.cap1655.csv",
}

// Sample returns files (corpus paths, as Glob returns them) in a full run;
// under -short, those of them in Representative, or, when none is, the
// smallest of them (ties by path), so that a sampled test still runs on
// at least one module. It is deterministic, and logs what it left out.
func Sample(tb testing.TB, files []string) []string {
	tb.Helper()
	if !testing.Short() || len(files) == 0 {
		return files
	}
	root := Dir()
	var out []string
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if slices.ContainsFunc(Representative, func(r string) bool {
			return rel == r || strings.HasPrefix(rel, r+"/")
		}) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []string{smallest(files)}
	}
	if len(out) < len(files) {
		tb.Logf("-short: %d of %d corpus files (corpus.Representative)", len(out), len(files))
	}
	return out
}

// smallest returns the smallest of files by size, ties by path; an entry
// that cannot be read counts as largest.
func smallest(files []string) string {
	size := func(f string) int64 {
		st, err := os.Stat(f)
		if err != nil {
			return 1 << 62
		}
		return st.Size()
	}
	return slices.MinFunc(files, func(a, b string) int {
		return cmp.Or(cmp.Compare(size(a), size(b)), strings.Compare(a, b))
	})
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

// Enough is the least count of corpus modules a corpus-wide test must
// have handled: full, the figure stated for the whole corpus, in a full
// run; under -short, every one of the sample's modules it visited (and
// at least one), so that a sampled run fails as soon as one of them is
// not handled, or none is.
func Enough(full, visited int) int {
	if testing.Short() {
		return max(visited, 1)
	}
	return full
}
