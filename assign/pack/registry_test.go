package pack

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegistry: every packer has one name, Algorithms lists them in the
// registry's order, and PackerNamed finds each and nothing else.
func TestRegistry(t *testing.T) {
	names := Algorithms()
	require.True(t, len(names) == len(packers) && names[0] == "auto", "Algorithms() = %v", names)
	for i, p := range packers {
		require.True(t, p.Name() == names[i] && slices.Index(names, p.Name()) == i,
			"packer %d: name %q, Algorithms has %q (first at %d)", i, p.Name(), names[i], slices.Index(names, p.Name()))
		q, ok := PackerNamed(p.Name())
		require.True(t, ok && q.Name() == p.Name(), "PackerNamed(%q) = %v, %v", p.Name(), q, ok)
	}
	_, ok := PackerNamed("magic")
	require.False(t, ok, "PackerNamed(magic) found a packer")
}
