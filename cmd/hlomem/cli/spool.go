package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
)

// spool holds a command's output until the command has succeeded (Main
// then copies it to stdout, or drops it). Output up to spoolMemory bytes
// stays in memory; beyond that it goes to an unlinked temporary file, so
// the million-value dumps of a large module do not double the memory the
// plan itself takes.
type spool struct {
	// ctx, when set, fails every write once it is done, so a writer that
	// checks its errors stops.
	ctx  context.Context
	mem  bytes.Buffer
	file *os.File
	w    *bufio.Writer // on file
	err  error         // the first write error, reported by copyTo
}

// spoolMemory is the output size from which a spool moves to a file.
var spoolMemory = 32 << 20

func (s *spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.ctx != nil {
		if err := s.ctx.Err(); err != nil {
			return 0, err
		}
	}
	if s.file == nil && s.mem.Len()+len(p) > spoolMemory {
		s.spill()
	}
	if s.file != nil {
		n, err := s.w.Write(p)
		if err != nil {
			s.err = err
		}
		return n, err
	}
	return s.mem.Write(p)
}

func (s *spool) WriteString(p string) (int, error) {
	if s.file == nil && s.err == nil && s.mem.Len()+len(p) <= spoolMemory && (s.ctx == nil || s.ctx.Err() == nil) {
		return s.mem.WriteString(p)
	}
	return s.Write([]byte(p))
}

func (s *spool) WriteByte(c byte) error {
	_, err := s.Write([]byte{c})
	return err
}

// spill moves the output so far to a temporary file. The file is unlinked
// at once, so nothing is left behind whatever happens; if no file can be
// made the output stays in memory.
func (s *spool) spill() {
	f, err := os.CreateTemp("", "hlomem-output-*")
	if err != nil {
		return
	}
	os.Remove(f.Name())
	s.file, s.w = f, bufio.NewWriterSize(f, 1<<20)
	if _, err := s.w.Write(s.mem.Bytes()); err != nil {
		s.err = err
	}
	s.mem = bytes.Buffer{}
}

// copyTo writes the whole output to w, in pieces between which it looks
// at ctx: an interrupt stops a long copy.
func (s *spool) copyTo(ctx context.Context, w io.Writer) error {
	if s.err != nil {
		return s.err
	}
	var r io.Reader = bytes.NewReader(s.mem.Bytes())
	if s.file != nil {
		if err := s.w.Flush(); err != nil {
			return err
		}
		if _, err := s.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r = s.file
	}
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// close releases the temporary file, if any.
func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
	}
}
