package hlo

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// endless is an endless reader of one byte: /dev/zero (0), or `yes`
// without newlines.
type endless byte

func (c endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// TestParseReaderBounded: an endless input is an error after the limit,
// not a read without end.
func TestParseReaderBounded(t *testing.T) {
	defer func(l int64) { sourceLimit = l }(sourceLimit)
	sourceLimit = 1 << 16
	_, err := ParseReader("<stdin>", endless('x'))
	var se *SizeError
	if !errors.As(err, &se) {
		t.Fatalf("ParseReader(endless) = %v, want a *SizeError", err)
	}
	if got, want := err.Error(), "<stdin>: input larger than 65536 bytes, the most hlomem reads"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Exactly the limit is accepted (and then fails to parse as HLO).
	_, err = ParseReader("x.hlo", io.LimitReader(endless(' '), sourceLimit))
	if errors.As(err, &se) || err == nil {
		t.Errorf("input of exactly the limit: got %v, want a parse error", err)
	}
}

// TestParseReaderBinary: a NUL byte ends the read at once: binary data
// (/dev/zero, a serialized proto) is not HLO text.
func TestParseReaderBinary(t *testing.T) {
	_, err := ParseReader("/dev/zero", endless(0))
	if want := "/dev/zero: binary data (a NUL byte at offset 0), not HLO text"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, err = ParseReader("m.pb", strings.NewReader("HloModule m\x00"))
	if want := "m.pb: binary data (a NUL byte at offset 11), not HLO text"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestParseFileLimits: a file above the limit is refused from its size,
// before reading; a directory is refused with a clear message.
func TestParseFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.hlo")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: no disk space, no time.
	if err := f.Truncate(MaxSourceSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ParseFile(big)
	if want := big + ": input larger than 1 GiB, the most hlomem reads"; err == nil || err.Error() != want {
		t.Errorf("ParseFile(big) = %v, want %q", err, want)
	}
	_, err = ParseFile(dir)
	if want := dir + ": is a directory, not a file"; err == nil || err.Error() != want {
		t.Errorf("ParseFile(dir) = %v, want %q", err, want)
	}
}

// TestByteOrderMark: a UTF-8 byte-order mark at the start is skipped, and
// columns on the first line do not count it.
func TestByteOrderMark(t *testing.T) {
	const text = "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n"
	mods, err := ParseString("bom.hlo", "\uFEFF"+text)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ParseString("plain.hlo", text)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mods[0].String(), plain[0].String(); got != want {
		t.Errorf("with a byte-order mark:\n%s\nwithout:\n%s", got, want)
	}
	_, err = ParseString("bom.hlo", "\uFEFFHloModule m, = 1\n")
	if err == nil || !strings.HasPrefix(err.Error(), "bom.hlo:1:") {
		t.Fatalf("got %v, want an error on line 1", err)
	}
	_, err2 := ParseString("bom.hlo", "HloModule m, = 1\n")
	if err.Error() != err2.Error() {
		t.Errorf("with a byte-order mark: %v\nwithout: %v", err, err2)
	}
	// A mark anywhere else is not skipped.
	if _, err := ParseString("x.hlo", "HloModule m\n\uFEFFENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n"); err == nil {
		t.Errorf("a byte-order mark on line 2 was accepted")
	}
}
