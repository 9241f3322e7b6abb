package assign

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/internal/poll"

	"github.com/hlomem/hlomem/liveness"
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
// of BufferAssignment::StatsString. It streams: no more than one row is
// held in memory, which matters when deep tuple shapes make the rows long.
func (as *Assignment) WriteReport(w io.Writer) error {
	b := bufio.NewWriterSize(w, 64<<10)
	total := as.Stats.TotalBytes
	fmt.Fprintf(b, "Total bytes used: %d (%s)\n\n", total, HumanBytes(total))
	b.WriteString("Allocations sorted by size:\n\n")
	b.WriteString("cumulative_size; total_size - cumulative_size; allocation\n")
	b.WriteString("------------------------------------------------------------------------------\n")
	var cum int64
	sorted := as.sortedBySize()
	for i, al := range sorted {
		if err := poll.OutputFailed(i, b.Flush); err != nil {
			return err
		}
		cum += al.Size
		fmt.Fprintf(b, "%10s(%s); %10s; %s\n", HumanBytes(cum), percent(cum, total), HumanBytes(total-cum), al.header(HumanBytes(al.Size)))
	}
	b.WriteString("\n\nAllocations sorted by size with their values:\n")
	for i, al := range sorted {
		if err := poll.OutputFailed(i, b.Flush); err != nil {
			return err
		}
		b.WriteString(al.header(HumanBytes(al.Size)))
		b.WriteByte('\n')
		if len(al.Slots) > 1 {
			b.WriteByte('\n')
			al.writeReportRows(b, "\t")
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	as.writeStats(b)
	return b.Flush()
}

// ReportRows returns the allocation's table of the memory-usage report:
// a header, a rule, and one row per offset (values sharing an offset are
// grouped), largest group first, then by offset:
//
//	cumulative_size(percent); size; offset; used_by_n_values; shapes_list
func (al *Allocation) ReportRows() []string {
	var b strings.Builder
	al.writeReportRows(&b, "")
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// writeReportRows writes ReportRows, each row after prefix and ending in a
// line break. A group's distinct shapes are told apart by a hash of their
// text (compared in full when two hashes meet) and printed from their
// first value, so the shape texts are not all held at once.
func (al *Allocation) writeReportRows(w io.StringWriter, prefix string) {
	type shape struct {
		rep   *liveness.Value
		count int
	}
	type group struct {
		offset, size int64
		shapes       []*shape
		byHash       map[uint64][]*shape
	}
	byOffset := map[int64]*group{}
	var groups []*group
	hashOf := func(s string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s))
		return h.Sum64()
	}
	for _, s := range al.Slots {
		g := byOffset[s.Offset]
		if g == nil {
			g = &group{offset: s.Offset, byHash: map[uint64][]*shape{}}
			byOffset[s.Offset] = g
			groups = append(groups, g)
		}
		g.size = max(g.size, s.Size)
		text := s.Value.Shape.StringNoLayout()
		k := hashOf(text)
		var found *shape
		for _, c := range g.byHash[k] {
			if c.rep.Shape.StringNoLayout() == text {
				found = c
				break
			}
		}
		if found == nil {
			found = &shape{rep: s.Value}
			g.byHash[k] = append(g.byHash[k], found)
			g.shapes = append(g.shapes, found)
		}
		found.count++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].size != groups[j].size {
			return groups[i].size > groups[j].size
		}
		return groups[i].offset < groups[j].offset
	})
	w.WriteString(prefix + "cumulative_size;       size;       offset; used_by_n_values; shapes_list\n")
	w.WriteString(prefix + "------------------------------------------------------------\n")
	var cum int64
	for _, g := range groups {
		cum += g.size
		n := 0
		for _, sh := range g.shapes {
			n += sh.count
		}
		w.WriteString(fmt.Sprintf("%s%9s(%s); %10s; %12d; %16d; ", prefix, HumanBytes(cum), percent(cum, al.Size), HumanBytes(g.size), g.offset, n))
		for i, sh := range g.shapes {
			if i > 0 {
				w.WriteString(", ")
			}
			if sh.count > 1 {
				w.WriteString(fmt.Sprintf("%d×", sh.count))
			}
			w.WriteString(sh.rep.Shape.StringNoLayout())
		}
		w.WriteString("\n")
	}
}

// writeStats writes XLA's BufferAssignment stats block.
func (as *Assignment) writeStats(b *bufio.Writer) {
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
