package pack

// Check verifies a packing against its problem, independently of every packer:
// it shares no code or data structure with them, so a bug in a packer cannot
// hide itself.
//
// The per-buffer rules (offset count, sign, alignment, fixed offsets, groups
// at one offset) are direct. Overlap is found with a sweep over time. Events
// are sorted by time, with every end at a time before every start at that
// time, because intervals are half-open: a buffer that ends at t and one that
// starts at t may share bytes. The sweep keeps, per color, a segment tree over
// the compressed offset axis that counts how many live buffers cover each
// elementary offset range (range add, range max). A starting buffer must find
// a zero maximum over its bytes before adding itself, so the first conflict in
// time order is the one reported. Members of a must-share group alias each
// other: the group covers [offset, offset + largest live member), kept with a
// lazy max-heap per group and grown or shrunk as members come and go. The cost
// is O(n log n); naming the partner of a conflict scans the live buffers once.

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
)

// ErrCheck is the sentinel matched by every *CheckError.
var ErrCheck = errors.New("pack: invalid packing")

// CheckError describes the first violation Check found. A and B are buffer
// indices (B is -1 unless two buffers are involved); Time is the time of an
// overlap.
type CheckError struct {
	Kind string // "count", "negative", "range", "misaligned", "moved", "split", "overlap"
	A, B int
	Time int64
	Msg  string
}

func (e *CheckError) Error() string { return "pack: invalid packing: " + e.Msg }

// Is makes errors.Is(err, ErrCheck) true for a *CheckError.
func (e *CheckError) Is(target error) bool { return target == ErrCheck }

// Check reports the first way in which pk is not a valid packing of p: a
// missing offset, a negative or misaligned offset, a fixed buffer moved, a
// must-share group split over several offsets, or two buffers of one color
// live at the same time that share a byte. It returns nil for a valid
// packing.
func Check(p *Problem, pk Packing) error {
	bs := p.Buffers
	off := pk.Offsets
	if len(off) != len(bs) {
		return &CheckError{Kind: "count", A: -1, B: -1,
			Msg: fmt.Sprintf("%d offsets for %d buffers", len(off), len(bs))}
	}
	for i := range bs {
		b := &bs[i]
		switch {
		case off[i] < 0:
			return &CheckError{Kind: "negative", A: i, B: -1,
				Msg: fmt.Sprintf("buffer %q: negative offset %d", b.ID, off[i])}
		case off[i] > (1<<62) || b.Size > (1<<62):
			return &CheckError{Kind: "range", A: i, B: -1,
				Msg: fmt.Sprintf("buffer %q: offset %d or size %d too large", b.ID, off[i], b.Size)}
		case b.Align > 1 && off[i]%b.Align != 0:
			return &CheckError{Kind: "misaligned", A: i, B: -1,
				Msg: fmt.Sprintf("buffer %q: offset %d is not a multiple of its alignment %d", b.ID, off[i], b.Align)}
		case b.Fixed && off[i] != b.Offset:
			return &CheckError{Kind: "moved", A: i, B: -1,
				Msg: fmt.Sprintf("buffer %q: fixed at offset %d, placed at %d", b.ID, b.Offset, off[i])}
		}
	}
	groupOf := make([]int, len(bs))
	for i := range groupOf {
		groupOf[i] = -1
	}
	for g, ms := range p.Groups {
		for _, m := range ms {
			if m < 0 || m >= len(bs) {
				return &CheckError{Kind: "split", A: -1, B: -1,
					Msg: fmt.Sprintf("group %d: buffer index %d out of range", g, m)}
			}
			groupOf[m] = g
			if first := ms[0]; off[m] != off[first] {
				return &CheckError{Kind: "split", A: first, B: m,
					Msg: fmt.Sprintf("group %d split: buffer %q at offset %d, buffer %q at offset %d",
						g, bs[first].ID, off[first], bs[m].ID, off[m])}
			}
		}
	}

	// Sweep each color on its own.
	byColor := map[int][]int{}
	var colors []int
	for i := range bs {
		b := &bs[i]
		if b.Size == 0 || b.Start >= b.End {
			continue
		}
		if _, ok := byColor[b.Color]; !ok {
			colors = append(colors, b.Color)
		}
		byColor[b.Color] = append(byColor[b.Color], i)
	}
	slices.Sort(colors)
	var first *CheckError
	for _, c := range colors {
		if err := sweepColor(p, off, groupOf, byColor[c]); err != nil {
			if first == nil || err.Time < first.Time {
				first = err
			}
		}
	}
	if first != nil {
		return first
	}
	return nil
}

type checkEvent struct {
	t     int64
	start bool
	buf   int
}

func sweepColor(p *Problem, off []int64, groupOf []int, ids []int) *CheckError {
	bs := p.Buffers
	ev := make([]checkEvent, 0, 2*len(ids))
	coords := make([]int64, 0, 2*len(ids))
	for _, i := range ids {
		ev = append(ev, checkEvent{bs[i].Start, true, i}, checkEvent{bs[i].End, false, i})
		coords = append(coords, off[i], off[i]+bs[i].Size)
	}
	slices.SortFunc(ev, func(a, b checkEvent) int {
		if a.t != b.t {
			return cmpTime(a.t, b.t)
		}
		if a.start != b.start {
			if a.start {
				return 1 // ends first
			}
			return -1
		}
		return a.buf - b.buf
	})
	slices.Sort(coords)
	coords = slices.Compact(coords)
	cov := newCoverTree(len(coords) - 1)
	pos := func(x int64) int {
		i, _ := slices.BinarySearch(coords, x)
		return i
	}
	live := make([]bool, len(bs))
	type groupState struct {
		h      groupHeap
		extent int64 // bytes covered above the group's offset
	}
	groups := map[int]*groupState{}
	// claim covers [lo, hi) for buffer i, or reports what already covers it.
	claim := func(i int, lo, hi int64, t int64) *CheckError {
		if lo >= hi {
			return nil
		}
		a, b := pos(lo), pos(hi)
		if cov.max(a, b) > 0 {
			return overlapError(p, off, groupOf, live, ids, i, lo, hi, t)
		}
		cov.add(a, b, 1)
		return nil
	}
	for _, e := range ev {
		i := e.buf
		b := &bs[i]
		g := groupOf[i]
		if !e.start {
			live[i] = false
			if g < 0 {
				cov.add(pos(off[i]), pos(off[i]+b.Size), -1)
				continue
			}
			gs := groups[g]
			for gs.h.Len() > 0 && !live[gs.h[0].buf] {
				heap.Pop(&gs.h)
			}
			var ext int64
			if gs.h.Len() > 0 {
				ext = gs.h[0].size
			}
			if ext < gs.extent {
				cov.add(pos(off[i]+ext), pos(off[i]+gs.extent), -1)
				gs.extent = ext
			}
			continue
		}
		if g < 0 {
			if err := claim(i, off[i], off[i]+b.Size, e.t); err != nil {
				return err
			}
			live[i] = true
			continue
		}
		gs := groups[g]
		if gs == nil {
			gs = &groupState{}
			groups[g] = gs
		}
		if b.Size > gs.extent {
			if err := claim(i, off[i]+gs.extent, off[i]+b.Size, e.t); err != nil {
				return err
			}
			gs.extent = b.Size
		}
		heap.Push(&gs.h, groupMember{b.Size, i})
		live[i] = true
	}
	return nil
}

func cmpTime(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}

// overlapError names a live buffer that shares bytes in [lo, hi) with i.
func overlapError(p *Problem, off []int64, groupOf []int, live []bool, ids []int, i int, lo, hi, t int64) *CheckError {
	bs := p.Buffers
	other := -1
	for _, j := range ids {
		if !live[j] || groupOf[i] >= 0 && groupOf[j] == groupOf[i] {
			continue
		}
		if off[j] < hi && lo < off[j]+bs[j].Size {
			other = j
			break
		}
	}
	a, b := &bs[i], &Buffer{ID: "?"}
	o := int64(-1)
	if other >= 0 {
		b, o = &bs[other], off[other]
	}
	return &CheckError{Kind: "overlap", A: other, B: i, Time: t,
		Msg: fmt.Sprintf("buffers %q (time [%d,%d), bytes [%d,%d)) and %q (time [%d,%d), bytes [%d,%d)) overlap at time %d",
			b.ID, b.Start, b.End, o, o+b.Size, a.ID, a.Start, a.End, off[i], off[i]+a.Size, t)}
}

type groupMember struct {
	size int64
	buf  int
}

// groupHeap is a max-heap of group members by size.
type groupHeap []groupMember

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	if h[i].size != h[j].size {
		return h[i].size > h[j].size
	}
	return h[i].buf < h[j].buf
}
func (h groupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)   { *h = append(*h, x.(groupMember)) }
func (h *groupHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// coverTree counts coverage over n elementary ranges: range add, range max.
type coverTree struct {
	n      int
	mx, lz []int32
}

func newCoverTree(n int) *coverTree {
	n = max(n, 1)
	return &coverTree{n: n, mx: make([]int32, 4*n), lz: make([]int32, 4*n)}
}

// add adds d to the elementary ranges [a, b).
func (c *coverTree) add(a, b int, d int32) {
	if a < b {
		c.addRec(1, 0, c.n, a, b, d)
	}
}

func (c *coverTree) addRec(v, l, r, a, b int, d int32) {
	if a <= l && r <= b {
		c.mx[v] += d
		c.lz[v] += d
		return
	}
	m := (l + r) / 2
	if a < m {
		c.addRec(2*v, l, m, a, b, d)
	}
	if m < b {
		c.addRec(2*v+1, m, r, a, b, d)
	}
	c.mx[v] = c.lz[v] + max(c.mx[2*v], c.mx[2*v+1])
}

// max returns the largest count over the elementary ranges [a, b).
func (c *coverTree) max(a, b int) int32 {
	if a >= b {
		return 0
	}
	return c.maxRec(1, 0, c.n, a, b)
}

func (c *coverTree) maxRec(v, l, r, a, b int) int32 {
	if a <= l && r <= b {
		return c.mx[v]
	}
	m := (l + r) / 2
	best := int32(-1 << 30)
	if a < m {
		best = max(best, c.maxRec(2*v, l, m, a, b))
	}
	if m < b {
		best = max(best, c.maxRec(2*v+1, m, r, a, b))
	}
	return best + c.lz[v]
}
