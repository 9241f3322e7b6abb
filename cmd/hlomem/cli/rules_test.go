package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// asyncHLO is XLA's hlo_live_range_test.cc
// AsyncInnerBufferOverlapsShortLivedOuterBuffer: inner_op, inside the
// async computation, starts at 0 under the current rules and at 4 under
// 2025's.
const asyncHLO = `HloModule AsyncInnerOverlap, is_scheduled=true

%async_wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %inner_op = f32[4] negate(%p)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %temp = f32[4] negate(%a)
  %outer = f32[4] negate(%temp)
  %async-start = ((f32[4]), f32[4], u32[]) async-start(%outer), async_execution_thread="host", calls=%async_wrapped
  %async-done = f32[4] async-done(%async-start)
  ROOT %result = f32[4] negate(%async-done)
}
`

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func TestLivenessXLARulesFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.hlo")
	require.NoError(t, os.WriteFile(file, []byte(asyncHLO), 0o644))
	type value struct {
		Name  string `json:"name"`
		Start int    `json:"start"`
	}
	type out struct {
		XLARules string   `json:"xla_rules"`
		Threads  []string `json:"execution_threads"`
		Sequence []string `json:"sequence"`
		Values   []value  `json:"values"`
	}
	read := func(args ...string) out {
		stdout, stderr, code := runCLI(t, append(append([]string{"liveness", "--format=json"}, args...), file)...)
		require.Equal(t, exitOK, code, stderr)
		var mods []out
		require.NoError(t, json.Unmarshal([]byte(stdout), &mods))
		require.Len(t, mods, 1)
		return mods[0]
	}
	start := func(o out, name string) int {
		for _, v := range o.Values {
			if v.Name == name {
				return v.Start
			}
		}
		t.Fatalf("no value %s in %v", name, o.Values)
		return -1
	}
	cur := read()
	require.Equal(t, "2026", cur.XLARules)
	require.Equal(t, 0, start(cur, "inner_op"))
	old := read("--xla-rules=2025")
	require.Equal(t, "2025", old.XLARules)
	require.Equal(t, 4, start(old, "inner_op"))
	// On main alone the async computation (on host) is left out.
	mainOnly := read("--execution-threads=main")
	require.Equal(t, []string{"main"}, mainOnly.Threads)
	require.Equal(t, []string{"a", "temp", "outer", "async-start", "async-done", "result"}, mainOnly.Sequence)

	_, stderr, code := runCLI(t, "liveness", "--xla-rules=2024", file)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, `unknown --xla-rules "2024"`)
	_, stderr, code = runCLI(t, "assign", "--execution-threads=main,,host", file)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "an empty thread name")

	// The XLA-format text is XLA's, without a word about the rules; the
	// report's header names them.
	stdout, stderr, code := runCLI(t, "liveness", "--xla-rules=2025", file)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "inner_op{}:4-")
	require.NotContains(t, stdout, "2025")
	stdout, stderr, code = runCLI(t, "report", "--what-if=false", "--xla-rules=2025", "--execution-threads=main", file)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "XLA rules 2025, execution threads main)")
	stdout, stderr, code = runCLI(t, "assign", "--format=json", "--xla-rules=2025", file)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, `"xla_rules": "2025"`)
	stdout, stderr, code = runCLI(t, "peak", "--xla-rules=2025", file)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "xla_rules=2025")
	// run takes the flags too (its evaluator has no async ops: a plain
	// module).
	plain := filepath.Join(t.TempDir(), "p.hlo")
	require.NoError(t, os.WriteFile(plain, []byte("HloModule p\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n"), 0o644))
	stdout, stderr, code = runCLI(t, "run", "--xla-rules=2025", "--execution-threads=main", "--inputs=random", plain)
	require.Equal(t, exitOK, code, stderr+stdout)
	_, stderr, code = runCLI(t, "run", "--xla-rules=x", plain)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, `unknown --xla-rules "x"`)
}
