package pack

// Skyline packing: the first descent of the exact search, without the
// search. Items are laid lowest first: the next item is always the one whose
// lowest possible offset, on top of everything laid so far that it overlaps
// in time, is least (ties by a static rank), and it goes exactly there. In
// canonical-packing terms (see exact.go) this is the leftmost branch of the
// search tree, with MiniMalloc's static orders ("WAT", "TAW", "TWA") as the
// tie-breaks; on real traces it is often optimal outright (it reaches the
// lower bound on SOMAS PanGu-2.6B, where the best-fit orders stay 0.8% to
// 20% above it).
//
// An item never goes into a hole below something already laid over its
// lifetime, so its lowest offset is the largest top laid over its lifetime:
// the skyline. The skyline is a segment tree over time slots with range
// "raise to at least" and range maximum, so a placement costs O(log S) per
// part. The candidates sit in a heap keyed by their lowest offset; keys only
// grow as the skyline rises, so a stale key is a lower bound and a popped
// item whose key is current is the true minimum (lazy deletion). A second
// segment tree keeps the load left to lay in each slot: since every later
// item goes at or above the current offset, that offset plus the largest
// remaining load bounds the final height from below, which lets the
// portfolio stop a descent that can no longer win.

import (
	"slices"
	"sync/atomic"

	"github.com/hlomem/hlomem/internal/binheap"
	"github.com/hlomem/hlomem/internal/segtree"
)

// skylineOrders are the static tie-break orders of the skyline packers.
var skylineOrders = []string{"wat", "taw", "twa"}

// runSkyline packs in by skyline descent with static order h (letters as in
// rankItems: W lifetime, A area, T largest slot load spanned), leaving items
// smaller than tiny times the lower bound to a best-fit pass at the end. It
// returns ok == false when it stops because its height must exceed *bound,
// when stop (polled now and then) says so, or when a fixed item cannot be
// laid where it is fixed.
func runSkyline(in *instance, h string, tiny float64, off []int64, bound *atomic.Int64, stop func() bool) (height int64, ok bool) {
	n := len(in.items)
	if n == 0 {
		return 0, true
	}
	load := slotLoad(in)
	remTree := segtree.FromValues(load)
	sky := newChmaxTree(in.nslot)
	order, rank := skylineOrder(in, h, load)
	its := in.items
	// lowest returns the item's lowest offset over the current skyline.
	lowest := func(i int32) int64 {
		it := &its[i]
		if it.fixed {
			return it.off
		}
		var m int64
		for _, pt := range in.parts[it.p0:it.p1] {
			m = max(m, sky.max(pt.start, pt.end))
		}
		return alignUp(m, it.align)
	}
	key := make([]int64, n)
	q := &binheap.Heap[int32]{Items: order, Less: func(a, b int32) bool {
		if key[a] != key[b] {
			return key[a] < key[b]
		}
		return rank[a] < rank[b]
	}}
	for i := range its {
		if its[i].fixed {
			key[i] = its[i].off
		}
	}
	// Items below tiny x the lower bound are left out of the descent and put
	// into the gaps afterwards, best fit, largest first: they barely change
	// the height but each one would nudge the skyline under many waiting
	// items, which then have to be looked at again.
	var small []int32
	isSmall := make([]bool, n)
	if limit := tiny * float64(remTree.All()); limit > 0 {
		k := 0
		for _, i := range q.Items {
			if float64(its[i].size) >= limit || its[i].fixed {
				q.Items[k] = i
				k++
			} else {
				small = append(small, i)
				isSmall[i] = true
				for _, pt := range in.parts[its[i].p0:its[i].p1] {
					remTree.Add(int(pt.start), int(pt.end), -pt.size)
				}
			}
		}
		q.Items = q.Items[:k]
	}
	q.Init()
	b := int64(1<<63 - 1)
	for step := 0; q.Len() > 0; step++ {
		if stop != nil && step&4095 == 4095 && stop() {
			return 0, false
		}
		i := q.Items[0]
		m := lowest(i)
		it := &its[i]
		if it.fixed {
			// Everything laid so far is at or below the fixed offset in
			// order; it conflicts if the skyline under it is higher.
			var under int64
			for _, pt := range in.parts[it.p0:it.p1] {
				under = max(under, sky.max(pt.start, pt.end))
			}
			if under > it.off {
				return 0, false
			}
		} else if m > key[i] {
			key[i] = m
			q.FixTop()
			continue
		}
		q.Pop()
		if bound != nil {
			b = bound.Load()
		}
		if m+remTree.All() > b || m+it.size > b {
			return 0, false // the height will exceed the bound
		}
		off[i] = m
		height = max(height, m+it.size)
		for _, pt := range in.parts[it.p0:it.p1] {
			sky.chmax(pt.start, pt.end, m+pt.size)
			remTree.Add(int(pt.start), int(pt.end), -pt.size)
		}
	}
	if len(small) > 0 {
		height = max(height, placeSmall(in, small, isSmall, off))
	}
	if bound != nil && height > bound.Load() {
		return height, false
	}
	return height, true
}

// slotLoad returns the load of every slot: the bytes of the parts live
// there, for the T key and the remaining-load tree.
func slotLoad(in *instance) []int64 {
	load := make([]int64, in.nslot)
	delta := make([]int64, in.nslot+1)
	for _, pt := range in.parts {
		delta[pt.start] += pt.size
		delta[pt.end] -= pt.size
	}
	var cur int64
	for s := range load {
		cur += delta[s]
		load[s] = cur
	}
	return load
}

// skylineOrder returns the items in the static order h names (MiniMalloc's
// keys: 'w' longest lifetime, 'a' largest area, 't' heaviest slot under the
// item, ties by index) and each item's rank in it.
func skylineOrder(in *instance, h string, load []int64) (order, rank []int32) {
	n := len(in.items)
	loadMax := newChmaxTree(in.nslot)
	for s, l := range load {
		loadMax.chmax(int32(s), int32(s+1), l)
	}
	total := make([]int64, n)
	for i := range in.items {
		it := &in.items[i]
		for _, pt := range in.parts[it.p0:it.p1] {
			total[i] = max(total[i], loadMax.max(pt.start, pt.end))
		}
	}
	order = make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	its := in.items
	slices.SortFunc(order, func(a, b int32) int {
		for k := 0; k < len(h); k++ {
			var c int
			switch h[k] {
			case 'w':
				c = cmpInt64(its[b].t1-its[b].t0, its[a].t1-its[a].t0)
			case 'a':
				if its[a].area > its[b].area {
					c = -1
				} else if its[a].area < its[b].area {
					c = 1
				}
			case 't':
				c = cmpInt64(total[b], total[a])
			}
			if c != 0 {
				return c
			}
		}
		return int(a - b)
	})
	rank = make([]int32, n)
	for k, i := range order {
		rank[i] = int32(k)
	}
	return order, rank
}

// placeSmall puts the small items the descent left out into the gaps of
// the others' placement, best fit, largest first (earliest, then by
// index, among equals), and returns the height they reach.
func placeSmall(in *instance, small []int32, isSmall []bool, off []int64) int64 {
	its := in.items
	g := newGreedy(in, bestFit)
	for i := range its {
		if !isSmall[i] {
			g.commit(&its[i], off[i])
		}
	}
	slices.SortFunc(small, func(a, b int32) int {
		if c := cmpInt64(its[b].size, its[a].size); c != 0 {
			return c
		}
		if c := cmpInt64(its[a].t0, its[b].t0); c != 0 {
			return c
		}
		return int(a - b)
	})
	var height int64
	for _, i := range small {
		off[i] = g.place(&its[i])
		height = max(height, off[i]+its[i].size)
	}
	return height
}

// chmaxTree is a segment tree over slots with "raise to at least v" over a
// range and maximum over a range, bottom-up over a power-of-two leaf
// array. A raise marks the nodes that tile its range (tag) and lifts the
// maxima on the paths above them; a node's slots are all at least the tags
// of its ancestors, and the query tiles its range the same way, so the
// tags on the two boundary paths complete the maxima of the tiles.
type chmaxTree struct {
	size    int32
	mx, tag []int64 // mx: the node's maximum, ancestors' tags aside
}

func newChmaxTree(n int) *chmaxTree {
	size := int32(1)
	for int(size) < n {
		size *= 2
	}
	return &chmaxTree{size: size, mx: make([]int64, 2*size), tag: make([]int64, 2*size)}
}

func (t *chmaxTree) chmax(a, b int32, v int64) {
	if a >= b {
		return
	}
	l, r := a+t.size, b+t.size
	l0, r0 := l, r-1
	for l < r {
		if l&1 == 1 {
			t.mx[l] = max(t.mx[l], v)
			t.tag[l] = max(t.tag[l], v)
			l++
		}
		if r&1 == 1 {
			r--
			t.mx[r] = max(t.mx[r], v)
			t.tag[r] = max(t.tag[r], v)
		}
		l, r = l/2, r/2
	}
	for l0 /= 2; l0 >= 1; l0 /= 2 {
		t.mx[l0] = max(t.mx[l0], v)
	}
	for r0 /= 2; r0 >= 1; r0 /= 2 {
		t.mx[r0] = max(t.mx[r0], v)
	}
}

func (t *chmaxTree) max(a, b int32) int64 {
	if a >= b {
		return 0
	}
	var best int64
	l, r := a+t.size, b+t.size
	for p := l / 2; p >= 1; p /= 2 {
		best = max(best, t.tag[p])
	}
	for p := (r - 1) / 2; p >= 1; p /= 2 {
		best = max(best, t.tag[p])
	}
	for l < r {
		if l&1 == 1 {
			best = max(best, t.mx[l])
			l++
		}
		if r&1 == 1 {
			r--
			best = max(best, t.mx[r])
		}
		l, r = l/2, r/2
	}
	return best
}
