package assign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// xlaSample has every line kind of the format: each allocation attribute,
// a tuple parameter leaf at {1,1}, a shape in a memory space, a tuple
// output with an /*index=5*/ comment, a phi, the Used values section and
// the HloLiveRange block in the current layout with its stack trace.
const xlaSample = `BufferAssignment:
allocation 0: size 8, parameter 0, shape |(f32[2], (s32[], f32[2]))| at ShapeIndex {1,1}:
 value: <1 p{1,1} @0> (size=8,offset=0): f32[2]{0}
allocation 1: size 1024, color 1, parameter 1, shape |f32[256]| at ShapeIndex {}, output shape is |f32[256]|, maybe-live-out:
 value: <2 q @1> (size=1024,offset=0): f32[256]{0:S(1)}
allocation 2: size 4, constant:
 value: <3 c @0> (size=4,offset=0): f32[]
allocation 3: size 4, thread-local:
 value: <0 x.1 @0> (size=4,offset=0): f32[]
allocation 4: size 48, output shape is |(s32[], f32[2], f32[2], f32[2], f32[2], f32[2])|, maybe-live-out:
 value: <9 t{} @0> (size=48,offset=0): (s32[], f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0})
allocation 5: size 256, preallocated-temp:
 value: <4 w{0} (phi) @0> (size=4,offset=0): s32[]
 value: <5 add.2 @0> (size=8,offset=128): f32[2]{0}

Total bytes used: 1344 (1.3KiB)

Used values:
<1 p{1,1} @0>
 positions:
  p {1,1}
  gte.1
 uses:
  add.2, operand 0
  gte.1, operand 0 {1,1}
 from instruction: %p = (f32[2]{0}, (s32[], f32[2]{0})) parameter(0)
<5 add.2 @0>
 positions:
  add.2
 uses:
 from instruction: %add.2 = f32[2]{0} add(f32[2]{0} %gte.1, f32[2]{0} %gte.1)


HloLiveRange (max 3):
  InstructionSequence:
    0:p
    1:add.2
    2:t
  BufferLiveRange:
    p{1,1}:0-3
    add.2{}:1-2
    t{}:2-3
  Live ranges at 2 (peak):
    t{}: 48 bytes (cumulative: 48 bytes)
    add.2{}: 8 bytes (cumulative: 56 bytes)
  Stack trace breakdown for peak usage: 1 056 bytes
    main (100.0%, total: 1 056 bytes, current: 0 bytes, remaining: 1 056 bytes)
      ├── t (85.7%, total: 48 bytes, current: 48 bytes, remaining: 8 bytes)
      │   └── jit(f)/while/body/add (0.0%, total: 0 bytes, current: 0 bytes, remaining: 8 bytes)
      └── jit(f)/a,b->c/dot_general (14.3%, total: 8 bytes, current: 8 bytes, remaining: 0 bytes)
`

// xlaLegacySample is the older peak layout, as the torch-xla dumps have it.
const xlaLegacySample = `HloLiveRange (max 2):
  InstructionSequence:
    0:loop_broadcast_fusion
    1:tuple.6.0
  BufferLiveRange:
    loop_broadcast_fusion{}:0-2
    tuple.6.0{}:1-2
  Live ranges at 1 (peak):
    loop_broadcast_fusion: 4194304 bytes
    tuple.6.0: 8 bytes
`

func TestReadXLA(t *testing.T) {
	x, err := ReadXLA("sample.txt", []byte(xlaSample))
	require.NoError(t, err)
	noIndex := hlo.ShapeIndex{}
	want := &XLAAssignment{
		File: "sample.txt",
		Allocations: []XLAAllocation{
			{Index: 0, Size: 8, Parameter: 0, ParameterIndex: hlo.ShapeIndex{1, 1}, ParameterShape: "(f32[2], (s32[], f32[2]))", Line: 2,
				Values: []XLAValue{{ID: 1, Name: "p", Index: hlo.ShapeIndex{1, 1}, IndexShown: true, Size: 8, Shape: "f32[2]{0}", Line: 3}}},
			{Index: 1, Size: 1024, Color: 1, Parameter: 1, ParameterIndex: noIndex, ParameterShape: "f32[256]", MaybeLiveOut: true,
				ParameterAliased: true, OutputShape: "f32[256]", Line: 4,
				Values: []XLAValue{{ID: 2, Name: "q", Index: noIndex, Color: 1, Size: 1024, Shape: "f32[256]{0:S(1)}", Line: 5}}},
			{Index: 2, Size: 4, Parameter: -1, Constant: true, Line: 6,
				Values: []XLAValue{{ID: 3, Name: "c", Index: noIndex, Size: 4, Shape: "f32[]", Line: 7}}},
			{Index: 3, Size: 4, Parameter: -1, ThreadLocal: true, Line: 8,
				Values: []XLAValue{{ID: 0, Name: "x.1", Index: noIndex, Size: 4, Shape: "f32[]", Line: 9}}},
			{Index: 4, Size: 48, Parameter: -1, MaybeLiveOut: true, OutputShape: "(s32[], f32[2], f32[2], f32[2], f32[2], f32[2])", Line: 10,
				Values: []XLAValue{{ID: 9, Name: "t", Index: noIndex, IndexShown: true, Size: 48,
					Shape: "(s32[], f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0})", Line: 11}}},
			{Index: 5, Size: 256, Parameter: -1, Temp: true, Line: 12, Values: []XLAValue{
				{ID: 4, Name: "w", Index: hlo.ShapeIndex{0}, IndexShown: true, Phi: true, Size: 4, Shape: "s32[]", Line: 13},
				{ID: 5, Name: "add.2", Index: noIndex, Offset: 128, Size: 8, Shape: "f32[2]{0}", Line: 14},
			}},
		},
		TotalBytes: 1344,
		UsedValues: 2,
		LiveRange: &XLALiveRange{
			Max:      3,
			Sequence: []string{"p", "add.2", "t"},
			Ranges:   []XLARange{{"p", hlo.ShapeIndex{1, 1}, 0, 3}, {"add.2", noIndex, 1, 2}, {"t", noIndex, 2, 3}},
			PeakTime: 2,
			Peak:     []XLAPeakValue{{"t", noIndex, 48, 48}, {"add.2", noIndex, 8, 56}},
		},
	}
	require.Empty(t, cmp.Diff(want, x), "(-want +got)")
	var kinds []string
	for _, al := range x.Allocations {
		kinds = append(kinds, al.Kind())
	}
	require.Equal(t, []string{"parameter", "parameter", "constant", "thread-local", "maybe-live-out", "preallocated-temp"}, kinds)

	// The live-range block alone, in the legacy layout: XLA's
	// -live-range.txt since it split the dump.
	x, err = ReadXLA("legacy.txt", []byte(xlaLegacySample))
	require.NoError(t, err)
	require.Equal(t, &XLAAssignment{File: "legacy.txt", TotalBytes: -1, UsedValues: -1, LiveRange: &XLALiveRange{
		Max:      2,
		Sequence: []string{"loop_broadcast_fusion", "tuple.6.0"},
		Ranges:   []XLARange{{"loop_broadcast_fusion", noIndex, 0, 2}, {"tuple.6.0", noIndex, 1, 2}},
		PeakTime: 1,
		Peak:     []XLAPeakValue{{"loop_broadcast_fusion", nil, 4194304, -1}, {"tuple.6.0", nil, 8, -1}},
	}}, x)

	// The allocation list alone, as XLA writes it since April 2026, and
	// an assignment with no allocations.
	x, err = ReadXLA("short.txt", []byte("BufferAssignment:\nallocation 0: size 4, constant:\n value: <3 c @0> (size=4,offset=0): f32[]\n"))
	require.NoError(t, err)
	require.Len(t, x.Allocations, 1)
	require.EqualValues(t, -1, x.TotalBytes)
	require.Nil(t, x.LiveRange)
	x, err = ReadXLA("empty.txt", []byte("BufferAssignment:\n\nTotal bytes used: 0 (0B)\n"))
	require.NoError(t, err)
	require.Equal(t, &XLAAssignment{File: "empty.txt", Allocations: []XLAAllocation{}, TotalBytes: 0, UsedValues: -1}, x)
}

// TestReadXLATolerant: CRLF line ends, trailing blanks, extra blank lines,
// a byte-order mark and a missing final newline read as the plain text.
func TestReadXLATolerant(t *testing.T) {
	want, err := ReadXLA("d.txt", []byte(xlaSample))
	require.NoError(t, err)
	for name, text := range map[string]string{
		"crlf":             strings.ReplaceAll(xlaSample, "\n", "\r\n"),
		"trailing blanks":  strings.ReplaceAll(xlaSample, "\n", " \t \n"),
		"no final newline": strings.TrimSuffix(xlaSample, "\n"),
		"byte-order mark":  "\uFEFF" + xlaSample,
		"crlf, no final newline, trailing blanks": strings.TrimSuffix(strings.ReplaceAll(xlaSample, "\n", "  \r\n"), "\r\n"),
	} {
		got, err := ReadXLA("d.txt", []byte(text))
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	// Blank lines between lines change nothing but the lines' numbers.
	got, err := ReadXLA("d.txt", []byte(strings.ReplaceAll(xlaSample, "\n", "\n\n")))
	require.NoError(t, err)
	require.Len(t, got.Allocations, len(want.Allocations))
	require.Equal(t, 2*want.Allocations[5].Values[1].Line-1, got.Allocations[5].Values[1].Line)
	require.Equal(t, want.LiveRange, got.LiveRange)
}

func TestReadXLAErrors(t *testing.T) {
	const (
		ba = "BufferAssignment:\n"
		al = ba + "allocation 0: size 8, preallocated-temp:\n"
		lr = "HloLiveRange (max 3):\n  InstructionSequence:\n  BufferLiveRange:\n"
	)
	for _, tc := range []struct{ in, want string }{
		{"", "d.txt:1:1: no buffer assignment in file"},
		{" \n\r\n\t\n", "d.txt:1:1: no buffer assignment in file"},
		{"hello world", `d.txt:1:1: unexpected "hello"`},
		{"  hello", `d.txt:1:3: unexpected "hello"`},

		// Allocation headers.
		{"allocation 0: size 4, constant:", `d.txt:1:1: allocation before "BufferAssignment:"`},
		{ba + "allocation 1: size 4, constant:", "d.txt:2:12: allocation 1, want 0"},
		{ba + "allocation x: size 4, constant:", `d.txt:2:12: expected allocation index, found "x"`},
		{ba + "allocation 0: size -4, constant:", `d.txt:2:20: expected size, found "-4"`},
		{ba + "allocation 0: size 99999999999999999999, constant:", "d.txt:2:20: size 99999999999999999999 out of range"},
		{ba + "allocation 0: size 4, constant", `d.txt:2:31: expected ", " or ":", found end of line`},
		{ba + "allocation 0: size 4; constant:", `d.txt:2:21: expected ", " or ":", found ";"`},
		{ba + "allocation 0: size 4, read-only:", `d.txt:2:23: unknown allocation attribute "read-only"`},
		{ba + "allocation 0: size 4, constant, constant:", "d.txt:2:33: duplicate constant"},
		{ba + "allocation 0: size 4, maybe-live-out, constant:", "d.txt:2:39: constant after maybe-live-out"},
		{ba + "allocation 0: size 4, constant, preallocated-temp:", "d.txt:2:33: preallocated-temp allocation 0 is also a constant allocation"},
		{ba + "allocation 0: size 4:", "d.txt:2:21: allocation 0 has no kind: parameter, constant, thread-local, maybe-live-out or preallocated-temp"},
		{ba + "allocation 0: size 4, color c, constant:", `d.txt:2:29: expected color, found "c"`},
		{ba + "allocation 0: size 4, parameter 0, shape |f32[] at ShapeIndex {}:", "d.txt:2:42: shape has no closing '|'"},
		{ba + "allocation 0: size 4, parameter 0, shape |f32[2,| at ShapeIndex {}:", "d.txt:2:49: bad shape: expected dimension size, found end of shape"},
		{ba + "allocation 0: size 4, parameter 0, shape f32[] at ShapeIndex {}:", `d.txt:2:42: expected "|", found "f32"`},
		{ba + "allocation 0: size 4, parameter 0, shape |f32[]| at ShapeIndex {x}:", `d.txt:2:65: expected shape index, found "x"`},
		{ba + "allocation 0: size 4, parameter 0, shape |f32[]| at ShapeIndex {0,}:", `d.txt:2:67: expected shape index, found "}:"`},
		{ba + "allocation 0: size 4, output shape is ||, maybe-live-out:", `d.txt:2:40: expected shape, found "|,"`},
		{ba + "allocation 0: size 4, output shape |f32[]|, maybe-live-out:", `d.txt:2:29: expected " shape is ", found " shape"`},
		{"\uFEFF" + ba + "allocation 0: size 4, thread-local, constant:", "d.txt:2:37: constant after thread-local"},

		// Value lines.
		{ba + " value: <1 p @0> (size=8,offset=0): f32[2]{0}", "d.txt:2:2: value before the first allocation"},
		{al + "garbage here", `d.txt:3:1: expected " value:" or allocation, found "garbage"`},
		{al + "  value: <1 p @0> (size=8,offset=0): f32[2]{0}", `d.txt:3:3: expected " value:" or allocation, found "value"`},
		{al + " value: <1 p @0> (size=8,offset=0): f33[2]{0}", `d.txt:3:37: bad shape: unknown element type "f33"`},
		{al + " value: <1 p @0> (size=8,offset=0): f32[2]{0} junk", "d.txt:3:47: bad shape: unexpected junk after the shape"},
		{al + " value: <1 p 0> (size=8,offset=0): f32[2]{0}", `d.txt:3:13: expected " @", found " 0"`},
		{al + " value: <1 p (ph) @0> (size=8,offset=0): f32[2]{0}", `d.txt:3:13: expected " @", found " ("`},
		{al + " value: <1 p{1,x} @0> (size=8,offset=0): f32[2]{0}", `d.txt:3:16: expected shape index, found "x"`},
		{al + " value: <1 @0> (size=8,offset=0): f32[2]{0}", `d.txt:3:12: expected instruction name, found "@"`},
		{al + " value: <99999999999999999999 p @0> (size=8,offset=0): f32[2]{0}", "d.txt:3:10: value id 99999999999999999999 out of range"},
		{al + " value: <3000000000 p @0> (size=8,offset=0): f32[2]{0}", "d.txt:3:10: value id 3000000000 out of range"},
		{al + " value: <1 p @0> (size=8,offset=0):", `d.txt:3:34: expected "): ", found "):"`},
		{al + " value: <1 p @0> (size=8, offset=0): f32[2]{0}", `d.txt:3:25: expected ",offset=", found ","`},

		// Total bytes used and the order of the sections.
		{"Total bytes used: 12 bytes", `d.txt:1:21: expected end of line or " (size)", found " bytes"`},
		{"Total bytes used: many", `d.txt:1:19: expected byte count, found "many"`},
		{"Total bytes used: 4\n" + ba, `d.txt:2:1: unexpected "BufferAssignment:" after "Total bytes used"`},
		{"Total bytes used: 4\nTotal bytes used: 4", `d.txt:2:1: second "Total bytes used"`},
		{ba + ba, `d.txt:2:1: second "BufferAssignment:"`},
		{"Used values:\n" + al, `d.txt:2:1: unexpected "BufferAssignment:" after "Used values:"` + "\n" +
			`d.txt:3:1: unexpected allocation after "Used values:"`},
		{lr + "Total bytes used: 3", `d.txt:4:1: unexpected "Total bytes used" after the HloLiveRange block`},
		{lr + "HloLiveRange (max 3):", "d.txt:4:1: second HloLiveRange block"},

		// Used values.
		{"Used values:\n<1 p @0>\n positions:\n  p\n", `d.txt:2:1: used value has no "from instruction:" line`},
		{"Used values:\n positions:", `d.txt:2:2: unexpected "positions:"`},
		{"Used values:\n<1 p @0>\n uses:", `d.txt:2:1: used value has no "from instruction:" line` + "\n" +
			`d.txt:3:2: unexpected "uses:"`},
		{"Used values:\n<1 p @0>\n positions:\n from instruction: p", `d.txt:2:1: used value has no "from instruction:" line` + "\n" +
			`d.txt:4:2: unexpected "from instruction:"`},
		{"Used values:\n  p", `d.txt:2:3: unexpected "p" outside positions and uses`},
		{"Used values:\n<1 p @0> x", `d.txt:2:9: unexpected " x" at end of line`},
		{"Used values:\nvalue", `d.txt:2:1: expected used value <ID name @color>, found "value"`},
		{"Used values:\n<1 p @0>\n positions:\n  p\n uses:\n  gte, operand x\n from instruction: %p = f32[] parameter(0)",
			`d.txt:6:16: expected operand number, found "x"`},
		{"Used values:\n<1 p @0>\n positions:\n<2 q @0>\n positions:\n uses:\n from instruction: q",
			`d.txt:4:1: expected position or " uses:", found "<"`},
		{"Used values:\n<1 p @0>\n positions:\n  p {0} x\n uses:\n from instruction: p", `d.txt:4:8: unexpected " x" at end of line`},
		{"Used values:\n<1 p @0>\nfrom instruction: x", `d.txt:2:1: used value has no "from instruction:" line` + "\n" +
			`d.txt:3:1: expected " positions:", found "from"`},

		// The HloLiveRange block.
		{"HloLiveRange (max 3)", `d.txt:1:20: expected "):", found ")"`},
		{"HloLiveRange (max 3):\n  BufferLiveRange:\n    p{}:0-3", `d.txt:2:3: expected "InstructionSequence", found "BufferLiveRange"`},
		{lr + "  BufferLiveRange:", `d.txt:4:3: second "BufferLiveRange"`},
		{lr + "  Live ranges at 1 (peak):\n  InstructionSequence:", `d.txt:5:3: "InstructionSequence" after "Live ranges at"`},
		{"HloLiveRange (max 3):\n    0:p", "d.txt:1:1: HloLiveRange block has no BufferLiveRange section\n" +
			`d.txt:2:5: expected "InstructionSequence:", found "0"`},
		{"HloLiveRange (max 3):\n InstructionSequence:\n  BufferLiveRange:", `d.txt:2:2: unexpected "InstructionSequence" in the HloLiveRange block` + "\n" +
			`d.txt:3:3: expected "InstructionSequence", found "BufferLiveRange"`},
		{"HloLiveRange (max 3):\n  InstructionSequence:\n    1:p\n  BufferLiveRange:", "d.txt:3:5: time 1, want 0"},
		{"HloLiveRange (max 3):\n  InstructionSequence:\n    3000000000:p\n  BufferLiveRange:", "d.txt:3:5: time 3000000000 out of range"},
		{"HloLiveRange (max 3):\n  InstructionSequence:\n    0:p q\n  BufferLiveRange:", `d.txt:3:8: unexpected " q" at end of line`},
		{lr + "    p{}:3", `d.txt:4:10: expected "-", found end of line`},
		{lr + "    p:0-3", `d.txt:4:6: expected "{", found ":"`},
		{lr + "    p{}:0-3-4", `d.txt:4:12: unexpected "-4" at end of line`},
		{lr + "  Stack trace breakdown for peak usage: 4 bytes", `d.txt:4:3: expected "Live ranges at", found "Stack trace breakdown"`},
		{lr + "  Live ranges at 1 (peak):\n    p{}: 4 bytes (cumulative 4 bytes)", `d.txt:5:17: expected " (cumulative: ", found " ("`},
		{lr + "  Live ranges at 1 (peak):\n    p{}: 4 kB", `d.txt:5:11: expected " bytes", found " kB"`},
		{lr + "  Live ranges at 1 (peak):\n  Stack trace breakdown for peak usage: 4 bytes\n    main 100%",
			`d.txt:6:5: expected stack frame NAME (P%, total: N bytes, ...), found "main"`},
		{lr + "  Live ranges at 1 (peak):\n  Stack trace breakdown for peak usage: 4 bytes\n    main (100.0%, total: 4 bytes, current: 0 bytes, remaining: four bytes)",
			`d.txt:6:64: expected byte count, found "four"`},
		{lr + "  Live ranges at 1 (peak):\n  Stack trace breakdown for peak usage: 4 bytes\n    main (all, total: 4 bytes, current: 0 bytes, remaining: 4 bytes)",
			`d.txt:6:11: expected percentage, found "all"`},

		// Several errors come back sorted, one per line.
		{al + " value: <1 p @0> (size=8,offset=0): f32[2]{0} junk\n value: <2 q (ph) @0> (size=8,offset=0): f32[2]{0}",
			"d.txt:3:47: bad shape: unexpected junk after the shape\n" + `d.txt:4:13: expected " @", found " ("`},
	} {
		x, err := ReadXLA("d.txt", []byte(tc.in))
		require.Error(t, err, "%q", tc.in)
		require.Nil(t, x)
		require.Equal(t, tc.want, err.Error(), "%q", tc.in)
		var list hlo.ErrorList
		require.True(t, errors.As(err, &list), "%q: %T is not an hlo.ErrorList", tc.in, err)
		var e *hlo.Error
		require.True(t, errors.As(err, &e))
	}
}

// TestReadXLACorpus reads every buffer-assignment dump of the paired
// corpus: each must read without error, its "Total bytes used" must equal
// the sum of its allocation sizes (the corpus README guarantees it), the
// allocation list must agree with the independent regular-expression
// reader of hlo_assign_test.go, and every value must be listed once in the
// Used values section.
func TestReadXLACorpus(t *testing.T) {
	for _, set := range []struct {
		dir string
		n   int
	}{{"paired", 27}, {"paired-jax", 57}, {"paired-jax-cpu", 9}} {
		files := corpus.All(t, set.dir+"/*/*-buffer-assignment.txt")
		require.Len(t, files, set.n, set.dir)
		files = corpus.Sample(t, files)
		var allocs, values, phis, ranges, peaks int
		kinds := map[string]int{}
		for _, f := range files {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			x, err := ReadXLA(f, src)
			require.NoError(t, err)
			var sum int64
			for i, al := range x.Allocations {
				require.Equal(t, i, al.Index)
				sum += al.Size
				kinds[al.Kind()]++
				values += len(al.Values)
				for _, v := range al.Values {
					if v.Phi {
						phis++
					}
				}
			}
			require.Equal(t, x.TotalBytes, sum, "%s: Total bytes used is not the sum of the allocation sizes", f)
			total, re, _ := readXLAAssignment(t, f)
			require.Equal(t, total, x.TotalBytes, f)
			require.Len(t, x.Allocations, len(re), f)
			for i, a := range re {
				require.Equal(t, a.size, x.Allocations[i].Size, "%s: allocation %d", f, i)
			}
			n := 0
			for _, al := range x.Allocations {
				n += len(al.Values)
			}
			require.Equal(t, n, x.UsedValues, "%s: used values", f)
			require.NotNil(t, x.LiveRange, f)
			require.GreaterOrEqual(t, x.LiveRange.PeakTime, 0, f)
			allocs += len(x.Allocations)
			ranges += len(x.LiveRange.Ranges)
			peaks += len(x.LiveRange.Peak)
		}
		t.Logf("%s: %d files, %d allocations %v, %d values (%d phis), %d live ranges, %d peak lines",
			set.dir, len(files), allocs, kinds, values, phis, ranges, peaks)
	}
}

// TestReadXLAPairedCorpus holds the reader to the assignment it describes, on
// every paired module of the corpus. Each module is prepared
// (compile.Compile up to the schedule) and assigned with --algo=xla (torch-xla and JAX
// XLA:GPU for the gpu target, JAX XLA:CPU for cpu), as TestPairedAssignmentCorpus
// does.
//
// Our own dump (WriteXLA) reads back to the assignment: every allocation
// with its index, size, kind, color, parameter and output shape, every
// value with its ID, name, index, offset, size and shape, the total, the
// used values, and the live-range block to the analysis.
//
// XLA's dump reads to what XLA printed: its allocation count, sizes and
// total are those of --algo=xla, which matches XLA there, and its live
// ranges are the analysis' (as liveness's TestLiveRangeParityCorpus holds them
// by text). Locate places every value of the analysis in XLA's
// allocations, and finds no XLA value the analysis lacks; the allocation
// is always the one --algo=xla chose, and so is the offset except where
// XLA's value numbering (not in the text; see liveness's
// TestXLABufferAssignmentCorpus) breaks a tie between equal buffers.
func TestReadXLAPairedCorpus(t *testing.T) {
	for _, set := range []struct {
		dir    string
		target Target
		n      int
	}{{"paired", GPU, 27}, {"paired-jax", GPU, 57}, {"paired-jax-cpu", CPU, 9}} {
		dirs := corpus.All(t, set.dir+"/*")
		require.Len(t, dirs, set.n, set.dir)
		dirs = corpus.Sample(t, dirs)
		var allocs, values, located, missing, sameOffset int
		var offsetDiffs []string
		for _, dir := range dirs {
			name := set.dir + "/" + filepath.Base(dir)
			mods, err := hlo.ParseFile(globOne(t, filepath.Join(dir, "*after_optimizations.txt")))
			require.NoError(t, err)
			a, err := preptest.With(context.Background(), mods[0], preptest.Options{XLARules: liveness.Rules2025})
			require.NoError(t, err, name)
			as, err := Assign(context.Background(), a, Options{Algorithm: "xla", Target: set.target})
			require.NoError(t, err, name)

			var dump strings.Builder
			require.NoError(t, as.WriteXLA(&dump))
			ours, err := ReadXLA(name+"/ours.txt", []byte(dump.String()))
			require.NoError(t, err)
			requireReadsAs(t, name, as, ours)

			baFile := globOne(t, filepath.Join(dir, "*-buffer-assignment.txt"))
			src, err := os.ReadFile(baFile)
			require.NoError(t, err)
			x, err := ReadXLA(baFile, src)
			require.NoError(t, err)
			require.Equal(t, as.Stats.TotalBytes, x.TotalBytes, name)
			require.Len(t, x.Allocations, len(as.Allocations), name)
			for i, al := range as.Allocations {
				xa := x.Allocations[i]
				require.Equal(t, [2]any{al.Size, al.Kind()}, [2]any{xa.Size, xa.Kind()}, "%s: allocation %d", name, i)
			}
			require.Equal(t, ours.LiveRange.Sequence, x.LiveRange.Sequence, name)
			require.Equal(t, ours.LiveRange.Max, x.LiveRange.Max, name)
			require.ElementsMatch(t, ours.LiveRange.Ranges, x.LiveRange.Ranges, name)
			require.Equal(t, ours.LiveRange.PeakTime, x.LiveRange.PeakTime, name)

			loc := x.Locate(a)
			require.Len(t, loc.Alloc, len(a.Values))
			require.Empty(t, loc.Unplaced, "%s: values of the analysis XLA places nowhere", name)
			require.Empty(t, loc.Missing, "%s: XLA values the analysis lacks", name)
			missing += len(loc.Missing)
			located += len(a.Values) - len(loc.Unplaced)
			for _, al := range as.Allocations {
				allocs++
				for _, s := range al.Slots {
					values++
					require.Equal(t, al.Index, loc.Alloc[s.Value.ID], "%s: %s", name, s.Value.Name())
					if loc.Offset[s.Value.ID] == s.Offset {
						sameOffset++
					} else if len(offsetDiffs) < 3 {
						offsetDiffs = append(offsetDiffs, fmt.Sprintf("%s %s: XLA %d, ours %d", filepath.Base(dir), s.Value.Name(), loc.Offset[s.Value.ID], s.Offset))
					}
				}
			}
		}
		if set.dir != "paired-jax" {
			require.Equal(t, values, sameOffset, "%s: offsets differ from XLA's: %v", set.dir, offsetDiffs)
		}
		t.Logf("%s: %d modules, %d allocations, %d values; %d located, %d XLA values missing; "+
			"allocation equal on %d/%d, offset equal on %d/%d %v",
			set.dir, len(dirs), allocs, values, located, missing, values, values, sameOffset, values, offsetDiffs)
	}
}

// requireReadsAs requires the dump read as x to say what as does.
func requireReadsAs(t *testing.T, name string, as *Assignment, x *XLAAssignment) {
	t.Helper()
	require.Len(t, x.Allocations, len(as.Allocations), name)
	used := map[*liveness.Value]bool{}
	for i, al := range as.Allocations {
		xa := x.Allocations[i]
		output := ""
		if al.Output != nil {
			output = al.Output.StringNoLayout()
		}
		type header struct {
			Index                           int
			Size, Color, Parameter          int64
			ParameterIndex                  string
			Kind, Output                    string
			Temp, Aliased, MaybeLiveOut     bool
			Constant, ThreadLocal, Multiple bool
		}
		require.Equal(t,
			header{al.Index, al.Size, al.Color, al.Parameter, al.ParameterIndex.String(), al.Kind(), output,
				al.Temp, al.ParameterAliased, al.MaybeLiveOut, al.Constant, al.ThreadLocal, len(al.Slots) > 1},
			header{xa.Index, xa.Size, xa.Color, xa.Parameter, xa.ParameterIndex.String(), xa.Kind(), xa.OutputShape,
				xa.Temp, xa.ParameterAliased, xa.MaybeLiveOut, xa.Constant, xa.ThreadLocal, len(xa.Values) > 1},
			"%s: allocation %d", name, i)
		require.Len(t, xa.Values, len(al.Slots), "%s: allocation %d", name, i)
		for j, s := range al.Slots {
			v, xv := s.Value, xa.Values[j]
			used[v] = true
			type value struct {
				ID          int
				Name, Index string
				Phi         bool
				Color       int64
				Offset      int64
				Size        int64
				Shape       string
			}
			require.Equal(t,
				value{v.XLAID, v.Inst.Name, v.Index.String(), v.IsPhi, v.Color, s.Offset, s.Size, v.Shape.StringWithLayout()},
				value{xv.ID, xv.Name, xv.Index.String(), xv.Phi, xv.Color, xv.Offset, xv.Size, xv.Shape},
				"%s: allocation %d value %d", name, i, j)
			require.Equal(t, v.Inst.Shape.IsTuple(), xv.IndexShown, "%s: %s", name, v.Name())
		}
	}
	require.Equal(t, as.Stats.TotalBytes, x.TotalBytes, name)
	require.Equal(t, len(used), x.UsedValues, name)

	a := as.Analysis
	lr := x.LiveRange
	require.NotNil(t, lr, name)
	require.Equal(t, a.EndTime(), lr.Max, name)
	require.Len(t, lr.Sequence, len(a.Sequence), name)
	for i, in := range a.Sequence {
		require.Equal(t, in.Name, lr.Sequence[i], "%s: time %d", name, i)
	}
	var ranges []XLARange
	for _, v := range a.Values {
		if v.Scheduled {
			ranges = append(ranges, XLARange{v.Inst.Name, v.Index, v.Range.Start, v.Range.End})
		}
	}
	require.Equal(t, ranges, lr.Ranges, name)
	pk := a.XLAPeak()
	require.Equal(t, pk.Time, lr.PeakTime, name)
	require.Len(t, lr.Peak, len(pk.Live), name)
	if n := len(lr.Peak); n > 0 {
		require.Equal(t, pk.Bytes, lr.Peak[n-1].Cumulative, name)
	}
}

// TestLocate places the values of a small module by a hand-written dump:
// a value XLA lists twice counts where it is first, one the analysis
// lacks is missing, and one XLA does not list is unplaced.
func TestLocate(t *testing.T) {
	m, err := hlo.ParseModule("loc.hlo", `HloModule loc, is_scheduled=true
ENTRY e {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  e = f32[4] exponential(n)
  ROOT t = (f32[4], f32[4]) tuple(n, e)
}`)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	x, err := ReadXLA("loc.txt", []byte(`BufferAssignment:
allocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:
 value: <0 p @0> (size=16,offset=0): f32[4]{0}
allocation 1: size 16, output shape is |(f32[4], f32[4])|, maybe-live-out:
 value: <3 t{} @0> (size=16,offset=0): (f32[4]{0}, f32[4]{0})
allocation 2: size 64, maybe-live-out:
 value: <9 gone{1} @0> (size=16,offset=0): f32[4]{0}
 value: <1 n @0> (size=16,offset=32): f32[4]{0}
 value: <9 gone{1} @0> (size=16,offset=16): f32[4]{0}
allocation 3: size 16, preallocated-temp:
 value: <1 n @0> (size=16,offset=0): f32[4]{0}
`))
	require.NoError(t, err)
	loc := x.Locate(a)
	id := map[string]int{}
	for _, v := range a.Values {
		id[v.Name()] = v.ID
	}
	require.Len(t, id, 4, "values p, n, e and t")
	wantAlloc, wantOffset := make([]int, 4), make([]int64, 4)
	for name, p := range map[string]struct {
		alloc  int
		offset int64
	}{"p{}": {0, 0}, "t{}": {1, 0}, "n{}": {2, 32}, "e{}": {-1, -1}} {
		wantAlloc[id[name]], wantOffset[id[name]] = p.alloc, p.offset
	}
	require.Equal(t, &XLALocation{Alloc: wantAlloc, Offset: wantOffset, Missing: []string{"gone{1}"}, Unplaced: []int{id["e{}"]}}, loc)
}

// FuzzReadXLA feeds arbitrary text to the reader. It must never panic; it
// must read the same bytes the same way twice; the text with CRLF line
// ends must read the same; and every error must be an hlo.ErrorList,
// sorted, positioned inside the text. The seeds are the samples above and
// the three smallest dumps of each paired corpus set.
func FuzzReadXLA(f *testing.F) {
	if d := corpus.Dir(); d != "" {
		for _, set := range []string{"paired", "paired-jax", "paired-jax-cpu"} {
			files, _ := filepath.Glob(filepath.Join(d, set, "*", "*-buffer-assignment.txt"))
			sort.Slice(files, func(i, j int) bool { return fileSize(files[i]) < fileSize(files[j]) })
			for _, file := range files[:min(3, len(files))] {
				if b, err := os.ReadFile(file); err == nil {
					f.Add(b)
				}
			}
		}
	}
	for _, s := range []string{
		xlaSample, xlaLegacySample, "",
		"BufferAssignment:\nallocation 0: size 4, color 2, thread-local:\n value: <0 x @2> (size=4,offset=0): f32[]{:S(2)}\n",
		"Used values:\n<1 p{1,0} (phi) @0>\n positions:\n  p {1,0}\n uses:\n  w, operand 2 {1,0}\n from instruction: %p = f32[] parameter(0)\n",
		"Total bytes used: 4 (4B)\r\n\r\nHloLiveRange (max 1):\r\n  InstructionSequence:\r\n    0:a\r\n  BufferLiveRange:\r\n    a{}:0-1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		x, err := ReadXLA("fuzz.txt", src)
		x2, err2 := ReadXLA("fuzz.txt", src)
		require.Equal(t, x, x2)
		require.Equal(t, fmt.Sprint(err), fmt.Sprint(err2))
		crlf, errCRLF := ReadXLA("fuzz.txt", []byte(strings.ReplaceAll(string(src), "\n", "\r\n")))
		require.Equal(t, x, crlf, "CRLF reads differently")
		require.Equal(t, fmt.Sprint(err), fmt.Sprint(errCRLF), "CRLF reads differently")
		if err != nil {
			require.Nil(t, x)
			var list hlo.ErrorList
			require.True(t, errors.As(err, &list), "%T", err)
			require.NotEmpty(t, list)
			lines := strings.Count(string(src), "\n") + 1
			for i, e := range list {
				require.Equal(t, "fuzz.txt", e.File)
				require.True(t, e.Pos.Line >= 1 && int(e.Pos.Line) <= lines && e.Pos.Col >= 1, "position %v of %d lines", e.Pos, lines)
				if i > 0 {
					p := list[i-1].Pos
					require.True(t, p.Line < e.Pos.Line || p.Line == e.Pos.Line && p.Col <= e.Pos.Col, "errors out of order")
				}
			}
			return
		}
		for i, al := range x.Allocations {
			require.Equal(t, i, al.Index)
			require.NotEmpty(t, al.Kind())
		}
		if x.LiveRange != nil {
			for i := range x.LiveRange.Sequence {
				require.NotEmpty(t, x.LiveRange.Sequence[i])
			}
		}
	})
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// BenchmarkReadXLA reads the largest buffer-assignment dump of the corpus.
func BenchmarkReadXLA(b *testing.B) {
	files := corpus.Glob(b, "paired*/*/*-buffer-assignment.txt")
	sort.Slice(files, func(i, j int) bool { return fileSize(files[i]) > fileSize(files[j]) })
	src, err := os.ReadFile(files[0])
	require.NoError(b, err)
	b.SetBytes(int64(len(src)))
	var values int
	for b.Loop() {
		x, err := ReadXLA(files[0], src)
		if err != nil {
			b.Fatal(err)
		}
		values = 0
		for _, al := range x.Allocations {
			values += len(al.Values)
		}
	}
	b.ReportMetric(float64(values)*float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

func ExampleReadXLA() {
	x, err := ReadXLA("dump.txt", []byte(`BufferAssignment:
allocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:
 value: <0 p @0> (size=16,offset=0): f32[4]{0}
allocation 1: size 256, preallocated-temp:
 value: <1 n @0> (size=16,offset=0): f32[4]{0}
 value: <2 t{0} @0> (size=16,offset=128): f32[4]{0}

Total bytes used: 272 (272B)
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, al := range x.Allocations {
		fmt.Printf("allocation %d: %s, %d bytes\n", al.Index, al.Kind(), al.Size)
		for _, v := range al.Values {
			fmt.Printf("  %s%s at %d\n", v.Name, v.Index, v.Offset)
		}
	}
	fmt.Println("total", x.TotalBytes)

	_, err = ReadXLA("bad.txt", []byte("BufferAssignment:\nallocation 0: size 16, read-only:\n"))
	fmt.Println(err)
	// Output:
	// allocation 0: parameter, 16 bytes
	//   p{} at 0
	// allocation 1: preallocated-temp, 256 bytes
	//   n{} at 0
	//   t{0} at 128
	// total 272
	// bad.txt:2:24: unknown allocation attribute "read-only"
}
