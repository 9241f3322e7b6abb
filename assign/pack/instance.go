package pack

// The packers do not work on a Problem directly but on instances, one per
// color. An instance is a list of items, each placed at one offset: a buffer
// that is in no group is an item on its own, and a must-share group becomes a
// single item. An item's occupancy over time is a list of parts, disjoint in
// time and sorted, each holding a constant number of bytes: for a group the
// parts trace the largest live member at each moment, so members that alias
// one another never count twice. Times are compressed to slot numbers: slot s
// is the time interval [times[s], times[s+1]). Parts of zero size or zero
// length are dropped; an item left with no part occupies no memory and gets
// offset 0 (or its fixed offset) without being packed.

import (
	"container/heap"
	"fmt"
	"slices"
)

// part is size bytes held over the slots [start, end).
type part struct {
	start, end int32
	size       int64
}

// item is one unit of placement.
type item struct {
	p0, p1     int32 // the item's parts are inst.parts[p0:p1]
	start, end int32 // hull of the parts, in slots
	size       int64 // largest part
	align      int64 // >= 1
	off        int64 // the fixed offset, when fixed
	fixed      bool
	t0, t1     int64 // hull in the problem's own time units
	area       float64
}

// instance is the packing problem of one color.
type instance struct {
	color int
	items []item
	parts []part
	times []int64 // slot boundaries
	nslot int     // len(times)-1, at least 0
}

// layout maps a problem's buffers onto the instances built from it.
type layout struct {
	insts  []*instance
	inst   []int32 // per buffer: index into insts
	item   []int32 // per buffer: item index in its instance, or -1 when the item has no parts
	offset []int64 // per buffer: offset when item == -1
}

// normalize validates p and builds one instance per color.
func normalize(p *Problem) (*layout, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := len(p.Buffers)
	lay := &layout{
		inst:   make([]int32, n),
		item:   make([]int32, n),
		offset: make([]int64, n),
	}
	colors := p.Colors()
	cidx := make(map[int]int32, len(colors))
	for i, c := range colors {
		cidx[c] = int32(i)
		lay.insts = append(lay.insts, &instance{color: c})
	}
	group := make([]int32, n)
	for i := range group {
		group[i] = -1
	}
	for g, members := range p.Groups {
		for _, m := range members {
			group[m] = int32(g)
		}
	}
	// raw collects each color's parts in problem time before compression.
	// Sizing the slices from a count first keeps a large problem from
	// being copied over and over as they grow.
	raw := make([][]seg, len(colors))
	count := make([]int, len(colors))
	for i := range p.Buffers {
		count[cidx[p.Buffers[i].Color]]++
	}
	for ci, c := range count {
		raw[ci] = make([]seg, 0, c)
		lay.insts[ci].items = make([]item, 0, c)
	}
	var profile []seg
	var members []int
	addItem := func(members []int) error {
		ci := cidx[p.Buffers[members[0]].Color]
		in := lay.insts[ci]
		it := item{align: 1}
		for _, m := range members {
			b := &p.Buffers[m]
			if b.Align > 1 {
				l, ok := lcm(it.align, b.Align)
				if !ok {
					return &InvalidError{Buffer: m, Msg: fmt.Sprintf("buffer %q: alignments of its group have no common multiple below %d", b.ID, int64(maxBytes))}
				}
				it.align = l
			}
			if b.Fixed {
				it.fixed, it.off = true, b.Offset
			}
		}
		profile = groupProfile(p, members, profile[:0])
		idx := int32(-1)
		if len(profile) > 0 {
			idx = int32(len(in.items))
			it.p0 = int32(len(raw[ci]))
			it.t0, it.t1 = profile[0].start, profile[len(profile)-1].end
			for _, rp := range profile {
				raw[ci] = append(raw[ci], rp)
				it.size = max(it.size, rp.size)
				it.area += float64(rp.size) * float64(rp.end-rp.start)
			}
			it.p1 = int32(len(raw[ci]))
			in.items = append(in.items, it)
		}
		for _, m := range members {
			lay.inst[m] = ci
			lay.item[m] = idx
			if idx < 0 && it.fixed {
				lay.offset[m] = it.off
			}
		}
		return nil
	}
	for i := range p.Buffers {
		switch g := group[i]; {
		case g < 0:
			members = append(members[:0], i)
		case p.Groups[g][0] == i:
			members = append(members[:0], p.Groups[g]...)
		default:
			continue // the group was added with its first member
		}
		if err := addItem(members); err != nil {
			return nil, err
		}
	}
	// Compress time per instance.
	for ci, in := range lay.insts {
		rp := raw[ci]
		ts := make([]int64, 0, 2*len(rp))
		for _, r := range rp {
			ts = append(ts, r.start, r.end)
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		in.times = ts
		in.nslot = max(len(ts)-1, 0)
		in.parts = make([]part, len(rp))
		slot := func(t int64) int32 {
			i, _ := slices.BinarySearch(ts, t)
			return int32(i)
		}
		for i, r := range rp {
			in.parts[i] = part{start: slot(r.start), end: slot(r.end), size: r.size}
		}
		for i := range in.items {
			it := &in.items[i]
			it.start = in.parts[it.p0].start
			it.end = in.parts[it.p1-1].end
		}
	}
	return lay, nil
}

// groupProfile appends to dst the occupancy of the buffers members, which
// share one offset: for each stretch of time, the size of the largest member
// live then. Stretches of equal size are merged; empty ones are left out.
func groupProfile(p *Problem, members []int, dst []seg) []seg {
	if len(members) == 1 {
		b := &p.Buffers[members[0]]
		if b.Size > 0 && b.Start < b.End {
			dst = append(dst, seg{b.Start, b.End, b.Size})
		}
		return dst
	}
	var ms []int
	for _, m := range members {
		if b := &p.Buffers[m]; b.Size > 0 && b.Start < b.End {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b int) int {
		return cmpInt64(p.Buffers[a].Start, p.Buffers[b].Start)
	})
	var ts []int64
	for _, m := range ms {
		ts = append(ts, p.Buffers[m].Start, p.Buffers[m].End)
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	live := &sizeHeap{}
	next := 0
	for k := 0; k+1 < len(ts); k++ {
		t := ts[k]
		for next < len(ms) && p.Buffers[ms[next]].Start <= t {
			b := &p.Buffers[ms[next]]
			heap.Push(live, [2]int64{b.Size, b.End})
			next++
		}
		for live.Len() > 0 && (*live)[0][1] <= t {
			heap.Pop(live)
		}
		if live.Len() == 0 {
			continue
		}
		s := seg{t, ts[k+1], (*live)[0][0]}
		if l := len(dst); l > 0 && dst[l-1].end == s.start && dst[l-1].size == s.size {
			dst[l-1].end = s.end
			continue
		}
		dst = append(dst, s)
	}
	return dst
}

// seg is size bytes over the time interval [start, end).
type seg struct{ start, end, size int64 }

// sizeHeap is a max-heap of (size, end) pairs.
type sizeHeap [][2]int64

func (h sizeHeap) Len() int           { return len(h) }
func (h sizeHeap) Less(i, j int) bool { return h[i][0] > h[j][0] }
func (h sizeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sizeHeap) Push(x any)        { *h = append(*h, x.([2]int64)) }
func (h *sizeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// lcm returns the least common multiple of a and b, or false when it exceeds
// maxBytes.
func lcm(a, b int64) (int64, bool) {
	g := gcd(a, b)
	q := a / g
	if q > maxBytes/b {
		return 0, false
	}
	return q * b, true
}

// alignUp rounds x up to a multiple of a (a >= 1).
func alignUp(x, a int64) int64 {
	if a <= 1 {
		return x
	}
	if r := x % a; r != 0 {
		return x + a - r
	}
	return x
}

// lowerBound returns the largest total size of parts live in one slot.
func (in *instance) lowerBound() int64 {
	if in.nslot == 0 {
		return 0
	}
	delta := make([]int64, in.nslot+1)
	for _, pt := range in.parts {
		delta[pt.start] += pt.size
		delta[pt.end] -= pt.size
	}
	var cur, best int64
	for s := 0; s < in.nslot; s++ {
		cur += delta[s]
		best = max(best, cur)
	}
	return best
}

// alignedLowerBound strengthens lowerBound with alignment. Every offset is
// a multiple of g, the greatest common divisor of the items' alignments, so
// an item placed below another takes its size rounded up to g; only the
// topmost item's padding may stick out of nothing. At each slot the height
// is therefore at least the live sizes rounded up to g, less the largest
// padding among them. It returns 0 when a fixed offset is not a multiple
// of g (the argument needs every offset aligned).
func (in *instance) alignedLowerBound() int64 {
	if in.nslot == 0 || len(in.items) == 0 {
		return 0
	}
	var g int64
	for i := range in.items {
		g = gcd(g, in.items[i].align)
	}
	if g <= 1 {
		return in.lowerBound()
	}
	for i := range in.items {
		if it := &in.items[i]; it.fixed && it.off%g != 0 {
			return 0
		}
	}
	// Rounded sizes by a difference array; the largest padding live at
	// each slot by painting pads from the largest down, each slot taking
	// the first pad that covers it.
	delta := make([]int64, in.nslot+1)
	type padPart struct {
		start, end int32
		pad        int64
	}
	pads := make([]padPart, 0, len(in.parts))
	for _, pt := range in.parts {
		up := alignUp(pt.size, g)
		delta[pt.start] += up
		delta[pt.end] -= up
		if up > pt.size {
			pads = append(pads, padPart{pt.start, pt.end, up - pt.size})
		}
	}
	slices.SortFunc(pads, func(x, y padPart) int {
		switch {
		case x.pad > y.pad:
			return -1
		case x.pad < y.pad:
			return 1
		}
		return 0
	})
	maxPad := make([]int64, in.nslot)
	next := make([]int32, in.nslot+1) // next unpainted slot at or after s
	for s := range next {
		next[s] = int32(s)
	}
	var find func(s int32) int32
	find = func(s int32) int32 {
		for next[s] != s {
			next[s] = next[next[s]]
			s = next[s]
		}
		return s
	}
	for _, pp := range pads {
		for s := find(pp.start); s < pp.end; s = find(s) {
			maxPad[s] = pp.pad
			next[s] = s + 1
		}
	}
	var cur, best int64
	for s := 0; s < in.nslot; s++ {
		cur += delta[s]
		if cur > 0 {
			best = max(best, cur-maxPad[s])
		}
	}
	return best
}

// LowerBound returns the lower bound on the height of color in p: the largest
// total size of the color's buffers live at one time, counting the members of
// a must-share group live together once, as their largest. No packing of a
// valid problem is lower; LowerBound returns 0 for an invalid one.
func LowerBound(p *Problem, color int) int64 {
	lay, err := normalize(p)
	if err != nil {
		return 0
	}
	for _, in := range lay.insts {
		if in.color == color {
			return in.lowerBound()
		}
	}
	return 0
}

// subInstance returns the instance made of the items of in listed in ids
// (same slots), and the list itself.
func subInstance(in *instance, ids []int32) *instance {
	sub := &instance{color: in.color, times: in.times, nslot: in.nslot}
	for _, i := range ids {
		it := in.items[i]
		p0 := int32(len(sub.parts))
		sub.parts = append(sub.parts, in.parts[it.p0:it.p1]...)
		it.p0, it.p1 = p0, int32(len(sub.parts))
		sub.items = append(sub.items, it)
	}
	return sub
}
