package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/internal/golden"
	"github.com/stretchr/testify/require"
)

// The project's example of the round trip a CI job makes (README, "Catch
// memory regressions in CI"): testdata/peak/dump is a small XLA dump
// directory and testdata/peak/memory.peak its golden file.
const (
	exampleDump   = "../../../testdata/peak/dump"
	exampleGolden = "../../../testdata/peak/memory.peak"
)

// TestPeakExampleRoundTrip: the example's dump passes its committed
// golden file; a change that doubles the training batch fails the check
// with the sentence naming what grew; --update accepts it; the check then
// passes. The committed golden file is rewritten by HLOMEM_UPDATE=1
// (package assign/assigntest's TestExampleDump checks the same file).
func TestPeakExampleRoundTrip(t *testing.T) {
	if golden.Updating() {
		code, _, stderr := peak(t, "--golden="+exampleGolden, "--update", exampleDump)
		require.Equal(t, exitOK, code, stderr)
	}
	code, stdout, stderr := peak(t, "--golden="+exampleGolden, exampleDump)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Equal(t, "hlomem peak: "+exampleDump+": 2 HLO files, skipped 6: 4 not HLO (XLA's buffer assignments, memory reports, .dot, .pb, ...), 2 superseded (before_optimizations or pass dumps of a module with a later dump)\n"+
		"hlomem peak: planned for gpu, as XLA's dump file names say (--target to change)\n", stderr)
	require.Equal(t, `module jit_eval_step@64194617: ok (temp 2.04MiB, total 6.69MiB, lower bound 6.69MiB)
module jit_train_step@17696194: ok (temp 1.80MiB, total 3.74MiB, lower bound 3.74MiB)
2 modules within tolerance of `+exampleGolden+`: 2 same
`, stdout)

	// A copy of the dump and of its golden file, then the change: the
	// training batch goes from 128 to 256.
	work := t.TempDir()
	dump := filepath.Join(work, "dump")
	require.NoError(t, os.CopyFS(dump, os.DirFS(exampleDump)))
	memory := filepath.Join(work, "memory.peak")
	g, err := os.ReadFile(exampleGolden)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(memory, g, 0o644))
	step := filepath.Join(dump, "module_0001.jit_train_step.sm_8.0_gpu_after_optimizations.txt")
	src, err := os.ReadFile(step)
	require.NoError(t, err)
	grown := strings.ReplaceAll(string(src), "[128,", "[256,")
	require.NotEqual(t, string(src), grown)
	require.NoError(t, os.WriteFile(step, []byte(grown), 0o644))

	code, stdout, stderr = peak(t, "--golden="+memory, "--tolerance=1", dump)
	require.Equal(t, exitFailure, code, stderr)
	// The batch is in the entry signature, so the key changed: the only
	// compile of jit_train_step on each side is one module all the same.
	require.Equal(t, `module jit_eval_step@64194617: ok (temp 2.04MiB, total 6.69MiB, lower bound 6.69MiB)
module jit_train_step@1c1a2a76: temp grew 13.9% (1.80MiB → 2.05MiB), total grew 17.1% (3.74MiB → 4.38MiB) and lower bound grew 17.1% (3.74MiB → 4.38MiB), over the 1% tolerance; grew at the peak: x f32[256,784] 784.0KiB (was f32[128,784] 392.0KiB), loop_select_fusion f32[256,512] 512.0KiB (was f32[128,512] 256.0KiB); entry signature changed: the golden file has the module as jit_train_step@17696194 (line 4)
1 of 2 modules out of tolerance of `+memory+`: 1 same, 1 grew
`, stdout)
	require.True(t, strings.HasSuffix(stderr, "hlomem peak: out of tolerance; if the change is intended, rerun with --update and commit "+memory+"\n"), stderr)
	after, err := os.ReadFile(memory)
	require.NoError(t, err)
	require.Equal(t, string(g), string(after), "a failing check wrote the golden file")

	code, _, stderr = peak(t, "--golden="+memory, "--update", dump)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr = peak(t, "--golden="+memory, "--tolerance=1", dump)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
}

// TestPeakFailureOrder: a failed check prints its verdicts (stdout)
// before the hint to update (stderr), read as one stream as a terminal or
// a CI log shows them (2>&1).
func TestPeakFailureOrder(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "f.hlo")
	memory := filepath.Join(dir, "memory.peak")
	const hlo = `HloModule jit_f

ENTRY %main (x: f32[BATCH,256]) -> f32[BATCH,256] {
  %x = f32[BATCH,256]{1,0} parameter(0)
  %y = f32[BATCH,256]{1,0} exponential(%x)
  ROOT %z = f32[BATCH,256]{1,0} negate(%y)
}
`
	require.NoError(t, os.WriteFile(model, []byte(strings.ReplaceAll(hlo, "BATCH", "64")), 0o644))
	code, _, stderr := peak(t, "--golden="+memory, "--update", model)
	require.Equal(t, exitOK, code, stderr)
	require.NoError(t, os.WriteFile(model, []byte(strings.ReplaceAll(hlo, "BATCH", "128")), 0o644))

	var both bytes.Buffer
	code = Main([]string{"peak", "--golden=" + memory, model}, strings.NewReader(""), &both, &both)
	require.Equal(t, exitFailure, code, both.String())
	lines := strings.Split(strings.TrimSuffix(both.String(), "\n"), "\n")
	require.Len(t, lines, 3, both.String())
	require.Regexp(t, `^module jit_f\S*: total grew 100\.0% `, lines[0])
	require.Regexp(t, `^1 of 1 module out of tolerance of .*: 1 grew$`, lines[1])
	require.Equal(t, "hlomem peak: out of tolerance; if the change is intended, rerun with --update and commit "+memory, lines[2])
}
