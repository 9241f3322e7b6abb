package pack

// freeGaps is the free byte ranges of one moment of a sweep over time: the
// complement of the ranges taken by the items live then, the topmost range
// reaching to gapTop. It is a treap keyed by offset, each node holding the
// longest gap of its subtree, so the lowest offset that holds an item is
// found in O(log n) expected, and taking or freeing a range is a split, a
// merge and O(log n) node updates. The sweep packer (layered.go) keeps one
// and moves it through time, where the occupancy index (intervaltree.go)
// answers for a whole window at the price of merging every range it holds.

// gapTop is the end of the topmost free range: far above any height.
const gapTop = int64(1) << 62

type gapNode struct {
	lo, hi int64 // the free range [lo, hi)
	maxLen int64 // longest free range in the subtree
	prio   uint32
	l, r   int32 // children, -1 for none
}

type freeGaps struct {
	nodes []gapNode
	spare []int32 // freed node indices
	root  int32
	seed  uint64
}

// newFreeGaps returns the gaps of an empty memory: one range [0, gapTop).
func newFreeGaps(capacity int) *freeGaps {
	f := &freeGaps{nodes: make([]gapNode, 0, capacity), root: -1, seed: 0x9e3779b97f4a7c15}
	f.root = f.node(0, gapTop)
	return f
}

// node allocates a leaf for [lo, hi).
func (f *freeGaps) node(lo, hi int64) int32 {
	// xorshift64: priorities need only be well spread, and seeding it the
	// same way keeps every packing reproducible.
	f.seed ^= f.seed << 13
	f.seed ^= f.seed >> 7
	f.seed ^= f.seed << 17
	n := gapNode{lo: lo, hi: hi, maxLen: hi - lo, prio: uint32(f.seed >> 32), l: -1, r: -1}
	if k := len(f.spare); k > 0 {
		i := f.spare[k-1]
		f.spare = f.spare[:k-1]
		f.nodes[i] = n
		return i
	}
	f.nodes = append(f.nodes, n)
	return int32(len(f.nodes) - 1)
}

func (f *freeGaps) pull(t int32) {
	n := &f.nodes[t]
	m := n.hi - n.lo
	if n.l >= 0 {
		m = max(m, f.nodes[n.l].maxLen)
	}
	if n.r >= 0 {
		m = max(m, f.nodes[n.r].maxLen)
	}
	n.maxLen = m
}

// split cuts t into the ranges starting below key and the rest.
func (f *freeGaps) split(t int32, key int64) (int32, int32) {
	if t < 0 {
		return -1, -1
	}
	if f.nodes[t].lo < key {
		a, b := f.split(f.nodes[t].r, key)
		f.nodes[t].r = a
		f.pull(t)
		return t, b
	}
	a, b := f.split(f.nodes[t].l, key)
	f.nodes[t].l = b
	f.pull(t)
	return a, t
}

// merge joins a and b, every range of a lying below every range of b.
func (f *freeGaps) merge(a, b int32) int32 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	if f.nodes[a].prio > f.nodes[b].prio {
		f.nodes[a].r = f.merge(f.nodes[a].r, b)
		f.pull(a)
		return a
	}
	f.nodes[b].l = f.merge(a, f.nodes[b].l)
	f.pull(b)
	return b
}

// popLast removes the highest range of t, returning the rest and the node
// (-1 for an empty t).
func (f *freeGaps) popLast(t int32) (int32, int32) {
	if t < 0 {
		return -1, -1
	}
	if r := f.nodes[t].r; r >= 0 {
		rest, last := f.popLast(r)
		f.nodes[t].r = rest
		f.pull(t)
		return t, last
	}
	l := f.nodes[t].l
	f.nodes[t].l = -1
	f.pull(t)
	return l, t
}

// take marks [lo, hi) taken. It must lie within one free range; take
// reports false, changing nothing, when it does not.
func (f *freeGaps) take(lo, hi int64) bool {
	a, b := f.split(f.root, lo+1)
	rest, g := f.popLast(a)
	if g < 0 || f.nodes[g].hi < hi {
		f.root = f.merge(f.merge(rest, g), b)
		return false
	}
	glo, ghi := f.nodes[g].lo, f.nodes[g].hi
	f.spare = append(f.spare, g)
	if glo < lo {
		rest = f.merge(rest, f.node(glo, lo))
	}
	if hi < ghi {
		b = f.merge(f.node(hi, ghi), b)
	}
	f.root = f.merge(rest, b)
	return true
}

// free marks [lo, hi) free again, joining it to the free ranges it
// touches. It must be taken whole; free reports false, changing nothing,
// when a free range overlaps it.
func (f *freeGaps) free(lo, hi int64) bool {
	a, b := f.split(f.root, lo)
	mid, c := f.split(b, hi+1) // ranges starting in [lo, hi]
	rest, last := f.popLast(a)
	ok := mid < 0 || f.nodes[mid].lo == hi && f.nodes[mid].l < 0 && f.nodes[mid].r < 0
	ok = ok && (last < 0 || f.nodes[last].hi <= lo)
	if !ok {
		f.root = f.merge(f.merge(f.merge(rest, last), mid), c)
		return false
	}
	nlo, nhi := lo, hi
	if mid >= 0 { // the range starting at hi
		nhi = f.nodes[mid].hi
		f.spare = append(f.spare, mid)
	}
	if last >= 0 && f.nodes[last].hi == lo {
		nlo = f.nodes[last].lo
		f.spare = append(f.spare, last)
		last = -1
	}
	f.root = f.merge(f.merge(f.merge(rest, last), f.node(nlo, nhi)), c)
	return true
}

// lowest returns the lowest offset at or above from, a multiple of align,
// where size bytes are free.
func (f *freeGaps) lowest(size, align, from int64) int64 {
	return f.lowestIn(f.root, size, align, from)
}

func (f *freeGaps) lowestIn(t int32, size, align, from int64) int64 {
	for t >= 0 {
		n := &f.nodes[t]
		if n.maxLen < size {
			return -1
		}
		// Ranges of the left subtree end at or below n.lo: worth a look
		// only when n.lo is above from.
		if n.lo > from && n.l >= 0 {
			if o := f.lowestIn(n.l, size, align, from); o >= 0 {
				return o
			}
		}
		if a := alignUp(max(n.lo, from), align); a+size <= n.hi {
			return a
		}
		t = n.r
	}
	return -1
}
