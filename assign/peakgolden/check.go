package peakgolden

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/hlomem/hlomem/internal/atomicfile"
)

// Check measures files with opts and compares them with the golden file
// at path, or, with update, rewrites it. A comparison never writes; an
// update writes the file through a temporary file renamed into place
// (WriteFile), and reports what changed against the file it replaces when
// that one can be compared (same options, well formed).
//
// Errors are for what keeps the check from being made: unreadable input,
// a module that cannot be assigned, a missing or malformed golden file
// (ParseError), a golden file written with other options. A module out of
// tolerance is not an error: the Report says so (Report.Failed).
func Check(ctx context.Context, files []string, path string, opts Options, tol Tolerance, update bool) (*Report, error) {
	if err := tol.Validate(); err != nil {
		return nil, err
	}
	opts, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	lines, err := Measure(ctx, files, opts)
	if err != nil {
		return nil, err
	}
	data, err := Bytes(opts, lines)
	if err != nil {
		return nil, err
	}
	old, readErr := os.ReadFile(path)
	if readErr != nil && !(update && errors.Is(readErr, fs.ErrNotExist)) {
		if errors.Is(readErr, fs.ErrNotExist) {
			return nil, &MissingError{Path: path}
		}
		return nil, readErr
	}
	var r *Report
	var cmpErr error
	if readErr == nil {
		r, cmpErr = compareFile(path, old, opts, lines, tol)
		if cmpErr != nil && !update {
			return nil, cmpErr
		}
	}
	if !update {
		r.Modules = len(lines)
		return r, nil
	}
	if r == nil {
		r = &Report{File: path}
		if cmpErr != nil {
			r.Note = fmt.Sprintf("the old file was not compared: %v", cmpErr)
		}
	}
	r.Update, r.Modules = true, len(lines)
	if readErr == nil && bytes.Equal(old, data) {
		return r, nil
	}
	if err := WriteFile(path, data); err != nil {
		return nil, err
	}
	r.Wrote = true
	return r, nil
}

// MissingError is a check against a golden file that does not exist yet.
// It says no more: how to create the file is the caller's to say, in its
// own terms (hlomem peak --update, HLOMEM_UPDATE=1 in a Go test).
type MissingError struct {
	Path string
}

func (e *MissingError) Error() string { return e.Path + ": no such golden file" }

// Unwrap makes errors.Is(err, fs.ErrNotExist) hold.
func (e *MissingError) Unwrap() error { return fs.ErrNotExist }

// compareFile parses the golden file data and compares lines with it.
func compareFile(path string, data []byte, opts Options, lines []Line, tol Tolerance) (*Report, error) {
	g, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := sameOptions(g.Options, opts); err != nil {
		return nil, &ParseError{File: path, Line: 1, Msg: err.Error()}
	}
	return Compare(path, g, lines, tol), nil
}

// sameOptions refuses a golden file measured with other options: its
// figures would differ for that reason alone.
func sameOptions(file, run Options) error {
	for _, o := range []struct{ key, file, run string }{
		{"target", file.Target.Name, run.Target.Name},
		{"algorithm", file.Algorithm, run.Algorithm},
		{"schedule", file.Schedule, run.Schedule},
		{"xla_rules", string(file.XLARules.Effective()), string(run.XLARules.Effective())},
		{"execution_threads", strings.Join(file.ExecutionThreads, ","), strings.Join(run.ExecutionThreads, ",")},
	} {
		if o.file != o.run {
			show := func(s string) string {
				if s == "" {
					return "default"
				}
				return s
			}
			return fmt.Errorf("written with %s=%s, this run has %s=%s: run with the file's options, or rewrite it with --update", o.key, show(o.file), o.key, show(o.run))
		}
	}
	return nil
}

// WriteFile writes data to path through a temporary file in the same
// directory, renamed into place once complete, so that a run interrupted or
// failing midway leaves the file as it was. It creates the directory if
// needed and keeps an existing file's permissions; when path is a link, the
// file it links to is replaced and the link kept.
func WriteFile(path string, data []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
