package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/internal/golden"
	"github.com/stretchr/testify/require"
)

// demoHLO is the bundled example at the repository root (make demo).
const demoHLO = "../../../testdata/demo.hlo"

// TestGoldenDemo runs each text output of the CLI on the bundled example and
// compares it whole with testdata/golden/NAME.golden. After an intended
// change of output, rewrite the files with
//
//	HLOMEM_UPDATE=1 go test ./cmd/hlomem/cli -run TestGoldenDemo
//
// and review the diff. The outputs are deterministic as they are: there is no
// timing in them, and the demo's temp heap reaches its lower bound, so the
// search of --algo=auto stops before its time budget matters.
func TestGoldenDemo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"liveness", []string{"liveness"}},
		{"liveness-json", []string{"liveness", "--format=json"}},
		{"assign", []string{"assign"}},
		{"assign-json", []string{"assign", "--format=json"}},
		{"assign-report", []string{"assign", "--format=report"}},
		{"assign-csv", []string{"assign", "--format=csv"}},
		{"fmt", []string{"fmt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string(nil), tc.args...), demoHLO)
			var stdout, stderr bytes.Buffer
			code := Main(args, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, exitOK, code, "hlomem %s: stderr:\n%s", strings.Join(args, " "), stderr.String())
			require.Empty(t, stderr.String())
			golden.Check(t, filepath.Join("testdata", "golden", tc.name+".golden"), stdout.Bytes())
		})
	}
}
