package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunRefusesWhatTheHostCannotHold: a run estimated to need more host
// memory than the limit exits 1 (exitFailure, not exitInfeasible, which
// is for the modelled device), writes nothing on stdout and names the
// flag; Go's out-of-memory crash never happens. run_hostmem.txtar holds
// the messages.
func TestRunRefusesWhatTheHostCannotHold(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.hlo")
	require.NoError(t, os.WriteFile(huge, []byte(`HloModule huge
ENTRY e {
  a = f32[1000000,1000000] parameter(0)
  ROOT b = f32[1000000,1000000] negate(a)
}
`), 0o644))
	small := filepath.Join(dir, "small.hlo")
	require.NoError(t, os.WriteFile(small, []byte(`HloModule small
ENTRY e {
  a = f32[8] parameter(0)
  ROOT b = f32[8] negate(a)
}
`), 0o644))
	args := filepath.Join(dir, "args.txt")
	require.NoError(t, os.WriteFile(args, []byte("0\n"), 0o644))
	for _, argv := range [][]string{
		{"run", "--inputs=random", huge},
		{"run", "--inputs=random", "--print", huge},
		{"run", "--arg=0", huge},
		{"run", "--inputs=" + args, huge},
		{"run", "--verify", "--inputs=random", "--host-memory=1GiB", huge},
		{"run", "--device=tpu-custom:16TiB", "--inputs=random", huge},
		{"run", "--inputs=random", "--host-memory=1MiB", small},
		{"run", "--verify", "--host-memory=1MiB", small},
		{"run", "--device=tpu-v5e", "--verify", "--host-memory=1MiB", small},
	} {
		var out, errs bytes.Buffer
		code := Main(argv, strings.NewReader(""), &out, &errs)
		require.Equal(t, exitFailure, code, "%v: %s", argv, errs.String())
		require.Empty(t, out.String(), "%v", argv)
		require.Contains(t, errs.String(), "of host memory, more than the limit of ", "%v", argv)
		require.True(t, strings.HasSuffix(errs.String(), "; raise the limit with --host-memory=SIZE\n"), "%v: %s", argv, errs.String())
	}
}

// TestRunSmallUnderDefaultLimit: the default limit (half of the machine's
// memory) lets a small module run, evaluated and shadowed, on the GPU
// target and on a TPU.
func TestRunSmallUnderDefaultLimit(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small.hlo")
	require.NoError(t, os.WriteFile(small, []byte(`HloModule small
ENTRY e {
  a = f32[1024,1024] parameter(0)
  ROOT b = f32[1024,1024] negate(a)
}
`), 0o644))
	out := string(run(t, "run", "--verify", "--inputs=random", small))
	require.Contains(t, out, "ok: planned run equals reference run")
	out = string(run(t, "run", "--device=tpu-v5e", "--verify", "--inputs=random", small))
	require.Contains(t, out, "equals the reference run")
}
