package assign

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// sortedBySize returns the allocations by size, largest first (index
// order among equals), as the memory-usage report lists them.
func (as *Assignment) sortedBySize() []*Allocation {
	als := append([]*Allocation(nil), as.Allocations...)
	sort.SliceStable(als, func(i, j int) bool { return als[i].Size > als[j].Size })
	return als
}

func percent(part, whole int64) string {
	if whole == 0 {
		return "100%"
	}
	return fmt.Sprintf("%3.0f%%", 100*float64(part)/float64(whole))
}

// WriteReport writes XLA's memory-usage report (the format of
// -memory-usage-report.txt before March 2026) followed by the stats block
// of BufferAssignment::StatsString.
func (as *Assignment) WriteReport(w io.Writer) error {
	var b strings.Builder
	total := as.Stats.TotalBytes
	fmt.Fprintf(&b, "Total bytes used: %d (%s)\n\n", total, HumanBytes(total))
	b.WriteString("Allocations sorted by size:\n\n")
	b.WriteString("cumulative_size; total_size - cumulative_size; allocation\n")
	b.WriteString("------------------------------------------------------------------------------\n")
	var cum int64
	sorted := as.sortedBySize()
	for _, al := range sorted {
		cum += al.Size
		fmt.Fprintf(&b, "%10s(%s); %10s; %s\n", HumanBytes(cum), percent(cum, total), HumanBytes(total-cum), al.header(HumanBytes(al.Size)))
	}
	b.WriteString("\n\nAllocations sorted by size with their values:\n")
	for _, al := range sorted {
		b.WriteString(al.header(HumanBytes(al.Size)))
		b.WriteByte('\n')
		if len(al.Slots) > 1 {
			b.WriteByte('\n')
			for _, row := range al.ReportRows() {
				b.WriteString("\t")
				b.WriteString(row)
				b.WriteByte('\n')
			}
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	as.writeStats(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// ReportRows returns the allocation's table of the memory-usage report:
// a header, a rule, and one row per offset (values sharing an offset are
// grouped), largest group first, then by offset:
//
//	cumulative_size(percent); size; offset; used_by_n_values; shapes_list
func (al *Allocation) ReportRows() []string {
	type group struct {
		offset, size int64
		shapes       []string
		count        map[string]int
	}
	byOffset := map[int64]*group{}
	var groups []*group
	for _, s := range al.Slots {
		g := byOffset[s.Offset]
		if g == nil {
			g = &group{offset: s.Offset, count: map[string]int{}}
			byOffset[s.Offset] = g
			groups = append(groups, g)
		}
		g.size = max(g.size, s.Size)
		sh := s.Value.Shape.StringNoLayout()
		if g.count[sh] == 0 {
			g.shapes = append(g.shapes, sh)
		}
		g.count[sh]++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].size != groups[j].size {
			return groups[i].size > groups[j].size
		}
		return groups[i].offset < groups[j].offset
	})
	rows := []string{
		"cumulative_size;       size;       offset; used_by_n_values; shapes_list",
		"------------------------------------------------------------",
	}
	var cum int64
	for _, g := range groups {
		cum += g.size
		n := 0
		var list []string
		for _, sh := range g.shapes {
			c := g.count[sh]
			n += c
			if c > 1 {
				list = append(list, fmt.Sprintf("%d×%s", c, sh))
			} else {
				list = append(list, sh)
			}
		}
		rows = append(rows, fmt.Sprintf("%9s(%s); %10s; %12d; %16d; %s", HumanBytes(cum), percent(cum, al.Size), HumanBytes(g.size), g.offset, n, strings.Join(list, ", ")))
	}
	return rows
}

// writeStats writes XLA's BufferAssignment stats block.
func (as *Assignment) writeStats(b *strings.Builder) {
	st := as.Stats
	frac := func(part, whole int64) string {
		if whole == 0 {
			return "0.00%"
		}
		return fmt.Sprintf("%.2f%%", 100*float64(part)/float64(whole))
	}
	line := func(label, value string) { fmt.Fprintf(b, "%33s: %10s\n", label, value) }
	b.WriteString("BufferAssignment stats:\n")
	line("parameter allocation", HumanBytes(st.ParameterBytes))
	line("constant allocation", HumanBytes(st.ConstantBytes))
	line("maybe_live_out allocation", HumanBytes(st.MaybeLiveOutBytes))
	line("preallocated temp allocation", HumanBytes(st.TempBytes))
	if len(as.Heaps) > 0 {
		fmt.Fprintf(b, "%33s: %10s (%s)\n", "preallocated temp fragmentation", HumanBytes(st.TempFragmentation), frac(st.TempFragmentation, st.TempBytes))
	}
	line("total allocation", HumanBytes(st.TotalBytes))
	fmt.Fprintf(b, "%33s: %10s (%s)\n", "total fragmentation", HumanBytes(st.TotalFragmentation), frac(st.TotalFragmentation, st.TotalBytes))
}
