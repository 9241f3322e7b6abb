package cli

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsageLineFromFlags: each command's usage line names every flag of
// its flag set, in the order they are defined, and ends with its
// arguments; a flag defined without a placeholder, around flagSet's
// methods, cannot reach a usage line.
func TestUsageLineFromFlags(t *testing.T) {
	for _, c := range commands {
		line := c.usage()
		fs := newFlagSet(c, &env{stderr: io.Discard})
		c.flags(fs, &env{})
		last := -1
		for _, d := range fs.docs {
			at := strings.Index(line, "[--"+d.name+"]")
			if at < 0 {
				at = strings.Index(line, "[--"+d.name+"=")
			}
			require.Greater(t, at, last, "hlomem %s: --%s out of place in %q", c.name, d.name, line)
			last = at
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		require.Len(t, fs.docs, n, "hlomem %s", c.name)
		require.True(t, strings.HasSuffix(line, "] "+c.args), "hlomem %s: %q", c.name, line)
	}
	bare := &command{name: "bare", args: "FILE", flags: func(fs *flagSet, _ *env) func([]string) error {
		fs.FlagSet.Int("n", 0, "a flag without a placeholder")
		return nil
	}}
	require.PanicsWithValue(t, "cli: hlomem bare: flag --n has no placeholder: define it with a flagSet method", func() { bare.usage() })
}
