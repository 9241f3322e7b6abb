package atomicfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.txt")
	// A new file, in a directory made for it.
	require.NoError(t, Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "one\n"); return err }))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one\n", string(b))
	require.NoError(t, os.Chmod(path, 0o600))
	// A failing write leaves the old content and no temporary file.
	err = Write(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("interrupted")
	})
	require.EqualError(t, err, "interrupted")
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one\n", string(b))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	// A complete write replaces it and keeps its permissions.
	require.NoError(t, Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "two\n"); return err }))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	// Through a link: the target is replaced, the link kept.
	link := filepath.Join(dir, "link.txt")
	require.NoError(t, os.Symlink(path, link))
	require.NoError(t, Write(link, func(w io.Writer) error { _, err := io.WriteString(w, "three\n"); return err }))
	fi, err = os.Lstat(link)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "three\n", string(b))
}

// A batch touches no path until Commit: an interrupt between two files
// (the context cancelled before the second Add) leaves both paths as they
// were and no temporary file; a committed batch puts every file in place.
func TestBatch(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.html"), filepath.Join(dir, "b.svg")
	require.NoError(t, os.WriteFile(b, []byte("old\n"), 0o644))
	text := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	ctx, cancel := context.WithCancel(context.Background())
	var batch Batch
	require.NoError(t, batch.Add(ctx, a, text("A\n")))
	_, err := os.Stat(a)
	require.ErrorIs(t, err, os.ErrNotExist, "staged, not yet in place")
	cancel()
	require.ErrorIs(t, batch.Add(ctx, b, text("B\n")), context.Canceled)
	batch.Abort()
	_, err = os.Stat(a)
	require.ErrorIs(t, err, os.ErrNotExist)
	got, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, "old\n", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only b.svg: no temporary file left")

	batch = Batch{}
	require.NoError(t, batch.Add(context.Background(), a, text("A\n")))
	require.NoError(t, batch.Add(context.Background(), b, text("B\n")))
	require.NoError(t, batch.Commit())
	for p, want := range map[string]string{a: "A\n", b: "B\n"} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
}
