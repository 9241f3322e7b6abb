package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTB records what Check reports instead of failing the real test. The
// embedded testing.TB (the real test) serves any method Check should not call.
type fakeTB struct {
	testing.TB
	errors []string
	logs   []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.TB.Fatalf("golden called Fatalf (should report with Errorf): "+format, args...)
}

// hasDiffLine reports whether msg has a line that starts with mark (cmp's
// "-" or "+") and contains text. cmp.Diff's spacing is deliberately unstable,
// so the test looks only at the marker and the quoted line.
func hasDiffLine(msg, mark, text string) bool {
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, mark) && strings.Contains(l, text) {
			return true
		}
	}
	return false
}

// compareMode makes Check compare, whatever the environment of the run.
func compareMode(t *testing.T) {
	t.Setenv(EnvUpdate, "")
	old := *update
	*update = false
	t.Cleanup(func() { *update = old })
}

// checkAgainst writes want to a golden file named name in a fresh
// directory and checks got against it in compare mode; it returns what
// Check reported and the file's path.
func checkAgainst(t *testing.T, name, want, got string) (*fakeTB, string) {
	t.Helper()
	compareMode(t)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
	f := &fakeTB{TB: t}
	Check(f, path, []byte(got))
	return f, path
}

func TestMatch(t *testing.T) {
	f, _ := checkAgainst(t, "ok.golden", "a\nb\n", "a\nb\n")
	require.Empty(t, f.errors)
	require.Empty(t, f.logs)
}

func TestMismatchReportsDiff(t *testing.T) {
	f, path := checkAgainst(t, "out.golden", "alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n")
	require.Len(t, f.errors, 1)
	msg := f.errors[0]
	require.Contains(t, msg, path)
	require.Contains(t, msg, "-want +got")
	require.True(t, hasDiffLine(msg, "-", `"beta"`), "no removed line for beta in:\n%s", msg)
	require.True(t, hasDiffLine(msg, "+", `"BETA"`), "no added line for BETA in:\n%s", msg)
	require.False(t, hasDiffLine(msg, "-", `"alpha"`), "an unchanged line is marked removed:\n%s", msg)
	require.Contains(t, msg, "HLOMEM_UPDATE=1")
	// Comparing does not touch the file.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "alpha\nbeta\ngamma\n", string(b))
}

func TestMismatchFinalNewline(t *testing.T) {
	f, _ := checkAgainst(t, "nl.golden", "x\n", "x")
	require.Len(t, f.errors, 1)
	require.True(t, hasDiffLine(f.errors[0], "-", `""`), "the lost final newline is not shown:\n%s", f.errors[0])
}

func TestMissingFile(t *testing.T) {
	compareMode(t)
	path := filepath.Join(t.TempDir(), "missing.golden")
	f := &fakeTB{TB: t}
	CheckString(f, path, "anything\n")
	require.Len(t, f.errors, 1)
	require.Contains(t, f.errors[0], path+" does not exist")
	require.Contains(t, f.errors[0], "HLOMEM_UPDATE=1")
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "comparing must not create the file")
}

func TestUpdateWritesFile(t *testing.T) {
	for _, how := range []string{"env", "flag"} {
		t.Run(how, func(t *testing.T) {
			compareMode(t)
			if how == "env" {
				t.Setenv(EnvUpdate, "1")
			} else {
				*update = true
			}
			require.True(t, Updating())
			path := filepath.Join(t.TempDir(), "sub", "new.golden")
			f := &fakeTB{TB: t}
			Check(f, path, []byte("fresh\n"))
			require.Empty(t, f.errors)
			require.Len(t, f.logs, 1)
			require.Contains(t, f.logs[0], "updated "+path)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "fresh\n", string(b))

			// A stale file is overwritten; an identical one is left alone.
			Check(f, path, []byte("newer\n"))
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "newer\n", string(b))
			Check(f, path, []byte("newer\n"))
			require.Empty(t, f.errors)
			require.Len(t, f.logs, 2, "an unchanged file is not rewritten or logged")
		})
	}
}

func TestUpdatingEnv(t *testing.T) {
	compareMode(t)
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		t.Setenv(EnvUpdate, v)
		require.Equal(t, want, Updating(), "%s=%q", EnvUpdate, v)
	}
}
