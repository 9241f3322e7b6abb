package assign

import (
	"fmt"
	"io"
	"strings"

	"github.com/hlomem/hlomem/liveness"
)

// header is XLA's BufferAllocation::ToShortString, with the size written
// by size (a number in the buffer-assignment dump, human-readable in the
// memory-usage report).
func (al *Allocation) header(size string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "allocation %d: size %s", al.Index, size)
	if al.Color != 0 {
		fmt.Fprintf(&b, ", color %d", al.Color)
	}
	if al.IsParameter() {
		sh := ""
		if len(al.Slots) > 0 {
			sh = al.Slots[0].Value.Shape.StringNoLayout()
		}
		fmt.Fprintf(&b, ", parameter %d, shape |%s| at ShapeIndex %s", al.Parameter, sh, al.ParameterIndex)
	}
	if al.Output != nil {
		fmt.Fprintf(&b, ", output shape is |%s|", al.Output.StringNoLayout())
	}
	if al.Constant {
		b.WriteString(", constant")
	}
	if al.ThreadLocal {
		b.WriteString(", thread-local")
	}
	if al.MaybeLiveOut {
		b.WriteString(", maybe-live-out")
	}
	if !al.IsParameter() && !al.MaybeLiveOut && !al.ThreadLocal && !al.Constant {
		b.WriteString(", preallocated-temp")
	}
	b.WriteByte(':')
	return b.String()
}

// valueLabel is XLA's HloValue::ToShortString: <ID name{index} @color>, the
// index only for tuple-shaped instructions, "(phi)" for phis.
func valueLabel(s Slot) string {
	v := s.Value
	name := v.Inst.Name
	if v.Inst.Shape.IsTuple() {
		name += v.Index.String()
	}
	if v.IsPhi {
		name += " (phi)"
	}
	return fmt.Sprintf("<%d %s @%d>", v.XLAID, name, v.Color)
}

// WriteXLA writes the assignment as XLA's -buffer-assignment.txt: every
// allocation with its values, "Total bytes used", then the HloLiveRange
// block (as dumps made before April 2026 hold it) in XLA's current layout.
func (as *Assignment) WriteXLA(w io.Writer) error {
	return as.WriteXLAWith(w, liveness.XLAOptions{})
}

// WriteXLAWith is WriteXLA with the HloLiveRange block in the layout opts
// chooses.
func (as *Assignment) WriteXLAWith(w io.Writer, opts liveness.XLAOptions) error {
	var b strings.Builder
	b.WriteString("BufferAssignment:\n")
	for _, al := range as.Allocations {
		b.WriteString(al.header(fmt.Sprint(al.Size)))
		b.WriteByte('\n')
		for _, s := range al.Slots {
			fmt.Fprintf(&b, " value: %s (size=%d,offset=%d): %s\n", valueLabel(s), s.Size, s.Offset, s.Value.Shape.StringWithLayout())
		}
	}
	fmt.Fprintf(&b, "\nTotal bytes used: %d (%s)\n\n", as.Stats.TotalBytes, HumanBytes(as.Stats.TotalBytes))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return as.Analysis.WriteXLAWith(w, opts)
}
