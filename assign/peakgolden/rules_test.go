package peakgolden

import (
	"strings"
	"testing"

	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// The header records the live-range rules and the execution threads when
// they are not the defaults, reads them back, and a file written under
// other rules is refused by a run under the defaults.
func TestHeaderRules(t *testing.T) {
	def, err := Bytes(Options{}, nil)
	require.NoError(t, err)
	require.NotContains(t, string(def), "xla_rules")

	opts := Options{XLARules: liveness.Rules2025, ExecutionThreads: []string{"main"}}
	b, err := Bytes(opts, nil)
	require.NoError(t, err)
	head, _, _ := strings.Cut(string(b), "\n")
	require.Equal(t, "# hlomem peak v2 target=gpu algorithm=xla schedule=default xla_rules=2025 execution_threads=main", head)
	f, err := Parse("g.peak", b)
	require.NoError(t, err)
	require.Equal(t, liveness.Rules2025, f.Options.XLARules)
	require.Equal(t, []string{"main"}, f.Options.ExecutionThreads)

	run, err := Options{}.resolved()
	require.NoError(t, err)
	require.ErrorContains(t, sameOptions(f.Options, run), "written with xla_rules=2025, this run has xla_rules=2026")
	require.NoError(t, sameOptions(run, run))

	_, err = Parse("g.peak", []byte("# hlomem peak v2 target=gpu algorithm=xla schedule=default xla_rules=1999\n"))
	require.ErrorContains(t, err, "unknown XLA rules")
}
