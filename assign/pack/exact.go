package pack

// Exact packing: a depth-first branch-and-bound over canonical packings,
// after MiniMalloc (M. D. Moffitt, "MiniMalloc: A Lightweight Memory
// Allocator for Hardware-Accelerated Machine Learning", ASPLOS 2023).
//
// Canonical packings. Push every item of a packing down as far as it goes.
// Each item then rests on the floor (offset 0) or directly on top of an item
// it overlaps in time, and listing the items by offset, each one's offset is
// the highest top among the items before it that it overlaps (rounded up to
// its alignment). So a packing is determined by the order in which the items
// are laid, and an item is always laid at that lowest possible offset, its
// minimum offset. The search lays items in non-decreasing offset order (ties
// by a static rank), which enumerates each canonical packing once.
//
// Search. A node has some items laid. Its children are the unlaid items whose
// minimum offset is at least the last offset laid, in order of minimum offset
// then static rank ("dynamic ordering"). Pruning:
//
//   - Dominance: if item b could sit wholly below the offset of the candidate
//     (minoff(b) + size(b) <= offset), laying the candidate first leaves a hole
//     b would fill in some other branch, so the candidate is skipped.
//   - Cross-section load ("section inference"): a section is the set of
//     items live just before some item ends. The unlaid items of a section
//     are pairwise live together, so they stack: the top is at least the
//     lowest start any of them can take (the last offset laid, and their
//     least minimum offset, which is above everything laid in the section)
//     plus the sum of their sizes. Above the capacity, prune.
//   - An unlaid item whose minimum offset plus size exceeds the capacity, or a
//     fixed item pushed above its fixed offset, prunes at once.
//   - Hatless items: if the item just tried has no unlaid item overlapping it,
//     laying it lowest constrains nobody, so when its subtree fails no other
//     candidate of the node can succeed.
//
// Decomposition. Once every item spanning the boundary between two adjacent
// sections is laid, the items on either side never meet again, so the two
// sides are searched independently (MiniMalloc's dynamic decomposition): a
// failure on one side is not retried against other solutions of the other.
//
// Restarts. A static rank (MiniMalloc's "WAT", "TAW" and "TWA": W the
// lifetime, A the area, T the largest section load spanned) breaks ties;
// each rank runs in turn with a node limit that doubles every round, so a
// rank that suits the instance finishes early. As in MiniMalloc, each
// subproblem made by decomposition is ranked afresh, with T taken from the
// loads still unlaid: with this re-ranking the hardest MiniMalloc instances
// (E, H and I) take 4,000 to 73,000 nodes; with the ranks fixed at the root,
// ten million nodes did not solve them.
//
// Memory of failures. A node's fate depends only on its partition's unlaid
// items and their minimum offsets, and on the canonical restriction (the
// last offset and rank laid). Failed states go into a transposition table
// keyed by a 128-bit Zobrist hash kept up to date as items are laid and
// unlaid; a state met again under an equal or stronger restriction is cut
// at once. The table survives the restarts of one capacity, which makes the
// doubling node limits cheap: each round skips what earlier rounds refuted.
//
// Modes. With a capacity the search decides whether everything fits. To
// minimise, the capacity is bisected between the lower bound (raised by every
// capacity proven infeasible) and the best height known, starting from the
// portfolio's packing. Node limits, the time budget and the context bound the
// work; the best packing found so far is always kept, and it is reported as
// optimal only when its height equals a proven lower bound.
//
// Large instances. The search keeps the pairs of items that overlap in time,
// which real traces of tens of thousands of buffers have by the tens of
// millions; beyond exactItems items only the large items are searched, by
// single descents, and the small ones are fitted into the gaps afterwards
// (bigDive). On SOMAS PanGu-2.6B this reaches the lower bound.

import (
	"context"
	"slices"
	"time"
)

// exactItems is the largest instance the exact search takes on whole;
// beyond it only large items are searched (see bigDive).
const exactItems = 5000

// bigDive handles instances too large for the whole search: the items of at
// least bigItem times the lower bound go through single descents of the
// search (a node limit of twice their number, so barely any backtracking) at
// the target height, and the rest then go into the gaps by best fit, largest
// first. Small items rarely decide the height of real traces, and leaving
// them out shrinks the pairs of overlapping items the search must keep by
// an order of magnitude. Targets start at the capacity or the lower bound
// and relax in small steps while the budget lasts.
func bigDive(ctx context.Context, in *instance, pc *packContext, best *heapResult) *heapResult {
	var big, small []int32
	limit := bigItem * float64(pc.lb)
	for i := range in.items {
		if float64(in.items[i].size) >= limit || in.items[i].fixed {
			big = append(big, int32(i))
		} else {
			small = append(small, int32(i))
		}
	}
	if len(big) > exactItems*4 {
		return best
	}
	sub := subInstance(in, big)
	x := newExactInst(sub)
	var nodes int64
	defer func() { best.nodes = nodes }()
	smallOrder := sortItems(subInstance(in, small), bySize)
	target := pc.lb
	if pc.opts.Capacity > 0 {
		target = pc.opts.Capacity
	}
	// T-first orders suit real traces best; they go first.
	x.heuristics = []string{"TWA", "TAW", "WAT"}
	s := newSearch(x, 0, ctx, pc.deadline)
	for _, step := range []float64{0, 0.0005, 0.001, 0.002, 0.005} {
		c := target + int64(step*float64(pc.lb))
		if c >= best.height {
			break
		}
		for r := range x.heuristics {
			if ctx.Err() != nil || !time.Now().Before(pc.deadline) {
				return best
			}
			s.c = c
			s.reset(r, int64(2*x.n))
			st := s.root()
			nodes += s.nodes
			if st != found {
				continue
			}
			off := make([]int64, len(in.items))
			g := newGreedy(in, bestFit)
			for k, i := range big {
				off[i] = s.sol[k]
				g.commit(&in.items[i], off[i])
			}
			for _, k := range smallOrder {
				i := small[k]
				off[i] = g.place(&in.items[i])
			}
			if hgt := in.height(off); hgt < best.height {
				best = &heapResult{off: off, height: hgt, algo: "exact"}
				if hgt <= target {
					return best
				}
			}
		}
	}
	return best
}

// bigItem is the relative size from which bigDive searches an item.
const bigItem = 1e-4

// exactImprove runs the exact search from the warm-start packing warm.
func exactImprove(ctx context.Context, in *instance, pc *packContext, warm *heapResult) (*heapResult, error) {
	if len(in.items) > exactItems {
		if pc.withinGap(warm.height) {
			return warm, nil
		}
		return bigDive(ctx, in, pc, warm), nil
	}
	x := newExactInst(in)
	best := warm
	lo := pc.lb // every height below lo is proven impossible
	proven := true
	nodes := int64(0)
	defer func() { best.nodes = nodes }()
	// One search serves every capacity tried: its table of failed states
	// keys them by capacity too.
	s := newSearch(x, 0, ctx, time.Time{})
	try := func(c int64, deadline time.Time) searchStatus {
		s.c, s.deadline = c, deadline
		st := s.run()
		nodes += s.nodes
		if st == found {
			h := in.height(s.sol)
			if h < best.height {
				best = &heapResult{off: slices.Clone(s.sol), height: h, algo: "exact"}
			}
		}
		return st
	}
	deadline := pc.deadline
	slice := func(frac float64) time.Time {
		rest := time.Until(deadline)
		return time.Now().Add(time.Duration(float64(rest) * frac))
	}
	if c := pc.opts.Capacity; c > 0 {
		if best.height <= c {
			return best, nil
		}
		switch try(c, deadline) {
		case found:
			return best, nil
		case infeasible:
			lo = max(lo, c+1)
		default:
			return best, nil // out of time
		}
	}
	// Minimise: bisect over [lo, best.height).
	first := true
	for lo < best.height {
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			break
		}
		c := lo + (best.height-1-lo)/2
		frac := 0.5
		if first {
			c, frac = lo, 0.3 // the lower bound is often feasible
			first = false
		}
		switch try(c, slice(frac)) {
		case found:
		case infeasible:
			lo = c + 1
		default:
			lo = c + 1 // not proven: keep looking above
			proven = false
		}
	}
	if best.height <= pc.lb || proven && lo >= best.height {
		best.optimal = true
	}
	return best, nil
}

type searchStatus uint8

const (
	found searchStatus = iota
	infeasible
	aborted // node limit, deadline or cancellation
)

// exactInst is an instance prepared for the search.
type exactInst struct {
	in    *instance
	n     int
	size  []int64 // largest part
	align []int64
	fixed []bool
	foff  []int64
	// Sections: the sets of parts live just before some part ends, in
	// time order.
	nsec       int
	isecs      [][2]int32    // per item: hull of its sections [lo, hi)
	psecs      [][2]int32    // per part: its sections [lo, hi)
	secParts   [][]secMember // per section: the parts in it
	secTotal   []int64
	adj        [][]edge // per item: items overlapping it in time
	width      []int64  // lifetime, in the problem's time units
	heuristics []string // the static orders, in the letters of rankItems
}

type secMember struct {
	item int32
	size int64
}

// edge says that item to must sit at least ext above the offset of the item
// whose list holds the edge, when laid above it.
type edge struct {
	to  int32
	ext int64
}

func newExactInst(in *instance) *exactInst {
	n := len(in.items)
	x := &exactInst{
		in: in, n: n,
		size: make([]int64, n), align: make([]int64, n),
		fixed: make([]bool, n), foff: make([]int64, n),
		isecs: make([][2]int32, n), psecs: make([][2]int32, len(in.parts)),
		adj: make([][]edge, n),
	}
	partItem := make([]int32, len(in.parts))
	for i, it := range in.items {
		x.size[i], x.align[i], x.fixed[i], x.foff[i] = it.size, it.align, it.fixed, it.off
		for p := it.p0; p < it.p1; p++ {
			partItem[p] = int32(i)
		}
	}
	// Sweep the parts over slots. Every slot boundary at which some part
	// ends closes a section: the parts live just before it. Sections are
	// therefore not only the maximal sets of parts live together but every
	// set seen as parts end, which refines both the load inference and the
	// places where the problem can split.
	starts := make([][]int32, in.nslot+1)
	ends := make([][]int32, in.nslot+1)
	for p, pt := range in.parts {
		starts[pt.start] = append(starts[pt.start], int32(p))
		ends[pt.end] = append(ends[pt.end], int32(p))
	}
	live := map[int32]bool{}
	var liveList []int32
	secStart := make([]int32, len(in.parts))
	for t := 0; t <= in.nslot; t++ {
		if len(ends[t]) > 0 {
			liveList = liveList[:0]
			for p := range live {
				liveList = append(liveList, p)
			}
			slices.Sort(liveList)
			var mem []secMember
			var tot int64
			for _, p := range liveList {
				mem = append(mem, secMember{partItem[p], in.parts[p].size})
				tot += in.parts[p].size
			}
			x.secParts = append(x.secParts, mem)
			x.secTotal = append(x.secTotal, tot)
		}
		for _, p := range ends[t] {
			delete(live, p)
			x.psecs[p] = [2]int32{secStart[p], int32(len(x.secParts))}
		}
		for _, p := range starts[t] {
			live[p] = true
			secStart[p] = int32(len(x.secParts))
		}
	}
	x.nsec = len(x.secParts)
	for i, it := range in.items {
		x.isecs[i] = [2]int32{x.psecs[it.p0][0], x.psecs[it.p1-1][1]}
	}
	// Overlaps: for parts that meet in time, each item's edge to the other
	// carries the largest of its own parts that meets the other item. The
	// sweep keeps the live parts in a slice with each part's position, so
	// removal is O(1).
	active := make([]int32, 0, 64)
	pos := make([]int32, len(in.parts))
	multi := false
	for i := range in.items {
		if in.items[i].p1-in.items[i].p0 > 1 {
			multi = true
		}
	}
	for t := 0; t < in.nslot; t++ {
		for _, p := range ends[t] {
			k := pos[p]
			last := active[len(active)-1]
			active[k] = last
			pos[last] = k
			active = active[:len(active)-1]
		}
		for _, p := range starts[t] {
			a := partItem[p]
			for _, q := range active {
				b := partItem[q]
				if a != b {
					x.adj[a] = append(x.adj[a], edge{b, in.parts[p].size})
					x.adj[b] = append(x.adj[b], edge{a, in.parts[q].size})
				}
			}
			pos[p] = int32(len(active))
			active = append(active, p)
		}
	}
	if multi {
		// A pair of items may meet through several parts: keep one
		// edge, with the largest extent.
		for i, es := range x.adj {
			slices.SortFunc(es, func(u, v edge) int {
				if u.to != v.to {
					return int(u.to - v.to)
				}
				return cmpInt64(v.ext, u.ext)
			})
			x.adj[i] = slices.CompactFunc(es, func(u, v edge) bool { return u.to == v.to })
		}
	}
	x.width = make([]int64, n)
	for i := range in.items {
		x.width[i] = in.items[i].t1 - in.items[i].t0
	}
	x.heuristics = staticOrders
	return x
}

// search is one decision search at capacity c.
type search struct {
	x        *exactInst
	c        int64
	ctx      context.Context
	deadline time.Time

	off       []int64 // -1 while unlaid
	minOff    []int64
	rem       []int64 // per section: total size of its unlaid parts
	cut       []int32 // per section boundary k|k+1: unlaid items spanning it
	witness   []int32 // per section: an unlaid member that is low enough, or -1
	top       int64   // the highest top of the items laid
	rank      []int32 // per item: position in its partition's static order
	load      []int64 // per item: scratch for rankItems
	rankTrail [][2]int32
	order     int // which static order
	sol       []int64
	trail     []undo
	stack     []int32 // arena for the item lists of partitions on the path
	next      []int32 // unlaid-item lists, see newHead
	prev      []int32
	cands     []cand

	// h1, h2 hash the unlaid items with their minimum offsets (Zobrist);
	// tt remembers states proven to fail.
	h1, h2 uint64
	tt     []ttEntry

	nodes, limit int64
	stopped      bool // out of time or cancelled
}

type undo struct {
	kind uint8
	idx  int32
	val  int64
}

const (
	undoOff uint8 = iota
	undoMinOff
	undoRem // the load the item idx took from its sections
	undoTop
	undoCut
)

type cand struct {
	off  int64
	rank int32
	item int32
}

// ttEntry records a failed state: its unlaid items and their minimum
// offsets (the key), and the weakest canonical restriction (last offset,
// last rank) under which it failed. A state revisited under an equal or
// stronger restriction fails again, since it has no more candidates.
type ttEntry struct {
	k1, k2 uint64
	last   int64
	rank   int32
}

// ttBits sizes the transposition table: 1<<ttBits entries of 32 bytes.
const ttBits = 20

func newSearch(x *exactInst, c int64, ctx context.Context, deadline time.Time) *search {
	return &search{
		x: x, c: c, ctx: ctx, deadline: deadline,
		off: make([]int64, x.n), minOff: make([]int64, x.n),
		rem: make([]int64, x.nsec),
		cut: make([]int32, max(x.nsec-1, 0)), witness: make([]int32, x.nsec),
		rank: make([]int32, x.n), sol: make([]int64, x.n), load: make([]int64, x.n),
		next: make([]int32, x.n), prev: make([]int32, x.n),
		tt: make([]ttEntry, ttSize(x.n)),
	}
}

// ttSize picks a table size: enough for the hard instances of a few hundred
// items, small for tiny ones.
func ttSize(n int) int {
	size := 1 << 10
	for size < n<<10 && size < 1<<ttBits {
		size <<= 1
	}
	return size
}

// zobrist hashes item i at minimum offset m; seed picks one of two
// independent hash functions.
func zobrist(i int32, m int64, seed uint64) uint64 {
	z := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(m)*0xC2B2AE3D27D4EB4F ^ seed
	z ^= z >> 33
	z *= 0xff51afd7ed558ccd
	z ^= z >> 33
	z *= 0xc4ceb9fe1a85ec53
	z ^= z >> 33
	return z
}

const (
	seed1 = 0x243F6A8885A308D3
	seed2 = 0x13198A2E03707344
)

// rankItems sorts items by the static order s.order: a sequence of keys,
// each largest first, ties to the lower item index:
//
//	W  lifetime          A  area (size x lifetime)
//	T  largest current section load spanned
//	Z  size              C  sections spanned
//
// T is taken from the loads left unlaid now, as MiniMalloc does when it
// orders a subproblem, so the ranks of a subproblem depend on its state only.
func (s *search) rankItems(items []int32) {
	x := s.x
	h := x.heuristics[s.order]
	for _, i := range items {
		var t int64
		it := &x.in.items[i]
		for p := it.p0; p < it.p1; p++ {
			for sec := x.psecs[p][0]; sec < x.psecs[p][1]; sec++ {
				t = max(t, s.rem[sec])
			}
		}
		s.load[i] = t
	}
	slices.SortFunc(items, func(a, b int32) int {
		for k := 0; k < len(h); k++ {
			var c int
			switch h[k] {
			case 'W':
				c = cmpInt64(x.width[b], x.width[a])
			case 'A':
				aa, ab := x.in.items[a].area, x.in.items[b].area
				if aa > ab {
					c = -1
				} else if aa < ab {
					c = 1
				}
			case 'T':
				c = cmpInt64(s.load[b], s.load[a])
			case 'Z':
				c = cmpInt64(x.size[b], x.size[a])
			case 'C':
				c = int((x.isecs[b][1] - x.isecs[b][0]) - (x.isecs[a][1] - x.isecs[a][0]))
			}
			if c != 0 {
				return c
			}
		}
		return int(a - b)
	})
}

// reset prepares a fresh search under static order r with a node limit.
func (s *search) reset(r int, limit int64) {
	x := s.x
	s.order = r
	s.h1, s.h2 = 0, 0
	for i := range s.off {
		s.off[i] = -1
		s.minOff[i] = 0
		s.h1 ^= zobrist(int32(i), 0, seed1)
		s.h2 ^= zobrist(int32(i), 0, seed2)
	}
	for sec := range s.rem {
		s.rem[sec] = x.secTotal[sec]
		s.witness[sec] = -1
	}
	for k := range s.cut {
		s.cut[k] = 0
	}
	for i := range x.n {
		for k := x.isecs[i][0]; k+1 < x.isecs[i][1]; k++ {
			s.cut[k]++
		}
	}
	s.trail = s.trail[:0]
	s.stack = s.stack[:0]
	s.top = 0
	s.stopped = false
	s.nodes, s.limit = 0, limit
}

// run decides whether the instance fits in s.c, restarting over the static
// orders with doubling node limits. Failed states found under one limit are
// remembered for the next rounds.
func (s *search) run() searchStatus {
	x := s.x
	for _, sec := range x.secTotal {
		if sec > s.c {
			return infeasible
		}
	}
	for i := range x.n {
		if x.size[i] > s.c || x.fixed[i] && x.foff[i]+x.size[i] > s.c {
			return infeasible
		}
	}
	total := int64(0)
	for limit := int64(2 * x.n); ; limit *= 2 {
		for r := range x.heuristics {
			s.reset(r, limit)
			st := s.root()
			total += s.nodes
			switch {
			case st == found || st == infeasible:
				s.nodes = total
				return st
			case s.stopped:
				s.nodes = total
				return aborted
			}
		}
	}
}

// The unlaid items of a partition form a doubly linked list in rank order,
// threaded through next and prev, with a head node of index >= n. Laying an
// item unlinks it and undoing relinks it (dancing links), so a node never
// copies its list: memory stays O(n) on paths of any depth.

// newHead allocates an empty list and returns its head.
func (s *search) newHead() int32 {
	h := int32(len(s.next))
	s.next = append(s.next, h)
	s.prev = append(s.prev, h)
	return h
}

// pushBack appends item i to the list with head h.
func (s *search) pushBack(h, i int32) {
	p := s.prev[h]
	s.next[p], s.prev[i], s.next[i], s.prev[h] = i, p, h, i
}

// root searches every independent partition of the instance.
func (s *search) root() searchStatus {
	s.next, s.prev = s.next[:s.x.n], s.prev[:s.x.n]
	h := s.newHead()
	for i := range int32(s.x.n) {
		s.pushBack(h, i)
	}
	return s.partitions(h, 0, int32(s.x.nsec))
}

// partitions splits the list h, whose items' sections lie in [lo, hi), at
// the boundaries no unlaid item spans, and searches each part on its own,
// each with its own list in its own rank order. The list h is rebuilt on
// return.
func (s *search) partitions(h int32, lo, hi int32) searchStatus {
	x := s.x
	base := len(s.stack)
	for i := s.next[h]; i != h; i = s.next[i] {
		s.stack = append(s.stack, i)
	}
	all := s.stack[base:]
	defer func() {
		// Rebuild h in its original order.
		s.next[h], s.prev[h] = h, h
		for _, i := range s.stack[base : base+len(all)] {
			s.pushBack(h, i)
		}
		s.stack = s.stack[:base]
	}()
	st := found
	start := lo
	for k := lo; k < hi && st == found; k++ {
		if k+1 < hi && s.cut[k] > 0 {
			continue
		}
		// [start, k+1) is independent of the rest.
		sbase := len(s.stack)
		var p1, p2 uint64
		for _, i := range s.stack[base : base+len(all)] {
			if x.isecs[i][0] >= start && x.isecs[i][1] <= k+1 {
				s.stack = append(s.stack, i)
				p1 ^= zobrist(i, s.minOff[i], seed1)
				p2 ^= zobrist(i, s.minOff[i], seed2)
			}
		}
		if len(s.stack) > sbase {
			sub := s.stack[sbase:]
			s.rankItems(sub)
			rbase := len(s.rankTrail)
			hs := s.newHead()
			for r, i := range sub {
				s.rankTrail = append(s.rankTrail, [2]int32{i, s.rank[i]})
				s.rank[i] = int32(r)
				s.pushBack(hs, i)
			}
			s.stack = s.stack[:sbase]
			// The partition's own hash is the global one with the
			// other unlaid items' share taken out, a constant while
			// the partition is searched.
			st = s.node(hs, start, k+1, 0, -1, s.h1^p1, s.h2^p2)
			s.next, s.prev = s.next[:hs], s.prev[:hs]
			for _, r := range s.rankTrail[rbase:] {
				s.rank[r[0]] = r[1]
			}
			s.rankTrail = s.rankTrail[:rbase]
		}
		start = k + 1
	}
	return st
}

// maxCands is how many candidates a node ranks at a time; when they all
// fail it looks for the next ones.
const maxCands = 32

// node expands one search node: h is the list of the partition's unlaid
// items; sections [slo, shi); the last item laid went to offset last with
// rank lastRank; d1, d2 turn the global state hash into the partition's.
func (s *search) node(h int32, slo, shi int32, last int64, lastRank int32, d1, d2 uint64) searchStatus {
	x := s.x
	s.nodes++
	if s.nodes > s.limit {
		return aborted
	}
	if s.nodes&255 == 0 && (s.ctx.Err() != nil || !s.deadline.IsZero() && !time.Now().Before(s.deadline)) {
		s.stopped = true
		return aborted
	}
	if s.next[h] == h {
		return found
	}
	// The least top any unlaid item can reach.
	minTop := int64(1 << 62)
	for i := s.next[h]; i != h; i = s.next[i] {
		o := s.minOff[i]
		if x.fixed[i] {
			if o > x.foff[i] || x.foff[i] < last {
				return infeasible
			}
			o = x.foff[i]
		}
		minTop = min(minTop, o+x.size[i])
	}
	k1 := (s.h1 ^ d1) + uint64(s.order)*0x9E3779B97F4A7C15 + uint64(s.c)*0xD6E8FEB86659FD93
	k2 := s.h2 ^ d2 ^ uint64(s.order) ^ uint64(s.c)*0xA0761D6478BD642F
	if e := &s.tt[k1&uint64(len(s.tt)-1)]; e.k1 == k1 && e.k2 == k2 && (last > e.last || last == e.last && lastRank >= e.rank) {
		return infeasible
	}
	cbase := len(s.cands)
	defer func() { s.cands = s.cands[:cbase] }()
	// Candidates in (offset, rank) order, maxCands at a time: after is
	// the last one tried.
	after := cand{off: -1}
	for {
		s.cands = s.cands[:cbase]
		more := false
		for i := s.next[h]; i != h; i = s.next[i] {
			o := s.minOff[i]
			if x.fixed[i] {
				o = x.foff[i]
			}
			r := s.rank[i]
			if o < last || o == last && r < lastRank || o >= minTop {
				continue
			}
			if o < after.off || o == after.off && r <= after.rank {
				continue
			}
			c := cand{o, r, i}
			cs := s.cands[cbase:]
			if len(cs) == maxCands {
				more = true
				if w := cs[maxCands-1]; c.off > w.off || c.off == w.off && c.rank > w.rank {
					continue
				}
				s.cands = s.cands[:len(s.cands)-1]
			}
			// Insert in order.
			s.cands = append(s.cands, c)
			cs = s.cands[cbase:]
			for k := len(cs) - 1; k > 0 && (cs[k].off < cs[k-1].off || cs[k].off == cs[k-1].off && cs[k].rank < cs[k-1].rank); k-- {
				cs[k], cs[k-1] = cs[k-1], cs[k]
			}
		}
		n := len(s.cands) - cbase
		for k := 0; k < n; k++ {
			c := s.cands[cbase+k]
			after = c
			mark := len(s.trail)
			st := infeasible
			ok, hatless := s.lay(c.item, c.off, slo, shi)
			if ok {
				st = s.descend(h, c, slo, shi, d1, d2)
			}
			s.undoTo(mark)
			if st != infeasible {
				return st
			}
			if hatless {
				// Nothing rests on c.item: laying it lowest is never
				// worse, so no other candidate can succeed where this
				// one failed.
				more = false
				break
			}
		}
		if !more {
			break
		}
	}
	e := &s.tt[k1&uint64(len(s.tt)-1)]
	*e = ttEntry{k1, k2, last, lastRank}
	return infeasible
}

// descend continues below a node after laying c, splitting the partition if
// laying it cut every tie between two of its sections.
func (s *search) descend(h int32, c cand, slo, shi int32, d1, d2 uint64) searchStatus {
	x := s.x
	split := false
	for k := x.isecs[c.item][0]; k+1 < x.isecs[c.item][1]; k++ {
		s.set(undoCut, k, int64(s.cut[k]-1))
		if s.cut[k] == 0 && k >= slo && k+1 < shi {
			split = true
		}
	}
	if split {
		return s.partitions(h, slo, shi)
	}
	return s.node(h, slo, shi, c.off, c.rank, d1, d2)
}

// takeLoad removes (sign -1) or restores (sign +1) the load of item i from
// the sections it spans.
func (s *search) takeLoad(i int32, sign int64) {
	x := s.x
	it := &x.in.items[i]
	for p := it.p0; p < it.p1; p++ {
		d := sign * x.in.parts[p].size
		rem := s.rem[x.psecs[p][0]:x.psecs[p][1]]
		for k := range rem {
			rem[k] += d
		}
	}
}

// set records the old value of a state variable and changes it, keeping the
// state hash up to date.
func (s *search) set(kind uint8, idx int32, v int64) {
	var old int64
	switch kind {
	case undoOff:
		old, s.off[idx] = s.off[idx], v
		// Unlink the item from its list.
		s.next[s.prev[idx]] = s.next[idx]
		s.prev[s.next[idx]] = s.prev[idx]
		m := s.minOff[idx]
		s.h1 ^= zobrist(idx, m, seed1)
		s.h2 ^= zobrist(idx, m, seed2)
	case undoMinOff:
		old, s.minOff[idx] = s.minOff[idx], v
		s.h1 ^= zobrist(idx, old, seed1) ^ zobrist(idx, v, seed1)
		s.h2 ^= zobrist(idx, old, seed2) ^ zobrist(idx, v, seed2)
	case undoRem:
		s.takeLoad(idx, -1)
	case undoTop:
		old, s.top = s.top, v
	case undoCut:
		old, s.cut[idx] = int64(s.cut[idx]), int32(v)
	}
	s.trail = append(s.trail, undo{kind, idx, old})
}

func (s *search) undoTo(mark int) {
	for k := len(s.trail) - 1; k >= mark; k-- {
		u := s.trail[k]
		switch u.kind {
		case undoOff:
			s.off[u.idx] = u.val
			s.next[s.prev[u.idx]] = u.idx
			s.prev[s.next[u.idx]] = u.idx
			m := s.minOff[u.idx]
			s.h1 ^= zobrist(u.idx, m, seed1)
			s.h2 ^= zobrist(u.idx, m, seed2)
		case undoMinOff:
			cur := s.minOff[u.idx]
			s.minOff[u.idx] = u.val
			s.h1 ^= zobrist(u.idx, cur, seed1) ^ zobrist(u.idx, u.val, seed1)
			s.h2 ^= zobrist(u.idx, cur, seed2) ^ zobrist(u.idx, u.val, seed2)
		case undoRem:
			s.takeLoad(u.idx, +1)
		case undoTop:
			s.top = u.val
		case undoCut:
			s.cut[u.idx] = int32(u.val)
		}
	}
	s.trail = s.trail[:mark]
}

// lay puts item i at offset o, propagates, and reports whether the node
// survives the pruning tests, and whether the item is hatless: no unlaid
// item overlaps it, so laying it constrains no one.
func (s *search) lay(i int32, o int64, slo, shi int32) (ok, hatless bool) {
	x := s.x
	s.set(undoOff, i, o)
	s.sol[i] = o
	// The item's load leaves its sections; undoing gives it back, so one
	// trail entry does for all of them.
	s.set(undoRem, i, 0)
	if t := o + x.size[i]; t > s.top {
		s.set(undoTop, 0, t)
	}
	// Items above it must start above its top.
	hatless = true
	for _, e := range x.adj[i] {
		j := e.to
		if s.off[j] >= 0 {
			continue
		}
		hatless = false
		nv := alignUp(o+e.ext, x.align[j])
		if nv <= s.minOff[j] {
			continue
		}
		if nv+x.size[j] > s.c || x.fixed[j] && nv > x.foff[j] {
			return false, hatless
		}
		s.set(undoMinOff, j, nv)
	}
	// Cross-section load over the partition. The unlaid parts of a section
	// stack above the last offset laid and above the least minimum offset
	// among them (which is above everything laid in the section, as they
	// all overlap it); a witness, an unlaid member low enough, is kept per
	// section and looked for again only when it fails.
	for sec := slo; sec < shi; sec++ {
		r := s.rem[sec]
		if r == 0 {
			continue
		}
		if o+r > s.c {
			return false, hatless
		}
		thr := s.c - r
		if s.top <= thr {
			// No minimum offset is above the highest top laid, so
			// every unlaid member is low enough.
			continue
		}
		if w := s.witness[sec]; w >= 0 && s.off[w] < 0 && s.minOff[w] <= thr {
			continue
		}
		w, least := int32(-1), int64(1<<62)
		for _, m := range x.secParts[sec] {
			if s.off[m.item] < 0 && s.minOff[m.item] < least {
				w, least = m.item, s.minOff[m.item]
			}
		}
		if least > thr {
			return false, hatless
		}
		s.witness[sec] = w
	}
	return true, hatless
}

// staticOrders are the static orders the restarts take turns with: after
// MiniMalloc, "WAT", "TAW" and "TWA" (see rankItems for the letters).
var staticOrders = []string{"WAT", "TAW", "TWA"}
