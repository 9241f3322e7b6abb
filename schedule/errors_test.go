package schedule

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// TestUnknownScheduler: a name that is not a scheduler's is refused with
// an error of kind ErrUnknown, by Apply and, before any work, by Check.
func TestUnknownScheduler(t *testing.T) {
	m, err := hlo.ParseModule("k.hlo", "HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")
	require.NoError(t, err)
	a, err := liveness.AnalyzeUnscheduled(context.Background(), m, liveness.CheckAll)
	require.NoError(t, err)
	_, _, err = Apply(context.Background(), a, "magic", Options{})
	require.ErrorIs(t, err, ErrUnknown)
	require.ErrorIs(t, Check("magic"), ErrUnknown)
	require.NoError(t, Check(""))
}
