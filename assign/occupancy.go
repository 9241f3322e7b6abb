package assign

// The plan's occupancy: the bytes of memory its allocations occupy at each
// step of the flattened schedule, and its peak. This is the one definition
// of "the peak" that every output of hlomem reads (the report's text, JSON,
// HTML, SVG and pprof, assign's JSON, the GPU client's out-of-memory
// report, the peak golden files); the lower bound (Stats.LowerBound) is a
// different figure, a bound no plan goes under, and keeps its own name.
//
// What occupies memory at step t (0 <= t < len(Analysis.Sequence)) follows
// what the plan's memory holds there:
//
//   - an entry parameter's allocation (donated or not), a constant's and a
//     thread-local computation's occupy their whole size at every step: the
//     caller's arrays and the executable's constants exist before the first
//     instruction and after the last, and the lower bound gives these
//     buffers memory of their own for the whole run too;
//   - any other allocation outside the temp heap (an output's, a live-out
//     tuple's index table, with whatever temporaries joined it) occupies its
//     whole size from the first step one of its values is live to the last:
//     it is one block, which nothing outside it can use in between. A
//     live-out value is live to the end of the program, so an output's
//     allocation is occupied from the first definition of any of its values
//     to the last step;
//   - in a preallocated-temp allocation, the chunk of each value occupies
//     the bytes [offset, offset+size rounded up to the temp alignment) of
//     its slot over the value's live range (both ends inclusive): chunks
//     start at multiples of the alignment, so the rounding is memory no
//     other chunk can use, as the heap's lower bound counts it; the last
//     chunk's rounding stops at the allocation's end. Chunks whose bytes
//     overlap at a step (an operand its user overwrites in place, the
//     values of one buffer) count once.
//
// The bytes at a step are the union of what occupies memory then, and the
// peak is their largest value, at the first step that reaches it. No step
// exceeds Stats.TotalBytes (every part lies in its allocation), and the
// peak is at least Stats.LowerBound's figure at that step, so LowerBound
// <= peak <= TotalBytes; the corpus tests hold both.

import (
	"sort"

	"github.com/hlomem/hlomem/liveness"
)

// Occupancy is the memory a plan occupies over the flattened schedule
// (occupancy.go has the definition).
type Occupancy struct {
	// Bytes[t] is the bytes occupied at step t of Analysis.Sequence.
	Bytes []int64
	// Peak is the largest of Bytes and PeakStep the first step reaching
	// it; PeakStep is -1 (and Peak 0) when nothing occupies memory.
	Peak     int64
	PeakStep int
}

// Occupant is one region of an allocation occupied at a step: a whole
// allocation outside the temp heap, or a value's chunk in a
// preallocated-temp allocation together with the chunks sharing its bytes
// then.
type Occupant struct {
	Allocation *Allocation
	// Offset and Bytes delimit the region, [Offset, Offset+Bytes) in the
	// allocation.
	Offset, Bytes int64
	// Buffers hold the region, largest first (ties by ID): for a temp
	// chunk, its value's buffer and those of the chunks sharing its bytes
	// at the step; for a whole allocation, its buffers with a value live
	// at the step, or all of them when none is (a parameter after its last
	// use, a constant before its first). It is never empty: every
	// allocation Assign makes holds a value (the corpus tests check it).
	Buffers []*liveness.Buffer
	// Live is false when no value of Buffers is live at the step: the
	// memory is held for them without being in use.
	Live bool
}

// valueID is the ID of the value that names o, -1 if none.
func (o Occupant) valueID() int {
	if len(o.Buffers) > 0 {
		if v := LargestValue(o.Buffers[0]); v != nil {
			return v.ID
		}
	}
	return -1
}

// Kind is the kind of the occupant's allocation (Allocation.Kind).
func (o Occupant) Kind() string { return o.Allocation.Kind() }

// Occupancy returns the bytes the plan occupies at every step and its
// peak. It is computed once; the caller must not modify it.
func (as *Assignment) Occupancy() *Occupancy {
	as.occOnce.Do(func() { as.occ = as.occupancy() })
	return as.occ
}

// Peak returns the plan's peak (Occupancy): its first step, its bytes and
// what occupies memory there, largest first (OccupantsAt). The step is -1
// when nothing occupies memory.
func (as *Assignment) Peak() (step int, bytes int64, at []Occupant) {
	if as == nil {
		return -1, 0, nil
	}
	o := as.Occupancy()
	if o.PeakStep < 0 {
		return -1, 0, nil
	}
	return o.PeakStep, o.Peak, as.OccupantsAt(o.PeakStep)
}

// PeakBuffers returns the buffers that occupy memory at the plan's peak
// (Peak), each once, in the order of Peak's occupants (largest first) and
// of their Buffers; nil when nothing occupies memory.
func (as *Assignment) PeakBuffers() []*liveness.Buffer {
	_, _, at := as.Peak()
	var out []*liveness.Buffer
	seen := make([]bool, len(as.Analysis.Buffers)) // by buffer ID
	for _, o := range at {
		for _, b := range o.Buffers {
			if !seen[b.ID] {
				seen[b.ID] = true
				out = append(out, b)
			}
		}
	}
	return out
}

// LowerBoundStep returns the step at which Stats.LowerBound is reached (-1
// when it is 0) and the values live there that make it, largest first
// (ties by value ID): the proof of the bound, not the plan's peak.
func (as *Assignment) LowerBoundStep() (step int, live []*liveness.Value) {
	if as == nil {
		return -1, nil
	}
	t := as.bound.Time
	for _, b := range as.bound.Live {
		for _, v := range b.Values {
			if v.Scheduled && v.Range.Contains(t) {
				live = append(live, v)
			}
		}
	}
	sort.SliceStable(live, func(i, j int) bool {
		if live[i].Size != live[j].Size {
			return live[i].Size > live[j].Size
		}
		return live[i].ID < live[j].ID
	})
	return t, live
}

// wholeRun reports whether al occupies its memory at every step.
func wholeRun(al *Allocation) bool {
	return al.IsParameter() || al.Constant || al.ThreadLocal
}

// span is the steps [lo, hi] (inclusive) at which an allocation outside
// the temp heap occupies its memory, in a schedule of n steps; ok is false
// when it occupies none.
func (al *Allocation) span(n int) (lo, hi int, ok bool) {
	if n == 0 {
		return 0, 0, false
	}
	if wholeRun(al) {
		return 0, n - 1, true
	}
	lo, hi = n, -1
	for _, s := range al.Slots {
		v := s.Value
		if !v.Scheduled {
			return 0, n - 1, true // a value outside the schedule: held throughout
		}
		lo, hi = min(lo, v.Range.Start), max(hi, v.Range.End)
	}
	lo, hi = max(lo, 0), min(hi, n-1)
	return lo, hi, lo <= hi
}

// chunk is a temp value's bytes [off, end) of its allocation over the
// steps [start, stop] (inclusive).
type chunk struct {
	off, end    int64
	start, stop int
	v           *liveness.Value
}

// chunks returns the chunks of a preallocated-temp allocation in a
// schedule of n steps, in slot order.
func (as *Assignment) chunks(al *Allocation, n int) []chunk {
	align := as.ColorAlign(al.Color)
	var out []chunk
	for _, s := range al.Slots {
		if s.Size <= 0 {
			continue
		}
		v := s.Value
		start, stop := 0, n-1
		if v.Scheduled {
			start, stop = max(v.Range.Start, 0), min(v.Range.End, n-1)
		}
		if start > stop {
			continue
		}
		end := min(s.Offset+roundUp(s.Size, align), al.Size)
		out = append(out, chunk{off: s.Offset, end: end, start: start, stop: stop, v: v})
	}
	return out
}

func (as *Assignment) occupancy() *Occupancy {
	n := 0
	if as.Analysis != nil {
		n = len(as.Analysis.Sequence)
	}
	o := &Occupancy{Bytes: make([]int64, n), PeakStep: -1}
	if n == 0 {
		return o
	}
	diff := make([]int64, n+1)
	for _, al := range as.Allocations {
		if !al.Temp {
			if lo, hi, ok := al.span(n); ok {
				diff[lo] += al.Size
				diff[hi+1] -= al.Size
			}
			continue
		}
		as.addTempOccupancy(o.Bytes, as.chunks(al, n))
	}
	var cur int64
	for t := range n {
		cur += diff[t]
		o.Bytes[t] += cur
		if o.Bytes[t] > o.Peak {
			o.Peak, o.PeakStep = o.Bytes[t], t
		}
	}
	return o
}

// addTempOccupancy adds to bytes, at every step, the measure of the union
// of the chunks live there: a coverage tree over the chunks' boundaries,
// each chunk added at its first step and removed after its last.
func (as *Assignment) addTempOccupancy(bytes []int64, cs []chunk) {
	if len(cs) == 0 {
		return
	}
	coords := make([]int64, 0, 2*len(cs))
	for _, c := range cs {
		coords = append(coords, c.off, c.end)
	}
	sort.Slice(coords, func(i, j int) bool { return coords[i] < coords[j] })
	k := 0
	for i, x := range coords {
		if i == 0 || x != coords[k-1] {
			coords[k] = x
			k++
		}
	}
	coords = coords[:k]
	index := func(x int64) int { return sort.Search(len(coords), func(i int) bool { return coords[i] >= x }) }
	tree := newCoverage(coords)
	type event struct {
		step   int
		lo, hi int
		d      int32
	}
	evs := make([]event, 0, 2*len(cs))
	for _, c := range cs {
		lo, hi := index(c.off), index(c.end)
		evs = append(evs, event{c.start, lo, hi, 1}, event{c.stop + 1, lo, hi, -1})
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].step < evs[j].step })
	e := 0
	for t := range bytes {
		for ; e < len(evs) && evs[e].step <= t; e++ {
			tree.add(evs[e].lo, evs[e].hi, evs[e].d)
		}
		bytes[t] += tree.covered()
	}
}

// coverage is a segment tree over the elementary intervals between sorted
// coordinates that counts, under interval additions and removals, how
// much of the line at least one interval covers.
type coverage struct {
	coords []int64
	count  []int32 // intervals covering the node's whole range
	length []int64 // covered length within the node's range
}

func newCoverage(coords []int64) *coverage {
	m := max(len(coords)-1, 1)
	return &coverage{coords: coords, count: make([]int32, 4*m), length: make([]int64, 4*m)}
}

// add adds d to the count of the elementary intervals [lo, hi).
func (c *coverage) add(lo, hi int, d int32) {
	if lo < hi {
		c.addRec(1, 0, len(c.coords)-1, lo, hi, d)
	}
}

func (c *coverage) addRec(k, l, r, lo, hi int, d int32) {
	if hi <= l || r <= lo {
		return
	}
	if lo <= l && r <= hi {
		c.count[k] += d
	} else {
		m := (l + r) / 2
		c.addRec(2*k, l, m, lo, hi, d)
		c.addRec(2*k+1, m, r, lo, hi, d)
	}
	switch {
	case c.count[k] > 0:
		c.length[k] = c.coords[r] - c.coords[l]
	case r-l == 1:
		c.length[k] = 0
	default:
		c.length[k] = c.length[2*k] + c.length[2*k+1]
	}
}

func (c *coverage) covered() int64 { return c.length[1] }

// OccupantsAt returns what occupies memory at step t, largest first (ties
// by the ID of the value naming each, its first buffer's largest, then by
// allocation index and offset): every allocation outside the temp
// heap occupied then, whole, and in each preallocated-temp allocation the
// regions of the chunks live then, chunks whose bytes overlap making one
// region. Their bytes add up to Occupancy().Bytes[t].
func (as *Assignment) OccupantsAt(t int) []Occupant {
	n := len(as.Analysis.Sequence)
	if t < 0 || t >= n {
		return nil
	}
	var out []Occupant
	for _, al := range as.Allocations {
		if !al.Temp {
			if lo, hi, ok := al.span(n); ok && lo <= t && t <= hi && al.Size > 0 {
				out = append(out, wholeOccupant(al, t))
			}
			continue
		}
		var live []chunk
		for _, c := range as.chunks(al, n) {
			if c.start <= t && t <= c.stop {
				live = append(live, c)
			}
		}
		sort.Slice(live, func(i, j int) bool {
			if live[i].off != live[j].off {
				return live[i].off < live[j].off
			}
			return live[i].v.ID < live[j].v.ID
		})
		for i := 0; i < len(live); {
			o := Occupant{Allocation: al, Offset: live[i].off, Live: true}
			end := live[i].end
			var bufs []*liveness.Buffer
			for ; i < len(live) && (len(bufs) == 0 || live[i].off < end); i++ {
				end = max(end, live[i].end)
				bufs = append(bufs, live[i].v.Buffer)
			}
			o.Bytes = end - o.Offset
			o.Buffers = sortBuffers(bufs)
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		if a, b := out[i].valueID(), out[j].valueID(); a != b {
			return a < b
		}
		if out[i].Allocation.Index != out[j].Allocation.Index {
			return out[i].Allocation.Index < out[j].Allocation.Index
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// wholeOccupant is allocation al, occupied whole at step t.
func wholeOccupant(al *Allocation, t int) Occupant {
	o := Occupant{Allocation: al, Bytes: al.Size}
	var live, all []*liveness.Buffer
	for _, s := range al.Slots {
		v := s.Value
		all = append(all, v.Buffer)
		if v.Scheduled && v.Range.Contains(t) {
			live = append(live, v.Buffer)
		}
	}
	o.Live = len(live) > 0
	if o.Live {
		o.Buffers = sortBuffers(live)
	} else {
		o.Buffers = sortBuffers(all)
	}
	return o
}

// sortBuffers returns bs without repeats, largest first, ties by ID.
func sortBuffers(bs []*liveness.Buffer) []*liveness.Buffer {
	sort.Slice(bs, func(i, j int) bool {
		if bs[i].Size != bs[j].Size {
			return bs[i].Size > bs[j].Size
		}
		return bs[i].ID < bs[j].ID
	})
	out := bs[:0]
	for i, b := range bs {
		if i == 0 || b != bs[i-1] {
			out = append(out, b)
		}
	}
	return out
}

// BufferName names a buffer after its largest value (ties by ID), as
// XLA's dumps name values: name{index}.
func BufferName(b *liveness.Buffer) string {
	if v := LargestValue(b); v != nil {
		return v.Name()
	}
	return ""
}

// LargestValue is b's largest value, ties by ID (nil when it has none):
// the value that names the buffer.
func LargestValue(b *liveness.Buffer) *liveness.Value {
	var rep *liveness.Value
	for _, v := range b.Values {
		if rep == nil || v.Size > rep.Size || v.Size == rep.Size && v.ID < rep.ID {
			rep = v
		}
	}
	return rep
}
