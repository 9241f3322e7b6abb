// Package atomicfile writes output files whole or not at all, and never
// replaces what is not the tool's to replace.
//
// What happens depends on what the path names:
//
//   - nothing yet, or a regular file: the content goes to a temporary file
//     beside it, which is renamed over the path only once every byte is
//     written and synced. An interrupted or failed write leaves the old
//     file (or none) as it was. A regular file the user cannot write, or
//     whose permission bits allow no write at all (read-only, even to
//     root), is refused, as other tools refuse it;
//   - a character device, a named pipe (FIFO) or a socket: the content is
//     made whole first (in memory, or in an unlinked temporary file when
//     large) and then written straight into it; the device or pipe itself
//     is never replaced. /dev/null, a terminal and a pipe a reader waits on
//     work this way;
//   - a descriptor of this process (/dev/stdout, /dev/stderr, /dev/fd/N,
//     /proc/self/fd/N): written straight into the descriptor the same way,
//     never renamed over the file it may be redirected to;
//   - a directory, or a block device: refused.
//
// A path that is a symbolic link is written through: the file it names is
// replaced, the link kept.
package atomicfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// memoryLimit is how much of a write to a device or pipe is held in memory
// before it moves to an unlinked temporary file.
const memoryLimit = 32 << 20

// ReadOnlyError reports a regular file that the write would replace but
// that is read-only.
type ReadOnlyError struct{ Path string }

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("%s: the file is read-only; make it writable (chmod u+w) to replace it", e.Path)
}

// Write writes the file at path with the content write produces (package
// doc: atomically over a regular file or a new path, straight into a
// device, pipe or descriptor). An existing file keeps its permissions; a
// new one gets 0644. On any error, from write or from the file system,
// nothing at path changes and no temporary file is left.
func Write(path string, write func(io.Writer) error) error {
	return WriteContext(context.Background(), path, write)
}

// WriteContext is Write that gives up, leaving the path as it was, once
// ctx is done: before the file is touched, and while the content is
// written (each write to the temporary file checks ctx).
func WriteContext(ctx context.Context, path string, write func(io.Writer) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := inspect(path)
	if err != nil {
		return err
	}
	switch k.kind {
	case stream:
		return writeStraight(ctx, k.path, write)
	case regular:
		return writeAtomic(ctx, k.path, k.mode, write)
	}
	return writeAtomic(ctx, k.path, 0o644, write)
}

// Check reports, without writing anything, whether Write could write
// path: it refuses what Write refuses (a directory, a read-only file, a
// block device or other special file) and a new path under something
// that is not a directory. A command calls it for its output paths before
// its long work, so a bad path fails at once. Write can still fail later
// (a full disk, a directory it may not write in).
func Check(path string) error {
	if path == "" {
		return errors.New("no file name")
	}
	k, err := inspect(path)
	if err != nil || k.kind != missing {
		return err
	}
	// The nearest existing ancestor must be a directory.
	for dir := filepath.Dir(k.path); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		switch {
		case err == nil && !di.IsDir():
			return &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("%s is not a directory", dir)}
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if filepath.Dir(dir) == dir {
			return nil
		}
	}
}

// kinds of output path.
const (
	missing = iota // nothing there yet
	regular        // a regular file, written atomically
	stream         // a device, pipe, socket or descriptor, written into
)

// target is what an output path names.
type target struct {
	kind int
	path string      // the path, links resolved (for a regular or missing one)
	mode fs.FileMode // a regular file's permissions
}

// inspect finds what path names and refuses what must not be written.
func inspect(path string) (target, error) {
	if isDescriptor(path) {
		return target{kind: stream, path: path}, nil
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return target{kind: missing, path: path}, nil
	case err != nil:
		return target{}, err
	case fi.Mode().IsRegular():
		if err := writable(path, fi); err != nil {
			return target{}, err
		}
		return target{kind: regular, path: path, mode: fi.Mode().Perm()}, nil
	case fi.IsDir():
		return target{}, &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
	case fi.Mode()&(fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0:
		return target{kind: stream, path: path}, nil
	}
	return target{}, &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("not a regular file, a character device or a pipe (%v); refusing to replace it", fi.Mode().Type())}
}

// descriptorPath matches the names of this process's open descriptors.
var descriptorPath = regexp.MustCompile(`^/(dev/(stdout|stderr|stdin|fd/[0-9]+)|proc/(self|thread-self|[0-9]+)/fd/[0-9]+)$`)

// isDescriptor reports whether path names one of the process's open
// descriptors, which must be written into, not replaced.
func isDescriptor(path string) bool {
	return descriptorPath.MatchString(filepath.Clean(path))
}

// writable refuses a regular file that is read-only: one the user may not
// write (access(2)), or whose mode gives no one write permission, which
// root's access(2) would not tell.
func writable(path string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o222 == 0 {
		return &ReadOnlyError{Path: path}
	}
	if !mayWrite(path) {
		return &ReadOnlyError{Path: path}
	}
	return nil
}

// writeAtomic writes a temporary file beside path and renames it into
// place.
func writeAtomic(ctx context.Context, path string, mode fs.FileMode, write func(io.Writer) error) error {
	name, err := stageAtomic(ctx, path, mode, write)
	if err != nil {
		return err
	}
	defer pending.remove(name)
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// stageAtomic writes, syncs and closes a temporary file beside path with
// the content and returns its name (still pending: Abandon removes it).
// On any error the temporary file is gone.
func stageAtomic(ctx context.Context, path string, mode fs.FileMode, write func(io.Writer) error) (_ string, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("%s: cannot write beside it: %w", path, err)
	}
	name := tmp.Name()
	pending.add(name)
	defer func() {
		if r := recover(); r != nil {
			tmp.Close()
			os.Remove(name)
			pending.remove(name)
			panic(r)
		}
		if err != nil {
			tmp.Close()
			os.Remove(name)
			pending.remove(name)
		}
	}()
	bw := bufio.NewWriterSize(&ctxWriter{ctx: ctx, w: tmp}, 1<<20)
	if err := write(bw); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := tmp.Chmod(mode); err != nil {
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return name, nil
}

// Batch writes several files all or none: Add makes each file's content
// whole (in a temporary file beside a regular path, in memory or an
// unlinked temporary file for a device, pipe or descriptor) and touches no
// path; Commit then puts every one in place, without looking at any
// context, so that a command interrupted before Commit leaves every path
// as it was. After a failed Add, or instead of Commit, Abort removes what
// was staged.
type Batch struct {
	staged []staged
}

type staged struct {
	path, tmp string      // a regular path and its temporary file
	held      *holdBuffer // or a stream's content
}

// Add stages the file at path with the content write produces (WriteContext's
// rules for what path may name); ctx done stops it.
func (b *Batch) Add(ctx context.Context, path string, write func(io.Writer) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := inspect(path)
	if err != nil {
		return err
	}
	if k.kind == stream {
		h := &holdBuffer{}
		bw := bufio.NewWriterSize(&ctxWriter{ctx: ctx, w: h}, 1<<20)
		if err := write(bw); err != nil {
			h.close()
			return err
		}
		if err := bw.Flush(); err != nil {
			h.close()
			return err
		}
		b.staged = append(b.staged, staged{path: k.path, held: h})
		return nil
	}
	mode := fs.FileMode(0o644)
	if k.kind == regular {
		mode = k.mode
	}
	name, err := stageAtomic(ctx, k.path, mode, write)
	if err != nil {
		return err
	}
	b.staged = append(b.staged, staged{path: k.path, tmp: name})
	return nil
}

// Commit puts every staged file in place, in the order added, and returns
// the first error (the files after it are removed, the ones before stay).
func (b *Batch) Commit() error {
	var first error
	for _, s := range b.staged {
		if first != nil {
			s.discard()
			continue
		}
		if s.held != nil {
			first = s.commitStream()
			continue
		}
		if err := os.Rename(s.tmp, s.path); err != nil {
			os.Remove(s.tmp)
			first = err
		}
		pending.remove(s.tmp)
	}
	b.staged = nil
	return first
}

// Abort removes what was staged; no path changes.
func (b *Batch) Abort() {
	for _, s := range b.staged {
		s.discard()
	}
	b.staged = nil
}

func (s staged) discard() {
	if s.held != nil {
		s.held.close()
		return
	}
	os.Remove(s.tmp)
	pending.remove(s.tmp)
}

func (s staged) commitStream() error {
	defer s.held.close()
	f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	r, err := s.held.reader()
	if err != nil {
		f.Close()
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeStraight makes the content whole, then writes it into path (a
// device, a pipe, a descriptor) without replacing it.
func writeStraight(ctx context.Context, path string, write func(io.Writer) error) error {
	var buf holdBuffer
	defer buf.close()
	bw := bufio.NewWriterSize(&ctxWriter{ctx: ctx, w: &buf}, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	r, err := buf.reader()
	if err != nil {
		f.Close()
		return err
	}
	if _, err := io.Copy(&ctxWriter{ctx: ctx, w: f}, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ctxWriter fails every write once ctx is done, so a long write stops.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// holdBuffer keeps content in memory up to memoryLimit bytes, then in an
// unlinked temporary file.
type holdBuffer struct {
	mem  bytes.Buffer
	file *os.File
}

func (h *holdBuffer) Write(p []byte) (int, error) {
	if h.file == nil && h.mem.Len()+len(p) > memoryLimit {
		f, err := os.CreateTemp("", "hlomem-hold-*")
		if err == nil {
			os.Remove(f.Name())
			if _, err := f.Write(h.mem.Bytes()); err != nil {
				f.Close()
				return 0, err
			}
			h.file, h.mem = f, bytes.Buffer{}
		}
	}
	if h.file != nil {
		return h.file.Write(p)
	}
	return h.mem.Write(p)
}

func (h *holdBuffer) reader() (io.Reader, error) {
	if h.file == nil {
		return bytes.NewReader(h.mem.Bytes()), nil
	}
	if _, err := h.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return h.file, nil
}

func (h *holdBuffer) close() {
	if h.file != nil {
		h.file.Close()
	}
}

// pending are the temporary files being written, removed by Abandon.
var pending = &tempFiles{names: map[string]bool{}}

type tempFiles struct {
	mu    sync.Mutex
	names map[string]bool
}

func (t *tempFiles) add(name string) {
	t.mu.Lock()
	t.names[name] = true
	t.mu.Unlock()
}

func (t *tempFiles) remove(name string) {
	t.mu.Lock()
	delete(t.names, name)
	t.mu.Unlock()
}

// Abandon removes every temporary file a Write in progress has made, for
// a process about to exit at once (a second interrupt): the paths they
// were to replace stay as they were.
func Abandon() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	for name := range pending.names {
		os.Remove(name)
		delete(pending.names, name)
	}
}
