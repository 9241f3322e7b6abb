package schedule

import (
	"testing"
	"time"

	"github.com/hlomem/hlomem/internal/cputime"
	"github.com/stretchr/testify/require"
)

// TestCutoffCountsCPUTime: the searches' safety net counts the CPU time
// the process spends, not the time that goes by: a process that sleeps
// (as one starved by a busy machine waits) does not reach it, one that
// works does; the zero cutoff never passes.
func TestCutoffCountsCPUTime(t *testing.T) {
	require.False(t, newCutoff(0).passed())
	require.False(t, newCutoff(-time.Second).passed())
	if _, ok := cputime.Process(); !ok {
		t.Skip("this system reports no process CPU time: the cutoff counts wall-clock time")
	}
	c := newCutoff(50 * time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.False(t, c.passed(), "200 ms asleep passed a cutoff of 50 ms of CPU time")
	x := uint64(1)
	for i := 0; !c.passed(); i++ {
		for j := 0; j < 1<<16; j++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		require.Less(t, i, 1<<20, "the cutoff never passed while the process worked")
	}
	require.NotZero(t, x)
}
