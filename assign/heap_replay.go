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
// bound of any packing: like XLA's NoFragmentationStatsHeap, except that a
// group of values sharing an address counts once, at its largest live
// member (XLA counts a colocated value twice while its partner is live).

import (
	"sort"

	"github.com/hlomem/hlomem/hlo"
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
}

// replay simulates the heap over the values include accepts (all scheduled
// values when nil).
// share decides whether a value may take over a dying operand's slot (the
// target's CanShareOperandBufferWithUser); nil turns operand reuse off.
func replay(a *liveness.Analysis, include func(*liveness.Value) bool, share shareFunc) replayResult {
	end := a.EndTime()
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
	inSet := make(map[*liveness.Value]bool, len(vals))
	defined := make([][]*liveness.Value, end+1)
	freed := make([][]*liveness.Value, end+1)
	rangeEnd := make(map[*liveness.Value]int, len(vals))
	for _, v := range vals {
		inSet[v] = true
		defined[v.Range.Start] = append(defined[v.Range.Start], v)
		freed[v.Range.End] = append(freed[v.Range.End], v)
		rangeEnd[v] = v.Range.End
	}
	var res replayResult
	iv := make(map[*liveness.Value]*heapInterval, len(vals))
	first := map[*liveness.Buffer]*liveness.Value{}
	var clock, cur int64
	live := map[*liveness.Value]bool{}
	// Values sharing an address form a group, which occupies as many bytes
	// as its largest live member: gmax is that size, gcount how many live
	// members have it.
	group := map[*liveness.Value]*liveness.Value{}
	members := map[*liveness.Value][]*liveness.Value{}
	gmax := map[*liveness.Value]int64{}
	gcount := map[*liveness.Value]int{}
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
			size = iv[share].size
		}
		h := &heapInterval{value: v, start: clock, end: -1, shareWith: share, size: size}
		if size > 0 {
			// XLA's heap places empty values at offset 0 without an
			// event.
			clock++
		}
		iv[v] = h
		res.intervals = append(res.intervals, h)
		root := v
		if share != nil {
			root = group[share]
		}
		group[v] = root
		members[root] = append(members[root], v)
		live[v] = true
		switch {
		case v.Size > gmax[root]:
			cur += v.Size - gmax[root]
			gmax[root], gcount[root] = v.Size, 1
		case v.Size == gmax[root]:
			gcount[root]++
		}
		note(t)
	}
	free := func(v *liveness.Value) {
		h := iv[v]
		if h == nil || h.end >= 0 {
			return
		}
		h.end = clock
		if h.size > 0 {
			clock++
		}
		root := group[v]
		delete(live, v)
		if v.Size != gmax[root] {
			return
		}
		if gcount[root] > 1 {
			gcount[root]--
			return
		}
		var m int64
		n := 0
		for _, x := range members[root] {
			switch {
			case !live[x]:
			case x.Size > m:
				m, n = x.Size, 1
			case x.Size == m:
				n++
			}
		}
		cur -= gmax[root] - m
		gmax[root], gcount[root] = m, n
	}
	for t := 0; t <= end; t++ {
		for _, v := range defined[t] {
			b := v.Buffer
			if f := first[b]; f != nil {
				alloc(v, f, t)
				continue
			}
			if share != nil && len(b.Values) == 1 {
				if op := shareableOperand(a, v, t, freed[t], inSet, rangeEnd, share); op != nil {
					free(op)
					freed[t] = removeValue(freed[t], op)
					alloc(v, op, t)
					rangeEnd[op] = rangeEnd[v]
					continue
				}
			}
			alloc(v, nil, t)
			first[b] = v
		}
		// Frees follow the (start, end, id) order in which the values were
		// listed, as in XLA.
		for _, v := range freed[t] {
			free(v)
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

// shareableOperand finds an operand value whose slot v may take over at
// time t (see the comment at the top of the file).
func shareableOperand(a *liveness.Analysis, v *liveness.Value, t int, freedNow []*liveness.Value, inSet map[*liveness.Value]bool, rangeEnd map[*liveness.Value]int, share shareFunc) *liveness.Value {
	in := v.Inst
	if in.Opcode == hlo.OpCopy {
		return nil
	}
	for _, op := range in.Operands {
		ov := a.ValueAt(op, hlo.ShapeIndex{})
		if ov == nil || !inSet[ov] || len(ov.Buffer.Values) != 1 {
			continue
		}
		if rangeEnd[ov] != t || !containsValue(freedNow, ov) {
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

func containsValue(vs []*liveness.Value, v *liveness.Value) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func removeValue(vs []*liveness.Value, v *liveness.Value) []*liveness.Value {
	out := vs[:0]
	for _, x := range vs {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
