// Package golden compares a test's text output with a golden file.
//
// A test calls Check with the path of its golden file (by convention
// testdata/golden/NAME.golden) and the output it produced. On a mismatch the
// test fails with a line diff (-want +got). To accept the current outputs,
// rerun the tests with HLOMEM_UPDATE=1 in the environment (or with the -update
// flag, in a test binary that imports this package): Check then writes the
// file instead of comparing and the test passes. Review the rewritten files
// with git diff before committing them.
//
// Only test code should import this package: it registers the -update flag.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/internal/goldenenv"
)

// EnvUpdate is the environment variable that makes Check rewrite golden files.
const EnvUpdate = goldenenv.Var

var update = flag.Bool("update", false, "rewrite golden files with the current outputs (same as "+EnvUpdate+"=1)")

// Updating reports whether golden files are being rewritten: the -update flag
// was given, or HLOMEM_UPDATE is set to anything other than "" or "0".
func Updating() bool {
	return *update || goldenenv.Set()
}

// Check compares got with the contents of the golden file at path. On a
// mismatch, or when the file is missing, it reports an error through t (the
// test goes on, so one run reports every stale golden file). When Updating,
// it writes got to path instead, creating the directory if needed, and logs
// that it did.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if Updating() {
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, got) {
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Errorf("golden: %v", err)
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Errorf("golden: %v", err)
			return
		}
		t.Logf("golden: updated %s (%d bytes)", path, len(got))
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("golden: %s does not exist; create it by rerunning the test with %s=1 (or -update) and review it", path, EnvUpdate)
		return
	}
	if err != nil {
		t.Errorf("golden: %v", err)
		return
	}
	if bytes.Equal(want, got) {
		return
	}
	t.Errorf("golden: output differs from %s (-want +got):\n%s\nIf the new output is right, rerun with %s=1 (or -update) to rewrite the file.",
		path, cmp.Diff(lines(want), lines(got)), EnvUpdate)
}

// CheckString is Check for a string.
func CheckString(t testing.TB, path, got string) {
	t.Helper()
	Check(t, path, []byte(got))
}

// lines splits text into lines for the diff; a missing final newline shows
// up as a last line that is not empty.
func lines(b []byte) []string {
	return strings.Split(string(b), "\n")
}
