package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Unbounded dynamic shapes (f32[?], XLA's kUnboundedSize) and bounded ones
// (f32[<=8]) through every command.
const (
	unboundedHLO = `HloModule dyn

ENTRY main {
  p0 = f32[?]{0} parameter(0)
  p1 = f32[?,8]{1,0} parameter(1)
  n = f32[?]{0} negate(p0)
  ROOT t = (f32[?]{0}, f32[?,8]{1,0}) tuple(n, p1)
}
`
	boundedHLO = `HloModule bdyn

ENTRY main {
  p0 = f32[<=8]{0} parameter(0)
  n = f32[<=8]{0} negate(p0)
  ROOT a = f32[<=8]{0} add(n, p0)
}
`
)

// writeHLO writes src to a file of a fresh directory and returns its path.
func writeHLO(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	return p
}

// fails runs hlomem in-process, requires exit status 1 (bad input) and no
// output, and returns its standard error.
func fails(t *testing.T, args ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errs)
	require.Equal(t, exitFailure, code, "hlomem %s: %s", strings.Join(args, " "), out.String())
	require.Zero(t, out.Len())
	return errs.String()
}

// XLA prints "?" for an unbounded dimension and "<=N" for a bounded one
// (shape_test.cc, ShapeTest.DynamicShapeToString); fmt keeps both and is
// a fixed point.
func TestFmtDynamic(t *testing.T) {
	for name, src := range map[string]string{"u.hlo": unboundedHLO, "b.hlo": boundedHLO} {
		once := run(t, "fmt", writeHLO(t, name, src))
		twice := run(t, "fmt", writeHLO(t, name, string(once)))
		require.Equal(t, string(once), string(twice))
	}
	out := string(run(t, "fmt", writeHLO(t, "u.hlo", unboundedHLO)))
	require.Contains(t, out, "ENTRY %main (p0: f32[?], p1: f32[?,8]) -> (f32[?], f32[?,8]) {\n")
	require.Contains(t, out, "  %p1 = f32[?,8]{1,0} parameter(1)\n")
	require.Contains(t, string(run(t, "fmt", writeHLO(t, "b.hlo", boundedHLO))), "  %n = f32[<=8]{0} negate(%p0)\n")
}

// XLA's HloLiveRange::ToString (hlo/utils/hlo_live_range.cc) prints the
// live ranges of a module with unbounded shapes and, in place of the peak
// section, "Peak memory could not be determined due to unbounded dynamic
// shape." An unscheduled module keeps its own order (no size-weighing
// scheduler can order it); copy insertion still adds the copy of the
// parameter the root returns.
func TestLivenessDynamic(t *testing.T) {
	file := writeHLO(t, "u.hlo", unboundedHLO)
	for _, args := range [][]string{{"liveness"}, {"liveness", "--schedule=keep"}, {"liveness", "--peak-format=legacy"}} {
		out := string(run(t, append(args, file)...))
		require.True(t, strings.HasPrefix(out, "HloLiveRange (max 5):\n  InstructionSequence:\n    0:p0\n    1:p1\n    2:n\n"), out)
		require.Contains(t, out, "  BufferLiveRange:\n    p0{}:0-5\n")
		require.True(t, strings.HasSuffix(out, "\n  Peak memory could not be determined due to unbounded dynamic shape.\n"), out)
		require.NotContains(t, out, "(peak)")
	}
	out := string(run(t, "liveness", "--schedule=postorder", file))
	require.Contains(t, out, "Peak memory could not be determined due to unbounded dynamic shape.\n")

	msg := fails(t, "liveness", "--schedule=best", file)
	require.Equal(t, file+":4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown, so scheduler best, which weighs sizes, cannot order the module (keep and postorder can)\n", msg)
	for _, args := range [][]string{{"liveness", "--format=json"}, {"liveness", "--fuse"}} {
		msg := fails(t, append(args, file)...)
		require.True(t, strings.HasPrefix(msg, file+":4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown\n"), "%v: %s", args, msg)
	}

	// Bounded: sized at the bound, the peak as usual.
	out = string(run(t, "liveness", writeHLO(t, "b.hlo", boundedHLO)))
	require.Contains(t, out, "    p0{}: 32 bytes (cumulative: 96 bytes)\n")
}

// What needs sizes refuses an unbounded module with the instruction and
// its position, and plans a bounded one at its bounds (ShapeUtil::ByteSizeOf)
// plus one S32 runtime size per dimension (XLA:GPU's GetSizeOfShape,
// XLA:CPU's ShapeSizeBytes), while the live-range dump's peak counts the
// bounds alone (HloLiveRange::ToString: ByteSizeOf(shape, 8)).
func TestAssignDynamic(t *testing.T) {
	file := writeHLO(t, "u.hlo", unboundedHLO)
	for _, args := range [][]string{{"assign"}, {"assign", "--target=cpu"}, {"assign", "--format=json"}, {"report"},
		{"peak"}, {"run", "--verify"}, {"run", "--inputs=random"}} {
		msg := fails(t, append(args, file)...)
		require.True(t, strings.HasPrefix(msg, file+":4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown\n"), "%v: %s", args, msg)
		require.Contains(t, msg, file+":5:3: p1: unbounded dynamic shape f32[?,8]{1,0}: its size is unknown\n")
	}
	for _, target := range []string{"gpu", "cpu"} {
		out := string(run(t, "assign", "--target="+target, writeHLO(t, "b.hlo", boundedHLO)))
		require.Contains(t, out, "allocation 1: size 36, parameter 0, shape |f32[<=8]| at ShapeIndex {}:\n")
		require.Contains(t, out, " value: <0 p0 @0> (size=36,offset=0): f32[<=8]{0}\n")
		require.Contains(t, out, "    p0{}: 32 bytes (cumulative: 96 bytes)\n")
	}
}
