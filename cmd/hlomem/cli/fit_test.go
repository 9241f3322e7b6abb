package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
	// A pipe of hlomem commands: each reads the one before's output.
	var in string
	var code int
	for _, part := range strings.Split(cmd, " | ") {
		words := strings.Fields(part)
		require.Equal(t, "hlomem", words[0], cmd)
		var out, errs bytes.Buffer
		code = Main(words[1:], strings.NewReader(in), &out, &errs)
		in = out.String()
		if code != 0 && strings.Contains(cmd, " | ") && part != cmd[strings.LastIndex(cmd, " | ")+3:] {
			require.Equal(t, 0, code, "%s: %s", part, errs.String())
		}
	}
	return code, in
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

// sgdStep is an SGD update: donating w lets the update take its buffer.
const sgdStep = `HloModule sgd

ENTRY %train_step (w: f32[64,32], g: f32[64,32]) -> f32[64,32] {
  %w = f32[64,32]{1,0} parameter(0), metadata={op_name="params['w']"}
  %g = f32[64,32]{1,0} parameter(1), metadata={op_name="grads['w']"}
  ROOT %u = f32[64,32]{1,0} subtract(%w, %g)
}
`

// TestFitEmitCommands: the donation lever's and the combination's
// commands (hlomem fit --emit=... | hlomem assign/run -) reproduce their
// figures from the module the lever made: the plan's total, whether it
// runs on the device, the combination's peak; donate_argnums names the
// donated set only.
func TestFitEmitCommands(t *testing.T) {
	t.Setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
	file := filepath.Join(t.TempDir(), "sgd.hlo")
	require.NoError(t, os.WriteFile(file, []byte(sgdStep), 0o644))
	var out, errs bytes.Buffer
	code := Main([]string{"fit", "--device=custom:24000", "--format=json", file}, strings.NewReader(""), &out, &errs)
	require.Equal(t, exitInfeasible, code, errs.String())
	var reps []fit.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &reps), out.String())
	r := reps[0]
	var don *fit.Lever
	for _, l := range r.Levers {
		if l.Name == "donation" {
			don = l
		}
	}
	require.NotNil(t, don)
	require.True(t, don.Applies && don.Fits && don.Saved > 0, "%+v", don)
	require.Equal(t, []string{"jax.jit(f, donate_argnums=(0,))"}, don.Change)
	require.Len(t, don.Commands, 2)
	c, stdout := hlomemExit(t, don.Commands[0])
	require.Equal(t, 0, c, don.Commands[0])
	require.Contains(t, stdout, `"total_bytes": `+itoa(don.Total), don.Commands[0])
	c, _ = hlomemExit(t, don.Commands[1])
	require.Equal(t, 0, c, don.Commands[1])

	cb := r.Combination
	require.True(t, cb.Fits, "%+v", cb)
	require.Equal(t, []string{"donation"}, cb.Levers)
	c, stdout = hlomemExit(t, cb.Commands[0])
	require.Equal(t, 0, c, cb.Commands[0])
	m := runPeak.FindAllStringSubmatch(stdout, -1)
	require.NotEmpty(t, m)
	require.Equal(t, assign.HumanBytes(cb.Need), m[len(m)-1][1], cb.Commands[0])

	// A lever that changed nothing has no module to print.
	c, _ = hlomemExit(t, "hlomem fit --device=custom:24000 --emit=offload "+file)
	require.Equal(t, exitFailure, c)
}

// TestFitTPURematCommand: on a TPU (run --device=tpu-* takes no
// --remat-limit) the remat lever's command pipes the rewritten module,
// printed by --emit=remat, into run, whose outcome is the lever's.
func TestFitTPURematCommand(t *testing.T) {
	var out, errs bytes.Buffer
	code := Main([]string{"fit", "--device=tpu-custom:660000", "--format=json", "../../../testdata/transformer.hlo"}, strings.NewReader(""), &out, &errs)
	require.Equal(t, exitInfeasible, code, errs.String())
	var reps []fit.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &reps), out.String())
	var checked int
	for _, l := range reps[0].Levers {
		if l.Name != "remat" {
			continue
		}
		require.True(t, l.Applies, "%+v", l)
		for _, cmd := range l.Commands {
			require.Contains(t, cmd, "--emit=remat")
			c, _ := hlomemExit(t, cmd)
			require.Equal(t, l.Fits, c == 0, "%s: exit %d, lever fits %v", cmd, c, l.Fits)
			checked++
		}
	}
	require.Equal(t, 1, checked)
}
