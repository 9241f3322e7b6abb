package randhlo

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// TestGeneratedModulesAreValid parses and verifies many generated modules.
func TestGeneratedModulesAreValid(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		src := Generate(seed, Options{Instructions: 10 + int(seed%40)})
		m, err := hlo.ParseModule("rand.hlo", src)
		require.NoError(t, err, "seed %d\n%s", seed, src)
		require.NoError(t, hlo.Verify(m), "seed %d\n%s", seed, src)
		// True, not Equal: a diff of two whole modules would drown the message.
		require.True(t, Generate(seed, Options{Instructions: 10 + int(seed%40)}) == src, "seed %d: not deterministic", seed)
	}
}
