package pack

// The occupancy index answers the one question a best-fit or first-fit
// placement asks: which byte ranges are taken, at some moment, by the buffers
// already placed over a given time window? The free gaps are the complement.
//
// XLA's heap simulator keeps placed chunks in an interval tree over time and
// visits every chunk whose lifetime overlaps the window (BufferIntervalTree);
// a placement then costs O(log n + k) for k overlapping chunks, plus sorting
// them by offset. On real traces k is large: IOPDDL Y_1 has 62,185 buffers
// with up to 9,331 live at once and 180 million overlapping pairs, so a
// best-fit pass visits some 90 million chunks. This index keeps merged byte
// ranges instead of chunks, so the work per placement follows the number of
// distinct taken ranges, which is small when the packing is tight.
//
// It is a segment tree over the time slots. A placed rectangle (slots [a, b),
// bytes [lo, hi)) is recorded at the O(log S) canonical nodes that tile
// [a, b), in own[v], and in sub[v] of those nodes and all their ancestors.
// Both are sets of disjoint byte ranges with touching ranges merged, so
// own[v] holds what is taken during the whole of v's time span by rectangles
// stored at v, and sub[v] what is taken at some moment of v's span by any
// rectangle stored in v's subtree. A rectangle overlaps a window exactly when
// one of its canonical nodes is a descendant-or-self of one of the window's
// canonical nodes (found in sub of the window's nodes) or an ancestor of one
// (found in own of the nodes on the way down). A query therefore gathers
// O(log S) sorted range lists and merges them. Insertion is O(log S) set
// updates, each a binary search and a short copy.
//
// Measured choices: nodes have eight children (fewer levels, so fewer lists
// per query); the lists are merged two at a time, shortest first, and a
// short list is merged into a much longer one by binary search and bulk
// copy, since the ranges of buffers live all along the program sit in one
// long list at the top of the tree; leaves keep no own set, which no query
// reads. On Y_1 a best-fit pass takes 0.3 to 0.4 s this way, against 1.2 s
// when the gathered lists were simply concatenated and sorted, and 12.7 s
// for the naive O(n^2) scan measured in PACKING.md.

import "slices"

// span is the byte range [lo, hi).
type span struct{ lo, hi int64 }

// occupancy is the index over one instance's time slots.
type occupancy struct {
	nodes []occNode
	sets  [][]span // sets[0] is the shared empty set
	free  [][]span // emptied sets kept for reuse by reset
	lists [][]span // query scratch: the gathered lists
	bufs  [][]span // query scratch: one buffer per merge of a query
}

// occNode is a node of the tree: slots [l, r), children nodes[kid:kid+nkid].
type occNode struct {
	l, r     int32
	kid      int32
	nkid     int32
	own, sub int32 // indices into sets
}

// occFanout is the number of children of an inner node. Wider trees put a
// rectangle in more nodes of a level and narrower ones in more levels;
// eight measured best on the corpus.
const occFanout = 8

func newOccupancy(nslot int) *occupancy {
	o := &occupancy{sets: make([][]span, 1, 64)}
	o.nodes = make([]occNode, 1, 2*nslot+1)
	o.nodes[0] = occNode{l: 0, r: int32(nslot)}
	// Breadth-first build: split each node's range into up to occFanout
	// nearly equal parts; children of a node are contiguous.
	for v := 0; v < len(o.nodes); v++ {
		n := o.nodes[v]
		w := n.r - n.l
		if w <= 1 {
			continue
		}
		k := min(int32(occFanout), w)
		o.nodes[v].kid = int32(len(o.nodes))
		o.nodes[v].nkid = k
		for i := int32(0); i < k; i++ {
			o.nodes = append(o.nodes, occNode{l: n.l + w*i/k, r: n.l + w*(i+1)/k})
		}
	}
	return o
}

// reset empties the index for reuse over the same slots, keeping the memory
// of its sets: a portfolio packs one instance many times, and reusing the
// sets spares the allocator and the garbage collector most of the work.
func (o *occupancy) reset() {
	for i := range o.nodes {
		o.nodes[i].own, o.nodes[i].sub = 0, 0
	}
	for _, s := range o.sets[1:] {
		o.free = append(o.free, s[:0])
	}
	clear(o.sets[1:])
	o.sets = o.sets[:1]
}

// insert records bytes [lo, hi) as taken over the slots [a, b).
func (o *occupancy) insert(a, b int32, lo, hi int64) {
	if a >= b || lo >= hi {
		return
	}
	o.insertRec(0, a, b, lo, hi)
}

func (o *occupancy) insertRec(v int32, a, b int32, lo, hi int64) {
	n := &o.nodes[v]
	o.add(&n.sub, lo, hi)
	if a <= n.l && n.r <= b {
		// A query reads own only at nodes it covers in part, which a
		// leaf (one slot) never is, so leaves keep sub alone.
		if n.nkid > 0 {
			o.add(&n.own, lo, hi)
		}
		return
	}
	for c := n.kid; c < n.kid+n.nkid; c++ {
		if k := &o.nodes[c]; k.l < b && a < k.r {
			o.insertRec(c, a, b, lo, hi)
		}
	}
}

// add merges [lo, hi) into the set at *ref, allocating the set if needed.
func (o *occupancy) add(ref *int32, lo, hi int64) {
	if *ref == 0 {
		*ref = int32(len(o.sets))
		var s []span
		if n := len(o.free); n > 0 {
			s = o.free[n-1]
			o.free[n-1] = nil
			o.free = o.free[:n-1]
		}
		o.sets = append(o.sets, append(s, span{lo, hi}))
		return
	}
	s := o.sets[*ref]
	// i is the first range that ends at or after lo: the first that can
	// touch [lo, hi).
	i, j := 0, len(s)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s[h].hi < lo {
			i = h + 1
		} else {
			j = h
		}
	}
	k := i
	for k < len(s) && s[k].lo <= hi {
		lo = min(lo, s[k].lo)
		hi = max(hi, s[k].hi)
		k++
	}
	switch {
	case k == i:
		s = slices.Insert(s, i, span{lo, hi})
	case k == i+1:
		s[i] = span{lo, hi}
	default:
		s[i] = span{lo, hi}
		s = slices.Delete(s, i+1, k)
	}
	o.sets[*ref] = s
}

// gather collects into o.lists the range sets that together cover everything
// taken at some moment of the slots [a, b).
func (o *occupancy) gather(a, b int32) {
	o.lists = o.lists[:0]
	if a < b {
		o.gatherRec(0, a, b)
	}
}

func (o *occupancy) gatherRec(v int32, a, b int32) {
	n := &o.nodes[v]
	if a <= n.l && n.r <= b {
		if s := n.sub; s != 0 {
			o.lists = append(o.lists, o.sets[s])
		}
		return
	}
	if s := n.own; s != 0 {
		o.lists = append(o.lists, o.sets[s])
	}
	if n.sub == n.own && n.own == 0 {
		return
	}
	for c := n.kid; c < n.kid+n.nkid; c++ {
		if k := &o.nodes[c]; k.l < b && a < k.r && k.sub != 0 {
			o.gatherRec(c, a, b)
		}
	}
}

// taken appends to dst the union, as sorted disjoint ranges, of everything
// taken at some moment of the slots [a, b).
func (o *occupancy) taken(a, b int32, dst []span) []span {
	o.gather(a, b)
	switch len(o.lists) {
	case 0:
		return dst
	case 1:
		return append(dst, o.lists[0]...)
	}
	// Merge the two shortest lists until one is left (Huffman order): each
	// two-way union is a tight linear loop and unions only shrink, so the
	// work is near-linear in the ranges gathered.
	ls := o.lists
	for k := 0; len(ls) > 2; k++ {
		a, b := shortestTwo(ls)
		if k == len(o.bufs) {
			o.bufs = append(o.bufs, nil)
		}
		merged := union2(ls[a], ls[b], o.bufs[k][:0])
		o.bufs[k] = merged[:0]
		// Keep the merged list at a; drop b by swapping in the last list.
		ls[a] = merged
		ls[b] = ls[len(ls)-1]
		ls = ls[:len(ls)-1]
	}
	return union2(ls[0], ls[1], dst)
}

// shortestTwo returns the indices of the two shortest lists.
func shortestTwo(ls [][]span) (int, int) {
	a, b := 0, 1
	if len(ls[b]) < len(ls[a]) {
		a, b = b, a
	}
	for i := 2; i < len(ls); i++ {
		switch n := len(ls[i]); {
		case n < len(ls[a]):
			a, b = i, a
		case n < len(ls[b]):
			b = i
		}
	}
	return a, b
}

// union2 appends to dst the union of two sorted lists of disjoint ranges,
// merging ranges that overlap or touch. The choice between the two lists is
// made without a branch: it is unpredictable and dominates the cost.
func union2(x, y []span, dst []span) []span {
	switch {
	case len(x) >= 8*len(y):
		return unionGallop(x, y, dst)
	case len(y) >= 8*len(x):
		return unionGallop(y, x, dst)
	}
	start := len(dst)
	i, j := 0, 0
	nx, ny := len(x), len(y)
	if nx > 0 && ny > 0 {
		// Make room for every range; the merge writes at w.
		dst = slices.Grow(dst, nx+ny)[:start+nx+ny]
		w := start
		last := span{lo: -1 << 62, hi: -1 << 62}
		for i < nx && j < ny {
			a, b := x[i], y[j]
			var c int
			if a.lo <= b.lo {
				c = 1
			}
			s := b
			if c == 1 {
				s = a
			}
			i += c
			j += 1 - c
			if s.lo <= last.hi {
				if s.hi > last.hi {
					last.hi = s.hi
				}
				dst[w-1] = last
				continue
			}
			dst[w] = s
			last = s
			w++
		}
		dst = dst[:w]
	}
	for ; i < nx; i++ {
		dst = appendUnion(dst, start, x[i])
	}
	for ; j < ny; j++ {
		dst = appendUnion(dst, start, y[j])
	}
	return dst
}

func appendUnion(dst []span, start int, s span) []span {
	if w := len(dst); w > start && s.lo <= dst[w-1].hi {
		dst[w-1].hi = max(dst[w-1].hi, s.hi)
		return dst
	}
	return append(dst, s)
}

// unionGallop is union2 for a long list big and a short list small: it
// finds each range of small in big by binary search and copies the ranges
// of big in between wholesale, so the cost follows len(small) log len(big)
// plus a memory copy of big. Long lists are the ranges of buffers live for
// most of the program, gathered at the top of the tree by every query.
func unionGallop(big, small []span, dst []span) []span {
	start := len(dst)
	i := 0
	for _, s := range small {
		// j is the first range of big starting after s.
		lo, hi := i, len(big)
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			if big[h].lo <= s.lo {
				lo = h + 1
			} else {
				hi = h
			}
		}
		dst = appendRuns(dst, start, big[i:lo])
		dst = appendUnion(dst, start, s)
		i = lo
	}
	return appendRuns(dst, start, big[i:])
}

// appendRuns appends the sorted disjoint ranges rs to dst, merging those
// that the last range of dst reaches and copying the rest wholesale.
func appendRuns(dst []span, start int, rs []span) []span {
	k := 0
	for k < len(rs) && len(dst) > start && rs[k].lo <= dst[len(dst)-1].hi {
		dst[len(dst)-1].hi = max(dst[len(dst)-1].hi, rs[k].hi)
		k++
	}
	return append(dst, rs[k:]...)
}
