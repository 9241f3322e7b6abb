package assign

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/internal/poll"

	"github.com/hlomem/hlomem/hlo"
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
// allocation with its values, "Total bytes used", the "Used values"
// section, then the HloLiveRange block (as dumps made before April 2026
// hold it) in XLA's current layout.
func (as *Assignment) WriteXLA(w io.Writer) error {
	return as.WriteXLAWith(w, liveness.XLAOptions{})
}

// WriteXLAWith is WriteXLA with the HloLiveRange block in the layout opts
// chooses.
func (as *Assignment) WriteXLAWith(w io.Writer, opts liveness.XLAOptions) error {
	b := bufio.NewWriterSize(w, 64<<10)
	b.WriteString("BufferAssignment:\n")
	n := 0 // slots written
	for _, al := range as.Allocations {
		b.WriteString(al.header(fmt.Sprint(al.Size)))
		b.WriteByte('\n')
		for _, s := range al.Slots {
			if err := poll.OutputFailed(n, b.Flush); err != nil {
				return err
			}
			n++
			fmt.Fprintf(b, " value: %s (size=%d,offset=%d): %s\n", valueLabel(s), s.Size, s.Offset, s.Value.Shape.StringWithLayout())
		}
	}
	fmt.Fprintf(b, "\nTotal bytes used: %d (%s)\n\n", as.Stats.TotalBytes, HumanBytes(as.Stats.TotalBytes))
	if err := as.writeUsedValues(b); err != nil {
		return err
	}
	b.WriteString("\n\n")
	if err := b.Flush(); err != nil {
		return err
	}
	return as.Analysis.WriteXLAWith(w, opts)
}

// writeUsedValues writes XLA's BufferAssignment::ValuesToString: every
// value an allocation holds, in the order of XLA's value IDs, as
// HloValue::ToString prints it:
//
//	<5 multiply @0>
//	 positions:
//	  multiply
//	  tuple {1}
//	 uses:
//	  tuple, operand 1
//	 from instruction: %multiply = f32[4]{0} multiply(%a, %b)
//
// A position or use names its shape index only when the instruction (for
// a use, the operand) is tuple-shaped, as HloPosition::ToString and
// HloUse::ToString do; the last line is the defining instruction as
// HloInstruction::ToString prints it: without the computation's "ROOT",
// with layouts, with "/*index=N*/" before every fifth operand, and with
// operand shapes when the module's text had them (XLA printed them until
// 2024).
func (as *Assignment) writeUsedValues(b *bufio.Writer) error {
	var used []*liveness.Value
	// Seen by value ID (dense over the analysis), not in a map keyed by
	// pointers: a bit per value rather than a map entry.
	seen := make([]bool, len(as.Analysis.Values))
	for _, al := range as.Allocations {
		for _, s := range al.Slots {
			id := s.Value.ID
			if id >= len(seen) {
				seen = append(seen, make([]bool, id+1-len(seen))...)
			}
			if !seen[id] {
				seen[id] = true
				used = append(used, s.Value)
			}
		}
	}
	slices.SortFunc(used, func(x, y *liveness.Value) int {
		if c := cmp.Compare(x.XLAID, y.XLAID); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	popts := hlo.PrintOptions{OperandShapes: as.Module.OperandShapes, IndexComments: true, Layouts: true, ElideLargeConstants: true, AsyncSugar: true}
	b.WriteString("Used values:\n")
	for i, v := range used {
		if err := poll.OutputFailed(i, b.Flush); err != nil {
			return err
		}
		b.WriteString(valueLabel(Slot{Value: v}))
		b.WriteString("\n positions:\n")
		for _, p := range v.Positions {
			b.WriteString("  ")
			b.WriteString(p.Inst.Name)
			if p.Inst.Shape.IsTuple() {
				b.WriteByte(' ')
				b.WriteString(p.Index.String())
			}
			b.WriteByte('\n')
		}
		b.WriteString(" uses:\n")
		for _, u := range v.Uses {
			fmt.Fprintf(b, "  %s, operand %d", u.Inst.Name, u.Operand)
			if u.Operand < len(u.Inst.Operands) && u.Inst.Operands[u.Operand].Shape.IsTuple() {
				b.WriteByte(' ')
				b.WriteString(u.Index.String())
			}
			b.WriteByte('\n')
		}
		b.WriteString(" from instruction: ")
		b.WriteString(strings.TrimPrefix(v.Inst.StringWith(popts), "ROOT "))
		b.WriteByte('\n')
	}
	return nil
}
