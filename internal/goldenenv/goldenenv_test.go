package goldenenv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSet(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		t.Setenv(Var, v)
		require.Equal(t, want, Set(), "%s=%q", Var, v)
	}
}
