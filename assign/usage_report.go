package assign

import (
	"bufio"
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/internal/poll"

	"github.com/hlomem/hlomem/liveness"
)

// ReportLayout chooses the layout of the memory-usage report, as XLA's
// BufferAssignment::MemoryUsageReport (xla/service/buffer_assignment.cc)
// wrote it at different dates.
type ReportLayout int

const (
	// ReportCurrent is the layout XLA writes since 2026-03-10 (commit
	// 343fc34, "Add proto format for memory usage in HLO dump"): for each
	// memory space (allocation color) in increasing order, a "Memory
	// Space:" and a "Total bytes:" line, then every allocation's
	// offset table (largest allocation first), each followed by an empty
	// line. The allocation headers are gone from this layout.
	ReportCurrent ReportLayout = iota
	// ReportLegacy is the layout XLA wrote from 2024-10-04 (commit
	// 9610649, which added the report) to 2026-03-10: "Total bytes used",
	// every allocation by size with cumulative sizes over the total of all
	// allocations, then the allocations again with their offset tables.
	// The dumps of the corpus have it.
	ReportLegacy
)

// reportPercentile and reportMoreThanK are the defaults of
// BufferAssignment::MemoryUsageReport's percentile and more_than_k
// (buffer_assignment.h): past the first more_than_k rows, a table stops once
// what is left is under percentile of its total. XLA's percentile is a C++
// float, and so is the product it is compared with.
const (
	reportPercentile = float32(0.05)
	reportMoreThanK  = 50
)

// belowPercentile is XLA's stop test "total - cumulative < total *
// percentile" with XLA's types: the int64 difference and the float product
// compared as floats (legacy), or the difference as a double against the
// float product widened (current, GetMemoryUsageReportProto).
func belowPercentile(total, cum int64, asDouble bool) bool {
	lim := float32(float32(total) * reportPercentile)
	if asDouble {
		return float64(total-cum) < float64(lim)
	}
	return float32(total-cum) < lim
}

// sortedBySize returns the allocations as BufferAssignment::MemoryUsageReport
// sorts them: by size, largest first, then by index.
func sortedBySize(als []*Allocation) []*Allocation {
	s := slices.Clone(als)
	slices.SortFunc(s, func(a, b *Allocation) int {
		if c := cmp.Compare(b.Size, a.Size); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	return s
}

// percent formats 100*part/whole as C's printf("%3.0f") does, "nan" for
// 0/0 as XLA prints it.
func percent(part, whole int64) string {
	p := 100 * float64(part) / float64(whole)
	if math.IsNaN(p) {
		return "nan%"
	}
	return fmt.Sprintf("%3.0f%%", p)
}

// WriteReport writes XLA's memory-usage report (-memory-usage-report.txt)
// in its current layout (ReportCurrent).
func (as *Assignment) WriteReport(w io.Writer) error {
	return as.WriteReportLayout(w, ReportCurrent)
}

// WriteReportLayout writes XLA's memory-usage report in the layout l. It
// streams: no more than one row is held in memory, which matters when deep
// tuple shapes make the rows long.
func (as *Assignment) WriteReportLayout(w io.Writer, l ReportLayout) error {
	b := bufio.NewWriterSize(w, 64<<10)
	var err error
	if l == ReportLegacy {
		err = as.writeLegacyReport(b)
	} else {
		err = as.writeSpacesReport(b)
	}
	if err != nil {
		return err
	}
	return b.Flush()
}

// writeLegacyReport is BufferAssignment::MemoryUsageReport before
// 2026-03-10.
func (as *Assignment) writeLegacyReport(b *bufio.Writer) error {
	var total int64
	for _, al := range as.Allocations {
		total += al.Size
	}
	fmt.Fprintf(b, "Total bytes used: %d (%s)\n", total, HumanBytes(total))
	b.WriteString("\nAllocations sorted by size:\n\n")
	b.WriteString("cumulative_size; total_size - cumulative_size; allocation\n")
	b.WriteString("------------------------------------------------------------------------------\n")
	sorted := sortedBySize(as.Allocations)
	var cum int64
	for i, al := range sorted {
		if err := poll.OutputFailed(i, b.Flush); err != nil {
			return err
		}
		cum += al.Size
		fmt.Fprintf(b, "%10s(%s); %10s; %s\n", HumanBytes(cum), percent(cum, total), HumanBytes(total-cum), al.header(HumanBytes(al.Size)))
		if i+1 > reportMoreThanK && belowPercentile(total, cum, false) {
			fmt.Fprintf(b, "The rest %d allocations are less than %d%% of the total size and not shown.\n",
				len(sorted)-i-1, int(reportPercentile*100))
			break
		}
	}
	b.WriteString("\n\nAllocations sorted by size with their values:\n")
	for i, al := range sorted {
		if err := poll.OutputFailed(i, b.Flush); err != nil {
			return err
		}
		b.WriteString(al.header(HumanBytes(al.Size)))
		b.WriteByte('\n')
		if len(al.Slots) != 1 {
			b.WriteByte('\n')
			al.writeReportRows(b, "\t")
			b.WriteByte('\n')
		}
	}
	return nil
}

// writeSpacesReport is BufferAssignment::MemoryUsageReport since
// 2026-03-10: GetMemoryUsageReportProto's entries, one memory space
// (color) after another in increasing order, each allocation's table
// (BufferAllocation::MemoryUsageReport with the prefix "  ") after the
// space's totals, largest allocation first; past the first more_than_k
// allocations a space stops once the rest are under the percentile.
func (as *Assignment) writeSpacesReport(b *bufio.Writer) error {
	byColor := map[int64][]*Allocation{}
	for _, al := range as.Allocations {
		byColor[al.Color] = append(byColor[al.Color], al)
	}
	colors := make([]int64, 0, len(byColor))
	for c := range byColor {
		colors = append(colors, c)
	}
	slices.Sort(colors)
	n := 0
	for _, color := range colors {
		sorted := sortedBySize(byColor[color])
		var total int64
		for _, al := range sorted {
			total += al.Size
		}
		fmt.Fprintf(b, "Memory Space: %s (color=%d)\n", memorySpaceName(color), color)
		fmt.Fprintf(b, "Total bytes: %d (%s)\n", total, HumanBytes(total))
		var cum int64
		for i, al := range sorted {
			if err := poll.OutputFailed(n, b.Flush); err != nil {
				return err
			}
			n++
			cum += al.Size
			al.writeReportRows(b, "  ")
			b.WriteByte('\n')
			if i+1 > reportMoreThanK && belowPercentile(total, cum, true) {
				break
			}
		}
		b.WriteByte('\n')
	}
	return nil
}

// memorySpaceName is GetMemorySpaceName of buffer_assignment.cc: the
// report's label of a color.
func memorySpaceName(color int64) string {
	switch color {
	case 0:
		return "default"
	case 1:
		return "vmem"
	case 2:
		return "smem"
	case 3:
		return "hbm"
	case 4:
		return "host"
	case 5:
		return "cmem"
	}
	return fmt.Sprintf("color_%d", color)
}

// ReportRows returns the allocation's table of the memory-usage report
// (BufferAllocation::MemoryUsageReport with an empty prefix): a header, a
// rule, and one row per offset (values sharing an offset are grouped):
//
//	cumulative_size(percent); size; offset; used_by_n_values; shapes_list
func (al *Allocation) ReportRows() []string {
	var b strings.Builder
	al.writeReportRows(&b, "")
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// reportShape is one distinct shape of a report group: the first value
// printing it and how many of the group's values do.
type reportShape struct {
	rep   *liveness.Value
	count int
}

// reportGroup is the values of an allocation at one offset.
type reportGroup struct {
	offset, size int64
	lastID       int // the largest value ID of the group
	n            int // values
	shapes       []*reportShape
	byHash       map[uint64][]*reportShape
}

// reportGroups groups the allocation's values by offset, each group as
// large as its largest value, in the order of
// BufferAllocation::MemoryUsageReport (XLA since 2025-10-27, commit
// 896d78f, "Make sure to produce a deterministic Memory usage report"):
// largest first, groups of equal size by the ID of their last value (the
// values taken in ID order, so the largest ID). Before that commit XLA left
// the order of equal groups to a hash map's iteration, which changes from
// run to run; this order is one it could print. A group's distinct shapes
// are told apart by a hash of their text (compared in full when two hashes
// meet), so the shape texts are not all held at once.
func (al *Allocation) reportGroups() (groups []*reportGroup, total int64) {
	byOffset := map[int64]*reportGroup{}
	hashOf := func(s string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s))
		return h.Sum64()
	}
	for _, s := range al.Slots {
		g := byOffset[s.Offset]
		if g == nil {
			g = &reportGroup{offset: s.Offset, lastID: s.Value.XLAID, byHash: map[uint64][]*reportShape{}}
			byOffset[s.Offset] = g
			groups = append(groups, g)
		}
		g.size = max(g.size, s.Size)
		g.lastID = max(g.lastID, s.Value.XLAID)
		g.n++
		text := s.Value.Shape.StringNoLayout()
		k := hashOf(text)
		var found *reportShape
		for _, c := range g.byHash[k] {
			if c.rep.Shape.StringNoLayout() == text {
				found = c
				break
			}
		}
		if found == nil {
			found = &reportShape{rep: s.Value}
			g.byHash[k] = append(g.byHash[k], found)
			g.shapes = append(g.shapes, found)
		}
		found.count++
	}
	for _, g := range groups {
		total += g.size
	}
	slices.SortFunc(groups, func(a, b *reportGroup) int {
		if c := cmp.Compare(b.size, a.size); c != 0 {
			return c
		}
		return cmp.Compare(a.lastID, b.lastID)
	})
	return groups, total
}

// writeReportRows writes the allocation's table, each line after prefix:
// BufferAllocation::MemoryUsageReport. The cumulative percentages are of
// the sum of the groups' sizes (not of the allocation's size, which holds
// the alignment gaps too); past the first more_than_k rows the table stops
// once the rest is under the percentile, saying how many rows it leaves
// out. A row's shapes come by count, then by text (XLA since 2025-10-27;
// before, in a hash map's order).
func (al *Allocation) writeReportRows(w io.StringWriter, prefix string) {
	groups, total := al.reportGroups()
	w.WriteString(prefix + "cumulative_size;       size;       offset; used_by_n_values; shapes_list\n")
	w.WriteString(prefix + "------------------------------------------------------------\n")
	var cum int64
	type counted struct {
		count int
		text  string
	}
	for i, g := range groups {
		cum += g.size
		w.WriteString(fmt.Sprintf("%s%9s(%s); %10s; %12d; %16d; ", prefix, HumanBytes(cum), percent(cum, total), HumanBytes(g.size), g.offset, g.n))
		shapes := make([]counted, len(g.shapes))
		for j, sh := range g.shapes {
			shapes[j] = counted{sh.count, sh.rep.Shape.StringNoLayout()}
		}
		slices.SortFunc(shapes, func(a, b counted) int {
			if c := cmp.Compare(a.count, b.count); c != 0 {
				return c
			}
			return strings.Compare(a.text, b.text)
		})
		for j, sh := range shapes {
			if j > 0 {
				w.WriteString(", ")
			}
			if sh.count > 1 {
				w.WriteString(fmt.Sprintf("%d×", sh.count))
			}
			w.WriteString(sh.text)
		}
		w.WriteString("\n")
		if i+1 > reportMoreThanK && belowPercentile(total, cum, false) {
			w.WriteString(fmt.Sprintf("%sThe rest %d values are less than %d%% of the total size and not shown.\n",
				prefix, len(groups)-i-1, int(reportPercentile*100)))
			break
		}
	}
}
