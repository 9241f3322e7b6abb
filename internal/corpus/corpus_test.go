package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRepresentativeExists: every entry of the fast tier's sample is in
// the corpus, so that a renamed entry cannot quietly shrink the sample
// (Sample would fall back to a set's smallest file).
func TestRepresentativeExists(t *testing.T) {
	root := Path(t)
	for _, r := range Representative {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(r))); err != nil {
			t.Errorf("corpus.Representative: %v", err)
		}
	}
}

// TestSample: a full run sees every file; -short sees the sample's files
// among them, or the smallest file when none is in the sample.
func TestSample(t *testing.T) {
	all := All(t, "paired-jax/*/*after_optimizations.txt")
	got := Sample(t, all)
	if !testing.Short() {
		if len(got) != len(all) {
			t.Fatalf("full run: got %d files, want all %d", len(got), len(all))
		}
		return
	}
	if len(got) == 0 || len(got) >= len(all) {
		t.Fatalf("-short: got %d of %d files, want a sample", len(got), len(all))
	}
	root := Dir()
	for _, f := range got {
		rel, _ := filepath.Rel(root, filepath.Dir(f))
		found := false
		for _, r := range Representative {
			found = found || filepath.ToSlash(rel) == r
		}
		if !found {
			t.Errorf("-short: %s is not in Representative", f)
		}
	}
	// A set none of whose files is in the sample gives its smallest.
	syn := All(t, "alloc/minimalloc/[B-K].*.csv")
	one := Sample(t, syn)
	if len(one) != 1 || filepath.Base(one[0]) != "B.1048576.csv" {
		t.Errorf("-short, no file sampled: got %v, want the smallest, B.1048576.csv", one)
	}
}
