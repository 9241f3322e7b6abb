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
	p := &pack.Problem{Buffers: make([]pack.Buffer, 0, len(r.intervals))}
	vals := make([]*liveness.Value, len(r.intervals))
	index := intervalIndex(r)
	names := make(map[string]int, len(r.intervals))
	for i, h := range r.intervals {
		v := h.value
		name := v.Name()
		id := name
		if n := names[name]; n > 0 {
			id = fmt.Sprintf("%s#%d", name, n)
		}
		names[name]++
		p.Buffers = append(p.Buffers, pack.Buffer{ID: id, Start: h.start, End: h.end + 1, Size: v.Size, Align: align})
		vals[i] = v
	}
	// Groups: follow share links to the value that was allocated. A
	// group's root is its first member, so the groups come in the order
	// of their first members, and each lists its members in order.
	root := make([]int32, len(r.intervals))
	count := make([]int32, len(r.intervals))
	grouped := 0
	for i, h := range r.intervals {
		root[i] = int32(i)
		if h.shareWith != nil {
			root[i] = root[index(h.shareWith)]
		}
		count[root[i]]++
		if count[root[i]] == 2 {
			grouped += 2
		} else if count[root[i]] > 2 {
			grouped++
		}
	}
	if grouped == 0 {
		return p, vals
	}
	all := make([]int, 0, grouped)
	at := make([]int32, len(r.intervals)) // a group's position in p.Groups
	for g, n := range count {
		if n > 1 {
			at[g] = int32(len(p.Groups))
			p.Groups = append(p.Groups, all[len(all):len(all):len(all)+int(n)])
			all = all[:len(all)+int(n)]
		}
	}
	for i := range r.intervals {
		if g := root[i]; count[g] > 1 {
			p.Groups[at[g]] = append(p.Groups[at[g]], i)
		}
	}
	return p, vals
}

// intervalIndex returns the position of each value among r's intervals
// (the last, should one appear twice), 0 for a value not among them, from
// a table by value ID rather than a map keyed by pointers.
func intervalIndex(r replayResult) func(*liveness.Value) int {
	n := 0
	for _, h := range r.intervals {
		n = max(n, h.value.ID+1)
	}
	at := make([]int32, n)
	for i, h := range r.intervals {
		at[h.value.ID] = int32(i)
	}
	return func(v *liveness.Value) int {
		if v.ID < 0 || v.ID >= n {
			return 0
		}
		return int(at[v.ID])
	}
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
	al := &Allocation{Size: height, Color: color, Parameter: -1, order: len(as.Allocations), Slots: make([]Slot, 0, len(vals))}
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
	index := intervalIndex(r)
	ivs := make([]pack.XLAInterval, len(r.intervals))
	for i, h := range r.intervals {
		share := -1
		if h.shareWith != nil {
			share = index(h.shareWith)
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
