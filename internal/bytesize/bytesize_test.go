package bytesize

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "12B": 12, "2KiB": 2048, "2kb": 2048, " 16 MiB ": 16 << 20,
		"16MB": 16 << 20, "32GiB": 32 << 30, "1TiB": 1 << 40, "1tb": 1 << 40,
	} {
		got, err := Parse(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-1", "1.5GiB", "GiB", "12 apples", "4194305TiB", "9223372036854775807"} {
		_, err := Parse(in)
		require.Error(t, err, in)
	}
}
