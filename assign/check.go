package assign

// An independent check of a whole buffer assignment. It shares no code
// with the assigner or the packers: it looks only at the slots of each
// allocation and the values' live ranges.

import (
	"fmt"
	"sort"

	"github.com/hlomem/hlomem/liveness"
)

// Check verifies that as is a valid plan:
//
//   - every value of the analysis holds exactly one slot, inside its
//     allocation's bounds;
//   - the values of one buffer share one allocation and one offset;
//   - in temp allocations every offset is a multiple of the alignment;
//   - two slots of an allocation whose bytes overlap hold values whose
//     live ranges are disjoint, or that touch at one step where the later
//     value's instruction reads the earlier value (an operand overwritten
//     in place), or that belong to one buffer.
func Check(as *Assignment) error {
	// By value and buffer ID (both dense over the analysis) rather than
	// in maps keyed by pointers: a table entry per value, not a map entry.
	vals, bufs := as.Analysis.Values, as.Analysis.Buffers
	seen := make([]bool, len(vals))
	bufAt := make([][2]int64, len(bufs)) // allocation index, offset
	bufSet := make([]bool, len(bufs))
	for _, al := range as.Allocations {
		for _, s := range al.Slots {
			v := s.Value
			if v.ID < 0 || v.ID >= len(vals) || vals[v.ID] != v {
				return fmt.Errorf("assign: value %s is not a value of the analysis", v)
			}
			if b := v.Buffer; b == nil || b.ID < 0 || b.ID >= len(bufs) || bufs[b.ID] != b {
				return fmt.Errorf("assign: value %s has no buffer of the analysis", v)
			}
			if seen[v.ID] {
				return fmt.Errorf("assign: value %s is placed twice", v)
			}
			seen[v.ID] = true
			if s.Offset < 0 || s.Size < 0 || s.Offset+s.Size > al.Size {
				return fmt.Errorf("assign: value %s at [%d,%d) lies outside allocation %d of size %d", v, s.Offset, s.Offset+s.Size, al.Index, al.Size)
			}
			if s.Size < v.Size {
				return fmt.Errorf("assign: value %s needs %d bytes, its slot has %d", v, v.Size, s.Size)
			}
			if align := as.ColorAlign(al.Color); al.Temp && align > 1 && s.Offset%align != 0 {
				return fmt.Errorf("assign: value %s at offset %d in allocation %d is not aligned to %d", v, s.Offset, al.Index, align)
			}
			want := [2]int64{int64(al.Index), s.Offset}
			if got := bufAt[v.Buffer.ID]; bufSet[v.Buffer.ID] && got != want {
				return fmt.Errorf("assign: value %s is at allocation %d offset %d, but its buffer's other values are at allocation %d offset %d", v, al.Index, s.Offset, got[0], got[1])
			}
			bufAt[v.Buffer.ID], bufSet[v.Buffer.ID] = want, true
		}
		if err := checkSlots(al); err != nil {
			return err
		}
	}
	for _, v := range vals {
		if !seen[v.ID] {
			return fmt.Errorf("assign: value %s has no allocation", v)
		}
	}
	return nil
}

// reads reports whether y's instruction reads x.
func reads(y, x *liveness.Value) bool {
	for _, u := range x.Uses {
		if u.Inst == y.Inst {
			return true
		}
	}
	return false
}

// checkSlots sweeps the allocation's slots in time order, comparing each
// value as it starts with the values still live whose bytes it shares.
// The live slots are kept by offset (activeSlots), so that each start
// looks only at the slots over its own bytes rather than at every live
// one: on a plan with many values live at once (long-lived activations)
// a scan of them all at every start made the check quadratic.
func checkSlots(al *Allocation) error {
	if len(al.Slots) < 2 {
		return nil
	}
	slots := append([]Slot(nil), al.Slots...)
	for _, s := range slots {
		if !s.Value.Scheduled {
			return fmt.Errorf("assign: allocation %d shares space with value %s, which has no live range", al.Index, s.Value)
		}
	}
	sort.Slice(slots, func(i, j int) bool {
		a, b := slots[i].Value.Range, slots[j].Value.Range
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return slots[i].Value.ID < slots[j].Value.ID
	})
	// The slots by end of range, to retire them as the sweep passes it.
	byEnd := make([]int32, len(slots))
	for i := range byEnd {
		byEnd[i] = int32(i)
	}
	sort.SliceStable(byEnd, func(i, j int) bool {
		return slots[byEnd[i]].Value.Range.End < slots[byEnd[j]].Value.Range.End
	})
	state := make([]uint8, len(slots)) // 1: in active, 2: retired
	var active activeSlots
	e := 0
	for i, s := range slots {
		y := s.Value
		for ; e < len(byEnd) && slots[byEnd[e]].Value.Range.End < y.Range.Start; e++ {
			k := byEnd[e]
			if state[k] == 1 {
				active.remove(slots[k].Offset, k)
			}
			state[k] = 2
		}
		if s.Size == 0 {
			continue // no byte to share
		}
		// The first conflicting slot in the sweep's order, as a scan of
		// the live slots in that order would find it.
		bad := -1
		active.overlapping(s.Offset, s.Offset+s.Size, func(k int32) {
			if bad >= 0 && int(k) > bad {
				return
			}
			a := slots[k]
			x := a.Value
			if x.Buffer == y.Buffer {
				return
			}
			if x.Range.End == y.Range.Start && reads(y, x) || y.Range.End == x.Range.Start && reads(x, y) {
				return
			}
			bad = int(k)
		})
		if bad >= 0 {
			a := slots[bad]
			x := a.Value
			return fmt.Errorf("assign: allocation %d: %s (live %d-%d, bytes [%d,%d)) and %s (live %d-%d, bytes [%d,%d)) overlap",
				al.Index, x, x.Range.Start, x.Range.End, a.Offset, a.Offset+a.Size, y, y.Range.Start, y.Range.End, s.Offset, s.Offset+s.Size)
		}
		if state[i] != 2 {
			active.insert(activeSlot{off: s.Offset, end: s.Offset + s.Size, k: int32(i)})
			state[i] = 1
		}
	}
	return nil
}

// activeSlots holds byte ranges [off, end) of slots (k numbers the slot),
// sorted by (off, k) in chunks, each chunk knowing the largest end among
// its slots: finding the slots over a range skips the chunks that end
// before it and stops at the first that starts after it.
type activeSlots struct {
	chunks []activeChunk
}

type activeSlot struct {
	off, end int64
	k        int32
}

type activeChunk struct {
	items  []activeSlot
	maxEnd int64
}

const activeChunkSize = 128

func (x activeSlot) before(off int64, k int32) bool {
	return x.off < off || x.off == off && x.k < k
}

func (c *activeChunk) fix() {
	c.maxEnd = 0
	for _, it := range c.items {
		c.maxEnd = max(c.maxEnd, it.end)
	}
}

// chunkOf returns the chunk that holds or would hold (off, k): the last
// whose first slot is not after it, or the first.
func (a *activeSlots) chunkOf(off int64, k int32) int {
	ci := sort.Search(len(a.chunks), func(i int) bool {
		f := a.chunks[i].items[0]
		return off < f.off || off == f.off && k < f.k
	}) - 1
	return max(ci, 0)
}

func (a *activeSlots) insert(it activeSlot) {
	if len(a.chunks) == 0 {
		a.chunks = []activeChunk{{items: []activeSlot{it}, maxEnd: it.end}}
		return
	}
	ci := a.chunkOf(it.off, it.k)
	c := &a.chunks[ci]
	j := sort.Search(len(c.items), func(i int) bool { return !c.items[i].before(it.off, it.k) })
	c.items = append(c.items, activeSlot{})
	copy(c.items[j+1:], c.items[j:])
	c.items[j] = it
	c.maxEnd = max(c.maxEnd, it.end)
	if len(c.items) > 2*activeChunkSize {
		right := activeChunk{items: append([]activeSlot(nil), c.items[activeChunkSize:]...)}
		c.items = append([]activeSlot(nil), c.items[:activeChunkSize]...)
		c.fix()
		right.fix()
		a.chunks = append(a.chunks, activeChunk{})
		copy(a.chunks[ci+2:], a.chunks[ci+1:])
		a.chunks[ci+1] = right
	}
}

func (a *activeSlots) remove(off int64, k int32) {
	ci := a.chunkOf(off, k)
	if ci >= len(a.chunks) {
		return
	}
	c := &a.chunks[ci]
	j := sort.Search(len(c.items), func(i int) bool { return !c.items[i].before(off, k) })
	if j == len(c.items) || c.items[j].off != off || c.items[j].k != k {
		return
	}
	c.items = append(c.items[:j], c.items[j+1:]...)
	if len(c.items) == 0 {
		a.chunks = append(a.chunks[:ci], a.chunks[ci+1:]...)
		return
	}
	c.fix()
}

// overlapping calls f with every slot whose range meets [lo, hi).
func (a *activeSlots) overlapping(lo, hi int64, f func(k int32)) {
	for ci := range a.chunks {
		c := &a.chunks[ci]
		if c.items[0].off >= hi {
			return
		}
		if c.maxEnd <= lo {
			continue
		}
		for _, it := range c.items {
			if it.off >= hi {
				return
			}
			if it.end > lo {
				f(it.k)
			}
		}
	}
}
