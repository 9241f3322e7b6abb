package pack

// Greedy packing: take the items one at a time in a fixed order and put each
// at the best free place among the items already placed, never moving one
// again. This is XLA's GlobalDecreasingSizeBestFitHeap (heap_simulator.cc)
// and the planner of TFLite, IREE and PyTorch (Pisarchyk & Lee, "Efficient
// Memory Management for Deep Neural Net Inference", 2020).
//
// The free places for an item are the gaps between the byte ranges taken, at
// some moment of its lifetime, by the items placed so far, plus the unbounded
// space above them all; the occupancy index (intervaltree.go) returns those
// ranges already merged. A gap [lo, hi) holds the item when its first aligned
// offset a = roundup(lo, align) leaves a+size <= hi. Best fit takes the gap
// with the least room hi-a, ties to the lowest offset, as XLA's
// FindChunkCandidate does; first fit takes the lowest offset. If no gap
// holds the item it goes on top. A must-share group is one item of several
// parts, each with its own lifetime and size; a start offset is free when
// every part fits there, so for groups the gaps are computed over start
// offsets instead of bytes, which for one part is the same thing.
//
// The orders (Options.Algorithm "bestfit-ORDER" or "firstfit-ORDER"):
//
//	size      largest first, then longest lifetime, then input order (XLA kSpatial)
//	lifetime  longest lifetime first, then largest, then input order (XLA kTemporal)
//	area      largest size x lifetime first, then largest, then input order
//	start     earliest start first, then largest, then input order (online planners)
//
// Fixed items are placed first, where they are.

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

type fitRule uint8

const (
	bestFit fitRule = iota
	firstFit
)

type greedyOrder uint8

const (
	bySize greedyOrder = iota
	byLifetime
	byArea
	byStart
	numOrders
)

var orderNames = [numOrders]string{"size", "lifetime", "area", "start"}

// greedyVariant is one greedy packer: an order and a fit rule.
type greedyVariant struct {
	order greedyOrder
	rule  fitRule
}

func (v greedyVariant) name() string {
	if v.rule == firstFit {
		return "firstfit-" + orderNames[v.order]
	}
	return "bestfit-" + orderNames[v.order]
}

// sortItems returns the non-fixed items of in in the order o.
func sortItems(in *instance, o greedyOrder) []int32 {
	ids := make([]int32, 0, len(in.items))
	for i := range in.items {
		if !in.items[i].fixed {
			ids = append(ids, int32(i))
		}
	}
	its := in.items
	life := func(i int32) int64 { return its[i].t1 - its[i].t0 }
	var key func(a, b int32) int
	switch o {
	case bySize:
		key = func(a, b int32) int {
			if c := cmpInt64(its[b].size, its[a].size); c != 0 {
				return c
			}
			return cmpInt64(life(b), life(a))
		}
	case byLifetime:
		key = func(a, b int32) int {
			if c := cmpInt64(life(b), life(a)); c != 0 {
				return c
			}
			return cmpInt64(its[b].size, its[a].size)
		}
	case byArea:
		key = func(a, b int32) int {
			if its[a].area != its[b].area {
				if its[a].area > its[b].area {
					return -1
				}
				return 1
			}
			return cmpInt64(its[b].size, its[a].size)
		}
	case byStart:
		key = func(a, b int32) int {
			if c := cmpInt64(its[a].t0, its[b].t0); c != 0 {
				return c
			}
			return cmpInt64(its[b].size, its[a].size)
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := key(a, b); c != 0 {
			return c
		}
		return int(a - b)
	})
	return ids
}

// greedy places items one by one over an occupancy index.
type greedy struct {
	in      *instance
	occ     *occupancy
	rule    fitRule
	scratch []span
	blocked []span
}

func newGreedy(in *instance, rule fitRule) *greedy {
	return &greedy{in: in, occ: newOccupancy(in.nslot), rule: rule}
}

// occPool hands out occupancy indexes over one instance's slots for reuse
// across the runs of a portfolio.
type occPool struct {
	mu   sync.Mutex
	free []*occupancy
}

func (p *occPool) get(nslot int) *occupancy {
	if p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if n := len(p.free); n > 0 {
			o := p.free[n-1]
			p.free = p.free[:n-1]
			return o
		}
	}
	return newOccupancy(nslot)
}

func (p *occPool) put(o *occupancy) {
	if p == nil {
		return
	}
	o.reset()
	p.mu.Lock()
	p.free = append(p.free, o)
	p.mu.Unlock()
}

// placeFixed records every fixed item, failing if two of them overlap.
func (g *greedy) placeFixed(off []int64) error {
	in := g.in
	for i := range in.items {
		it := &in.items[i]
		if !it.fixed {
			continue
		}
		for _, pt := range in.parts[it.p0:it.p1] {
			g.scratch = g.occ.taken(pt.start, pt.end, g.scratch[:0])
			for _, s := range g.scratch {
				if s.lo < it.off+pt.size && it.off < s.hi {
					return g.fixedOverlap(i)
				}
			}
		}
		g.commit(it, it.off)
		off[i] = it.off
	}
	return nil
}

// fixedOverlap names a fixed item placed before item i that overlaps it.
func (g *greedy) fixedOverlap(i int) error {
	in := g.in
	a := &in.items[i]
	for j := 0; j < i; j++ {
		b := &in.items[j]
		if !b.fixed {
			continue
		}
		for _, pa := range in.parts[a.p0:a.p1] {
			for _, pb := range in.parts[b.p0:b.p1] {
				if pa.start < pb.end && pb.start < pa.end && a.off < b.off+pb.size && b.off < a.off+pa.size {
					return &fixedOverlapError{in: in, a: j, b: i}
				}
			}
		}
	}
	return &fixedOverlapError{in: in, a: i, b: i}
}

// fixedOverlapError is translated to an *InvalidError naming buffers by Pack.
type fixedOverlapError struct {
	in   *instance
	a, b int // item indices
}

func (e *fixedOverlapError) Error() string {
	return fmt.Sprintf("fixed items %d and %d overlap", e.a, e.b)
}

// commit records item it at offset off.
func (g *greedy) commit(it *item, off int64) {
	for _, pt := range g.in.parts[it.p0:it.p1] {
		g.occ.insert(pt.start, pt.end, off, off+pt.size)
	}
}

// place finds the offset for item it by the fit rule and records it there.
func (g *greedy) place(it *item) int64 {
	var off int64
	if it.p1-it.p0 == 1 {
		off = g.placeOne(it)
	} else {
		off = g.placeMany(it)
	}
	g.commit(it, off)
	return off
}

// placeOne chooses among byte gaps, for an item of one part.
func (g *greedy) placeOne(it *item) int64 {
	pt := g.in.parts[it.p0]
	g.scratch = g.occ.taken(pt.start, pt.end, g.scratch[:0])
	size, align := pt.size, it.align
	best, bestRoom := int64(-1), int64(0)
	var prev int64
	for _, s := range g.scratch {
		a := alignUp(prev, align)
		if a+size <= s.lo {
			room := s.lo - a
			if g.rule == firstFit {
				return a
			}
			if best < 0 || room < bestRoom {
				best, bestRoom = a, room
				if room == size {
					return a // a perfect fit cannot be beaten
				}
			}
		}
		prev = s.hi
	}
	if best >= 0 {
		return best
	}
	return alignUp(prev, align)
}

// placeMany chooses among ranges of free start offsets, for a group item of
// several parts: a part of size z is blocked at every start o with
// lo-z < o < hi for each taken range [lo, hi) of its lifetime.
func (g *greedy) placeMany(it *item) int64 {
	g.blocked = g.blocked[:0]
	for _, pt := range g.in.parts[it.p0:it.p1] {
		g.scratch = g.occ.taken(pt.start, pt.end, g.scratch[:0])
		for _, s := range g.scratch {
			g.blocked = append(g.blocked, span{s.lo - pt.size + 1, s.hi})
		}
	}
	slices.SortFunc(g.blocked, func(x, y span) int { return cmpInt64(x.lo, y.lo) })
	align := it.align
	best, bestRoom := int64(-1), int64(0)
	var free int64 // first start not yet known to be blocked
	for _, b := range g.blocked {
		if b.lo > free {
			// Starts [free, b.lo) are all free.
			if a := alignUp(free, align); a < b.lo {
				if g.rule == firstFit {
					return a
				}
				if room := b.lo - a; best < 0 || room < bestRoom {
					best, bestRoom = a, room
				}
			}
		}
		free = max(free, b.hi)
	}
	if best >= 0 {
		return best
	}
	return alignUp(free, align)
}

// runGreedy packs in with variant v, writing item offsets into off. When
// bound is not nil the run gives up, returning ok == false, as soon as its
// height exceeds *bound: the portfolio shares its best height so far there.
// The occupancy index comes from pool (nil: a fresh one).
func runGreedy(in *instance, v greedyVariant, off []int64, bound *atomic.Int64, pool *occPool) (h int64, ok bool, err error) {
	g := &greedy{in: in, occ: pool.get(in.nslot), rule: v.rule}
	defer func() { pool.put(g.occ) }()
	if err := g.placeFixed(off); err != nil {
		return 0, false, err
	}
	for i := range in.items {
		if in.items[i].fixed {
			h = max(h, in.items[i].off+in.items[i].size)
		}
	}
	for k, i := range sortItems(in, v.order) {
		it := &in.items[i]
		off[i] = g.place(it)
		h = max(h, off[i]+it.size)
		if bound != nil && k&63 == 0 && h > bound.Load() {
			return h, false, nil
		}
	}
	if bound != nil && h > bound.Load() {
		return h, false, nil
	}
	return h, true, nil
}

// height returns the height of the item offsets off.
func (in *instance) height(off []int64) int64 {
	var h int64
	for i := range in.items {
		h = max(h, off[i]+in.items[i].size)
	}
	return h
}
