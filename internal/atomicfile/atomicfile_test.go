package atomicfile

import (
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
