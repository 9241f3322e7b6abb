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
// value as it starts with the values still live.
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
	var active []Slot
	for _, s := range slots {
		y := s.Value
		kept := active[:0]
		for _, a := range active {
			if a.Value.Range.End >= y.Range.Start {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			x := a.Value
			if a.Offset >= s.Offset+s.Size || s.Offset >= a.Offset+a.Size || a.Size == 0 || s.Size == 0 {
				continue // no common byte
			}
			if x.Buffer == y.Buffer {
				continue
			}
			if x.Range.End == y.Range.Start && reads(y, x) || y.Range.End == x.Range.Start && reads(x, y) {
				continue
			}
			return fmt.Errorf("assign: allocation %d: %s (live %d-%d, bytes [%d,%d)) and %s (live %d-%d, bytes [%d,%d)) overlap",
				al.Index, x, x.Range.Start, x.Range.End, a.Offset, a.Offset+a.Size, y, y.Range.Start, y.Range.End, s.Offset, s.Offset+s.Size)
		}
		active = append(active, s)
	}
	return nil
}
