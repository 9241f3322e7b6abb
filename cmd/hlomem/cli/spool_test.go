package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpoolSpills: output beyond the spool's memory goes through a
// temporary file and comes out whole; a failing command still prints
// nothing; no file is left behind.
func TestSpoolSpills(t *testing.T) {
	defer func(n int) { spoolMemory = n }(spoolMemory)
	const src = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"
	// bad passes hlo.Verify, so its first module's output is spooled
	// before the second is refused.
	const bad = src + "\n// -----\n\nHloModule b\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] frobnicate(p)\n}\n"
	run := func(src string, args ...string) (string, int) {
		var out, errs bytes.Buffer
		code := Main(args, strings.NewReader(src), &out, &errs)
		return out.String(), code
	}
	want, code := run(src, "assign", "--format=json", "-")
	require.Zero(t, code)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	spoolMemory = 16
	got, code := run(src, "assign", "--format=json", "-")
	require.Zero(t, code)
	require.Equal(t, want, got)
	got, code = run(src, "assign", "--format=xla", "--align=3", "-")
	require.NotZero(t, code)
	require.Empty(t, got)
	got, code = run(bad, "liveness", "-")
	require.NotZero(t, code)
	require.Empty(t, got, "a command that fails after its output spilled prints nothing")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "temporary files left behind")
	s := &spool{}
	for i := 0; i < 100; i++ {
		s.WriteString("0123456789")
		s.WriteByte('\n')
	}
	require.NotNil(t, s.file, "the spool moved to a file")
	var b bytes.Buffer
	require.NoError(t, s.copyTo(context.Background(), &b))
	require.Equal(t, strings.Repeat("0123456789\n", 100), b.String())
	s.close()
}
