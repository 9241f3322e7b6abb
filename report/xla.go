package report

import (
	"sort"

	"github.com/hlomem/hlomem/assign"
)

// XLAPlan is XLA's own buffer assignment of the module, laid out as the
// report lays out hlomem's: XLA's allocations stacked by XLA's index, and
// every buffer of hlomem's analysis at the address XLA gave it.
type XLAPlan struct {
	File        string
	Total       int64
	Allocations []Allocation
	// Buffers are hlomem's buffers (same IDs, names and live ranges) at
	// XLA's addresses: Kind, Allocation and Offset are XLA's. A buffer
	// XLA places nowhere is left out.
	Buffers []*Buffer
	// Placed counts the buffers both plans place, Moved lists those they
	// place differently (another kind of allocation, or another offset
	// in it), largest first.
	Placed int
	Moved  []Moved
	// Unplaced counts hlomem's buffers XLA places nowhere, Missing the
	// values XLA places that hlomem's analysis lacks.
	Unplaced, Missing int
}

// Moved is a buffer the two plans place differently: in hlomem's plan at
// Offset in allocation Allocation of kind Kind, in XLA's at XLAOffset in
// XLAAllocation of kind XLAKind (offsets within the allocation).
type Moved struct {
	Buffer                    *Buffer
	Kind, XLAKind             string
	Allocation, XLAAllocation int
	Offset, XLAOffset         int64
}

// compareXLA lays out XLA's plan x of r's module (planned as as) and
// finds the buffers the two plans place differently.
func compareXLA(r *Report, as *assign.Assignment, x *assign.XLAAssignment, file string) *XLAPlan {
	p := &XLAPlan{File: file, Total: x.TotalBytes}
	if p.File == "" {
		p.File = x.File
	}
	var base int64
	bases := map[int]int64{}
	kinds := map[int]string{}
	colors := map[int]int64{}
	var sum int64
	for _, al := range x.Allocations {
		p.Allocations = append(p.Allocations, Allocation{Index: al.Index, Kind: al.Kind(), Color: al.Color, Base: base, Size: al.Size})
		bases[al.Index], kinds[al.Index], colors[al.Index] = base, al.Kind(), al.Color
		base += al.Size
		sum += al.Size
	}
	if p.Total < 0 {
		p.Total = sum
	}
	loc := x.Locate(as.Analysis)
	p.Missing = len(loc.Missing)
	a := as.Analysis
	for _, b := range r.Buffers {
		lb := a.Buffers[b.ID]
		xa, xo := -1, int64(0)
		for _, v := range lb.Values {
			if v.ID < len(loc.Alloc) && loc.Alloc[v.ID] >= 0 {
				xa, xo = loc.Alloc[v.ID], loc.Offset[v.ID]
				break
			}
		}
		if xa < 0 {
			p.Unplaced++
			continue
		}
		p.Placed++
		xb := *b
		xb.Allocation, xb.Kind, xb.Color = xa, kinds[xa], colors[xa]
		xb.Offset = bases[xa] + xo
		p.Buffers = append(p.Buffers, &xb)
		off := b.Offset - r.Allocations[b.Allocation].Base
		if kinds[xa] != b.Kind || xo != off {
			p.Moved = append(p.Moved, Moved{Buffer: b, Kind: b.Kind, XLAKind: kinds[xa], Allocation: b.Allocation, XLAAllocation: xa, Offset: off, XLAOffset: xo})
		}
	}
	sort.SliceStable(p.Moved, func(i, j int) bool {
		if p.Moved[i].Buffer.Size != p.Moved[j].Buffer.Size {
			return p.Moved[i].Buffer.Size > p.Moved[j].Buffer.Size
		}
		return p.Moved[i].Buffer.ID < p.Moved[j].Buffer.ID
	})
	sort.SliceStable(p.Buffers, func(i, j int) bool {
		if p.Buffers[i].Offset != p.Buffers[j].Offset {
			return p.Buffers[i].Offset < p.Buffers[j].Offset
		}
		return p.Buffers[i].ID < p.Buffers[j].ID
	})
	return p
}
