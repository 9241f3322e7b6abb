package assign

// The heap replay: XLA's HeapSimulator::RunComputation over the flattened
// schedule, turned into intervals for the packers.
//
// Each value to place goes into defined[start] and freed[end] (inclusive
// live ranges), ordered by (start, end, id). At each time step, first every
// value defined there is placed:
//
//   - if another value of its buffer is already placed, it shares that
//     value's address (a colocation);
//   - else, when operand reuse is on and its buffer has no other values, it
//     may take over an operand's slot: an operand value defined by a direct
//     operand of its instruction, alone in its buffer, dying now and not yet
//     freed, when CanShareOperandBufferWithUser holds and the instruction is
//     not a copy; the operand is freed and the new value colocated with it;
//   - otherwise it gets a fresh allocation.
//
// Then every value freed at that step is freed, in the (start, end, id)
// order of the list. Every event (alloc, share, free) of a value of nonzero
// size advances a private clock, as XLA's GlobalDecreasingSizeBestFitHeap
// does; the intervals live in that clock. In XLA's heap every value counts
// at its buffer's size (HloBuffer::ComputeSize, the largest of its values),
// and a value that takes over an operand's slot at the size of the slot it
// joins; the intervals record that size for the "xla" packer, while the
// other packers place each value at its own size.
//
// Along the way a running total gives the no-fragmentation peak, the lower
// bound of any packing of the intervals: like XLA's NoFragmentationStatsHeap,
// except that a group of values sharing an address counts once, at its
// largest live member. A second total counts as XLA's heap does (every
// Alloc and ShareWith adds the interval's size, every Free takes it off, so
// a colocated value counts twice while its partner is live): its peak is
// XLA's figure, which can exceed what the values need.

import (
	"sort"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/binheap"
	"github.com/hlomem/hlomem/liveness"
)

// shareFunc is CanShareOperandBufferWithUser for some target.
type shareFunc func(operand *hlo.Instruction, opIx hlo.ShapeIndex, user *hlo.Instruction, userIx hlo.ShapeIndex) bool

// heapInterval is one value's interval in event time (both ends inclusive).
type heapInterval struct {
	value      *liveness.Value
	start, end int64
	// size is the interval's size in XLA's heap: its buffer's size (the
	// largest of the buffer's values), or for a value taking over an
	// operand's slot, the size of the interval it shares with.
	size int64
	// shareWith is the value whose address this one takes (nil for a fresh
	// allocation).
	shareWith *liveness.Value
}

type replayResult struct {
	intervals []*heapInterval // in placement order
	peak      int64
	peakTime  int // schedule time step of the peak
	peakLive  []*liveness.Value
	// xlaPeak is the peak as XLA's NoFragmentationStatsHeap counts it.
	xlaPeak int64
}

// replay simulates the heap over the values include accepts (all scheduled
// values when nil).
// share decides whether a value may take over a dying operand's slot (the
// target's CanShareOperandBufferWithUser); nil turns operand reuse off.
func replay(a *liveness.Analysis, include func(*liveness.Value) bool, share shareFunc) replayResult {
	end := a.EndTime()
	n := len(a.Values)
	var vals []*liveness.Value
	for _, v := range a.Values {
		if v.Scheduled && (include == nil || include(v)) {
			vals = append(vals, v)
		}
	}
	sort.Slice(vals, func(i, j int) bool {
		x, y := vals[i].Range, vals[j].Range
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		if x.End != y.End {
			return x.End < y.End
		}
		return vals[i].ID < vals[j].ID
	})
	// Per value (by ID): in the set, end of range as the replay extends
	// it, waiting in freed[end], its interval, its group's root.
	inSet := make([]bool, n)
	rangeEnd := make([]int, n)
	pending := make([]bool, n)
	iv := make([]*heapInterval, n)
	group := make([]int32, n)
	// defined[definedAt[t]:definedAt[t+1]] start at t, freed[...] end at
	// t, both in the (start, end, id) order of vals.
	definedAt, defined := liveness.ByStep(vals, end, func(v *liveness.Value) int { return v.Range.Start })
	freedAt, freed := liveness.ByStep(vals, end, func(v *liveness.Value) int { return v.Range.End })
	for _, v := range vals {
		inSet[v.ID] = true
		rangeEnd[v.ID] = v.Range.End
		pending[v.ID] = true
	}
	var res replayResult
	res.intervals = make([]*heapInterval, 0, len(vals))
	slab := make([]heapInterval, len(vals)) // one interval per value
	first := make([]*liveness.Value, len(a.Buffers))
	var clock, cur, xcur int64
	// Values sharing an address form a group, which occupies as many bytes
	// as its largest live member. A group is tracked once a second member
	// joins; until then its root counts alone.
	groups := map[int32]*groupSizes{}
	peakClock := int64(-1)
	peakT := -1
	note := func(t int) {
		if cur > res.peak {
			res.peak, peakT, peakClock = cur, t, clock-1
		}
	}
	alloc := func(v *liveness.Value, share *liveness.Value, t int) {
		size := v.Buffer.Size
		if share != nil {
			size = iv[share.ID].size
		}
		h := &slab[len(res.intervals)]
		*h = heapInterval{value: v, start: clock, end: -1, shareWith: share, size: size}
		if size > 0 {
			// XLA's heap places empty values at offset 0 without an
			// event.
			clock++
		}
		iv[v.ID] = h
		res.intervals = append(res.intervals, h)
		root := int32(v.ID)
		if share != nil {
			root = group[share.ID]
		}
		group[v.ID] = root
		if share == nil {
			cur += v.Size
		} else {
			g := groups[root]
			if g == nil {
				// The second member: the root, if still live, is already
				// counted at its size.
				g = &groupSizes{}
				if r := iv[root]; r != nil && r.end < 0 {
					g.add(r.value.Size)
				}
				groups[root] = g
			}
			cur += g.add(v.Size)
		}
		xcur += size
		res.xlaPeak = max(res.xlaPeak, xcur)
		note(t)
	}
	free := func(v *liveness.Value) {
		h := iv[v.ID]
		if h == nil || h.end >= 0 {
			return
		}
		h.end = clock
		if h.size > 0 {
			clock++
		}
		pending[v.ID] = false
		if g := groups[group[v.ID]]; g != nil {
			cur -= g.remove(v.Size)
		} else {
			cur -= v.Size
		}
		xcur -= h.size
	}
	for t := 0; t <= end; t++ {
		for _, v := range defined[definedAt[t]:definedAt[t+1]] {
			b := v.Buffer
			if f := first[b.ID]; f != nil {
				alloc(v, f, t)
				continue
			}
			if share != nil && len(b.Values) == 1 {
				if op := shareableOperand(a, v, t, pending, inSet, rangeEnd, share); op != nil {
					free(op)
					alloc(v, op, t)
					rangeEnd[op.ID] = rangeEnd[v.ID]
					continue
				}
			}
			alloc(v, nil, t)
			first[b.ID] = v
		}
		// Frees follow the (start, end, id) order in which the values were
		// listed, as in XLA; a value already freed to make room for its
		// user is skipped.
		for _, v := range freed[freedAt[t]:freedAt[t+1]] {
			if pending[v.ID] {
				free(v)
			}
		}
	}
	res.peakTime = peakT
	for _, h := range res.intervals {
		if h.start <= peakClock && (h.end < 0 || h.end >= peakClock) {
			res.peakLive = append(res.peakLive, h.value)
		}
	}
	return res
}

// groupSizes tracks the live members of a group of values sharing an
// address: how many of each size, and the largest size live, which is what
// the group occupies. A max-heap of sizes, cleaned lazily, finds the next
// largest when the last member of the largest size goes.
type groupSizes struct {
	max   int64
	count map[int64]int
	sizes binheap.Heap[int64] // largest first
}

// add records a live member of the given size and returns how much the
// group grew.
func (g *groupSizes) add(size int64) int64 {
	if g.count == nil {
		g.count = map[int64]int{}
		g.sizes.Less = func(a, b int64) bool { return a > b }
	}
	g.count[size]++
	if g.count[size] == 1 {
		g.sizes.Push(size)
	}
	if size > g.max {
		grew := size - g.max
		g.max = size
		return grew
	}
	return 0
}

// remove records that a member of the given size died and returns how
// much the group shrank.
func (g *groupSizes) remove(size int64) int64 {
	g.count[size]--
	if size != g.max || g.count[size] > 0 {
		return 0
	}
	for g.sizes.Len() > 0 && g.count[g.sizes.Top()] == 0 {
		g.sizes.Pop()
	}
	var next int64
	if g.sizes.Len() > 0 {
		next = g.sizes.Top()
	}
	shrank := g.max - next
	g.max = next
	return shrank
}

// shareableOperand finds an operand value whose slot v may take over at
// time t (see the comment at the top of the file).
func shareableOperand(a *liveness.Analysis, v *liveness.Value, t int, pending, inSet []bool, rangeEnd []int, share shareFunc) *liveness.Value {
	in := v.Inst
	if in.Opcode == hlo.OpCopy {
		return nil
	}
	for _, op := range in.Operands {
		ov := a.ValueAt(op, hlo.ShapeIndex{})
		if ov == nil || !inSet[ov.ID] || len(ov.Buffer.Values) != 1 {
			continue
		}
		if rangeEnd[ov.ID] != t || !pending[ov.ID] {
			continue
		}
		if !isOperand(in, ov.Inst) {
			continue
		}
		if share(ov.Inst, ov.Index, in, v.Index) {
			return ov
		}
	}
	return nil
}
