package pack

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestXLAHeapOrders checks the two orders of XLA's heap and the tie that
// keeps the spatial one.
func TestXLAHeapOrders(t *testing.T) {
	ivs := []XLAInterval{
		{ID: 0, Size: 10, Start: 0, End: 5, ShareWith: -1},
		{ID: 1, Size: 20, Start: 1, End: 2, ShareWith: -1},
		{ID: 2, Size: 10, Start: 3, End: 4, ShareWith: -1},
	}
	h := newXLAHeapSim(ivs, 1)
	// Spatial: 1 (largest) at 0, then 0 (longer) above it, then 2 in the
	// gap below 0.
	sp := h.run(false)
	require.Equal(t, []int64{20, 0, 0}, sp.Off)
	require.Equal(t, int64(30), sp.Height)
	// Temporal: 0 (longest) at 0, then 1 (larger) and 2 above it.
	tp := h.run(true)
	require.Equal(t, []int64{0, 10, 10}, tp.Off)
	require.Equal(t, int64(30), tp.Height)
	best := XLAHeap(ivs, 1)
	require.False(t, best.Temporal, "a tie keeps the spatial heap")
}

// TestXLAHeapColocations checks that an interval is placed where it and
// every colocation fit over their own time ranges, aligned, and that the
// colocations take its offset.
func TestXLAHeapColocations(t *testing.T) {
	ivs := []XLAInterval{
		{ID: 0, Size: 8, Start: 0, End: 1, ShareWith: -1},
		{ID: 1, Size: 8, Start: 3, End: 5, ShareWith: -1},
		{ID: 2, Size: 8, Start: 4, End: 6, ShareWith: 0}, // takes 0's address
		{ID: 3, Size: 0, Start: 7, End: 7, ShareWith: -1},
	}
	// Spatial: 1 and 2 last longer than 0, but only 1 needs a place of its
	// own, so 1 goes first at 0; 0 must avoid 1 over its colocation's
	// range, so it goes at the next aligned offset, and 2 with it.
	sp := newXLAHeapSim(ivs, 16).run(false)
	require.Equal(t, []int64{16, 0, 16, 0}, sp.Off)
	require.Equal(t, int64(24), sp.Height)
	// Temporal: 0 spans 0-6 with its colocation and goes first.
	tp := newXLAHeapSim(ivs, 16).run(true)
	require.Equal(t, []int64{0, 16, 0, 0}, tp.Off)
	require.Equal(t, int64(24), tp.Height)
}

// TestXLAHeapBestFit checks the choice among free chunks: the smallest
// that holds the buffer, ties to the lowest offset, and the space above
// everything only when no gap holds it.
func TestXLAHeapBestFit(t *testing.T) {
	ivs := []XLAInterval{
		{ID: 0, Size: 100, Start: 0, End: 9, ShareWith: -1},
		{ID: 1, Size: 30, Start: 0, End: 9, ShareWith: -1},
		{ID: 2, Size: 50, Start: 0, End: 9, ShareWith: -1},
		{ID: 3, Size: 60, Start: 0, End: 1, ShareWith: -1},
		{ID: 4, Size: 20, Start: 2, End: 3, ShareWith: -1},
		{ID: 5, Size: 20, Start: 2, End: 3, ShareWith: -1},
	}
	// Spatial order 0, 3, 2, 1, 4, 5: 0 at 0, 3 at 100, 2 at 160, 1 at 210;
	// over times 2-3 the free chunks are [100, 160) and [240, inf): 4 takes
	// the smaller one's start, 5 the rest of it.
	sp := newXLAHeapSim(ivs, 1).run(false)
	require.Equal(t, []int64{0, 210, 160, 100, 100, 120}, sp.Off)
}
