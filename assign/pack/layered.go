package pack

// The layered packer, for instances too large for the greedy packers'
// window queries. A greedy placement asks which byte ranges are taken over
// the item's whole lifetime; in a training step thousands of activations
// live from the forward pass to the backward pass, so every one of a
// million placements merges thousands of ranges and the pass grows as
// n^1.5. The layered packer splits the items in two:
//
//   - the layer: items that live long (more than longSpan slots), must-share
//     groups and fixed items. They are few, they set the height, and the
//     portfolio packs them on their own, as carefully as it packs anything.
//   - the rest, each live a few slots: a sweep over time places them in
//     order of start, each at the lowest offset free over its lifetime
//     around the layer and the items already swept. The free ranges of the
//     current moment are a treap (gaps.go), so a placement costs O(log n)
//     plus the layer items that start during its short lifetime.
//
// Short items then fill the holes the layer leaves, which is where most of
// them go in any good packing: they are what stays live only between two
// uses.

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
)

// layeredItems is the instance size from which the portfolio packs in
// layers instead of running every greedy packer on every item.
const layeredItems = 1 << 17

// layerShare caps the layer at this fraction of the items: when more live
// long, longSpan rises until the rest is swept.
const layerShare = 8

// longSpan returns the number of slots beyond which an item goes into the
// layer: sixteen times the median lifetime (at least 16 slots), raised
// when more than one item in layerShare would live longer.
func longSpan(in *instance) int32 {
	spans := make([]int32, 0, len(in.items))
	for i := range in.items {
		spans = append(spans, in.items[i].end-in.items[i].start)
	}
	if len(spans) == 0 {
		return 0
	}
	slices.Sort(spans)
	l := max(16*spans[len(spans)/2], 16)
	if q := spans[len(spans)-1-len(spans)/layerShare]; q > l {
		l = q
	}
	return l
}

// splitLayer returns the layer items of in and the swept ones.
func splitLayer(in *instance) (layer, swept []int32) {
	l := longSpan(in)
	for i := range in.items {
		it := &in.items[i]
		if it.fixed || it.p1-it.p0 != 1 || it.end-it.start > l {
			layer = append(layer, int32(i))
		} else {
			swept = append(swept, int32(i))
		}
	}
	return layer, swept
}

// largeVariants returns the packers the portfolio runs from layeredItems
// items, each O(n log n) plus what its layer costs:
//
//   - layered: the layer by the greedy packers, the rest swept in batches
//     of sweepWidth slots; only when the layer is small enough for them
//     (at most layerWork pairs of layer items live at once).
//   - layer-swept-K: the layer swept too, in batches holding K layer items
//     on average, largest first, then the rest as above. Wider batches
//     come closer to placing the long-lived items largest first, as the
//     greedy packers do, narrower ones keep batch edges from cutting
//     through them; which K wins differs from trace to trace.
//   - sweep: every item swept in batches of sweepWidth slots, for traces
//     with no layer (chains of short-lived values).
func largeVariants(in *instance) []variant {
	if err := fixedApart(in); err != nil {
		// Every packer would fail on it: one that says why.
		return []variant{{"large", func(*instance, []int64, *atomic.Int64, *occPool) (int64, bool, error) { return 0, false, err }}}
	}
	// The split is the same for every variant: made once, read by all
	// (sweep sorts copies of its lists).
	var sp largeSplit
	sp.layer, sp.rest = splitLayer(in)
	for i := range in.items {
		if in.items[i].fixed {
			sp.fixed = append(sp.fixed, int32(i))
		} else {
			sp.movable = append(sp.movable, int32(i))
		}
	}
	for _, i := range sp.layer {
		if !in.items[i].fixed {
			sp.long = append(sp.long, i)
		}
	}
	var vs []variant
	if len(sp.layer) > 0 && overlapPairs(in, sp.layer, layerWork) <= layerWork {
		vs = append(vs, variant{"layered", func(in *instance, off []int64, bound *atomic.Int64, _ *occPool) (int64, bool, error) {
			return sp.runLayered(in, off, bound, sweepWidth)
		}})
	}
	if len(sp.layer) > 0 {
		for _, k := range layerBatchItems {
			w := int32(min(max(int64(k)*int64(in.nslot)/int64(len(sp.layer)), 1), int64(in.nslot)+1))
			vs = append(vs, variant{fmt.Sprintf("layer-swept-%d", k), func(in *instance, off []int64, bound *atomic.Int64, _ *occPool) (int64, bool, error) {
				return sp.runLayerSwept(in, off, bound, w, sweepWidth)
			}})
		}
	}
	return append(vs, variant{fmt.Sprintf("sweep-%d", sweepWidth), func(in *instance, off []int64, bound *atomic.Int64, _ *occPool) (int64, bool, error) {
		sp.placeFixed(in, off)
		return sweep(in, sp.fixed, sp.movable, off, sweepWidth, bound)
	}})
}

// largeSplit is an instance's items as the large packers group them: the
// layer (splitLayer) and the rest; the fixed items and the others; the
// layer's items that are not fixed.
type largeSplit struct {
	layer, rest    []int32
	fixed, movable []int32
	long           []int32
}

// placeFixed writes the fixed items' offsets into off.
func (sp *largeSplit) placeFixed(in *instance, off []int64) {
	for _, i := range sp.fixed {
		off[i] = in.items[i].off
	}
}

// fixedApart returns a *fixedOverlapError naming two fixed items of in that
// overlap, or nil: the sweeps take fixed items as given.
func fixedApart(in *instance) error {
	g := newGreedy(in, bestFit)
	return g.placeFixed(make([]int64, len(in.items)))
}

// sweepWidth is the batch width, in slots, of the sweep of short-lived
// items: wide enough that each batch's largest items go first, which
// keeps chains of short-lived values at their lower bound.
const sweepWidth = 64

// layerBatchItems are the average numbers of layer items per batch of the
// layer-swept packers.
var layerBatchItems = []int{128, 256, 32}

// layerWork bounds the pairs of layer items live at once for which the
// layered packer runs: the greedy packers' cost follows it.
const layerWork = 20_000_000

// runLayered packs the layer with the greedy packers, then sweeps the rest
// around it in batches of width slots.
func (sp *largeSplit) runLayered(in *instance, off []int64, bound *atomic.Int64, width int32) (int64, bool, error) {
	sub := subInstance(in, sp.layer)
	r, err := portfolioBelow(context.Background(), sub, allVariants(), 1, bound.Load())
	if err != nil || r == nil {
		return 0, false, err
	}
	for k, i := range sp.layer {
		off[i] = r.off[k]
	}
	return sweep(in, sp.layer, sp.rest, off, width, bound)
}

// overlapPairs counts the pairs of items of ids live at one moment, up to
// limit (it stops counting there).
func overlapPairs(in *instance, ids []int32, limit int64) int64 {
	type ev struct {
		t     int32
		delta int32
	}
	evs := make([]ev, 0, 2*len(ids))
	for _, i := range ids {
		evs = append(evs, ev{in.items[i].start, 1}, ev{in.items[i].end, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return int(a.delta - b.delta) // ends first
	})
	var live, pairs int64
	for _, e := range evs {
		if e.delta > 0 {
			pairs += live
			if pairs > limit {
				return pairs
			}
		}
		live += int64(e.delta)
	}
	return pairs
}

// sweep places the items swept (not fixed) around the items of layer,
// whose offsets are in off already. A swept item of several parts (a
// must-share group) takes its largest part's bytes over its whole hull,
// which is safe and, for the rare large group, loose. It cuts time into
// batches of width slots and places the items starting in each batch
// largest first, each at the lowest offset free during its whole lifetime;
// a batch sees the items live through it in a treap of free ranges and
// checks the few others (ending or starting within it) one by one. It
// returns the height of all items.
func sweep(in *instance, layer, swept []int32, off []int64, width int32, bound *atomic.Int64) (int64, bool, error) {
	nslot := int32(in.nslot)
	width = max(width, 1)
	var rects []sweepRect
	var h int64
	for _, i := range layer {
		it := &in.items[i]
		for _, pt := range in.parts[it.p0:it.p1] {
			if pt.size > 0 && pt.start < pt.end {
				rects = append(rects, sweepRect{pt.start, pt.end, off[i], off[i] + pt.size})
				h = max(h, off[i]+pt.size)
			}
		}
	}
	slices.SortFunc(rects, func(a, b sweepRect) int { return cmpInt64(int64(a.start), int64(b.start)) })
	nlayer := len(rects)
	// firstAt[s] is the first layer rect starting at or after slot s.
	firstAt := firstStarts(nlayer, int(nslot), func(k int) int32 { return rects[k].start })
	// Rects by end slot, as linked lists: layer rects now, swept items as
	// they are placed.
	endHead := make([]int32, nslot+1)
	for s := range endHead {
		endHead[s] = -1
	}
	next := make([]int32, 0, nlayer+len(swept))
	state := make([]uint8, 0, nlayer+len(swept)) // 0 not yet taken, 1 in the treap, 2 done
	link := func(k int32) {
		next = append(next, endHead[rects[k].end])
		state = append(state, 0)
		endHead[rects[k].end] = k
	}
	for k := range rects {
		link(int32(k))
	}
	its := in.items
	swept = slices.Clone(swept) // the caller's list is shared by other runs
	slices.SortFunc(swept, func(a, b int32) int {
		if c := cmpInt64(int64(its[a].start), int64(its[b].start)); c != 0 {
			return c
		}
		return int(a - b)
	})

	f := newFreeGaps(64)
	broken := func(what string, lo, hi int64) error {
		return fmt.Errorf("pack: sweep lost track of the free ranges (%s [%d, %d))", what, lo, hi)
	}
	var freedTo int32 = -1 // end slots up to here are freed
	var layerNext int      // next layer rect to take
	var pending []int32    // swept rects placed in the last batch
	// loc holds, over the batch's slots, the rects not in the treap: those
	// ending inside the batch and the batch's items placed so far. Two
	// items starting in one batch overlap in time only within it, so
	// clipping them to it loses nothing.
	loc := newOccupancy(int(2 * width))
	var taken []span
	var batch []int32
	ss := 0
	// A batch ends where the fewest bytes of swept items cross, between
	// width and 2*width slots after it starts: what crosses was placed
	// without seeing the next batch's larger items.
	var cross []int64
	if width > 1 {
		cross = make([]int64, nslot+2)
		for _, i := range swept {
			if it := &its[i]; it.end > it.start+1 {
				cross[it.start+1] += it.size
				cross[it.end] -= it.size
			}
		}
		for s := 1; s < len(cross); s++ {
			cross[s] += cross[s-1]
		}
	}
	for t0, t1 := int32(0), int32(0); t0 <= nslot && ss < len(swept); t0 = t1 {
		if h > bound.Load() {
			return h, false, nil // it can no longer win, or the run is cancelled
		}
		t1 = min(t0+width, nslot+1)
		if width > 1 {
			for s := t1 + 1; s < min(t0+2*width, nslot+1); s++ {
				if cross[s] < cross[t1] {
					t1 = s
				}
			}
		}
		// Advance the treap to t0: free what ended, take what started.
		for ; freedTo < t0; freedTo++ {
			for k := endHead[freedTo+1]; k >= 0 && freedTo+1 <= t0; k = next[k] {
				if state[k] == 1 {
					if r := &rects[k]; !f.free(r.lo, r.hi) {
						return 0, false, broken("freeing", r.lo, r.hi)
					}
				}
				state[k] = 2
			}
		}
		take := func(k int32) error {
			if state[k] != 0 {
				return nil
			}
			r := &rects[k]
			if r.end <= t0 {
				state[k] = 2
				return nil
			}
			if !f.take(r.lo, r.hi) {
				return broken("taking", r.lo, r.hi)
			}
			state[k] = 1
			return nil
		}
		for ; layerNext < nlayer && rects[layerNext].start <= t0; layerNext++ {
			if err := take(int32(layerNext)); err != nil {
				return 0, false, err
			}
		}
		for _, k := range pending {
			if err := take(k); err != nil {
				return 0, false, err
			}
		}
		pending = pending[:0]
		// What ends inside the batch leaves the treap for loc, so items
		// starting after it ends may use its bytes.
		loc.reset()
		for s := t0 + 1; s < t1 && s <= nslot; s++ {
			for k := endHead[s]; k >= 0; k = next[k] {
				if state[k] == 1 {
					r := &rects[k]
					if !f.free(r.lo, r.hi) {
						return 0, false, broken("freeing", r.lo, r.hi)
					}
					state[k] = 2
					loc.insert(0, r.end-t0, r.lo, r.hi)
				}
			}
		}
		// The batch, largest first.
		batch = batch[:0]
		for ; ss < len(swept) && its[swept[ss]].start < t1; ss++ {
			batch = append(batch, swept[ss])
		}
		slices.SortFunc(batch, func(a, b int32) int {
			if c := cmpInt64(its[b].size, its[a].size); c != 0 {
				return c
			}
			if c := cmpInt64(int64(its[b].end-its[b].start), int64(its[a].end-its[a].start)); c != 0 {
				return c
			}
			return int(a - b)
		})
		for _, i := range batch {
			it := &its[i]
			// Layer rects starting after t0 and before the item ends.
			lr := rects[firstAt[t0+1]:firstAt[it.end]]
			taken = loc.taken(it.start-t0, min(it.end, t1)-t0, taken[:0])
			var from int64
			o := f.lowest(it.size, it.align, from)
			for moved := true; moved && o >= 0; {
				moved = false
				for _, r := range lr {
					if r.end > it.start && o < r.hi && r.lo < o+it.size {
						from, moved = max(from, r.hi), true
					}
				}
				// The first range of taken ending above o.
				if j, _ := slices.BinarySearchFunc(taken, o, func(s span, o int64) int { return cmpInt64(s.hi, o+1) }); j < len(taken) && taken[j].lo < o+it.size {
					from, moved = max(from, taken[j].hi), true
				}
				if moved {
					o = f.lowest(it.size, it.align, from)
				}
			}
			if o < 0 {
				return 0, false, broken("placing", 0, it.size)
			}
			off[i] = o
			h = max(h, o+it.size)
			rects = append(rects, sweepRect{it.start, it.end, o, o + it.size})
			k := int32(len(rects) - 1)
			link(k)
			loc.insert(it.start-t0, min(it.end, t1)-t0, o, o+it.size)
			pending = append(pending, k)
		}
	}
	return h, h <= bound.Load(), nil
}

// sweepRect is bytes [lo, hi) taken over slots [start, end).
type sweepRect struct {
	start, end int32
	lo, hi     int64
}

// firstStarts returns, for each slot s in [0, nslot+1], the index of the
// first of n records sorted by start whose start is at or after s.
func firstStarts(n, nslot int, start func(k int) int32) []int32 {
	first := make([]int32, nslot+2)
	k := 0
	for s := 0; s <= nslot+1; s++ {
		for k < n && start(k) < int32(s) {
			k++
		}
		first[s] = int32(k)
	}
	return first
}

// runLayerSwept is runLayered with the layer placed by a sweep too, in
// batches of layerWidth slots: for layers too large for the greedy
// packers.
func (sp *largeSplit) runLayerSwept(in *instance, off []int64, bound *atomic.Int64, layerWidth, width int32) (int64, bool, error) {
	sp.placeFixed(in, off)
	if _, ok, err := sweep(in, sp.fixed, sp.long, off, layerWidth, bound); !ok || err != nil {
		return 0, ok, err
	}
	return sweep(in, sp.layer, sp.rest, off, width, bound)
}
