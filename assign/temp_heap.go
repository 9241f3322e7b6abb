package assign

import (
	"context"
	"fmt"
	"sort"

	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/liveness"
)

// packTemps replays the deferred temporaries per color, packs each color's
// intervals with the chosen algorithm and makes one preallocated-temp
// allocation per color.
func (as *Assignment) packTemps(ctx context.Context, deferred []*liveness.Buffer) error {
	// The buffers of each color in the order deferred lists them (by
	// buffer ID), so that no map iteration decides the order in which
	// they join the heap's allocation.
	byColor := map[int64][]*liveness.Buffer{}
	inHeap := make([]bool, len(as.Analysis.Buffers))
	var colors []int64
	for _, b := range deferred {
		if byColor[b.Color] == nil {
			colors = append(colors, b.Color)
		}
		byColor[b.Color] = append(byColor[b.Color], b)
	}
	sort.Slice(colors, func(i, j int) bool { return colors[i] < colors[j] })
	for _, color := range colors {
		bufs := byColor[color]
		for _, b := range bufs {
			inHeap[b.ID] = true
		}
		r := replay(as.Analysis, func(v *liveness.Value) bool { return v.Buffer != nil && inHeap[v.Buffer.ID] }, as.shareFunc())
		for _, b := range bufs {
			inHeap[b.ID] = false
		}
		h, err := as.packHeap(ctx, color, r)
		if err != nil {
			return err
		}
		if h == nil {
			continue
		}
		as.Heaps = append(as.Heaps, h)
		for _, b := range bufs {
			as.allocOf[b.ID] = h.Allocation
			h.Allocation.buffers = append(h.Allocation.buffers, b)
		}
	}
	return nil
}

// heapProblem turns replay intervals into a packing problem: half-open
// event-time intervals, chunk starts aligned, colocated values in one
// must-share group.
func heapProblem(r replayResult, align int64) (*pack.Problem, []*liveness.Value) {
	p := &pack.Problem{}
	vals := make([]*liveness.Value, len(r.intervals))
	index := make(map[*liveness.Value]int, len(r.intervals))
	names := map[string]int{}
	for i, h := range r.intervals {
		v := h.value
		id := v.Name()
		if n := names[id]; n > 0 {
			id = fmt.Sprintf("%s#%d", id, n)
		}
		names[v.Name()]++
		p.Buffers = append(p.Buffers, pack.Buffer{ID: id, Start: h.start, End: h.end + 1, Size: v.Size, Align: align})
		vals[i] = v
		index[v] = i
	}
	// Groups: follow share links to the value that was allocated.
	root := make([]int, len(r.intervals))
	for i, h := range r.intervals {
		root[i] = i
		if h.shareWith != nil {
			root[i] = root[index[h.shareWith]]
		}
	}
	members := map[int][]int{}
	var order []int
	for i := range r.intervals {
		if _, ok := members[root[i]]; !ok {
			order = append(order, root[i])
		}
		members[root[i]] = append(members[root[i]], i)
	}
	for _, g := range order {
		if len(members[g]) > 1 {
			p.Groups = append(p.Groups, members[g])
		}
	}
	return p, vals
}

func (as *Assignment) packHeap(ctx context.Context, color int64, r replayResult) (*TempHeap, error) {
	if len(r.intervals) == 0 {
		return nil, nil
	}
	align := as.ColorAlign(color)
	p, vals := heapProblem(r, align)
	var sol *pack.Solution
	var err error
	if as.Options.Algorithm == "xla" {
		sol = xlaHeapSolution(r, p, align)
	} else {
		sol, err = pack.Pack(ctx, p, pack.Options{Algorithm: as.Options.Algorithm, Budget: as.Options.Budget, Gap: max(as.Options.Gap, 0)})
		if err != nil {
			return nil, fmt.Errorf("assign: packing the temp heap of color %d: %w", color, err)
		}
	}
	if err := pack.Check(p, sol.Packing); err != nil {
		return nil, fmt.Errorf("assign: temp heap of color %d: %w", color, err)
	}
	height := sol.Height()
	h := &TempHeap{Color: color, Problem: p, Values: vals, Solution: sol, LowerBound: r.peak, PeakTime: r.peakTime, PeakValues: r.peakLive}
	al := &Allocation{Size: height, Color: color, Parameter: -1, order: len(as.Allocations)}
	for i, v := range vals {
		al.Slots = append(al.Slots, Slot{Value: v, Offset: sol.Offsets[i], Size: v.Size})
	}
	as.Allocations = append(as.Allocations, al)
	h.Allocation = al
	return h, nil
}

// xlaHeapSolution packs the replay's intervals with XLA's heap algorithm
// (pack.XLAHeap). The heap's height is XLA's heap size, which counts each
// interval at its XLA size (its buffer's) and may exceed the problem's.
func xlaHeapSolution(r replayResult, p *pack.Problem, align int64) *pack.Solution {
	index := make(map[*liveness.Value]int, len(r.intervals))
	for i, h := range r.intervals {
		index[h.value] = i
	}
	ivs := make([]pack.XLAInterval, len(r.intervals))
	for i, h := range r.intervals {
		share := -1
		if h.shareWith != nil {
			share = index[h.shareWith]
		}
		ivs[i] = pack.XLAInterval{ID: h.value.ID, Size: h.size, Start: h.start, End: h.end, ShareWith: share}
	}
	res := pack.XLAHeap(ivs, align)
	algo := "xla-spatial"
	if res.Temporal {
		algo = "xla-temporal"
	}
	lb := pack.LowerBound(p, 0)
	return &pack.Solution{Packing: pack.Packing{Offsets: res.Off}, Algorithm: algo,
		Heaps: []pack.Heap{{Height: res.Height, LowerBound: lb}}}
}
