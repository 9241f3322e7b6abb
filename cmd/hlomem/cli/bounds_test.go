package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/internal/corpus"
)

// run runs hlomem in-process and returns its standard output.
func run(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errs)
	require.Zero(t, code, "hlomem %s: %s", strings.Join(args, " "), errs.String())
	return out.Bytes()
}

// TestPrintedBoundsAgreeCorpus: on the bundled demo (issue 9's example: the JSON
// lower bound used to exceed both the dump's peak and the total assign
// achieved) and the paired torch-xla dumps, every output tells one story.
// liveness' lower bound (any target) is at most assign's (the target's
// reuse rule), which is at most the total; the temp heaps' bound is at
// most the temp bytes; and liveness' JSON xla_peak is the peak the
// XLA-format dump prints.
func TestPrintedBoundsAgreeCorpus(t *testing.T) {
	files := []string{"../../../testdata/demo.hlo"}
	if corpus.Dir() != "" {
		files = append(files, corpus.Glob(t, "paired/*/*after_optimizations.txt")...)
	}
	peakRe := regexp.MustCompile(`(?m)^  Live ranges at (\d+) \(peak\):$`)
	usageRe := regexp.MustCompile(`(?m)^  Stack trace breakdown for peak usage: ([\d ]+) bytes$`)
	for _, f := range files {
		var lv []struct {
			LowerBound struct {
				Bytes int64 `json:"bytes"`
				Time  int   `json:"time"`
			} `json:"lower_bound"`
			XLAPeak struct {
				Bytes int64 `json:"bytes"`
				Time  int   `json:"time"`
			} `json:"xla_peak"`
		}
		require.NoError(t, json.Unmarshal(run(t, "liveness", "--format=json", f), &lv))
		var as []struct {
			Total      int64 `json:"total_bytes"`
			Temp       int64 `json:"temp_bytes"`
			LowerBound int64 `json:"lower_bound"`
			TempLower  int64 `json:"temp_lower_bound"`
		}
		require.NoError(t, json.Unmarshal(run(t, "assign", "--format=json", f), &as))
		dump := string(run(t, "liveness", f))
		require.Len(t, lv, 1, f)
		require.Len(t, as, 1, f)
		l, a := lv[0], as[0]
		require.Positive(t, l.LowerBound.Bytes, f)
		require.LessOrEqual(t, l.LowerBound.Bytes, a.LowerBound, "%s: liveness' bound above assign's", f)
		require.LessOrEqual(t, a.LowerBound, a.Total, "%s: lower bound above the total", f)
		require.LessOrEqual(t, a.TempLower, a.Temp, "%s: temp lower bound above the temp bytes", f)
		m := peakRe.FindStringSubmatch(dump)
		require.NotNil(t, m, "%s: the dump has a peak", f)
		require.Equal(t, m[1], strconv.Itoa(l.XLAPeak.Time), "%s: JSON and dump name the same peak step", f)
		u := usageRe.FindStringSubmatch(dump)
		require.NotNil(t, u, f)
		require.Equal(t, strings.ReplaceAll(u[1], " ", ""), strconv.FormatInt(l.XLAPeak.Bytes, 10), "%s: JSON and dump give the same peak bytes", f)
	}
	t.Logf("%d modules", len(files))
}
