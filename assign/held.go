package assign

// The values an allocation holds, indexed by live range for the
// interference test of MaybeAssignBuffer. Any two values held in one
// allocation overlap in time at most at one point, where one ends as the
// other starts (they were admitted only if they did not interfere, and the
// values of one buffer have chained ranges). So for a range [s, e] the only
// held values that can interfere are the last one starting before s (and
// others starting at that same time) and those starting within [s, e]: a
// second value starting before s and reaching s would overlap the first in
// more than one point. The index keeps the values sorted by (start, end, ID)
// in chunks, so adding a value and finding those candidates take
// logarithmic time plus the candidates, instead of a scan of everything the
// allocation holds (quadratic on long chains of values sharing one
// allocation). The exact test stays interferes; Check checks the
// finished plan independently.

import (
	"sort"

	"github.com/hlomem/hlomem/liveness"
)

const heldChunk = 256

// heldItem is a held value and its live range. The times fit 32 bits: an
// analysis has at most liveness.MaxValues (2^23) subshape positions, so
// fewer instructions, so fewer schedule steps. Half the width of ints
// matters on long chains, where one allocation holds most of the values.
type heldItem struct {
	start, end int32
	v          *liveness.Value
}

func (x heldItem) less(y heldItem) bool {
	if x.start != y.start {
		return x.start < y.start
	}
	if x.end != y.end {
		return x.end < y.end
	}
	return x.v.ID < y.v.ID
}

type heldIndex struct {
	chunks [][]heldItem
	// unscheduled counts held values outside the schedule, which interfere
	// with everything.
	unscheduled int
}

func (h *heldIndex) add(v *liveness.Value) {
	if !v.Scheduled {
		h.unscheduled++
		return
	}
	it := heldItem{int32(v.Range.Start), int32(v.Range.End), v}
	if len(h.chunks) == 0 {
		h.chunks = [][]heldItem{{it}}
		return
	}
	// Past the end of a full last chunk (values come mostly in time
	// order): a new chunk, so that chunks filled in order stay full
	// rather than split in halves.
	if last := h.chunks[len(h.chunks)-1]; len(last) >= heldChunk && !it.less(last[len(last)-1]) {
		h.chunks = append(h.chunks, []heldItem{it})
		return
	}
	// The last chunk whose first item is not after it.
	ci := sort.Search(len(h.chunks), func(i int) bool { return it.less(h.chunks[i][0]) }) - 1
	if ci < 0 {
		ci = 0
	}
	c := h.chunks[ci]
	k := sort.Search(len(c), func(i int) bool { return it.less(c[i]) })
	c = append(c, heldItem{})
	copy(c[k+1:], c[k:])
	c[k] = it
	if len(c) > heldChunk {
		half := len(c) / 2
		right := append([]heldItem(nil), c[half:]...)
		c = c[:half:half]
		h.chunks = append(h.chunks, nil)
		copy(h.chunks[ci+2:], h.chunks[ci+1:])
		h.chunks[ci+1] = right
	}
	h.chunks[ci] = c
}

// candidates calls f for every held value that may overlap [s, e] (see the
// comment at the top of the file) until f returns true, and reports
// whether it did.
func (h *heldIndex) candidates(s64, e64 int, f func(*liveness.Value) bool) bool {
	s, e := int32(s64), int32(e64)
	// First position whose start is at least s.
	ci := sort.Search(len(h.chunks), func(i int) bool {
		c := h.chunks[i]
		return c[len(c)-1].start >= s
	})
	k := 0
	if ci < len(h.chunks) {
		c := h.chunks[ci]
		k = sort.Search(len(c), func(i int) bool { return c[i].start >= s })
	}
	// Backwards: the values starting at the last start before s.
	bi, bk := ci, k
	predStart := int32(-1)
	for {
		bk--
		if bk < 0 {
			bi--
			if bi < 0 {
				break
			}
			bk = len(h.chunks[bi]) - 1
		}
		it := h.chunks[bi][bk]
		if predStart >= 0 && it.start != predStart {
			break
		}
		predStart = it.start
		if it.end >= s && f(it.v) {
			return true
		}
	}
	// Forwards: the values starting within [s, e].
	for ; ci < len(h.chunks); ci, k = ci+1, 0 {
		c := h.chunks[ci]
		for ; k < len(c); k++ {
			if c[k].start > e {
				return false
			}
			if f(c[k].v) {
				return true
			}
		}
	}
	return false
}
