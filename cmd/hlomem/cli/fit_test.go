package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/fit"
)

// hlomemExit runs a printed command (its first word "hlomem") and returns
// its exit code and standard output.
func hlomemExit(t *testing.T, cmd string) (int, string) {
	t.Helper()
	words := strings.Fields(cmd)
	require.Equal(t, "hlomem", words[0], cmd)
	var out, errs bytes.Buffer
	code := Main(words[1:], strings.NewReader(""), &out, &errs)
	return code, out.String()
}

var runPeak = regexp.MustCompile(`peak ([0-9.]+[KMGT]?i?B)`)

// TestFitCommands runs every command hlomem fit prints for the bundled
// transformer on a device its run does not fit as it is (the platform
// allocator, which gives the run the device's exact memory) and checks
// each one's figure: the verdict's run fails (exit 2); each remat
// command plans the lever's total and runs on the device as the lever
// says; the combination's command runs within the limit with the peak
// the combination says.
func TestFitCommands(t *testing.T) {
	t.Setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
	file := "../../../testdata/transformer.hlo"
	var out, errs bytes.Buffer
	code := Main([]string{"fit", "--device=custom:530000", "--format=json", file}, strings.NewReader(""), &out, &errs)
	require.Equal(t, exitInfeasible, code, errs.String())
	var reps []fit.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &reps), out.String())
	require.Len(t, reps, 1)
	r := reps[0]
	require.False(t, r.Verdict.Fits)
	c, _ := hlomemExit(t, r.Verdict.Command)
	require.Equal(t, exitInfeasible, c, r.Verdict.Command)

	var checked int
	for _, l := range r.Levers {
		for _, cmd := range l.Commands {
			c, stdout := hlomemExit(t, cmd)
			switch {
			case strings.Contains(cmd, "assign --format=json --remat-limit=") && !strings.Contains(cmd, "--remat-algo"):
				require.Contains(t, stdout, `"total_bytes": `+itoa(l.Total), cmd)
			case l.Name == "remat" && strings.Contains(cmd, "hlomem run"):
				require.Equal(t, l.Fits, c == 0, "%s: exit %d, lever fits %v", cmd, c, l.Fits)
			case l.Name == "allocator" && strings.Contains(cmd, "--preallocate=false"):
				// The verdict's outcome with preallocation off: the
				// details say it does not change it.
				require.NotEqual(t, 0, c, cmd)
			}
			checked++
		}
	}
	cb := r.Combination
	require.True(t, cb.Fits, "%+v", cb)
	c, stdout := hlomemExit(t, cb.Commands[0])
	require.Equal(t, 0, c, cb.Commands[0])
	m := runPeak.FindAllStringSubmatch(stdout, -1)
	require.NotEmpty(t, m)
	require.Equal(t, assign.HumanBytes(cb.Need), m[len(m)-1][1], cb.Commands[0])
	require.Greater(t, checked, 3)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
