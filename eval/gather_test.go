package eval

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// gatherSrc is a gather of an operand of type xt by indices of type it
// into a result of type rt, with the given attributes.
func gatherSrc(xt, it, rt, attrs string) string {
	return "p = " + xt + " parameter(0)\ni = " + it + " parameter(1)\nROOT g = " + rt + " gather(p, i), " + attrs
}

func TestGather(t *testing.T) {
	// Embedding lookup: rows of a [3,2] table, index_vector_dim implicit
	// (equal to the indices' rank: a trailing 1) or explicit.
	rows := "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}"
	table := "{{1, 2}, {3, 4}, {5, 6}}"
	check(t, "f32[2,2] {{5, 6}, {1, 2}}", gatherSrc("f32[3,2]", "s32[2]", "f32[2,2]", rows), table, "{2, 0}")
	check(t, "f32[2,2] {{5, 6}, {1, 2}}", gatherSrc("f32[3,2]", "s64[2,1]", "f32[2,2]", rows), table, "{{2}, {0}}")
	check(t, "f32[3,2] {{3, 4}, {3, 4}, {1, 2}}", gatherSrc("f32[3,2]", "u8[3]", "f32[3,2]", rows), table, "{1, 1, 0}")
	// Out-of-range and negative starts are clamped: 5 -> 2, -3 -> 0 (and
	// a u64 above MaxInt64 is as large as an index gets).
	check(t, "f32[2,2] {{5, 6}, {1, 2}}", gatherSrc("f32[3,2]", "s32[2]", "f32[2,2]", rows), table, "{5, -3}")
	check(t, "f32[1,2] {{5, 6}}", gatherSrc("f32[3,2]", "u64[1]", "f32[1,2]", rows), table, "{18446744073709551615}")
	// Clamping keeps the whole slice inside: a start of 4 for a slice of 3
	// in 5 elements becomes 2.
	check(t, "s32[3,3] {{0, 1, 2}, {2, 3, 4}, {2, 3, 4}}",
		gatherSrc("s32[5]", "s32[3,1]", "s32[3,3]", "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={3}"),
		"{0, 1, 2, 3, 4}", "{{-2}, {2}, {4}}")
	// Scalar picks with index_vector_dim=0: the index vectors are the
	// columns (0, 1) and (2, 0).
	grid := "{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}"
	check(t, "s32[2] {2, 7}",
		gatherSrc("s32[3,3]", "s32[2,2]", "s32[2]", "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=0, slice_sizes={1,1}"),
		grid, "{{0, 2}, {1, 0}}")
	// index_vector_dim in the middle of [2,2,2] indices: vector
	// (indices[b0][0][b1], indices[b0][1][b1]) picks row, column; a window
	// of 2 columns; (2, 2) clamps the column to 1, (-1, 0) the row to 0.
	check(t, "s32[2,2,2] {{{1, 2}, {5, 6}}, {{8, 9}, {1, 2}}}",
		gatherSrc("s32[3,3]", "s32[2,2,2]", "s32[2,2,2]", "offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,2}"),
		grid, "{{{0, 1}, {0, 1}}, {{2, -1}, {2, 0}}}")
	// The result's offset dims need not be trailing: columns gathered into
	// dim 0 of the result.
	check(t, "s32[3,2] {{3, 1}, {6, 4}, {9, 7}}",
		gatherSrc("s32[3,3]", "s32[2]", "s32[3,2]", "offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={3,1}"),
		grid, "{2, 0}")

	// indices_are_sorted is a promise that does not change the result
	// (here the promise is even false).
	for _, sorted := range []string{"", ", indices_are_sorted=false", ", indices_are_sorted=true"} {
		check(t, "f32[3,2] {{5, 6}, {1, 2}, {3, 4}}", gatherSrc("f32[3,2]", "s32[3]", "f32[3,2]", rows+sorted), table, "{2, 0, 1}")
	}

	// Layouts: a column-major operand and result.
	check(t, "f32[2,2] {{5, 6}, {1, 2}}", gatherSrc("f32[3,2]{0,1}", "s32[2]", "f32[2,2]{0,1}", rows), table, "{2, 0}")
	// Complex elements are moved as bytes.
	check(t, "c64[1,2] {{(3, 4), (5, 6)}}", gatherSrc("c64[2,2]", "s32[1]", "c64[1,2]", rows), "{{(1, 2), (7, 8)}, {(3, 4), (5, 6)}}", "{1}")
	// Empty results.
	check(t, "f32[0,2] {}", gatherSrc("f32[3,2]", "s32[0]", "f32[0,2]", rows), table, "{}")
}

// The gather examples of StableHLO's interpreter tests ("RUN:
// stablehlo-translate --interpret"), the second with
// operand_batching_dims / start_indices_batching_dims. Index vector
// [0, 9] maps to operand dims (2, 1) or (1, 0) and is clamped.
func TestGatherStableHLO(t *testing.T) {
	operand := "{{{1, 2}, {3, 4}, {5, 6}, {7, 8}}, {{9, 10}, {11, 12}, {13, 14}, {15, 16}}, {{17, 18}, {19, 20}, {21, 22}, {23, 24}}}"
	check(t, "s64[2,3,2,2] {{{{1, 2}, {3, 4}}, {{3, 4}, {5, 6}}, {{13, 14}, {15, 16}}}, {{{9, 10}, {11, 12}}, {{11, 12}, {13, 14}}, {{17, 18}, {19, 20}}}}",
		gatherSrc("s64[3,4,2]", "s64[2,3,2]", "s64[2,3,2,2]", "offset_dims={2,3}, collapsed_slice_dims={0}, start_index_map={1,0}, index_vector_dim=2, slice_sizes={1,2,2}"),
		operand, "{{{0, 0}, {1, 0}, {2, 1}}, {{0, 1}, {1, 1}, {0, 9}}}")

	operand = "{{{{1, 2}, {3, 4}, {5, 6}, {7, 8}}, {{9, 10}, {11, 12}, {13, 14}, {15, 16}}, {{17, 18}, {19, 20}, {21, 22}, {23, 24}}}," +
		" {{{25, 26}, {27, 28}, {29, 30}, {31, 32}}, {{33, 34}, {35, 36}, {37, 38}, {39, 40}}, {{41, 42}, {43, 44}, {45, 46}, {47, 48}}}}"
	indices := "{{{{0, 0}, {1, 0}, {2, 1}}, {{0, 1}, {1, 1}, {0, 9}}}, {{{0, 0}, {2, 1}, {2, 2}}, {{1, 2}, {0, 1}, {1, 0}}}}"
	want := "s64[2,2,3,2,2] {{{{{1, 2}, {3, 4}}, {{3, 4}, {5, 6}}, {{13, 14}, {15, 16}}}, {{{33, 34}, {35, 36}}, {{35, 36}, {37, 38}}, {{41, 42}, {43, 44}}}}," +
		" {{{{1, 2}, {3, 4}}, {{13, 14}, {15, 16}}, {{21, 22}, {23, 24}}}, {{{43, 44}, {45, 46}}, {{33, 34}, {35, 36}}, {{27, 28}, {29, 30}}}}}"
	check(t, want, gatherSrc("s64[2,3,4,2]", "s64[2,2,3,2]", "s64[2,2,3,2,2]",
		"offset_dims={3,4}, collapsed_slice_dims={1}, operand_batching_dims={0}, start_indices_batching_dims={1}, start_index_map={2,1}, index_vector_dim=3, slice_sizes={1,1,2,2}"),
		operand, indices)
}

func TestGatherErrors(t *testing.T) {
	rows := map[string]string{
		"offset_dims": "{1}", "collapsed_slice_dims": "{0}", "start_index_map": "{0}",
		"index_vector_dim": "1", "slice_sizes": "{1,2}",
	}
	attrs := func(change map[string]string) string {
		var parts []string
		for _, k := range []string{"offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "slice_sizes",
			"operand_batching_dims", "start_indices_batching_dims", "indices_are_sorted"} {
			v, ok := rows[k]
			if c, changed := change[k]; changed {
				v, ok = c, c != ""
			}
			if ok {
				parts = append(parts, k+"="+v)
			}
		}
		return strings.Join(parts, ", ")
	}
	for _, tc := range []struct {
		change   map[string]string
		it, rt   string
		contains string
	}{
		{map[string]string{"slice_sizes": ""}, "s32[2]", "f32[2,2]", "missing attribute slice_sizes"},
		{map[string]string{"offset_dims": ""}, "s32[2]", "f32[2,2]", "missing attribute offset_dims"},
		{map[string]string{"index_vector_dim": "x"}, "s32[2]", "f32[2,2]", "bad index_vector_dim"},
		{map[string]string{"index_vector_dim": "2"}, "s32[2]", "f32[2,2]", "index_vector_dim 2 out of range"},
		{map[string]string{"offset_dims": "{1,0}"}, "s32[2]", "f32[2,2]", "must be sorted"},
		{map[string]string{"offset_dims": "{2}"}, "s32[2]", "f32[2,2]", "must be sorted"},
		{map[string]string{"offset_dims": "1"}, "s32[2]", "f32[2,2]", "bad offset_dims"},
		{map[string]string{"start_index_map": "{0,1}"}, "s32[2]", "f32[2,2]", "index vectors have 1"},
		{map[string]string{"start_index_map": "{5}"}, "s32[2]", "f32[2,2]", "must be unique"},
		{map[string]string{"slice_sizes": "{1,3}"}, "s32[2]", "f32[2,3]", "do not fit"},
		{map[string]string{"slice_sizes": "{1}"}, "s32[2]", "f32[2,2]", "slice_sizes [1] for operand rank 2"},
		{map[string]string{"slice_sizes": "{2,2}"}, "s32[2]", "f32[2,2]", "collapsed or batching dim 0, want at most 1"},
		{map[string]string{"collapsed_slice_dims": "{}"}, "s32[2]", "f32[2,2]", "operand rank 2 is not"},
		{map[string]string{"operand_batching_dims": "{0}"}, "s32[2]", "f32[2,2]", "differ in length"},
		{map[string]string{"indices_are_sorted": "maybe"}, "s32[2]", "f32[2,2]", "bad indices_are_sorted"},
		{nil, "s32[2]", "f32[2,3]", "slice_sizes[1] is 2"},
		{nil, "s32[3]", "f32[2,2]", "indices dim 0 has size 3"},
		{nil, "s32[2]", "f32[2,2,1]", "rank 3, want"},
		{nil, "f32[2]", "f32[2,2]", "want an integer type"},
		{nil, "s32[2]", "s32[2,2]", "differs from result type"},
	} {
		_, err := evalText(t, gatherSrc("f32[3,2]", tc.it, tc.rt, attrs(tc.change)), "{{1, 2}, {3, 4}, {5, 6}}", "0")
		require.ErrorContains(t, err, tc.contains, "%v %s %s", tc.change, tc.it, tc.rt)
	}
}

// scatterSrc is a module whose entry scatters updates into an input with
// the given combiner body (over a, b of type et) and attributes.
func scatterSrc(et, xt, it, ut, body, attrs string) string {
	return "HloModule t\ncomb {\n  a = " + et + "[] parameter(0)\n  b = " + et + "[] parameter(1)\n  " + body + "\n}\n" +
		"ENTRY main {\n  x = " + xt + " parameter(0)\n  i = " + it + " parameter(1)\n  u = " + ut + " parameter(2)\n" +
		"  ROOT s = " + xt + " scatter(x, i, u), " + attrs + ", to_apply=comb\n}\n"
}

const scatterElems = "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"

func TestScatter(t *testing.T) {
	add := "ROOT r = f32[] add(a, b)"
	// Duplicate indices accumulate.
	check(t, "f32[4] {1, 42, 3, 24}", scatterSrc("f32", "f32[4]", "s32[3,1]", "f32[3]", add, scatterElems),
		"{1, 2, 3, 4}", "{{1}, {3}, {1}}", "{10, 20, 30}")
	// Implicit index_vector_dim and other index types.
	check(t, "f32[4] {1, 42, 3, 24}", scatterSrc("f32", "f32[4]", "u16[3]", "f32[3]", add, scatterElems),
		"{1, 2, 3, 4}", "{1, 3, 1}", "{10, 20, 30}")
	// Overwrite (the combiner returns the update): the last update in
	// order wins.
	check(t, "f32[4] {1, 30, 3, 20}", scatterSrc("f32", "f32[4]", "s32[3]", "f32[3]", "ROOT r = f32[] parameter(1)", scatterElems),
		"{1, 2, 3, 4}", "{1, 3, 1}", "{10, 20, 30}")
	// A combiner that keeps the current value changes nothing.
	check(t, "f32[4] {1, 2, 3, 4}", scatterSrc("f32", "f32[4]", "s32[3]", "f32[3]", "ROOT r = f32[] parameter(0)", scatterElems),
		"{1, 2, 3, 4}", "{1, 3, 1}", "{10, 20, 30}")
	// A combiner that is not a single op runs as a computation: 2a + b,
	// applied in update order (1: 2*2+10 = 14, then 2*14+30 = 58).
	twice := "two = s32[] constant(2)\n  m = s32[] multiply(a, two)\n  ROOT r = s32[] add(m, b)"
	check(t, "s32[4] {1, 58, 3, 28}", scatterSrc("s32", "s32[4]", "s32[3]", "s32[3]", twice, scatterElems),
		"{1, 2, 3, 4}", "{1, 3, 1}", "{10, 20, 30}")
	check(t, "f32[4] {1, -38, 3, -16}", scatterSrc("f32", "f32[4]", "s32[3]", "f32[3]", "ROOT r = f32[] subtract(a, b)", scatterElems),
		"{1, 2, 3, 4}", "{1, 3, 1}", "{10, 20, 30}")

	// Windows of 2 along the rows of a [3,3] input, each index vector
	// (row, column). (0, 1) fits; (1, 2) would put column 3 outside, so
	// the whole window is skipped (not clamped, unlike gather); (2, -1)
	// is negative and skipped too.
	rowsAttrs := "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1"
	check(t, "s32[3,3] {{1, 12, 23}, {4, 5, 6}, {7, 8, 9}}",
		scatterSrc("s32", "s32[3,3]", "s32[3,2]", "s32[3,2]", "ROOT r = s32[] add(a, b)", rowsAttrs),
		"{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}", "{{0, 1}, {1, 2}, {2, -1}}", "{{10, 20}, {30, 40}, {50, 60}}")
	// A huge u64 index is out of bounds too.
	check(t, "f32[4] {1, 2, 3, 4}", scatterSrc("f32", "f32[4]", "u64[1]", "f32[1]", add, scatterElems),
		"{1, 2, 3, 4}", "{18446744073709551615}", "{10}")
	// The window may lead the update dims: update_window_dims={0} takes
	// columns of the updates.
	check(t, "s32[2,3] {{1, 10, 30}, {1, 20, 40}}",
		scatterSrc("s32", "s32[2,3]", "s32[2]", "s32[2,2]", "ROOT r = s32[] add(a, b)",
			"update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1"),
		"1", "{1, 2}", "{{9, 29}, {19, 39}}")

	// Integers wrap at their width; unsigned max and pred or go through
	// the fast path.
	check(t, "s8[2] {-128, 5}", scatterSrc("s8", "s8[2]", "s32[2]", "s8[2]", "ROOT r = s8[] add(a, b)", scatterElems),
		"{127, 4}", "{0, 1}", "{1, 1}")
	check(t, "u32[2] {4294967295, 7}", scatterSrc("u32", "u32[2]", "s64[3]", "u32[3]", "ROOT r = u32[] maximum(a, b)", scatterElems),
		"{1, 7}", "{0, 0, 1}", "{4294967295, 3, 2}")
	check(t, "pred[3] {true, false, true}", scatterSrc("pred", "pred[3]", "s32[2]", "pred[2]", "ROOT r = pred[] or(a, b)", scatterElems),
		"{false, false, true}", "{0, 2}", "{true, false}")
	// bf16 rounds each combination: 1 + 2^-8 is a tie that rounds to 1.
	check(t, "bf16[2] {1, 2.5}", scatterSrc("bf16", "bf16[2]", "s32[2]", "bf16[2]", "ROOT r = bf16[] add(a, b)", scatterElems),
		"{1, 2}", "{0, 1}", "{0.00390625, 0.5}")
	check(t, "bf16[2] {1, 2.5}", scatterSrc("bf16", "bf16[2]", "s32[2]", "bf16[2]", "ROOT r = bf16[] add(b, a)", scatterElems),
		"{1, 2}", "{0, 1}", "{0.00390625, 0.5}")
	// Complex elements through the computation.
	check(t, "c64[2] {(1, 1), (4, 6)}", scatterSrc("c64", "c64[2]", "s32[1]", "c64[1]", "ROOT r = c64[] add(a, b)", scatterElems),
		"{(1, 1), (1, 2)}", "{1}", "{(3, 4)}")
	// indices_are_sorted and unique_indices are promises: same result.
	for _, p := range []string{", indices_are_sorted=true", ", unique_indices=true", ", indices_are_sorted=false, unique_indices=false"} {
		check(t, "f32[4] {1, 42, 3, 24}", scatterSrc("f32", "f32[4]", "s32[3]", "f32[3]", add, scatterElems+p),
			"{1, 2, 3, 4}", "{1, 3, 1}", "{10, 20, 30}")
	}
	// Layouts: a column-major input and result.
	check(t, "s32[2,3] {{1, 10, 30}, {1, 20, 40}}",
		scatterSrc("s32", "s32[2,3]{0,1}", "s32[2]", "s32[2,2]{0,1}", "ROOT r = s32[] add(a, b)",
			"update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1"),
		"1", "{1, 2}", "{{9, 29}, {19, 39}}")
}

// The scatter examples of StableHLO's interpreter tests ("RUN:
// stablehlo-translate --interpret"), the second with
// input_batching_dims / scatter_indices_batching_dims. Index vector
// [0, 9] is out of bounds: its window is skipped.
func TestScatterStableHLO(t *testing.T) {
	add := "ROOT r = s64[] add(a, b)"
	check(t, "s64[3,4,2] {{{1, 2}, {5, 6}, {7, 8}, {7, 8}}, {{10, 11}, {12, 13}, {14, 15}, {16, 17}}, {{18, 19}, {20, 21}, {21, 22}, {23, 24}}}",
		scatterSrc("s64", "s64[3,4,2]", "s64[2,3,2]", "s64[2,3,2,2]", add,
			"update_window_dims={2,3}, inserted_window_dims={0}, scatter_dims_to_operand_dims={1,0}, index_vector_dim=2"),
		"{{{1, 2}, {3, 4}, {5, 6}, {7, 8}}, {{9, 10}, {11, 12}, {13, 14}, {15, 16}}, {{17, 18}, {19, 20}, {21, 22}, {23, 24}}}",
		"{{{0, 2}, {1, 0}, {2, 1}}, {{0, 1}, {1, 0}, {0, 9}}}", "1")

	input := "{{{{1, 2}, {3, 4}, {5, 6}, {7, 8}}, {{9, 10}, {11, 12}, {13, 14}, {15, 16}}, {{17, 18}, {19, 20}, {21, 22}, {23, 24}}}," +
		" {{{25, 26}, {27, 28}, {29, 30}, {31, 32}}, {{33, 34}, {35, 36}, {37, 38}, {39, 40}}, {{41, 42}, {43, 44}, {45, 46}, {47, 48}}}}"
	want := "s64[2,3,4,2] {{{{3, 4}, {6, 7}, {6, 7}, {7, 8}}, {{9, 10}, {11, 12}, {15, 16}, {17, 18}}, {{17, 18}, {19, 20}, {22, 23}, {24, 25}}}," +
		" {{{25, 26}, {28, 29}, {30, 31}, {31, 32}}, {{35, 36}, {38, 39}, {38, 39}, {39, 40}}, {{41, 42}, {44, 45}, {46, 47}, {47, 48}}}}"
	check(t, want, scatterSrc("s64", "s64[2,3,4,2]", "s64[2,2,3,2]", "s64[2,2,3,2,2]", add,
		"update_window_dims={3,4}, inserted_window_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={1}, scatter_dims_to_operand_dims={2,1}, index_vector_dim=3"),
		input, "{{{{0, 0}, {1, 0}, {2, 1}}, {{0, 1}, {1, 1}, {0, 9}}}, {{{0, 0}, {2, 1}, {2, 2}}, {{1, 2}, {0, 1}, {1, 0}}}}", "1")
}

// variadicSrc scatters into two inputs (s32 and f32) with a combiner
// whose root is body over a0, a1 (current) and b0, b1 (updates).
func variadicSrc(body string) string {
	return `HloModule t
comb {
  a0 = s32[] parameter(0)
  a1 = f32[] parameter(1)
  b0 = s32[] parameter(2)
  b1 = f32[] parameter(3)
  ` + body + `
}
ENTRY main {
  x0 = s32[4] parameter(0)
  x1 = f32[4] parameter(1)
  i = s32[3] parameter(2)
  u0 = s32[3] parameter(3)
  u1 = f32[3] parameter(4)
  ROOT s = (s32[4], f32[4]) scatter(x0, x1, i, u0, u1), ` + scatterElems + `, to_apply=comb
}
`
}

func TestScatterVariadic(t *testing.T) {
	args := []string{"{1, 2, 3, 4}", "{1, 2, 3, 4}", "{0, 2, 0}", "{5, 6, 7}", "{0.5, 1.5, 4}"}
	// Sum the s32s, multiply the f32s.
	got := evalTuple(t, variadicSrc("s = s32[] add(a0, b0)\n  m = f32[] multiply(a1, b1)\n  ROOT r = (s32[], f32[]) tuple(s, m)"), args...)
	require.Equal(t, []string{"s32[4] {13, 2, 9, 4}", "f32[4] {2, 2, 4.5, 4}"}, got)
	// Overwrite both (parameters forwarded): the last update wins.
	got = evalTuple(t, variadicSrc("ROOT r = (s32[], f32[]) tuple(b0, b1)"), args...)
	require.Equal(t, []string{"s32[4] {7, 2, 6, 4}", "f32[4] {4, 2, 1.5, 4}"}, got)
	// Keep the first, overwrite the second.
	got = evalTuple(t, variadicSrc("ROOT r = (s32[], f32[]) tuple(a0, b1)"), args...)
	require.Equal(t, []string{"s32[4] {1, 2, 3, 4}", "f32[4] {4, 2, 1.5, 4}"}, got)
	// A combiner whose outputs depend on both inputs (an argmax-like
	// pair: keep the larger s32 and its f32) runs as a computation.
	argmax := `gt = pred[] compare(b0, a0), direction=GT
  v = s32[] select(gt, b0, a0)
  w = f32[] select(gt, b1, a1)
  ROOT r = (s32[], f32[]) tuple(v, w)`
	got = evalTuple(t, variadicSrc(argmax), "{1, 9, 3, 4}", "{10, 20, 30, 40}", "{0, 1, 0}", "{5, 6, 2}", "{0.5, 1.5, 4}")
	require.Equal(t, []string{"s32[4] {5, 9, 3, 4}", "f32[4] {0.5, 20, 30, 40}"}, got)
}

func TestScatterErrors(t *testing.T) {
	add := "ROOT r = f32[] add(a, b)"
	base := scatterSrc("f32", "f32[4]", "s32[3]", "f32[3]", add, scatterElems)
	for _, tc := range []struct {
		old, new, contains string
	}{
		{"index_vector_dim=1", "index_vector_dim=x", "bad index_vector_dim"},
		{"index_vector_dim=1", "index_vector_dim=2", "index_vector_dim 2 out of range"},
		{", index_vector_dim=1", "", "missing attribute index_vector_dim"},
		{"update_window_dims={}", "update_window_dims={3}", "update_window_dims [3] must be sorted"},
		{"inserted_window_dims={0}", "inserted_window_dims={}", "operand rank 1 is not"},
		{"scatter_dims_to_operand_dims={0}", "scatter_dims_to_operand_dims={0,0}", "index vectors have 1"},
		{"scatter_dims_to_operand_dims={0}", "scatter_dims_to_operand_dims={1}", "must be unique and in [0, 1)"},
		{"inserted_window_dims={0}", "inserted_window_dims={0}, input_batching_dims={0}", "differ in length"},
		{"to_apply=comb", "to_apply=comb, unique_indices=yes", "bad unique_indices"},
		{"u = f32[3] parameter(2)", "u = f32[2] parameter(2)", "dim 0 has size 2, indices dim 0 has size 3"},
		{"u = f32[3] parameter(2)", "u = s32[3] parameter(2)", "updates 0 have type s32"},
		{"i = s32[3] parameter(1)", "i = pred[3] parameter(1)", "want an integer type"},
		{"ROOT s = f32[4]", "ROOT s = f32[5]", "does not match input"},
		{"b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)", "ROOT r = f32[] add(a, a)", "takes 1 parameters, want 2"},
		{"ROOT r = f32[] add(a, b)", "ROOT r = (f32[], f32[]) tuple(a, b)", "returned (f32[], f32[])"},
	} {
		src := strings.Replace(base, tc.old, tc.new, 1)
		require.NotEqual(t, base, src, tc.old)
		root := rootOf(t, src)
		ops := make([]Literal, len(root.Operands))
		for i, o := range root.Operands {
			l, err := ParseLiteral(o.Shape, "1")
			require.NoError(t, err)
			ops[i] = l
		}
		_, err := Instruction(root, ops)
		require.ErrorContains(t, err, tc.contains, tc.new)
	}
	// Window larger than the operand.
	_, err := evalText(t, scatterSrc("f32", "f32[2]", "s32[1]", "f32[1,3]", add,
		"update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"), "1", "0", "1")
	require.ErrorContains(t, err, "update window of size 3")
	// Operand counts: inputs and updates must pair up.
	root := rootOf(t, variadicSrc("ROOT r = (s32[], f32[]) tuple(b0, b1)"))
	lit := func(s hlo.Shape) Literal {
		l, err := ParseLiteral(s, "0")
		require.NoError(t, err)
		return l
	}
	ops := []Literal{lit(root.Operands[0].Shape), lit(root.Operands[1].Shape), lit(root.Operands[2].Shape), lit(root.Operands[3].Shape)}
	_, err = Instruction(root, ops)
	require.ErrorContains(t, err, "has 4 operands")
	// A tuple operand.
	ops = append(ops, TupleLiteral(lit(root.Operands[4].Shape)))
	_, err = Instruction(root, ops)
	require.ErrorContains(t, err, "operand 4 is not an array")
}

// gsCase is a random gather/scatter configuration (gsRandomCase): operand
// and indices dims, the other array's dims (gather's result, scatter's
// updates), the dimension numbers, and per operand dim the window's
// extent (gather's slice_sizes).
type gsCase struct {
	operand, indices, other                          []int64
	window, elided, opBatch, idxBatch, startMap, ext []int64
	ivd                                              int
}

// gsRandomCase draws a valid configuration: each operand dim a batching,
// collapsed/inserted or window dim; a start map over some non-batching
// dims; indices with the batching dims and free batch dims in random order
// and index_vector_dim anywhere (or implicit); window dims at random
// positions of the other array.
func gsRandomCase(rng *rand.Rand) gsCase {
	var c gsCase
	r := 1 + rng.IntN(3)
	for d := 0; d < r; d++ {
		c.operand = append(c.operand, int64(1+rng.IntN(4)))
	}
	// Roles of the operand dims: batching, elided or window.
	var winOp []int
	for _, p := range rng.Perm(r) {
		switch rng.IntN(3) {
		case 0:
			c.opBatch = append(c.opBatch, int64(p))
		case 1:
			c.elided = append(c.elided, int64(p))
		default:
			winOp = append(winOp, p)
		}
	}
	slices.Sort(c.opBatch)
	slices.Sort(c.elided)
	slices.Sort(winOp)
	c.ext = make([]int64, r)
	for d := range c.ext {
		c.ext[d] = 1
	}
	for _, d := range winOp {
		c.ext[d] = int64(rng.IntN(int(c.operand[d]) + 1))
	}
	// Start map: some non-batching operand dims, in random order.
	for _, d := range rng.Perm(r) {
		if !slices.Contains(c.opBatch, int64(d)) && rng.IntN(2) == 0 {
			c.startMap = append(c.startMap, int64(d))
		}
	}
	// Indices: batching dims (sized as the operand's) and free batch dims
	// in random order, then the index vector dim inserted somewhere (or
	// implicit when the vector has length 1).
	var idx []int64
	var isBatch []int
	for i := range c.opBatch {
		isBatch = append(isBatch, i)
	}
	for k := rng.IntN(3); k > 0; k-- {
		isBatch = append(isBatch, -1)
	}
	rng.Shuffle(len(isBatch), func(i, j int) { isBatch[i], isBatch[j] = isBatch[j], isBatch[i] })
	for _, b := range isBatch {
		if b >= 0 {
			idx = append(idx, c.operand[c.opBatch[b]])
		} else {
			idx = append(idx, int64(rng.IntN(4)))
		}
	}
	c.ivd = rng.IntN(len(idx) + 1)
	implicit := len(c.startMap) == 1 && c.ivd == len(idx) && rng.IntN(2) == 0
	c.indices = append([]int64(nil), idx[:c.ivd]...)
	if !implicit {
		c.indices = append(c.indices, int64(len(c.startMap)))
	}
	c.indices = append(c.indices, idx[c.ivd:]...)
	c.idxBatch = make([]int64, len(c.opBatch))
	for j, b := range isBatch {
		if b >= 0 {
			pos := j
			if pos >= c.ivd && !implicit {
				pos++
			}
			c.idxBatch[b] = int64(pos)
		}
	}
	// The other array: window dims at random sorted positions.
	or := len(winOp) + len(idx)
	c.window = make([]int64, 0, len(winOp))
	for _, p := range rng.Perm(or)[:len(winOp)] {
		c.window = append(c.window, int64(p))
	}
	slices.Sort(c.window)
	c.other = make([]int64, or)
	wi, bi := 0, 0
	for k := range c.other {
		if slices.Contains(c.window, int64(k)) {
			c.other[k] = c.ext[winOp[wi]]
			wi++
		} else {
			c.other[k] = idx[bi]
			bi++
		}
	}
	return c
}

func gsText(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return "{" + strings.Join(s, ",") + "}"
}

// gsRef computes, per the StableHLO spec's formulas (not the plan), the
// operand index of each element of the other array, with start(full start
// index before clamping or checking) returned separately.
func gsRef(c gsCase, idxVals []int64, otherIdx []int64) (start, off []int64) {
	r := len(c.operand)
	var batchIdx, offIdx []int64
	for k, v := range otherIdx {
		if slices.Contains(c.window, int64(k)) {
			offIdx = append(offIdx, v)
		} else {
			batchIdx = append(batchIdx, v)
		}
	}
	implicit := len(c.indices) == len(batchIdx)
	// start_index: the index vector at batchIdx.
	full := make([]int64, len(c.indices))
	var vec []int64
	if implicit {
		copy(full, batchIdx)
		vec = []int64{idxVals[linear(full, c.indices)]}
	} else {
		copy(full, batchIdx[:c.ivd])
		copy(full[c.ivd+1:], batchIdx[c.ivd:])
		for v := int64(0); v < c.indices[c.ivd]; v++ {
			full[c.ivd] = v
			vec = append(vec, idxVals[linear(full, c.indices)])
		}
	}
	start = make([]int64, r)
	for k, d := range c.startMap {
		start[d] = vec[k]
	}
	for i, d := range c.opBatch {
		s := c.idxBatch[i]
		if !implicit && s > int64(c.ivd) {
			s--
		}
		start[d] = batchIdx[s]
	}
	off = make([]int64, r)
	j := 0
	for d := 0; d < r; d++ {
		if !slices.Contains(c.elided, int64(d)) && !slices.Contains(c.opBatch, int64(d)) {
			off[d] = offIdx[j]
			j++
		}
	}
	return start, off
}

func linear(idx, dims []int64) int {
	n := int64(0)
	for d, v := range idx {
		n = n*dims[d] + v
	}
	return int(n)
}

// TestGatherScatterReference checks gather and scatter on random
// dimension numbers (batching dims, index_vector_dim anywhere or
// implicit, window dims anywhere) against the spec's formulas evaluated
// directly for each element.
func TestGatherScatterReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 500; iter++ {
		c := gsRandomCase(rng)
		nIdx := elemCount(hlo.Shape{Dims: c.indices})
		idxVals := make([]int64, nIdx)
		for i := range idxVals {
			idxVals[i] = int64(rng.IntN(7)) - 2 // some out of range
		}
		x := make([]int64, elemCount(hlo.Shape{Dims: c.operand}))
		for i := range x {
			x[i] = int64(i + 1)
		}
		shape := func(dims []int64) string { return "s32[" + strings.Trim(gsText(dims), "{}") + "]" }
		lit := func(dims []int64, v []int64) Literal {
			l, err := outI(hlo.Shape{Elem: hlo.S32, Dims: dims}, v)
			require.NoError(t, err)
			return l
		}
		withBatch := len(c.opBatch) > 0 || rng.IntN(2) == 0
		common := func(opName, idxName string) string {
			s := "index_vector_dim=" + strconv.Itoa(c.ivd)
			if withBatch {
				s += ", " + opName + "=" + gsText(c.opBatch) + ", " + idxName + "=" + gsText(c.idxBatch)
			}
			return s
		}
		desc := func() string { return fmt.Sprintf("%+v", c) }

		// Gather.
		attrs := fmt.Sprintf("offset_dims=%s, collapsed_slice_dims=%s, start_index_map=%s, slice_sizes=%s, %s",
			gsText(c.window), gsText(c.elided), gsText(c.startMap), gsText(c.ext), common("operand_batching_dims", "start_indices_batching_dims"))
		root := rootOf(t, gatherSrc(shape(c.operand), shape(c.indices), shape(c.other), attrs))
		out, err := Instruction(root, []Literal{lit(c.operand, x), lit(c.indices, idxVals)})
		require.NoError(t, err, desc())
		got := decodeI(hlo.S32, out.Data)
		oi := make([]int64, len(c.other))
		for n := range got {
			start, off := gsRef(c, idxVals, oi)
			for d := range start {
				start[d] = min(max(start[d], 0), c.operand[d]-c.ext[d])
				start[d] += off[d]
			}
			require.Equal(t, x[linear(start, c.operand)], got[n], "%s at %v", desc(), oi)
			nextIndex(oi, c.other)
		}

		// Scatter (add, so the order of duplicates does not matter).
		attrs = fmt.Sprintf("update_window_dims=%s, inserted_window_dims=%s, scatter_dims_to_operand_dims=%s, %s",
			gsText(c.window), gsText(c.elided), gsText(c.startMap), common("input_batching_dims", "scatter_indices_batching_dims"))
		root = rootOf(t, scatterSrc("s32", shape(c.operand), shape(c.indices), shape(c.other), "ROOT r = s32[] add(a, b)", attrs))
		upd := make([]int64, elemCount(hlo.Shape{Dims: c.other}))
		for i := range upd {
			upd[i] = int64(100 * (i + 1))
		}
		out, err = Instruction(root, []Literal{lit(c.operand, x), lit(c.indices, idxVals), lit(c.other, upd)})
		require.NoError(t, err, desc())
		want := append([]int64(nil), x...)
		oi = make([]int64, len(c.other))
		for n := range upd {
			start, off := gsRef(c, idxVals, oi)
			fits := true
			for d := range start {
				if start[d] < 0 || start[d] > c.operand[d]-c.ext[d] {
					fits = false
				}
				start[d] += off[d]
			}
			if fits {
				want[linear(start, c.operand)] += upd[n]
			}
			nextIndex(oi, c.other)
		}
		require.Equal(t, want, decodeI(hlo.S32, out.Data), desc())
	}
}
