package assign

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// PaddedBuffer is one buffer's cost of tiled layouts (TPU tiles pad
// shapes: f32[3,5] in T(8,128) takes a whole 8×128 tile).
type PaddedBuffer struct {
	// Name is the buffer's largest value (instruction and index), Shape
	// its shape with the layout, OpName its op_name metadata.
	Name, Shape string
	OpName      string
	// Unpadded is the largest of the values' hlo.UnpaddedByteSize, Padded
	// the buffer's size in the plan (hlo.ByteSize, honouring tiles).
	Unpadded, Padded int64
	// Kind is the allocation kind of the buffer's allocation in the plan
	// (parameter, constant, maybe-live-out, preallocated-temp, ...), Color
	// its memory space.
	Kind  string
	Color int64
	// Inst is the defining instruction of the largest value, XLA's label.
	Inst *hlo.Instruction
}

// Expansion is padded / unpadded (1 when either is 0).
func (p PaddedBuffer) Expansion() float64 { return expansion(p.Unpadded, p.Padded) }

// Label is the defining instruction as HLO text (the value's name when
// unknown): the "XLA label" of XLA:TPU's reports.
func (p PaddedBuffer) Label() string {
	if p.Inst == nil {
		return p.Name
	}
	return p.Inst.String()
}

func expansion(unpadded, padded int64) float64 {
	if unpadded <= 0 || padded <= 0 {
		return 1
	}
	return float64(padded) / float64(unpadded)
}

// Padding is what tiled layouts cost a plan: every buffer's padded and
// unpadded size, largest padded first, and the totals.
type Padding struct {
	Buffers          []PaddedBuffer
	Unpadded, Padded int64
}

// Expansion is the total padded / unpadded.
func (p Padding) Expansion() float64 { return expansion(p.Unpadded, p.Padded) }

// Padding measures the buffers of as: a buffer's padded size is the one
// the plan uses (hlo.ByteSize, honouring tiles), its unpadded size the
// largest of its values' hlo.UnpaddedByteSize.
func (as *Assignment) Padding() Padding {
	var p Padding
	if as == nil || as.Analysis == nil {
		return p
	}
	for _, b := range as.Analysis.Buffers {
		if len(b.Values) == 0 || b.Size == 0 {
			continue
		}
		var un int64
		var rep *liveness.Value
		for _, v := range b.Values {
			n, err := hlo.UnpaddedByteSize(v.Shape)
			if err != nil {
				n = v.Size
			}
			if rep == nil || v.Size > rep.Size {
				rep = v
			}
			un = max(un, n)
		}
		pb := PaddedBuffer{Name: rep.Name(), Shape: rep.Shape.String(), Unpadded: un, Padded: b.Size, Color: b.Color, Inst: rep.Inst}
		if rep.Inst != nil && rep.Inst.Metadata != nil {
			pb.OpName = rep.Inst.Metadata.OpName
		}
		if al, _, ok := as.AllocationOf(rep); ok && al != nil {
			pb.Kind = al.Kind()
		}
		p.Buffers = append(p.Buffers, pb)
		p.Unpadded += un
		p.Padded += b.Size
	}
	sort.SliceStable(p.Buffers, func(i, j int) bool {
		if p.Buffers[i].Padded != p.Buffers[j].Padded {
			return p.Buffers[i].Padded > p.Buffers[j].Padded
		}
		return p.Buffers[i].Name < p.Buffers[j].Name
	})
	return p
}

// tiled reports whether any array of the analysis has a tiled layout.
func (as *Assignment) tiled() bool {
	if as == nil || as.Analysis == nil {
		return false
	}
	for _, v := range as.Analysis.Values {
		if isTiled(v.Shape) {
			return true
		}
	}
	return false
}

func isTiled(s hlo.Shape) bool {
	return s.Layout != nil && (len(s.Layout.Tiles) > 0 || s.Layout.TailPaddingAlignment > 1)
}

// Write prints the totals and the n buffers that grow most in bytes (every
// buffer when n <= 0):
//
//	TPU padding: 12 buffers, unpadded 1.09GiB (...), padded 14.00GiB (...), 12.80x expansion
//	  iota.2{}: s32[29360128,10]{1,0:T(8,128)} unpadded 1174405120 padded 15032385536 (12.80x)
func (p Padding) Write(w io.Writer, n int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "TPU padding: %d buffers, unpadded %s (%d bytes), padded %s (%d bytes), %.2fx expansion\n",
		len(p.Buffers), HumanBytes(p.Unpadded), p.Unpadded, HumanBytes(p.Padded), p.Padded, p.Expansion())
	bufs := append([]PaddedBuffer(nil), p.Buffers...)
	sort.SliceStable(bufs, func(i, j int) bool {
		return bufs[i].Padded-bufs[i].Unpadded > bufs[j].Padded-bufs[j].Unpadded
	})
	if n > 0 && len(bufs) > n {
		bufs = bufs[:n]
	}
	for _, x := range bufs {
		fmt.Fprintf(&b, "  %s: %s unpadded %d padded %d (%.2fx)\n", x.Name, x.Shape, x.Unpadded, x.Padded, x.Expansion())
	}
	_, err := io.WriteString(w, b.String())
	return err
}
