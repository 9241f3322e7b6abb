//go:build unix

package atomicfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// A named pipe is written into, not replaced: the reader gets the whole
// content and the pipe is still a pipe.
func TestWriteFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	require.NoError(t, Write(path, writeString("through the pipe\n")))
	require.Equal(t, "through the pipe\n", <-got)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the pipe was replaced: %v", fi.Mode())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "a temporary file was left beside the pipe")
}

// A character device made by the test (root only: mknod) is written into
// and stays a device; so is /dev/null.
func TestWriteCharDevice(t *testing.T) {
	require.NoError(t, Write("/dev/null", writeString("discarded\n")))
	fi, err := os.Lstat("/dev/null")
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeCharDevice)
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root; /dev/null was checked")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "null")
	// The device of /dev/null: major 1, minor 3.
	require.NoError(t, syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3))
	require.NoError(t, Write(path, writeString("discarded\n")))
	fi, err = os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeCharDevice, "the device was replaced by a %v", fi.Mode())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// A descriptor path (/proc/self/fd/N, as /dev/stdout is) is written into
// the open file it names, which is not replaced: the file keeps its inode
// and what was written to the descriptor before.
func TestWriteDescriptor(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	path := filepath.Join(t.TempDir(), "stdout.txt")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("text output\n")
	require.NoError(t, err)
	before, err := os.Stat(path)
	require.NoError(t, err)
	fd := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	require.True(t, isDescriptor(fd))
	require.True(t, isDescriptor("/dev/stdout"))
	require.True(t, isDescriptor("/dev/fd/1"))
	require.False(t, isDescriptor("/dev/null"))
	require.NoError(t, Write(fd, writeString("the viewer\n")))
	after, err := os.Stat(path)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "the file behind the descriptor was replaced")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	// The descriptor is opened anew (O_WRONLY without O_APPEND), so the
	// content lands at its start, as a shell's 2>/dev/stdout would.
	require.Contains(t, string(b), "the viewer\n")
}

// A read-only file is refused, even for root, and stays as it was.
func TestWriteReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden.txt")
	require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o444))
	err := Write(path, writeString("new\n"))
	var ro *ReadOnlyError
	require.ErrorAs(t, err, &ro)
	require.EqualError(t, err, path+": the file is read-only; make it writable (chmod u+w) to replace it")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old\n", string(b))
}

// A directory is refused.
func TestWriteDirectory(t *testing.T) {
	dir := t.TempDir()
	err := Write(dir, writeString("x"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "is a directory")
}

// A cancelled context stops the write and leaves nothing behind; Abandon
// removes the temporary file of a write still in progress.
func TestWriteCancelled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	ctx, cancel := context.WithCancel(context.Background())
	err := WriteContext(ctx, path, func(w io.Writer) error {
		for i := 0; ; i++ {
			if i == 10 {
				cancel()
			}
			if _, err := w.Write(make([]byte, 1<<20)); err != nil {
				return err
			}
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)

	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Write(path, func(w io.Writer) error {
			close(started)
			<-release
			return errors.New("given up")
		})
	}()
	<-started
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file")
	Abandon()
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	close(release)
	require.EqualError(t, <-done, "given up")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Check refuses, before any work, what Write would refuse, and accepts
// what it would write.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	ro := filepath.Join(dir, "ro.txt")
	require.NoError(t, os.WriteFile(ro, []byte("x"), 0o444))
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, ok := range []string{file, filepath.Join(dir, "new.txt"), filepath.Join(dir, "sub", "dir", "new.txt"), fifo, "/dev/null", "/dev/stdout"} {
		require.NoError(t, Check(ok), ok)
	}
	for path, want := range map[string]string{
		ro:                                   "read-only",
		dir:                                  "is a directory",
		filepath.Join(file, "under.txt"):     "not a directory",
		filepath.Join(file, "a", "deep.txt"): "not a directory",
		"":                                   "no file name",
	} {
		err := Check(path)
		require.ErrorContains(t, err, want, path)
	}
	// Nothing was written by the checks.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 3)
}
