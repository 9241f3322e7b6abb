package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/hlomem/hlomem/assign"
)

// The sections of the text report, in order; each has a writer of its
// own, so that each is tested on its own.
var sections = []struct {
	name  string
	write func(*bufio.Writer, *Report)
}{
	{"totals", writeTotals},
	{"peak", writePeak},
	{"what-if", writeWhatIf},
	{"xla", writeXLA},
}

// WriteText writes the report as text: its totals, the peak and what
// occupies memory there, what each alternative would give, and XLA's own
// plan beside it.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "Memory report of %s (target %s, schedule %s, packer %s, %s)\n", r.Module, r.Target, r.Schedule, r.Algorithm, r.Rules)
	for _, s := range sections {
		s.write(b, r)
	}
	return b.Flush()
}

// writeSection writes one section of the text report by name (tests).
func (r *Report) writeSection(w io.Writer, name string) error {
	b := bufio.NewWriter(w)
	for _, s := range sections {
		if s.name == name {
			s.write(b, r)
		}
	}
	return b.Flush()
}

// bytesCol prints n as a human figure with the exact count.
func bytesCol(n int64) string {
	return fmt.Sprintf("%s (%d bytes)", assign.HumanBytes(n), n)
}

func writeTotals(b *bufio.Writer, r *Report) {
	b.WriteString("\nTotals\n")
	row := func(name string, n int64, note string) {
		fmt.Fprintf(b, "  %-19s %s%s\n", name, bytesCol(n), note)
	}
	row("parameters", r.Parameters, "")
	row("outputs", r.Outputs, "")
	row("temps", r.Temps, "")
	row("constants", r.Constants, "")
	if r.ThreadLocal > 0 {
		row("thread-local", r.ThreadLocal, "")
	}
	row("total", r.Total, "")
	above := ""
	if r.Total > r.LowerBound {
		above = fmt.Sprintf(": the plan is %s (%.1f%%) above it", assign.HumanBytes(r.Total-r.LowerBound), percent(r.Total-r.LowerBound, r.LowerBound))
	} else {
		above = ": the plan reaches it"
	}
	row("lower bound", r.LowerBound, above)
	row("temp fragmentation", r.TempFragmentation, fmt.Sprintf(" (%.1f%% of the temps; their own lower bound is %s)", percent(r.TempFragmentation, r.Temps), assign.HumanBytes(r.TempLowerBound)))
	writeAbove(b, r)
}

// writeAbove says why the total is above the lower bound (Report.Above).
func writeAbove(b *bufio.Writer, r *Report) {
	if len(r.Above) == 0 {
		return
	}
	b.WriteString("  above the bound, at its step:\n")
	rows := [][]string{}
	for _, p := range r.Above {
		rows = append(rows, []string{assign.HumanBytes(p.Bytes), abovePartText(p)})
	}
	writeTable(b, rows, "    ")
}

// abovePartText says what one part of Report.Above is.
func abovePartText(p AbovePart) string {
	what := countOf(p.Count, strings.TrimSuffix(kindLabel(p.Kind), "s"), kindLabel(p.Kind))
	switch p.Why {
	case "held":
		if p.Kind == "parameter" {
			return "held by " + countOf(p.Count, "donated parameter", "donated parameters") + " after the last read: the allocation waits for the output written over it, as in XLA; the bound counts it only while live"
		}
		return "held by " + what + " before the first value: an allocation outside the temp heap is one block"
	case "unoccupied":
		return what + " not yet occupied there (written later), which the total counts all the same"
	case "temp-free":
		return "free in the temp heap there: its fragmentation, and its own peak elsewhere"
	case "reuse":
		return "counted less by the bound for the values live there: an operand's memory its user takes over (in the bound, not in this plan), alignment and the temp heap's fragmentation"
	}
	return p.Why
}

func writePeak(b *bufio.Writer, r *Report) {
	b.WriteString("\nPeak\n")
	if r.PeakStep < 0 {
		b.WriteString("  nothing occupies memory\n")
		return
	}
	fmt.Fprintf(b, "  %s at step %d of %d, in %s: %s\n", bytesCol(r.PeakBytes), r.PeakStep, len(r.Steps), r.PeakComp, shortInst(r.PeakInst, 160))
	fmt.Fprintf(b, "  (%.1f%% of the total %s; the lower bound is %s)\n", percent(r.PeakBytes, r.Total), assign.HumanBytes(r.Total), assign.HumanBytes(r.LowerBound))
	b.WriteString("  occupied there, by kind:\n")
	rows := [][]string{}
	for _, k := range r.PeakByKind {
		rows = append(rows, []string{kindLabel(k.Kind), bytesCol(k.Bytes), fmt.Sprintf("of %s", assign.HumanBytes(k.Total)), kindCount(k)})
	}
	writeTable(b, rows, "    ")
	fmt.Fprintf(b, "  what occupies it: %s", countOf(len(r.AtPeak), "allocation or temp chunk", "allocations and temp chunks"))
	if len(r.Peak) < len(r.AtPeak) {
		fmt.Fprintf(b, "; the %d largest:\n", len(r.Peak))
	} else {
		b.WriteString(":\n")
	}
	rows = [][]string{{"size", "kind", "buffer", "shape", "live", "op_name", "source"}}
	for _, x := range r.Peak {
		rows = append(rows, []string{assign.HumanBytes(x.Bytes), x.Kind, occupantName(x), x.Buffer.Shape,
			liveCol(x), orDash(tail(x.Buffer.OpName, 56)), orDash(x.Buffer.Source)})
	}
	writeTable(b, rows, "    ")
}

// kindLabel names an allocation kind as the totals do.
func kindLabel(kind string) string {
	for _, k := range kindOrder {
		if k.kind == kind {
			return k.label
		}
	}
	return kind
}

// countOf is "1 one" or "N many".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// kindCount says how many of a kind occupy memory at the peak: chunks of
// the temp allocation, whole allocations of the others.
func kindCount(k KindBytes) string {
	if k.Kind == "preallocated-temp" {
		return countOf(k.Count, "chunk", "chunks")
	}
	return countOf(k.Count, "allocation", "allocations")
}

// occupantName is the occupant's largest buffer, with how many others
// share its bytes.
func occupantName(x *Occupant) string {
	if len(x.Others) == 0 {
		return x.Buffer.Name
	}
	return fmt.Sprintf("%s (+%d)", x.Buffer.Name, len(x.Others))
}

// liveCol is the steps its buffer is live, "held" added when none of the
// occupant's buffers is live at the peak.
func liveCol(x *Occupant) string {
	s := fmt.Sprintf("%d-%d", x.Buffer.Start, x.Buffer.End)
	if !x.Live {
		s += " held"
	}
	return s
}

func writeWhatIf(b *bufio.Writer, r *Report) {
	if len(r.WhatIf) == 0 {
		return
	}
	b.WriteString("\nWhat if\n  (each row's lower bound and total are the lower_bound and total_bytes the command under it prints;\n   a jit=off row's total is the peak without jit it prints, beside the peak with jit on the same device model;\n   a remat row's is the plan of the module rematerialized toward the limit it names, at the FLOPs that adds)\n")
	rows := [][]string{{"lever", "lower bound", "total", "vs this plan"}}
	for _, w := range r.WhatIf {
		if w.Remat != nil && w.Remat.Skipped != "" {
			rows = append(rows, []string{w.Lever.String(), "-", "-", "skipped: " + firstLine(w.Remat.Skipped)})
			continue
		}
		if w.Err != "" {
			rows = append(rows, []string{w.Lever.String(), "-", "-", "fails: " + firstLine(w.Err)})
			continue
		}
		if w.Lever.Kind == "jit" {
			rows = append(rows, []string{w.Lever.String(), "-", assign.HumanBytes(w.Total), eagerVs(w)})
			continue
		}
		if w.Fit != nil {
			rows = append(rows, []string{w.Lever.String(), "-", assign.HumanBytes(w.Total), fitVs(w)})
			continue
		}
		vs := "same"
		switch d := w.Total - r.Total; {
		case d < 0:
			vs = fmt.Sprintf("saves %s (%.1f%%)", assign.HumanBytes(-d), percent(-d, r.Total))
		case d > 0:
			vs = fmt.Sprintf("costs %s more (%.1f%%)", assign.HumanBytes(d), percent(d, r.Total))
		}
		if w.Remat != nil {
			vs += "; " + rematVs(w)
		}
		rows = append(rows, []string{w.Lever.String(), assign.HumanBytes(w.LowerBound), assign.HumanBytes(w.Total), vs})
	}
	// The table, with each row's command on the line under it.
	var t strings.Builder
	tb := bufio.NewWriter(&t)
	writeTable(tb, rows, "  ")
	tb.Flush()
	for i, line := range strings.Split(strings.TrimSuffix(t.String(), "\n"), "\n") {
		b.WriteString(line + "\n")
		if i > 0 && len(r.WhatIf[i-1].Command) > 0 {
			b.WriteString("    " + shellQuote(r.WhatIf[i-1].Command) + "\n")
		}
	}
}

func writeXLA(b *bufio.Writer, r *Report) {
	x := r.XLA
	if x == nil {
		return
	}
	fmt.Fprintf(b, "\nXLA's own plan (%s)\n", x.File)
	if r.Schedule != "keep" {
		fmt.Fprintf(b, "  (XLA planned its own schedule; hlomem's plan here is for the %s schedule)\n", r.Schedule)
	}
	fmt.Fprintf(b, "  XLA: %s in %d allocations; hlomem: %s in %d allocations\n", bytesCol(x.Total), len(x.Allocations), bytesCol(r.Total), len(r.Allocations))
	fmt.Fprintf(b, "  matched %d of %d of XLA's values\n", x.Matched, x.Values)
	switch d := x.Total - r.Total; {
	case d > 0:
		fmt.Fprintf(b, "  hlomem saves %s (%.1f%% of XLA's)\n", assign.HumanBytes(d), percent(d, x.Total))
	case d < 0:
		fmt.Fprintf(b, "  XLA saves %s (%.1f%% of hlomem's)\n", assign.HumanBytes(-d), percent(-d, r.Total))
	default:
		b.WriteString("  both take the same\n")
	}
	fmt.Fprintf(b, "  buffers placed differently: %d of %d", len(x.Moved), x.Placed)
	if x.Unplaced > 0 {
		fmt.Fprintf(b, " (%d of hlomem's buffers XLA does not place)", x.Unplaced)
	}
	if len(x.Moved) == 0 {
		b.WriteString("\n")
		return
	}
	n := min(len(x.Moved), DefaultTop)
	if n < len(x.Moved) {
		fmt.Fprintf(b, "; the %d largest:\n", n)
	} else {
		b.WriteString(":\n")
	}
	rows := [][]string{{"size", "buffer", "hlomem", "XLA"}}
	for _, m := range x.Moved[:n] {
		rows = append(rows, []string{assign.HumanBytes(m.Buffer.Size), m.Buffer.Name,
			fmt.Sprintf("%s %d +%d", m.Kind, m.Allocation, m.Offset), fmt.Sprintf("%s %d +%d", m.XLAKind, m.XLAAllocation, m.XLAOffset)})
	}
	writeTable(b, rows, "    ")
}

// writeTable writes rows in columns padded to their widest cell; the last
// column is not padded.
func writeTable(b *bufio.Writer, rows [][]string, indent string) {
	var width []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len(c))
		}
	}
	for _, row := range rows {
		b.WriteString(indent)
		for i, c := range row {
			if i == len(row)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", width[i]-len(c)+2))
		}
		b.WriteString("\n")
	}
}

// tail is s cut to its last n characters behind "...": the end of an
// op_name (jit(f)/jit(main)/.../mlp/mul) says the most.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n+3:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// eagerVs compares a without-jit row's peak with the jitted run's.
func eagerVs(w WhatIf) string {
	if w.JitPeak <= 0 {
		return "the jitted run allocates nothing"
	}
	return fmt.Sprintf("%.2fx the jitted run's peak, %s", float64(w.Total)/float64(w.JitPeak), assign.HumanBytes(w.JitPeak))
}
