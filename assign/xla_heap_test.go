package assign

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestXLAHeapOrders checks the two orders of XLA's heap and the tie that
// keeps the spatial one.
func TestXLAHeapOrders(t *testing.T) {
	ivs := []xlaHeapInterval{
		{id: 0, size: 10, start: 0, end: 5, shareWith: -1},
		{id: 1, size: 20, start: 1, end: 2, shareWith: -1},
		{id: 2, size: 10, start: 3, end: 4, shareWith: -1},
	}
	h := newXLAHeap(ivs, 1)
	// Spatial: 1 (largest) at 0, then 0 (longer) above it, then 2 in the
	// gap below 0.
	sp := h.run(false)
	require.Equal(t, []int64{20, 0, 0}, sp.off)
	require.Equal(t, int64(30), sp.height)
	// Temporal: 0 (longest) at 0, then 1 (larger) and 2 above it.
	tp := h.run(true)
	require.Equal(t, []int64{0, 10, 10}, tp.off)
	require.Equal(t, int64(30), tp.height)
	best := xlaBestHeap(ivs, 1)
	require.False(t, best.temporal, "a tie keeps the spatial heap")
}

// TestXLAHeapColocations checks that an interval is placed where it and
// every colocation fit over their own time ranges, aligned, and that the
// colocations take its offset.
func TestXLAHeapColocations(t *testing.T) {
	ivs := []xlaHeapInterval{
		{id: 0, size: 8, start: 0, end: 1, shareWith: -1},
		{id: 1, size: 8, start: 3, end: 5, shareWith: -1},
		{id: 2, size: 8, start: 4, end: 6, shareWith: 0}, // takes 0's address
		{id: 3, size: 0, start: 7, end: 7, shareWith: -1},
	}
	// Spatial: 1 and 2 last longer than 0, but only 1 needs a place of its
	// own, so 1 goes first at 0; 0 must avoid 1 over its colocation's
	// range, so it goes at the next aligned offset, and 2 with it.
	sp := newXLAHeap(ivs, 16).run(false)
	require.Equal(t, []int64{16, 0, 16, 0}, sp.off)
	require.Equal(t, int64(24), sp.height)
	// Temporal: 0 spans 0-6 with its colocation and goes first.
	tp := newXLAHeap(ivs, 16).run(true)
	require.Equal(t, []int64{0, 16, 0, 0}, tp.off)
	require.Equal(t, int64(24), tp.height)
}

// TestXLAHeapBestFit checks the choice among free chunks: the smallest
// that holds the buffer, ties to the lowest offset, and the space above
// everything only when no gap holds it.
func TestXLAHeapBestFit(t *testing.T) {
	ivs := []xlaHeapInterval{
		{id: 0, size: 100, start: 0, end: 9, shareWith: -1},
		{id: 1, size: 30, start: 0, end: 9, shareWith: -1},
		{id: 2, size: 50, start: 0, end: 9, shareWith: -1},
		{id: 3, size: 60, start: 0, end: 1, shareWith: -1},
		{id: 4, size: 20, start: 2, end: 3, shareWith: -1},
		{id: 5, size: 20, start: 2, end: 3, shareWith: -1},
	}
	// Spatial order 0, 3, 2, 1, 4, 5: 0 at 0, 3 at 100, 2 at 160, 1 at 210;
	// over times 2-3 the free chunks are [100, 160) and [240, inf): 4 takes
	// the smaller one's start, 5 the rest of it.
	sp := newXLAHeap(ivs, 1).run(false)
	require.Equal(t, []int64{0, 210, 160, 100, 100, 120}, sp.off)
}
