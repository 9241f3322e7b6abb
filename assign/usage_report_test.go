package assign

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// reportOf parses and assigns an inline module and returns its
// memory-usage report in layout l.
func reportOf(t *testing.T, text string, opts Options, l ReportLayout) (*Assignment, string) {
	t.Helper()
	m, err := hlo.ParseModule("report.hlo", text)
	require.NoError(t, err)
	as := assignModule(t, m, opts)
	var b strings.Builder
	require.NoError(t, as.WriteReportLayout(&b, l))
	return as, b.String()
}

// slotOffsets maps the temp heap's values to their offsets.
func slotOffsets(as *Assignment) map[string]int64 {
	out := map[string]int64{}
	for _, s := range as.Heaps[0].Allocation.Slots {
		out[s.Value.Inst.Name] = s.Offset
	}
	return out
}

// TestReportRowsTieOrder holds the allocation table to the order of XLA's
// BufferAllocation::MemoryUsageReport (xla/service/buffer_assignment.cc,
// since commit 896d78f "Make sure to produce a deterministic Memory usage
// report", 2025-10-27): offset groups by size, largest first, equal sizes by
// the ID of the group's last value (its values taken in ID order); a row's
// shapes by count, then by text. Here a (ID 1) and c (ID 3) share offset 0,
// b (ID 2) sits at 400: both groups are 400B, and b's group comes first
// because its last ID, 2, is below 3, though its offset is higher. In the
// second module offset 0 holds v, w (f32[100]) and y (s32[50]): the shape
// seen once comes before the one seen twice, whatever the ID order.
func TestReportRowsTieOrder(t *testing.T) {
	as, _ := reportOf(t, `HloModule tie, is_scheduled=true
ENTRY e {
  p = f32[100] parameter(0)
  a = f32[100] log(p)
  b = f32[100] exponential(p)
  c = f32[100] add(a, b)
  ROOT root = f32[1] slice(c), slice={[0:1]}
}`, Options{Align: 1, Algorithm: "bestfit-size"}, ReportLegacy)
	require.Equal(t, map[string]int64{"a": 0, "b": 400, "c": 0}, slotOffsets(as))
	require.Equal(t, []string{
		"cumulative_size;       size;       offset; used_by_n_values; shapes_list",
		"------------------------------------------------------------",
		"     400B( 50%);       400B;          400;                1; f32[100]",
		"     800B(100%);       400B;            0;                2; 2×f32[100]",
	}, as.Heaps[0].Allocation.ReportRows())

	as, _ = reportOf(t, `HloModule shapes, is_scheduled=true
ENTRY e {
  p = f32[100] parameter(0)
  s = f32[50] slice(p), slice={[0:50]}
  t = f32[50] negate(s)
  v = f32[100] concatenate(t, t), dimensions={0}
  w = f32[100] log(v)
  x = f32[50] slice(w), slice={[0:50]}
  y = s32[50] convert(x)
  ROOT root = s32[1] slice(y), slice={[0:1]}
}`, Options{Align: 1, Algorithm: "bestfit-size"}, ReportLegacy)
	require.Equal(t, map[string]int64{"s": 400, "t": 400, "v": 0, "w": 0, "x": 400, "y": 0}, slotOffsets(as))
	require.Equal(t, []string{
		"cumulative_size;       size;       offset; used_by_n_values; shapes_list",
		"------------------------------------------------------------",
		"     400B( 67%);       400B;            0;                3; s32[50], 2×f32[100]",
		"     600B(100%);       200B;          400;                3; 3×f32[50]",
	}, as.Heaps[0].Allocation.ReportRows())
}

// TestReportPercentBase holds the two percent columns of the legacy report
// to XLA's BufferAssignment::MemoryUsageReport and
// BufferAllocation::MemoryUsageReport (buffer_assignment.cc before
// 2026-03-10): the allocation list's cumulative percent is of the total of
// all allocations, and an allocation table's is of the sum of its offset
// groups' sizes, not of the allocation's size: with the GPU's 128-byte
// alignment the 400-byte values sit at 0 and 512, the temp allocation is
// 912 bytes, and the table still ends at 100%. Allocations of equal size
// are listed by index (the assigner gives parameter 1 index 0).
func TestReportPercentBase(t *testing.T) {
	as, got := reportOf(t, `HloModule tie, is_scheduled=true
ENTRY e {
  p = f32[100] parameter(0)
  q = f32[100] parameter(1)
  a = f32[100] log(p)
  b = f32[100] exponential(p)
  c = f32[100] add(a, b)
  ROOT root = f32[1] slice(c), slice={[0:1]}
}`, Options{Algorithm: "bestfit-size"}, ReportLegacy)
	require.Equal(t, map[string]int64{"a": 0, "b": 512, "c": 0}, slotOffsets(as))
	want := `Total bytes used: 1716 (1.7KiB)

Allocations sorted by size:

cumulative_size; total_size - cumulative_size; allocation
------------------------------------------------------------------------------
      912B( 53%);       804B; allocation 3: size 912B, preallocated-temp:
    1.3KiB( 76%);       404B; allocation 0: size 400B, parameter 1, shape |f32[100]| at ShapeIndex {}:
    1.7KiB(100%);         4B; allocation 1: size 400B, parameter 0, shape |f32[100]| at ShapeIndex {}:
    1.7KiB(100%);         0B; allocation 2: size 4B, output shape is |f32[1]|, maybe-live-out:


Allocations sorted by size with their values:
allocation 3: size 912B, preallocated-temp:

	cumulative_size;       size;       offset; used_by_n_values; shapes_list
	------------------------------------------------------------
	     400B( 50%);       400B;          512;                1; f32[100]
	     800B(100%);       400B;            0;                2; 2×f32[100]

allocation 0: size 400B, parameter 1, shape |f32[100]| at ShapeIndex {}:
allocation 1: size 400B, parameter 0, shape |f32[100]| at ShapeIndex {}:
allocation 2: size 4B, output shape is |f32[1]|, maybe-live-out:
`
	require.Equal(t, want, got)
}

// TestReportTruncates holds the legacy allocation list to the cut of
// BufferAssignment::MemoryUsageReport (percentile 0.05, more_than_k 50 in
// buffer_assignment.h): past the 50th row, the list stops once the
// allocations left are under 5% of the total, and says how many it leaves
// out; the second section still lists every allocation. Here 57
// allocations: p0 and the result (40,000 bytes each) and 55 unused f32[1]
// parameters; after 51 rows 24 bytes are left, under 5% of 80,220.
func TestReportTruncates(t *testing.T) {
	var b strings.Builder
	b.WriteString("HloModule many, is_scheduled=true\nENTRY e {\n  p0 = f32[10000] parameter(0)\n")
	for i := 1; i <= 55; i++ {
		b.WriteString("  p" + strconv.Itoa(i) + " = f32[1] parameter(" + strconv.Itoa(i) + ")\n")
	}
	b.WriteString("  ROOT r = f32[10000] negate(p0)\n}\n")
	as, got := reportOf(t, b.String(), Options{}, ReportLegacy)
	require.Len(t, as.Allocations, 57)
	lines := strings.Split(got, "\n")
	rows := lines[6:] // past the headings and the rule
	require.Contains(t, rows[50], "  78.3KiB(100%);        24B; allocation ")
	require.Equal(t, "The rest 6 allocations are less than 5% of the total size and not shown.", rows[51])
	require.Equal(t, "", rows[52])
	require.Equal(t, 57, strings.Count(got[strings.Index(got, "with their values:"):], "\nallocation "))
}

// TestReportMemorySpaces holds the current layout to XLA's
// BufferAssignment::MemoryUsageReport since 2026-03-10
// (buffer_assignment.cc, commit 343fc34): the allocations grouped by color
// in increasing order, each group headed by "Memory Space: NAME (color=N)"
// (GetMemorySpaceName: 1 is "vmem") and "Total bytes:", then each
// allocation's table (GetMemoryUsageReportProto's hlo_text, prefix two
// spaces) followed by an empty line, largest allocation first and equal
// sizes by index, and an empty line after each space.
func TestReportMemorySpaces(t *testing.T) {
	_, got := reportOf(t, `HloModule spaces, is_scheduled=true
ENTRY e {
  p0 = f32[100]{0} parameter(0)
  p1 = f32[50]{0:S(1)} parameter(1)
  a = f32[100]{0:S(1)} log(p0)
  b = f32[100]{0:S(1)} exponential(a)
  c = f32[100]{0} negate(b)
  d = f32[50]{0:S(1)} negate(p1)
  ROOT t = (f32[100]{0}, f32[50]{0:S(1)}) tuple(c, d)
}`, Options{Align: 1, Algorithm: "bestfit-size"}, ReportCurrent)
	want := `Memory Space: default (color=0)
Total bytes: 816 (816B)
  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
       400B(100%);       400B;            0;                1; f32[100]

  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
       400B(100%);       400B;            0;                1; f32[100]

  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
        16B(100%);        16B;            0;                1; (f32[100], f32[50])


Memory Space: vmem (color=1)
Total bytes: 800 (800B)
  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
       400B(100%);       400B;            0;                2; 2×f32[100]

  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
       200B(100%);       200B;            0;                1; f32[50]

  cumulative_size;       size;       offset; used_by_n_values; shapes_list
  ------------------------------------------------------------
       200B(100%);       200B;            0;                1; f32[50]


`
	require.Equal(t, want, got)
	require.Equal(t, "color_7", memorySpaceName(7))
}
