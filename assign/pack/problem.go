package pack

// What a problem must be before it is packed: Validate enforces the rules
// of the data model (types.go) that a problem, as opposed to a packing,
// must follow; Colors and Heights read a problem and a packing. The rules
// a packing must follow are in doc.go.

import (
	"fmt"
	"math"
	"slices"
)

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
