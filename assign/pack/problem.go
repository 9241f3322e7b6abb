package pack

// The data model of the packing layer: buffers over half-open time
// intervals, must-share groups, packings and what is known about them, and
// the typed errors the packers return. The rules a packing must follow are
// in doc.go; Validate enforces the ones a problem must follow.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Buffer is one block of memory to place: Size bytes live over the half-open
// time interval [Start, End). Times are positions in a schedule; only their
// order matters. A buffer with Start == End or Size == 0 conflicts with
// nothing.
type Buffer struct {
	ID    string // caller's name for the buffer, used in messages and output
	Start int64  // first time step at which the buffer is live
	End   int64  // first time step at which it is no longer live; End >= Start
	Size  int64  // bytes, >= 0
	Align int64  // the offset must be a multiple of Align; 0 and 1 mean any offset
	Color int    // >= 0; each color is a separate heap, packed on its own

	// Fixed says the buffer is pre-placed at Offset, which packers keep.
	Fixed  bool
	Offset int64
}

// Problem is an offset-assignment (dynamic storage allocation) problem.
type Problem struct {
	Buffers []Buffer

	// Groups lists sets of buffers that must share one offset, as XLA's
	// colocated buffers do. Each group holds indices into Buffers; a buffer
	// is in at most one group and all members of a group have one color.
	// Members of a group alias one another, so they may be live at the same
	// time; at each moment the group occupies as many bytes as its largest
	// live member.
	Groups [][]int
}

// Packing assigns an offset to every buffer of a problem: Offsets[i] is the
// offset of Buffers[i].
type Packing struct {
	Offsets []int64
}

// Heap summarises the packing of one color.
type Heap struct {
	Color      int
	Height     int64 // max(offset+size) over the color's buffers
	LowerBound int64 // largest total size live at one time
	Optimal    bool  // Height is proven to be the least possible
}

// Solution is a packing with what is known about it.
type Solution struct {
	Packing
	Heaps     []Heap        // one per color present, by ascending color
	Algorithm string        // the packer whose placement was kept
	Elapsed   time.Duration // wall time of the whole Pack call
	Nodes     int64         // search nodes visited by the exact packer, if it ran
}

// Height returns the total over colors of the heap heights; for a one-color
// problem it is the height of the packing.
func (s *Solution) Height() int64 {
	var h int64
	for _, hp := range s.Heaps {
		h += hp.Height
	}
	return h
}

// LowerBound returns the total over colors of the heaps' lower bounds.
func (s *Solution) LowerBound() int64 {
	var lb int64
	for _, hp := range s.Heaps {
		lb += hp.LowerBound
	}
	return lb
}

// Optimal reports whether every heap is proven optimal.
func (s *Solution) Optimal() bool {
	for _, hp := range s.Heaps {
		if !hp.Optimal {
			return false
		}
	}
	return true
}

// ErrCapacity is the sentinel matched by every *CapacityError.
var ErrCapacity = errors.New("assign: capacity exceeded")

// CapacityError reports that no packing found fits the capacity: the best one
// needs Need bytes in color Color, Limit are available.
type CapacityError struct {
	Color int
	Need  int64
	Limit int64
}

func (e *CapacityError) Error() string {
	over := e.Need - e.Limit
	return fmt.Sprintf("assign: capacity exceeded: color %d needs %d bytes, capacity %d (%d bytes, %.2f%% over)",
		e.Color, e.Need, e.Limit, over, 100*float64(over)/float64(max(e.Limit, 1)))
}

// Is makes errors.Is(err, ErrCapacity) true for a *CapacityError.
func (e *CapacityError) Is(target error) bool { return target == ErrCapacity }

// ErrInvalid is the sentinel matched by every *InvalidError.
var ErrInvalid = errors.New("assign: invalid problem")

// InvalidError reports a malformed problem. Buffer is the index of the
// offending buffer, or -1.
type InvalidError struct {
	Buffer int
	Msg    string
}

func (e *InvalidError) Error() string { return "assign: invalid problem: " + e.Msg }

// Is makes errors.Is(err, ErrInvalid) true for an *InvalidError.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// maxBytes bounds the bytes one color may hold so that no offset arithmetic
// of any packer (sums of sizes plus alignment padding) can overflow int64.
const maxBytes = math.MaxInt64 / 4

// Validate reports the first way in which p is malformed: a negative size or
// alignment, End < Start, a negative color, a fixed offset that is negative or
// misaligned, group members out of range, repeated, of mixed colors or with
// different fixed offsets, or sizes too large to add up in an int64.
func (p *Problem) Validate() error {
	bad := func(i int, format string, args ...any) error {
		return &InvalidError{Buffer: i, Msg: fmt.Sprintf(format, args...)}
	}
	total := map[int]int64{}
	for i := range p.Buffers {
		b := &p.Buffers[i]
		switch {
		case b.Size < 0:
			return bad(i, "buffer %q: negative size %d", b.ID, b.Size)
		case b.End < b.Start:
			return bad(i, "buffer %q: end %d before start %d", b.ID, b.End, b.Start)
		case b.Align < 0:
			return bad(i, "buffer %q: negative alignment %d", b.ID, b.Align)
		case b.Color < 0:
			return bad(i, "buffer %q: negative color %d", b.ID, b.Color)
		case b.Fixed && b.Offset < 0:
			return bad(i, "buffer %q: negative fixed offset %d", b.ID, b.Offset)
		case b.Fixed && b.Align > 1 && b.Offset%b.Align != 0:
			return bad(i, "buffer %q: fixed offset %d is not a multiple of its alignment %d", b.ID, b.Offset, b.Align)
		case b.Size > maxBytes || b.Align > maxBytes || b.Fixed && b.Offset > maxBytes:
			return bad(i, "buffer %q: size, alignment or offset too large", b.ID)
		}
		t := total[b.Color] + b.Size + max(b.Align, 1)
		if b.Fixed {
			t += b.Offset
		}
		if t > maxBytes {
			return bad(i, "color %d: sizes add up to more than %d bytes", b.Color, int64(maxBytes))
		}
		total[b.Color] = t
	}
	inGroup := make([]int, len(p.Buffers))
	for g, members := range p.Groups {
		if len(members) == 0 {
			return bad(-1, "group %d is empty", g)
		}
		var fixed *Buffer
		for _, m := range members {
			if m < 0 || m >= len(p.Buffers) {
				return bad(-1, "group %d: buffer index %d out of range", g, m)
			}
			if inGroup[m] != 0 {
				return bad(m, "buffer %q is in groups %d and %d", p.Buffers[m].ID, inGroup[m]-1, g)
			}
			inGroup[m] = g + 1
			b := &p.Buffers[m]
			if c := p.Buffers[members[0]].Color; b.Color != c {
				return bad(m, "group %d: buffer %q has color %d, buffer %q color %d",
					g, b.ID, b.Color, p.Buffers[members[0]].ID, c)
			}
			if b.Fixed {
				if fixed != nil && fixed.Offset != b.Offset {
					return bad(m, "group %d: buffers %q and %q are fixed at different offsets %d and %d",
						g, fixed.ID, b.ID, fixed.Offset, b.Offset)
				}
				fixed = b
			}
		}
		if fixed != nil {
			for _, m := range members {
				if a := p.Buffers[m].Align; a > 1 && fixed.Offset%a != 0 {
					return bad(m, "group %d: fixed offset %d of buffer %q is not a multiple of the alignment %d of buffer %q",
						g, fixed.Offset, fixed.ID, a, p.Buffers[m].ID)
				}
			}
		}
	}
	return nil
}

// Colors returns the colors used by p's buffers in ascending order.
func (p *Problem) Colors() []int {
	seen := map[int]bool{}
	var cs []int
	for i := range p.Buffers {
		c := p.Buffers[i].Color
		if !seen[c] {
			seen[c] = true
			cs = append(cs, c)
		}
	}
	slices.Sort(cs)
	return cs
}

// Heights returns the height of offsets for each color of p, by ascending
// color: the largest offset+size over the color's buffers that occupy memory
// (Size > 0 and Start < End); a buffer that is never live occupies nothing.
func (p *Problem) Heights(offsets []int64) []Heap {
	cs := p.Colors()
	idx := map[int]int{}
	hs := make([]Heap, len(cs))
	for i, c := range cs {
		idx[c] = i
		hs[i].Color = c
	}
	for i := range p.Buffers {
		b := &p.Buffers[i]
		if b.Size == 0 || b.Start == b.End || i >= len(offsets) {
			continue
		}
		h := &hs[idx[b.Color]]
		h.Height = max(h.Height, offsets[i]+b.Size)
	}
	return hs
}
