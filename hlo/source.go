package hlo

// Reading HLO text. Inputs come from files, pipes and terminals, so reading
// is bounded: a device such as /dev/zero or an endless pipe must give an
// error, not exhaust memory. (A NUL byte, which HLO text never holds, ends
// the read at once.) The bound, MaxSourceSize, is far above real
// dumps (the largest module of the corpus, Mixtral 8x7B with 43,714
// instructions, is 4 MB) and below the 2 GiB that the lexer's 32-bit token
// offsets can address.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxSourceSize is the largest HLO text ParseFile and ParseReader read:
// 1 GiB.
const MaxSourceSize = 1 << 30

// sourceLimit is MaxSourceSize; tests lower it.
var sourceLimit int64 = MaxSourceSize

// SizeError reports an input longer than the limit a reader accepts.
type SizeError struct {
	File  string
	Limit int64
}

func (e *SizeError) Error() string {
	limit := fmt.Sprintf("%d bytes", e.Limit)
	if e.Limit >= 1<<30 && e.Limit%(1<<30) == 0 {
		limit = fmt.Sprintf("%d GiB", e.Limit>>30)
	}
	return fmt.Sprintf("%s: input larger than %s, the most hlomem reads", e.File, limit)
}

// ParseFile reads and parses every module in the named file. A directory,
// or a file larger than MaxSourceSize, is an error.
func ParseFile(path string) ([]*Module, error) {
	return ParseFileContext(context.Background(), path)
}

// ParseFileContext is ParseFile that stops, returning ctx's error, once
// ctx is done, while reading or parsing.
func ParseFileContext(ctx context.Context, path string) ([]*Module, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &Error{File: path, Msg: "is a directory, not a file"}
	}
	if fi.Mode().IsRegular() && fi.Size() > sourceLimit {
		return nil, &SizeError{File: path, Limit: sourceLimit}
	}
	return parseReader(ctx, path, f, fi.Size())
}

// ParseReader reads r to its end and parses every module in it; filename
// names the input in error messages (hlomem uses "<stdin>" for standard
// input). Reading more than MaxSourceSize bytes is an error.
func ParseReader(filename string, r io.Reader) ([]*Module, error) {
	return parseReader(context.Background(), filename, r, 0)
}

// ParseReaderContext is ParseReader that stops, returning ctx's error,
// once ctx is done, while reading or parsing. A read that blocks (a pipe
// no one writes to) is given up when ctx is done; the reader is then left
// to its caller.
func ParseReaderContext(ctx context.Context, filename string, r io.Reader) ([]*Module, error) {
	return parseReader(ctx, filename, r, 0)
}

// parseReader is ParseReader with the input's size when known (0 if not),
// so that a file is read into one allocation of the right size. HLO text
// holds no NUL byte, so one ends the read at once: the input is binary (a
// serialized HloModuleProto, or /dev/zero), and reading on would only
// fill memory.
func parseReader(ctx context.Context, filename string, r io.Reader, size int64) ([]*Module, error) {
	if ctx.Done() == nil {
		src, err := readSource(ctx, filename, r, size)
		if err != nil {
			return nil, err
		}
		return parseDetached(ctx, filename, src)
	}
	// A read may block (a pipe no one writes to) where ctx cannot reach
	// it: it runs on its own, and ctx's end returns at once.
	type result struct {
		src string
		err error
	}
	done := make(chan result, 1)
	go func() {
		src, err := readSource(ctx, filename, r, size)
		done <- result{src, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		return parseDetached(ctx, filename, res.src)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// parseDetached parses src, which no one else holds, into modules that
// do not keep it alive (detach).
func parseDetached(ctx context.Context, filename, src string) ([]*Module, error) {
	mods, err := ParseStringContext(ctx, filename, src)
	if err != nil {
		return nil, err
	}
	detach(mods)
	return mods, nil
}

// readSource reads r to its end (parseReader).
func readSource(ctx context.Context, filename string, r io.Reader, size int64) (string, error) {
	var b strings.Builder
	if size > 0 && size <= sourceLimit {
		b.Grow(int(size))
	}
	buf := make([]byte, 64<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		k, err := r.Read(buf)
		if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
			return "", &Error{File: filename, Msg: fmt.Sprintf("binary data (a NUL byte at offset %d), not HLO text", n+int64(i))}
		}
		b.Write(buf[:k])
		n += int64(k)
		if n > sourceLimit {
			return "", &SizeError{File: filename, Limit: sourceLimit}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return b.String(), nil
}
