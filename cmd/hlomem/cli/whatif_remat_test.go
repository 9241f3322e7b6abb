package cli

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/report"
)

// rematRow is a remat row of hlomem report --format=json.
type rematRow struct {
	Lever      string   `json:"lever"`
	LowerBound int64    `json:"lower_bound"`
	Total      int64    `json:"total_bytes"`
	Error      string   `json:"error"`
	Command    string   `json:"command"`
	Limit      int64    `json:"remat_limit_bytes"`
	LimitLabel string   `json:"remat_limit"`
	Skipped    string   `json:"skipped"`
	Fits       *bool    `json:"fits"`
	AddedFLOPs *int64   `json:"added_flops"`
	AddedShare *float64 `json:"added_flops_percent"`
}

// reportRematRows runs hlomem report --format=json with args and returns
// the plan's total and its remat rows by lever.
func reportRematRows(t *testing.T, args ...string) (int64, map[string]rematRow) {
	t.Helper()
	var reports []struct {
		Total  int64      `json:"total_bytes"`
		WhatIf []rematRow `json:"what_if"`
	}
	require.NoError(t, json.Unmarshal(run(t, append([]string{"report", "--format=json"}, args...)...), &reports))
	require.Len(t, reports, 1)
	rows := map[string]rematRow{}
	for _, w := range reports[0].WhatIf {
		if strings.HasPrefix(w.Lever, "remat=") {
			rows[w.Lever] = w
		}
	}
	return reports[0].Total, rows
}

// TestWhatIfRematRows: the report's remat rows plan the module
// rematerialized to fit a limit: 90% of the plan's total by default, or
// with --device what the device offers, the figure hlomem run
// --device=NAME prints as its limit. Each row's command (hlomem assign
// --remat-limit=N --remat-algo=A) prints the row's total and its remat
// line the row's FLOPs, exit 2 when the row says it does not fit; the
// text and HTML outputs show the same figures as the JSON. A plan within
// the device's limit already gets a row saying so, with no command.
// remat=plan rows join once remat.Fit builds the plan algorithm
// (report.WhatIfRemats).
func TestWhatIfRematRows(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, device string
	}{{"default", ""}, {"tpu", "tpu-custom:480KiB"}} {
		// A small search budget keeps the report's schedule what-ifs quick.
		args := []string{"--schedule-budget=5000", transformerHLO}
		if tc.device != "" {
			args = append([]string{"--device=" + tc.device}, args...)
		}
		total, rows := reportRematRows(t, args...)
		require.Len(t, rows, len(report.WhatIfRemats), tc.name)
		w, ok := rows["remat=xla"]
		require.True(t, ok, tc.name)
		require.Empty(t, w.Error, tc.name)
		require.Empty(t, w.Skipped, tc.name)
		if tc.device == "" {
			require.Equal(t, total*report.RematShare/100, w.Limit, tc.name)
			require.Equal(t, "90% of this plan's total", w.LimitLabel, tc.name)
		} else {
			// The TPU's HBM, as hlomem run --device prints it.
			// (It runs out of that HBM: exit 2, the device line printed.)
			var o, e strings.Builder
			require.Equal(t, exitInfeasible, Main([]string{"run", "--device=" + tc.device, transformerHLO}, strings.NewReader(""), &o, &e), e.String())
			out := o.String()
			require.Contains(t, out, fmt.Sprintf("HBM %s (%d bytes)", assign.HumanBytes(w.Limit), w.Limit), tc.name)
			require.Contains(t, w.LimitLabel, "run --device="+tc.device, tc.name)
		}
		require.NotNil(t, w.Fits, tc.name)
		require.Equal(t, w.Total <= w.Limit, *w.Fits, tc.name)
		require.Less(t, w.Total, total, "%s: the rewrite is kept only when its plan is smaller", tc.name)

		// The command prints the row's figures.
		cmd := splitShell(t, w.Command)
		require.Contains(t, cmd, "--remat-limit="+strconv.FormatInt(w.Limit, 10), tc.name)
		require.Contains(t, cmd, "--remat-algo=xla", tc.name)
		var out, errs strings.Builder
		code := Main(cmd[1:], strings.NewReader(""), &out, &errs)
		if *w.Fits {
			require.Equal(t, exitOK, code, "%s: %s", tc.name, errs.String())
		} else {
			require.Equal(t, exitInfeasible, code, "%s: %s", tc.name, errs.String())
		}
		var plans []struct {
			Total      int64 `json:"total_bytes"`
			LowerBound int64 `json:"lower_bound"`
		}
		require.NoError(t, json.Unmarshal([]byte(out.String()), &plans), tc.name)
		require.Len(t, plans, 1)
		require.Equal(t, w.Total, plans[0].Total, "%s: %s", tc.name, w.Command)
		require.Equal(t, w.LowerBound, plans[0].LowerBound, "%s: %s", tc.name, w.Command)
		flops := fmt.Sprintf("+%d FLOPs (%.2f%% of the module's own", *w.AddedFLOPs, *w.AddedShare)
		require.Contains(t, errs.String(), flops, "%s: %s", tc.name, w.Command)
		require.Contains(t, errs.String(), fmt.Sprintf("-> %s (%d bytes)", assign.HumanBytes(w.Total), w.Total), tc.name)

		// Text and HTML: the same total and FLOPs.
		page := filepath.Join(dir, tc.name+".html")
		text := string(run(t, append([]string{"report", "--html=" + page}, args...)...))
		line := regexp.MustCompile(`(?m)^  remat=xla .*$`).FindString(text)
		require.NotEmpty(t, line, tc.name)
		require.Contains(t, line, " "+assign.HumanBytes(w.Total)+" ", tc.name)
		require.Contains(t, line, flops+")", tc.name)
		require.Contains(t, line, fmt.Sprintf("limit %s (%s)", assign.HumanBytes(w.Limit), w.LimitLabel), tc.name)
		require.Contains(t, text, "\n    "+w.Command+"\n", tc.name)
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		require.Contains(t, string(b), html.EscapeString(flops+")"), tc.name)
		require.Contains(t, string(b), html.EscapeString(w.Command), tc.name)
	}

	// A plan within the device's limit already: a row that says so.
	_, rows := reportRematRows(t, "--device=a100", transformerHLO)
	w := rows["remat=xla"]
	require.Contains(t, w.Skipped, "plan within the limit already", w)
	require.Empty(t, w.Command)
	require.Nil(t, w.Fits)
	out := string(run(t, "run", "--device=a100", transformerHLO))
	require.Contains(t, out, fmt.Sprintf("limit %s,", assign.HumanBytes(w.Limit)), "the client's limit run prints")
}

// TestWhatIfRematRefused: a module the remat pass refuses (an
// asynchronous computation, whose memory it does not model:
// remat.ErrUnsupported) gets a remat row saying why, and no command.
func TestWhatIfRematRefused(t *testing.T) {
	f := filepath.Join(t.TempDir(), "async.hlo")
	require.NoError(t, os.WriteFile(f, []byte(`HloModule m, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (p: f32[1024]) -> f32[512] {
  %p = f32[1024]{0} parameter(0)
  %n = f32[1024]{0} negate(%p)
  %rs-start = ((f32[1024]{0}), f32[512]{0}) reduce-scatter-start(%n), dimensions={0}, to_apply=%add, replica_groups={{0,1}}
  ROOT %rs-done = f32[512]{0} reduce-scatter-done(%rs-start)
}
`), 0o644))
	_, rows := reportRematRows(t, f)
	w := rows["remat=xla"]
	require.Contains(t, w.Skipped, "the remat pass refuses this module", w)
	require.Contains(t, w.Skipped, "asynchronously", w)
	require.Empty(t, w.Command)
	require.Empty(t, w.Error)
	text := string(run(t, "report", f))
	require.Regexp(t, `(?m)^  remat=xla +- +- +skipped: the remat pass refuses this module`, text)
}
