package hlo

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
	require.ErrorAs(t, err, &se)
	require.EqualError(t, err, "<stdin>: input larger than 65536 bytes, the most hlomem reads")
	// Exactly the limit is accepted (and then fails to parse as HLO).
	_, err = ParseReader("x.hlo", io.LimitReader(endless(' '), sourceLimit))
	require.Error(t, err, "input of exactly the limit: want a parse error")
	require.NotErrorAs(t, err, &se, "input of exactly the limit: want a parse error")
}

// TestParseReaderBinary: a NUL byte ends the read at once: binary data
// (/dev/zero, a serialized proto) is not HLO text.
func TestParseReaderBinary(t *testing.T) {
	_, err := ParseReader("/dev/zero", endless(0))
	require.EqualError(t, err, "/dev/zero: binary data (a NUL byte at offset 0), not HLO text")
	_, err = ParseReader("m.pb", strings.NewReader("HloModule m\x00"))
	require.EqualError(t, err, "m.pb: binary data (a NUL byte at offset 11), not HLO text")
}

// TestParseFileLimits: a file above the limit is refused from its size,
// before reading; a directory is refused with a clear message.
func TestParseFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.hlo")
	f, err := os.Create(big)
	require.NoError(t, err)
	// A sparse file: no disk space, no time.
	require.NoError(t, f.Truncate(MaxSourceSize+1))
	f.Close()
	_, err = ParseFile(big)
	require.EqualError(t, err, big+": input larger than 1 GiB, the most hlomem reads")
	_, err = ParseFile(dir)
	require.EqualError(t, err, dir+": is a directory, not a file")
}

// TestByteOrderMark: a UTF-8 byte-order mark at the start is skipped, and
// columns on the first line do not count it.
func TestByteOrderMark(t *testing.T) {
	const text = "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n"
	mods, err := ParseString("bom.hlo", "\uFEFF"+text)
	require.NoError(t, err)
	plain, err := ParseString("plain.hlo", text)
	require.NoError(t, err)
	require.Equal(t, plain[0].String(), mods[0].String(), "with a byte-order mark (+) and without (-)")
	_, err = ParseString("bom.hlo", "\uFEFFHloModule m, = 1\n")
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "bom.hlo:1:"), "got %v, want an error on line 1", err)
	_, err2 := ParseString("bom.hlo", "HloModule m, = 1\n")
	require.EqualError(t, err, err2.Error(), "with a byte-order mark, and (want) without")
	// A mark anywhere else is not skipped.
	_, err = ParseString("x.hlo", "HloModule m\n\uFEFFENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n")
	require.Error(t, err, "a byte-order mark on line 2 was accepted")
}
