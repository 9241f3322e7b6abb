// Package atomicfile writes output files whole or not at all: the content
// goes to a temporary file beside the target, which is renamed over it
// only once every byte is written and synced. An interrupted or failed
// write leaves the old file (or none) as it was.
package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes the file at path with the content write produces. An
// existing file keeps its permissions; a new one gets 0644. On any error,
// from write or from the file system, nothing at path changes and the
// temporary file is removed. A path that is a symbolic link is written
// through: the file it names is replaced, the link kept.
func Write(path string, write func(io.Writer) error) (err error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
