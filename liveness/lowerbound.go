package liveness

import "sort"

// Bound is the no-fragmentation peak of a set of buffers: the largest total
// size of buffers live at one time (XLA's NoFragmentationStatsHeap). No
// packing of those buffers into one address space can be smaller.
type Bound struct {
	Bytes int64
	// Time is the first time step at which the peak is reached (-1 if none).
	Time int
	// Live lists the buffers live at Time, largest first (ties by ID).
	Live []*Buffer
}

// LowerBound returns the peak over the scheduled buffers that include
// accepts (all of them when include is nil). A buffer is live from the
// start of its first value to the end of its last (both inclusive).
func (a *Analysis) LowerBound(include func(*Buffer) bool) Bound {
	return a.boundOf(include, func(b *Buffer) (Range, bool) { return b.Range() })
}

// boundOf computes the bound with the given buffer ranges.
func (a *Analysis) boundOf(include func(*Buffer) bool, rangeOf func(*Buffer) (Range, bool)) Bound {
	type event struct {
		t     int
		delta int64
	}
	var evs []event
	var bufs []*Buffer
	var ranges []Range
	for _, b := range a.Buffers {
		if include != nil && !include(b) {
			continue
		}
		r, ok := rangeOf(b)
		if !ok {
			continue
		}
		bufs = append(bufs, b)
		ranges = append(ranges, r)
		evs = append(evs, event{r.Start, b.Size}, event{r.End + 1, -b.Size})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].delta < evs[j].delta // frees at t before allocs at t
	})
	best := Bound{Time: -1}
	var cur int64
	for i := 0; i < len(evs); {
		t := evs[i].t
		for ; i < len(evs) && evs[i].t == t; i++ {
			cur += evs[i].delta
		}
		if cur > best.Bytes {
			best.Bytes, best.Time = cur, t
		}
	}
	if best.Time >= 0 {
		for i, b := range bufs {
			if ranges[i].Contains(best.Time) {
				best.Live = append(best.Live, b)
			}
		}
		sort.SliceStable(best.Live, func(i, j int) bool {
			if best.Live[i].Size != best.Live[j].Size {
				return best.Live[i].Size > best.Live[j].Size
			}
			return best.Live[i].ID < best.Live[j].ID
		})
	}
	return best
}

// bound is the lower bound of all buffers under timeline tl.
func (tl *timeline) bound(a *Analysis) int64 {
	return a.boundOf(nil, func(b *Buffer) (Range, bool) {
		var r Range
		ok := false
		for _, v := range b.Values {
			if !tl.scheduled[v.ID] {
				continue
			}
			vr := tl.ranges[v.ID]
			if !ok {
				r, ok = vr, true
				continue
			}
			r.Start, r.End = min(r.Start, vr.Start), max(r.End, vr.End)
		}
		return r, ok
	}).Bytes
}
