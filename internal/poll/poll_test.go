package poll

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOutputFailedFlushesEveryEveryth(t *testing.T) {
	calls := 0
	boom := errors.New("closed")
	flush := func() error { calls++; return boom }
	for i := 0; i < 3*Every; i++ {
		err := OutputFailed(i, flush)
		if Due(i) {
			require.ErrorIs(t, err, boom, "step %d", i)
		} else {
			require.NoError(t, err, "step %d", i)
		}
	}
	require.Equal(t, 3, calls)
	require.True(t, Due(Every-1))
	require.False(t, Due(0))
}
