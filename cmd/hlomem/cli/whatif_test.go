package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/internal/corpus"
)

// runRemat runs hlomem with args and returns its output: exit 0, or with
// fits false (a remat row whose plan is over its limit), exit 2 with the
// output written. fits nil is a row of another lever: exit 0.
func runRemat(t *testing.T, fits *bool, args ...string) []byte {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errs)
	want := exitOK
	if fits != nil && !*fits {
		want = exitInfeasible
	}
	require.Equal(t, want, code, "hlomem %s: %s", strings.Join(args, " "), errs.String())
	return out.Bytes()
}

// splitShell splits a command line as a POSIX shell does the ones the
// report prints: words apart on spaces, single quotes around the others.
func splitShell(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, any := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			in, any = !in, true
		case r == ' ' && !in:
			if any {
				words = append(words, w.String())
			}
			w.Reset()
			any = false
		default:
			w.WriteRune(r)
			any = true
		}
	}
	require.False(t, in, "unterminated quote in %q", line)
	if any {
		words = append(words, w.String())
	}
	return words
}

// TestWhatIfCommandsReproduce: each what-if row of hlomem report prints
// the command line whose output has its figures, and running it gives
// them: the lower bound and the total of the row are the command's
// lower_bound and total_bytes. On the bundled transformer (the optimal
// row runs under the report's reduced budget, which its command names)
// and on a module XLA scheduled (jit_scan, whose search and optimal rows
// used to show list's order, 225 MiB above the module's own), with the
// report's options passed on to every command.
func TestWhatIfCommandsReproduce(t *testing.T) {
	scan := filepath.Join(corpus.Path(t, "paired-jax", "module_0073.jit_scan.0077"), "module_0073.jit_scan.sm_8.0_gpu_after_optimizations.txt")
	configs := [][]string{
		{transformerHLO},
		{"--fuse", "--algo=portfolio", "--schedule-budget=30000", "--target=cpu", scan},
		{scan},
		{"--target=tpu", scan},
	}
	if testing.Short() {
		configs = configs[:2] // the defaults, and options off their defaults
	}
	jitted := 0
	for _, args := range configs {
		var reports []struct {
			Module string `json:"module"`
			Total  int64  `json:"total_bytes"`
			WhatIf []struct {
				Lever      string `json:"lever"`
				LowerBound int64  `json:"lower_bound"`
				Total      int64  `json:"total_bytes"`
				Error      string `json:"error"`
				Command    string `json:"command"`
				JitPeak    int64  `json:"jit_peak_bytes"`
				Fits       *bool  `json:"fits"`
				Skipped    string `json:"skipped"`
			} `json:"what_if"`
		}
		require.NoError(t, json.Unmarshal(run(t, append([]string{"report", "--format=json"}, args...)...), &reports))
		require.Len(t, reports, 1)
		r := reports[0]
		require.NotEmpty(t, r.WhatIf)
		file := args[len(args)-1]
		ran := map[string]bool{}
		for _, w := range r.WhatIf {
			name := fmt.Sprintf("%s: %s", strings.Join(args, " "), w.Lever)
			require.Empty(t, w.Error, name)
			if w.Skipped != "" {
				require.Empty(t, w.Command, name)
				continue
			}
			cmd := splitShell(t, w.Command)
			require.Equal(t, file, cmd[len(cmd)-1], "%s: the input as the user named it", name)
			for _, a := range args[:len(args)-1] {
				if a == "--fuse" && (w.Lever == "fusion=off" || strings.HasPrefix(w.Lever, "jit=")) || strings.HasPrefix(a, "--algo=") && strings.HasPrefix(w.Lever, "packer=") {
					continue // what the lever changes (without jit, every nested program fuses)
				}
				require.Contains(t, cmd, a, "%s: the report's option is the command's", name)
			}
			if ran[w.Command] {
				continue
			}
			ran[w.Command] = true
			if strings.HasPrefix(w.Lever, "jit=") {
				require.Equal(t, []string{"hlomem", "run"}, cmd[:2], name)
				out := string(run(t, cmd[1:]...))
				require.Contains(t, out, fmt.Sprintf("\npeak without jit: %s (%d bytes)", assign.HumanBytes(w.Total), w.Total), "%s: %s", name, w.Command)
				require.Contains(t, out, fmt.Sprintf("\npeak with jit: %s (%d bytes)", assign.HumanBytes(w.JitPeak), w.JitPeak), "%s: %s", name, w.Command)
				jitted++
				continue
			}
			require.Equal(t, []string{"hlomem", "assign", "--format=json"}, cmd[:3], name)
			var plans []struct {
				Module     string `json:"module"`
				Total      int64  `json:"total_bytes"`
				LowerBound int64  `json:"lower_bound"`
			}
			out := runRemat(t, w.Fits, cmd[1:]...)
			require.NoError(t, json.Unmarshal(out, &plans), name)
			require.Len(t, plans, 1, name)
			require.Equal(t, r.Module, plans[0].Module, name)
			require.Equal(t, w.LowerBound, plans[0].LowerBound, "%s: %s", name, w.Command)
			require.Equal(t, w.Total, plans[0].Total, "%s: %s", name, w.Command)
		}
	}
	require.Equal(t, 2, jitted, "the transformer, not scheduled, has both jit=off rows; jit_scan, scheduled by XLA, none")
}
