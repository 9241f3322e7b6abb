package pack

// XLA's temp heap: GlobalDecreasingSizeBestFitHeap (xla/service/heap_simulator/
// heap_simulator.cc), run as ChooseBestHeapAlgorithm runs it, once sorted
// kSpatial and once kTemporal, keeping the smaller heap (the spatial one on a
// tie).
//
// The input is what a heap replay (assign/heap_replay.go) records, in XLA's
// event time: every Alloc opens an interval that needs a place; every
// ShareWith opens one that takes the address of the interval it shares with
// and is listed among that interval's colocations; every Free closes one.
// Each interval keeps its own size and its own time range.
//
// Finish sorts the intervals and places those that need a place, one at a
// time, each with its transitive colocations (the intervals that share its
// address, directly or through one another):
//
//   - kSpatial orders by size (largest first), then the interval's own
//     duration (longest first), then value id;
//   - kTemporal orders by the span from the earliest start to the latest end
//     over the interval and its colocations (longest first), then size
//     (largest first), then value id.
//
// A placement (FindChunkCandidate) collects the chunks already committed
// whose time ranges meet the interval's own or any colocation's, sorted by
// offset; the free chunks are the gaps between them, each starting at the
// aligned end of the chunk below, plus the unbounded space above them all.
// The interval goes at the start of the smallest free chunk that holds the
// largest size among it and its colocations, ties to the lowest offset.
// CommitChunk then records the chunk over the interval's time range and the
// same offset over each colocation's range, and the heap grows to the
// offset plus that largest size.
//
// XLA versions differ in the size of the chunks a colocation leaves in the
// interval tree: its own (2023-2025 sources, followed here) or the group's
// largest (later ones). The replay gives all the intervals of one group
// the same size, so the two agree here; the corpus cannot tell them apart.

import (
	"slices"
)

// XLAInterval is one interval of a heap simulation in event time (both
// ends inclusive).
type XLAInterval struct {
	ID         int // value id: the last key of both orders
	Size       int64
	Start, End int64
	// ShareWith is the index of the interval whose address this one takes
	// (XLA's ShareWith), or -1 for one that needs a place of its own.
	ShareWith int
}

// XLAResult is the packing XLA's heap algorithm keeps.
type XLAResult struct {
	Off      []int64 // per interval
	Height   int64
	Temporal bool // the kTemporal order won
}

// XLAHeap runs the spatial and the temporal heap and keeps the smaller,
// the spatial one on a tie, as ChooseBestHeapAlgorithm does.
func XLAHeap(ivs []XLAInterval, align int64) XLAResult {
	h := newXLAHeapSim(ivs, align)
	spatial := h.run(false)
	temporal := h.run(true)
	if temporal.Height < spatial.Height {
		return temporal
	}
	return spatial
}

// xlaHeapSim holds what both orders share: the transitive colocations and the
// spans and sizes derived from them.
type xlaHeapSim struct {
	ivs   []XLAInterval
	align int64
	nslot int
	// members[i] lists the transitive colocations of interval i (for the
	// intervals that need a place; nil for the others).
	members [][]int
	// maxSize is the largest size over an interval and its colocations;
	// span is its earliest start minus its latest end (<= 0).
	maxSize []int64
	span    []int64
	roots   []int // the intervals that need a place
}

func newXLAHeapSim(ivs []XLAInterval, align int64) *xlaHeapSim {
	if align < 1 {
		align = 1
	}
	h := &xlaHeapSim{ivs: ivs, align: align, members: make([][]int, len(ivs)),
		maxSize: make([]int64, len(ivs)), span: make([]int64, len(ivs))}
	direct := make([][]int, len(ivs))
	for i, iv := range ivs {
		h.nslot = max(h.nslot, int(iv.End)+1)
		if iv.ShareWith >= 0 {
			direct[iv.ShareWith] = append(direct[iv.ShareWith], i)
		}
	}
	for i, iv := range ivs {
		if iv.ShareWith >= 0 || iv.Size == 0 {
			continue
		}
		h.roots = append(h.roots, i)
		var ms []int
		work := []int{i}
		for len(work) > 0 {
			x := work[len(work)-1]
			work = work[:len(work)-1]
			for _, c := range direct[x] {
				ms = append(ms, c)
				work = append(work, c)
			}
		}
		slices.Sort(ms)
		h.members[i] = ms
		lo, hi, sz := iv.Start, iv.End, iv.Size
		for _, m := range ms {
			lo, hi, sz = min(lo, ivs[m].Start), max(hi, ivs[m].End), max(sz, ivs[m].Size)
		}
		h.maxSize[i], h.span[i] = sz, lo-hi
	}
	return h
}

// run places the intervals in the spatial or temporal order.
func (h *xlaHeapSim) run(temporal bool) XLAResult {
	ivs := h.ivs
	order := slices.Clone(h.roots)
	slices.SortFunc(order, func(a, b int) int {
		x, y := &ivs[a], &ivs[b]
		if temporal {
			if c := cmpInt64(h.span[a], h.span[b]); c != 0 {
				return c
			}
			if c := cmpInt64(y.Size, x.Size); c != 0 {
				return c
			}
		} else {
			if c := cmpInt64(y.Size, x.Size); c != 0 {
				return c
			}
			if c := cmpInt64(x.Start-x.End, y.Start-y.End); c != 0 {
				return c
			}
		}
		return x.ID - y.ID
	})
	res := XLAResult{Off: make([]int64, len(ivs)), Temporal: temporal}
	occ := newOccupancy(max(h.nslot, 1))
	var used, scratch []span
	for _, r := range order {
		used = used[:0]
		for _, i := range append([]int{r}, h.members[r]...) {
			scratch = occ.taken(int32(ivs[i].Start), int32(ivs[i].End+1), scratch[:0])
			used = append(used, scratch...)
		}
		slices.SortFunc(used, func(x, y span) int { return cmpInt64(x.lo, y.lo) })
		off := h.bestFit(used, h.maxSize[r])
		res.Height = max(res.Height, off+h.maxSize[r])
		for _, i := range append([]int{r}, h.members[r]...) {
			res.Off[i] = off
			occ.insert(int32(ivs[i].Start), int32(ivs[i].End+1), off, off+ivs[i].Size)
		}
	}
	return res
}

// bestFit returns the start of the smallest free chunk between the used
// byte ranges (sorted by start) that holds size bytes, ties to the lowest;
// a free chunk starts at the aligned end of the used range below it.
func (h *xlaHeapSim) bestFit(used []span, size int64) int64 {
	var free int64 // start of the current free chunk
	best, bestRoom := int64(-1), int64(0)
	for _, u := range used {
		if u.lo >= free+size {
			if room := u.lo - free; best < 0 || room < bestRoom {
				best, bestRoom = free, room
			}
		}
		free = max(free, alignUp(u.hi, h.align))
	}
	if best >= 0 {
		return best
	}
	return free
}
