package eval

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// convSrc is a module body convolving parameters of types lhs and rhs into
// out, with attrs appended to the convolution.
func convSrc(lhs, rhs, out, attrs string) string {
	return "a = " + lhs + " parameter(0)\nb = " + rhs + " parameter(1)\nROOT c = " + out + " convolution(a, b), " + attrs
}

func TestConv1D(t *testing.T) {
	x := "{{{1}, {2}, {3}, {4}, {5}}}"
	k := "{{{1}}, {{2}}, {{3}}}"
	c := func(out, window string) string {
		return convSrc("f32[1,5,1]", "f32[3,1,1]", out, "window={"+window+"}, dim_labels=b0f_0io->b0f")
	}
	check(t, "f32[1,3,1] {{{14}, {20}, {26}}}", c("f32[1,3,1]", "size=3"), x, k)
	// Padding with zeros; negative padding drops elements.
	check(t, "f32[1,5,1] {{{8}, {14}, {20}, {26}, {14}}}", c("f32[1,5,1]", "size=3 pad=1_1"), x, k)
	check(t, "f32[1,2,1] {{{20}, {26}}}", c("f32[1,2,1]", "size=3 pad=-1_0"), x, k)
	check(t, "f32[1,1,1] {{{14}}}", c("f32[1,1,1]", "size=3 pad=0_-2"), x, k)
	// Stride.
	check(t, "f32[1,3,1] {{{8}, {20}, {14}}}", c("f32[1,3,1]", "size=3 stride=2 pad=1_1"), x, k)
	// lhs (base) dilation: 1 0 2 0 3 0 4 0 5.
	check(t, "f32[1,7,1] {{{7}, {4}, {11}, {6}, {15}, {8}, {19}}}", c("f32[1,7,1]", "size=3 lhs_dilate=2"), x, k)
	// rhs (window) dilation: taps x[i], x[i+2], x[i+4].
	check(t, "f32[1,1,1] {{{22}}}", c("f32[1,1,1]", "size=3 rhs_dilate=2"), x, k)
	// Kernel reversal: 3 2 1.
	check(t, "f32[1,3,1] {{{10}, {16}, {22}}}", c("f32[1,3,1]", "size=3 rhs_reversal=1"), x, k)
	// Both dilations and padding together (a transposed-convolution shape).
	check(t, "f32[1,6,1] {{{3}, {5}, {6}, {10}, {9}, {15}}}",
		convSrc("f32[1,3,1]", "f32[2,1,1]", "f32[1,6,1]", "window={size=2 pad=1_1 lhs_dilate=2}, dim_labels=b0f_0io->b0f"),
		"{{{1}, {2}, {3}}}", "{{{5}}, {{3}}}")
}

func TestConv2D(t *testing.T) {
	x := "{{{{1}, {2}, {3}}, {{4}, {5}, {6}}, {{7}, {8}, {9}}}}"
	k := "{{{{1}}, {{2}}}, {{{3}}, {{4}}}}"
	c := func(out, window string) string {
		return convSrc("f32[1,3,3,1]", "f32[2,2,1,1]", out, "window={"+window+"}, dim_labels=b01f_01io->b01f")
	}
	check(t, "f32[1,2,2,1] {{{{37}, {47}}, {{67}, {77}}}}", c("f32[1,2,2,1]", "size=2x2"), x, k)
	// Padded grid: a zero row on top, a zero column on the right.
	check(t, "f32[1,2,2,1] {{{{11}, {9}}, {{67}, {33}}}}", c("f32[1,2,2,1]", "size=2x2 stride=2x2 pad=1_0x0_1"), x, k)
	// Reversal of the second spatial dimension only: kernel {{2, 1}, {4, 3}}.
	check(t, "f32[1,2,2,1] {{{{35}, {45}}, {{65}, {75}}}}", c("f32[1,2,2,1]", "size=2x2 rhs_reversal=0x1"), x, k)
	// Two input features, two output features, features-major layout.
	check(t, "f32[1,2,2,2] {{{{11, 14}, {17, 20}}, {{23, 30}, {37, 44}}}}",
		convSrc("f32[1,2,2,2]", "f32[2,2,1,1]", "f32[1,2,2,2]", "window={size=1x1}, dim_labels=bf01_oi01->bf01"),
		"{{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}}", "{{{{1}}, {{2}}}, {{{3}}, {{4}}}}")
}

func TestConvShapes(t *testing.T) {
	// No spatial dimensions: a matrix product, no window attribute.
	check(t, "f32[2,2] {{4, 5}, {10, 11}}", convSrc("f32[2,3]", "f32[3,2]", "f32[2,2]", "dim_labels=bf_io->bf"),
		"{{1, 2, 3}, {4, 5, 6}}", "{{1, 0}, {0, 1}, {1, 1}}")
	// Three spatial dimensions.
	check(t, "f32[1,1,1,1,1] {{{{{8}}}}}",
		convSrc("f32[1,2,2,2,1]", "f32[2,2,2,1,1]", "f32[1,1,1,1,1]", "window={size=2x2x2}, dim_labels=b012f_012io->b012f"), "1", "1")
	check(t, "f32[1,1,3,3,1] {{{{{1}, {2}, {1}}, {{2}, {4}, {2}}, {{1}, {2}, {1}}}}}",
		convSrc("f32[1,2,2,2,1]", "f32[2,2,2,1,1]", "f32[1,1,3,3,1]", "window={size=2x2x2 pad=0_0x1_1x1_1}, dim_labels=b012f_012io->b012f"), "1", "0.5")
	// Output dimensions in another order than the input's.
	check(t, "f32[1,2,1] {{{3}, {7}}}",
		convSrc("f32[1,1,2]", "f32[1,2,2]", "f32[1,2,1]", "window={size=2}, dim_labels=fb0_io0->0fb"),
		"{{{1, 2}}}", "{{{1, 1}, {1, 3}}}")
	// Empty operands give an empty (or zero) result.
	check(t, "f32[1,0,1] {{}}", convSrc("f32[1,0,1]", "f32[1,1,1]", "f32[1,0,1]", "window={size=1}, dim_labels=b0f_0io->b0f"), "{}", "1")
	check(t, "f32[1,2,1] {{{0}, {0}}}", convSrc("f32[1,2,0]", "f32[1,0,1]", "f32[1,2,1]", "window={size=1}, dim_labels=b0f_0io->b0f"), "{}", "{}")
}

func TestConvGroups(t *testing.T) {
	// Depthwise: feature_group_count = input features, one kernel per feature.
	check(t, "f32[1,2,2] {{{5, 32}, {8, 39}}}",
		convSrc("f32[1,3,2]", "f32[2,1,2]", "f32[1,2,2]", "window={size=2}, dim_labels=b0f_0io->b0f, feature_group_count=2"),
		"{{{1, 4}, {2, 5}, {3, 6}}}", "{{{1, 3}}, {{2, 4}}}")
	// Two groups of two input features each.
	check(t, "f32[1,1,2] {{{7, 22}}}",
		convSrc("f32[1,1,4]", "f32[1,2,2]", "f32[1,1,2]", "window={size=1}, dim_labels=b0f_0io->b0f, feature_group_count=2"),
		"{{{1, 2, 3, 4}}}", "{{{1, 2}, {3, 4}}}")
	// Depth multiplier 2: outputs 0 and 1 read feature 0, 2 and 3 feature 1.
	check(t, "f32[1,1,4] {{{1, 2, 6, 8}}}",
		convSrc("f32[1,1,2]", "f32[1,1,4]", "f32[1,1,4]", "window={size=1}, dim_labels=b0f_0io->b0f, feature_group_count=2"),
		"{{{1, 2}}}", "{{{1, 2, 3, 4}}}")
	// batch_group_count: output feature o reads the batch group
	// o / (features / groups); the output batch is the batch within it.
	check(t, "f32[2,1,2] {{{3, -1}}, {{7, -1}}}",
		convSrc("f32[4,2,1]", "f32[2,1,2]", "f32[2,1,2]", "window={size=2}, dim_labels=b0f_0io->b0f, batch_group_count=2"),
		"{{{1}, {2}}, {{3}, {4}}, {{5}, {6}}, {{7}, {8}}}", "{{{1, 1}}, {{1, -1}}}")
	// Two output features per batch group.
	check(t, "f32[1,1,4] {{{1, 2, 6, 8}}}",
		convSrc("f32[2,1,1]", "f32[1,1,4]", "f32[1,1,4]", "window={size=1}, dim_labels=b0f_0io->b0f, batch_group_count=2"),
		"{{{1}}, {{2}}}", "{{{1, 2, 3, 4}}}")
}

func TestConvTypes(t *testing.T) {
	x, k := "{{{1}, {-2}, {3}}}", "{{{2}}, {{-1}}}"
	c := func(ty string) string {
		return convSrc(ty+"[1,3,1]", ty+"[2,1,1]", ty+"[1,2,1]", "window={size=2}, dim_labels=b0f_0io->b0f")
	}
	check(t, "s32[1,2,1] {{{4}, {-7}}}", c("s32"), x, k)
	check(t, "s64[1,2,1] {{{4}, {-7}}}", c("s64"), x, k)
	check(t, "f64[1,2,1] {{{4}, {-7}}}", c("f64"), x, k)
	check(t, "bf16[1,2,1] {{{4}, {-7}}}", c("bf16"), x, k)
	check(t, "f16[1,2,1] {{{4}, {-7}}}", c("f16"), x, k)
	// Integers wrap at the result's width.
	check(t, "s8[1,1,1] {{{-56}}}", convSrc("s8[1,2,1]", "s8[2,1,1]", "s8[1,1,1]", "window={size=2}, dim_labels=b0f_0io->b0f"),
		"{{{100}, {100}}}", "{{{1}}, {{1}}}")
	check(t, "u8[1,1,1] {{{44}}}", convSrc("u8[1,2,1]", "u8[2,1,1]", "u8[1,1,1]", "window={size=2}, dim_labels=b0f_0io->b0f"),
		"{{{200}, {100}}}", "{{{1}}, {{1}}}")
	// Wider result type (preferred_element_type): operands converted first.
	check(t, "s32[1,1,1] {{{200}}}", convSrc("s8[1,2,1]", "s8[2,1,1]", "s32[1,1,1]", "window={size=2}, dim_labels=b0f_0io->b0f"),
		"{{{100}, {100}}}", "{{{1}}, {{1}}}")
	check(t, "f32[1,1,1] {{{2.0078125}}}", convSrc("bf16[1,2,1]", "bf16[2,1,1]", "f32[1,1,1]", "window={size=2}, dim_labels=b0f_0io->b0f"),
		"{{{1}, {1.0078125}}}", "{{{1}}, {{1}}}")
	// f32 accumulates in f32 (1e8 + 1 rounds back to 1e8), in tap order;
	// f64 in f64.
	big := "{{{1e8}, {1}, {-1e8}}}"
	check(t, "f32[1,1,1] {{{0}}}", convSrc("f32[1,3,1]", "f32[3,1,1]", "f32[1,1,1]", "window={size=3}, dim_labels=b0f_0io->b0f"), big, "1")
	check(t, "f64[1,1,1] {{{1}}}", convSrc("f64[1,3,1]", "f64[3,1,1]", "f64[1,1,1]", "window={size=3}, dim_labels=b0f_0io->b0f"), big, "1")
	// Operand layouts are honoured.
	check(t, "f32[1,2,2,1] {{{{37}, {47}}, {{67}, {77}}}}",
		convSrc("f32[1,3,3,1]{0,1,2,3}", "f32[2,2,1,1]{2,3,0,1}", "f32[1,2,2,1]{1,2,3,0}", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
		"{{{{1}, {2}, {3}}, {{4}, {5}, {6}}, {{7}, {8}, {9}}}}", "{{{{1}}, {{2}}}, {{{3}}, {{4}}}}")
}

func TestConvErrors(t *testing.T) {
	bad := func(attrs, out, wantErr string) {
		t.Helper()
		if out == "" {
			out = "f32[1,3,1]"
		}
		_, err := evalText(t, convSrc("f32[1,5,1]", "f32[3,1,1]", out, attrs), "1", "1")
		require.ErrorContains(t, err, wantErr, attrs)
	}
	w := "window={size=3}, "
	bad(w+"dim_labels=b0f_0io->bf", "", "bad dim_labels")
	bad(w+"dim_labels=b0x_0io->b0f", "", "bad dim_labels")
	bad(w+"dim_labels=b0f_0io", "", "bad dim_labels")
	bad(w+"dim_labels=bbf_0io->b0f", "", "bad dim_labels")
	bad(w+"dim_labels=b1f_1io->b1f", "", "bad dim_labels")
	bad(w+"dim_labels=b01f_01io->b01f", "", "dim_labels")
	bad("window={size=3}", "", "no dim_labels")
	bad("window={size=3x3}, dim_labels=b0f_0io->b0f", "", "window has 2 dimensions")
	bad("window={size=3 stride=0}, dim_labels=b0f_0io->b0f", "", "must be positive")
	bad("window={size=3 rhs_dilate=0}, dim_labels=b0f_0io->b0f", "", "must be positive")
	bad("window={size=3 stride=1x1}, dim_labels=b0f_0io->b0f", "", "stride= has 2 dimensions")
	bad("window={size=3 pad=1_1x1_1}, dim_labels=b0f_0io->b0f", "", "pad= has 2 dimensions")
	bad("window={size=3 pad=1}, dim_labels=b0f_0io->b0f", "", "bad window pad")
	bad("window={size=3 foo=1}, dim_labels=b0f_0io->b0f", "", "unknown window field")
	bad("window={stride=2}, dim_labels=b0f_0io->b0f", "", "has no size")
	bad("window={size=3 size=3}, dim_labels=b0f_0io->b0f", "", "given twice")
	bad("window={size=3 rhs_reversal=2}, dim_labels=b0f_0io->b0f", "", "rhs_reversal")
	bad("window={size=x}, dim_labels=b0f_0io->b0f", "", "bad window size")
	bad("window={size=99999999999}, dim_labels=b0f_0io->b0f", "", "bad window size")
	bad("window={size=2}, dim_labels=b0f_0io->b0f", "", "window size 2 differs")
	bad("window={size=3 pad=-9_0}, dim_labels=b0f_0io->b0f", "", "negative size")
	bad("window={size=3}, dim_labels=b0f_0io->b0f", "f32[1,4,1]", "result dims")
	bad("window={size=3}, dim_labels=b0f_0io->b0f, feature_group_count=0", "", "bad feature_group_count")
	bad("window={size=3}, dim_labels=b0f_0io->b0f, feature_group_count=2", "", "feature_group_count")
	bad("window={size=3}, dim_labels=b0f_0io->b0f, batch_group_count=2", "", "batch_group_count")
	bad("window={size=3}, dim_labels=b0f_0io->b0f, batch_group_count=x", "", "bad batch_group_count")
	_, err := evalText(t, convSrc("f32[2,1,2]", "f32[1,1,2]", "f32[1,1,2]", "window={size=1}, dim_labels=b0f_0io->b0f, feature_group_count=2, batch_group_count=2"), "1", "1")
	require.ErrorContains(t, err, "cannot both exceed 1")
	_, err = evalText(t, convSrc("s32[1,5,1]", "f32[3,1,1]", "f32[1,3,1]", "window={size=3}, dim_labels=b0f_0io->b0f"), "1", "1")
	require.ErrorContains(t, err, "cannot evaluate opcode convolution")
	_, err = evalText(t, convSrc("pred[1,5,1]", "pred[3,1,1]", "pred[1,3,1]", "window={size=3}, dim_labels=b0f_0io->b0f"), "1", "1")
	require.ErrorContains(t, err, "cannot evaluate opcode convolution")
	_, err = evalText(t, convSrc("c64[1,2,1]", "c64[1,1,1]", "c64[1,2,1]", "window={size=1}, dim_labels=b0f_0io->b0f"), "{(1,0), (2,0)}", "{(1,0)}")
	require.ErrorContains(t, err, "cannot evaluate opcode convolution on element type c64")
}

// randomOperands returns random literals for the ROOT's operands.
func randomOperands(root *hlo.Instruction, rng *rand.Rand) []Literal {
	ops := make([]Literal, len(root.Operands))
	for i, o := range root.Operands {
		ops[i] = RandomLiteral(o.Shape, rng)
	}
	return ops
}

// sameValues compares two literals' printed values: exactly for integers
// and on amd64 (where Go never fuses a multiply-add, so dot's and
// convolution's f32 sums round the same way), else to a relative 1e-5.
func sameValues(t *testing.T, want, got Literal) {
	t.Helper()
	if !isFloat(want.Shape.Elem) || runtime.GOARCH == "amd64" {
		require.Equal(t, want.String(), got.String())
		return
	}
	w, err := logicalF(want)
	require.NoError(t, err)
	g, err := logicalF(got)
	require.NoError(t, err)
	require.Len(t, g, len(w))
	for i := range w {
		require.InEpsilon(t, w[i]+1, g[i]+1, 1e-5)
	}
}

// TestConvMatchesDot checks a convolution with a 1x1 kernel against dot on
// the same bytes (the kernel [1,1,C,O] laid out as the matrix [C,O]).
func TestConvMatchesDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ty := range []string{"f32", "f64", "bf16", "s32"} {
		conv := rootOf(t, convSrc(ty+"[2,3,4,37]", ty+"[1,1,37,6]", ty+"[2,3,4,6]", "window={size=1x1}, dim_labels=b01f_01io->b01f"))
		dot := rootOf(t, "a = "+ty+"[2,3,4,37] parameter(0)\nb = "+ty+"[37,6] parameter(1)\nROOT d = "+ty+
			"[2,3,4,6] dot(a, b), lhs_contracting_dims={3}, rhs_contracting_dims={0}")
		for range 3 {
			ops := randomOperands(conv, rng)
			got, err := Instruction(conv, ops)
			require.NoError(t, err)
			k := Literal{Shape: dot.Operands[1].Shape, Data: ops[1].Data}
			want, err := Instruction(dot, []Literal{ops[0], k})
			require.NoError(t, err)
			sameValues(t, want, got)
		}
	}
}

// TestConvLayoutInvariance checks that a convolution written with other
// dim_labels, on transposed operands, gives the transposed result.
func TestConvLayoutInvariance(t *testing.T) {
	const attrs = "window={size=3x2 stride=2x1 pad=1_1x0_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=1x0}"
	direct := rootOf(t, convSrc("f32[2,7,5,6]", "f32[3,2,3,4]", "f32[2,3,9,4]", attrs+", dim_labels=b01f_01io->b01f, feature_group_count=2"))
	m, err := hlo.ParseModule("t.hlo", `HloModule t
ENTRY e {
  a = f32[2,7,5,6] parameter(0)
  b = f32[3,2,3,4] parameter(1)
  at = f32[6,5,2,7] transpose(a), dimensions={3,2,0,1}
  bt = f32[4,2,3,3] transpose(b), dimensions={3,1,2,0}
  c = f32[9,3,4,2] convolution(at, bt), `+attrs+`, dim_labels=f1b0_o1i0->10fb, feature_group_count=2
  ROOT r = f32[2,3,9,4] transpose(c), dimensions={3,1,0,2}
}
`)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	ops := randomOperands(direct, rng)
	want, err := Instruction(direct, ops)
	require.NoError(t, err)
	got, err := Computation(m.Entry, ops)
	require.NoError(t, err)
	require.Equal(t, want.String(), got.String())
}

// reduceWindowSrc is a module reducing a parameter of type ty with reducer
// op over the window attrs into out.
func reduceWindowSrc(ty, op, out, attrs string) string {
	elem := ty[:strings.IndexByte(ty, '[')]
	return "HloModule t\nr {\n  a = " + elem + "[] parameter(0)\n  b = " + elem + "[] parameter(1)\n  ROOT c = " + elem + "[] " + op +
		"(a, b)\n}\nENTRY e {\n  x = " + ty + " parameter(0)\n  i = " + elem + "[] parameter(1)\n  ROOT w = " + out +
		" reduce-window(x, i), " + attrs + ", to_apply=r\n}\n"
}

func TestReduceWindow(t *testing.T) {
	x := "{1, 2, 3, 4, 5}"
	rw := func(op, out, window string) string { return reduceWindowSrc("f32[5]", op, out, "window={"+window+"}") }
	check(t, "f32[4] {3, 5, 7, 9}", rw("add", "f32[4]", "size=2"), x, "0")
	check(t, "f32[3] {2, 4, 5}", rw("maximum", "f32[3]", "size=2 stride=2 pad=0_1"), x, "-inf")
	check(t, "f32[5] {3, 6, 9, 12, 9}", rw("add", "f32[5]", "size=3 pad=1_1"), x, "0")
	// Padding is skipped, not fed the init value: with init 10 each window
	// adds 10 once, whether or not it overlaps the padding.
	check(t, "f32[5] {13, 16, 19, 22, 19}", rw("add", "f32[5]", "size=3 pad=1_1"), x, "10")
	check(t, "f32[2] {5, 9}", rw("add", "f32[2]", "size=2 stride=2 pad=-1_0"), x, "0")
	// Base dilation 1 _ 2 _ 3 _ 4 _ 5: holes are skipped too.
	check(t, "f32[8] {1, 2, 2, 3, 3, 4, 4, 5}", rw("maximum", "f32[8]", "size=2 lhs_dilate=2"), x, "-inf")
	check(t, "f32[8] {10, 20, 20, 30, 30, 40, 40, 50}", rw("multiply", "f32[8]", "size=2 lhs_dilate=2"), x, "10")
	// Window dilation: x[i] + x[i+2].
	check(t, "f32[3] {4, 6, 8}", rw("add", "f32[3]", "size=2 rhs_dilate=2"), x, "0")
	check(t, "f32[1] {1}", rw("minimum", "f32[1]", "size=5"), x, "inf")
	// A window entirely on padding gives the init value.
	check(t, "f32[4] {7, 8, 11, 7}", rw("add", "f32[4]", "size=1 stride=3 pad=3_3"), x, "7")

	// Two dimensions.
	y := "{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}"
	rw2 := func(op, out, window string) string {
		return reduceWindowSrc("f32[3,3]", op, out, "window={"+window+"}")
	}
	check(t, "f32[2,2] {{5, 6}, {8, 9}}", rw2("maximum", "f32[2,2]", "size=2x2"), y, "-inf")
	check(t, "f32[2,2] {{12, 9}, {15, 9}}", rw2("add", "f32[2,2]", "size=2x2 stride=2x2 pad=0_1x0_1"), y, "0")
	check(t, "f32[3,1] {{6}, {15}, {24}}", rw2("add", "f32[3,1]", "size=1x3"), y, "0")
	check(t, "f32[2,2] {{12, 9}, {15, 9}}",
		reduceWindowSrc("f32[3,3]{0,1}", "add", "f32[2,2]{0,1}", "window={size=2x2 stride=2x2 pad=0_1x0_1}"), y, "0")

	// Rank 0: no window attribute; the result is f(init, x).
	check(t, "f32[] 5", reduceWindowSrc("f32[]", "add", "f32[]", "metadata={}"), "3", "2")

	// Integers: wrap at the type's width; unsigned comparison; bitwise ops.
	check(t, "u8[1] {44}", reduceWindowSrc("u8[2]", "add", "u8[1]", "window={size=2}"), "{200, 100}", "0")
	check(t, "s32[2] {-1, 9}", reduceWindowSrc("s32[3]", "add", "s32[2]", "window={size=2}"), "{2, -3, 12}", "0")
	check(t, "u32[1] {4294967295}", reduceWindowSrc("u32[2]", "maximum", "u32[1]", "window={size=2}"), "{4294967295, 1}", "0")
	check(t, "s32[1] {6}", reduceWindowSrc("s32[2]", "or", "s32[1]", "window={size=2}"), "{2, 4}", "0")
	check(t, "pred[2] {false, true}", reduceWindowSrc("pred[3]", "and", "pred[2]", "window={size=2}"), "{false, true, true}", "true")
	// bf16 rounds after each step: 256 + 1 is 256 in bf16.
	check(t, "bf16[1] {256}", reduceWindowSrc("bf16[3]", "add", "bf16[1]", "window={size=3}"), "{256, 1, 1}", "0")
}

// reducerModule is a reduce-window whose reducer is r(acc, x) = acc*10 + x,
// which shows the fold order and which argument is the accumulator.
const reducerModule = `HloModule t
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ten = f32[] constant(10)
  m = f32[] multiply(a, ten)
  ROOT s = f32[] add(m, b)
}
ENTRY e {
  x = f32[3,3] parameter(0)
  i = f32[] parameter(1)
  ROOT w = f32[2,2] reduce-window(x, i), window={size=2x2 stride=2x1 pad=0_1x0_0}, to_apply=r
}
`

func TestReduceWindowComputation(t *testing.T) {
	// Window elements are folded in row-major order, the accumulator first:
	// ((((init*10 + a)*10 + b)*10 + c)*10 + d); padding rows are skipped.
	check(t, "f32[2,2] {{1245, 2356}, {78, 89}}", reducerModule, "{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}", "0")
	check(t, "f32[2,2] {{11245, 12356}, {178, 189}}", reducerModule, "{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}", "1")
	// A reducer that is not simple only because of its argument order.
	check(t, "f32[1] {-6}", reduceWindowSrc("f32[3]", "subtract", "f32[1]", "window={size=3}"), "{1, 2, 3}", "0")
	// A reducer whose result does not match is an error.
	_, err := evalText(t, `HloModule t
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[2] broadcast(a), dimensions={}
}
ENTRY e {
  x = f32[3] parameter(0)
  i = f32[] parameter(1)
  ROOT w = f32[1] reduce-window(x, i), window={size=3}, to_apply=r
}
`, "{1, 2, 3}", "0")
	require.ErrorContains(t, err, "returned")
}

func TestReduceWindowErrors(t *testing.T) {
	bad := func(out, attrs, wantErr string) {
		t.Helper()
		_, err := evalText(t, reduceWindowSrc("f32[5]", "add", out, attrs), "{1, 2, 3, 4, 5}", "0")
		require.ErrorContains(t, err, wantErr, attrs)
	}
	bad("f32[4]", "window={size=2x2}", "window has 2 dimensions")
	bad("f32[4]", "metadata={}", "window has 0 dimensions")
	bad("f32[4]", "window={size=2 stride=0}", "must be positive")
	bad("f32[4]", "window={size=0}", "must be positive")
	bad("f32[4]", "window={size=2 lhs_dilate=-1}", "must be positive")
	bad("f32[4]", "window={size=2 pad=1_1_1}", "bad window pad")
	bad("f32[4]", "window={size=2 pad=-6_0}", "negative size")
	bad("f32[4]", "window={size=2 bogus}", "bad window field")
	bad("f32[4]", "window=size=2", "bad window")
	bad("f32[3]", "window={size=2}", "result dims")
	_, err := evalText(t, reduceWindowSrc("f32[5]", "add", "f32[4]", "window={size=2}"), "{1, 2, 3, 4, 5}", "0")
	require.NoError(t, err)
	_, err = evalText(t, reduceWindowSrc("f32[2]", "and", "f32[1]", "window={size=2}"), "{1, 2}", "0")
	require.ErrorContains(t, err, "cannot evaluate opcode and")
	_, err = evalText(t, reduceWindowSrc("c64[2]", "add", "c64[1]", "window={size=2}"), "{(1,0), (2,0)}", "(0,0)")
	require.ErrorContains(t, err, "cannot evaluate opcode reduce-window on element type c64")

	// Variadic reduce-window is not handled here.
	root := rootOf(t, reduceWindowSrc("f32[5]", "add", "f32[4]", "window={size=2}"))
	x, err := ParseLiteral(root.Operands[0].Shape, "1")
	require.NoError(t, err)
	i, err := ParseLiteral(root.Operands[1].Shape, "0")
	require.NoError(t, err)
	_, err = NewEvaluator(0).reduceWindow(root, []Literal{x, x, i, i})
	require.ErrorContains(t, err, "variadic")
}

// BenchmarkConvF32 is a 3x3 same-padded convolution of a 1x32x32x16 input
// to 16 output features.
func BenchmarkConvF32(b *testing.B) {
	root := rootOf(b, convSrc("f32[1,32,32,16]", "f32[3,3,16,16]", "f32[1,32,32,16]", "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"))
	rng := rand.New(rand.NewPCG(5, 6))
	ops := randomOperands(root, rng)
	flops := 2.0 * 32 * 32 * 16 * 3 * 3 * 16
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := Instruction(root, ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(flops*float64(b.N)/time.Since(start).Seconds()/1e6, "MFLOP/s")
}

// randomWindow returns a random window over base dims that XLA accepts
// (padding may be negative; reversal only if rev), its output dims and its
// attribute text followed by ", " (empty for no dimensions).
func randomWindow(rng *rand.Rand, base []int64, rev bool) ([]winDim, []int64, string) {
	for {
		ws := make([]winDim, len(base))
		var size, stride, pad, ld, rd, rv []string
		for i := range ws {
			w := winDim{size: 1 + rng.Int64N(3), stride: 1 + rng.Int64N(3), padLo: rng.Int64N(6) - 2, padHi: rng.Int64N(6) - 2,
				lhsDil: 1 + rng.Int64N(3), rhsDil: 1 + rng.Int64N(2), rev: rev && rng.IntN(2) == 1}
			ws[i] = w
			size = append(size, strconv.FormatInt(w.size, 10))
			stride = append(stride, strconv.FormatInt(w.stride, 10))
			pad = append(pad, strconv.FormatInt(w.padLo, 10)+"_"+strconv.FormatInt(w.padHi, 10))
			ld = append(ld, strconv.FormatInt(w.lhsDil, 10))
			rd = append(rd, strconv.FormatInt(w.rhsDil, 10))
			r := "0"
			if w.rev {
				r = "1"
			}
			rv = append(rv, r)
		}
		out, err := windowOutDims(ws, base)
		if err != nil {
			continue
		}
		if len(ws) == 0 {
			return ws, out, ""
		}
		j := func(v []string) string { return strings.Join(v, "x") }
		text := "window={size=" + j(size) + " stride=" + j(stride) + " pad=" + j(pad) + " lhs_dilate=" + j(ld) + " rhs_dilate=" + j(rd)
		if rev {
			text += " rhs_reversal=" + j(rv)
		}
		return ws, out, text + "}, "
	}
}

// randomLabels places the letters a and b and spatial dimensions 0..nsp-1
// at random positions: the label string and each one's position.
func randomLabels(rng *rand.Rand, a, b byte, nsp int) (string, int, int, []int) {
	perm := rng.Perm(nsp + 2)
	l := make([]byte, nsp+2)
	l[perm[0]], l[perm[1]] = a, b
	sp := make([]int, nsp)
	for i := range sp {
		l[perm[i+2]] = byte('0' + i)
		sp[i] = perm[i+2]
	}
	return string(l), perm[0], perm[1], sp
}

func dimsText(ty string, d []int64) string {
	s := make([]string, len(d))
	for i, n := range d {
		s[i] = strconv.FormatInt(n, 10)
	}
	return ty + "[" + strings.Join(s, ",") + "]"
}

// refConv is XLA's HloEvaluator convolution loop (HandleConvolution),
// written out directly on logical row-major f64 values.
func refConv(x, y []float64, xd, yd, od []int64, dn *convDims, ws []winDim, fgc, bgc int64) []float64 {
	xs, ys := strides(xd), strides(yd)
	inZ, inBatch := xd[dn.inF], xd[dn.inB]
	oz := yd[dn.kO]
	ifgs, ofgs := inZ/fgc, oz/fgc
	bgs := inBatch / bgc
	dm := int64(1)
	if bgc > 1 {
		dm = oz / bgc
	}
	nsp := len(ws)
	wsize := make([]int64, nsp)
	for i, w := range ws {
		wsize[i] = w.size
	}
	out := make([]float64, elemCount(hlo.Shape{Dims: od}))
	idx := make([]int64, len(od))
	for o := range out {
		fgi, bgi := idx[dn.outF]/ofgs, idx[dn.outF]/dm
		var acc float64
		k := make([]int64, nsp)
		for n := 0; n < elemCount(hlo.Shape{Dims: wsize}); n++ {
			lsp, rsp, ok := int64(0), int64(0), true
			for i, w := range ws {
				u := idx[dn.outS[i]]*w.stride - w.padLo + k[i]*w.rhsDil
				if w.lhsDil > 1 && u%w.lhsDil != 0 {
					ok = false
					break
				}
				u /= w.lhsDil
				if u < 0 || u >= xd[dn.inS[i]] {
					ok = false
					break
				}
				lsp += u * xs[dn.inS[i]]
				kk := k[i]
				if w.rev {
					kk = w.size - 1 - k[i]
				}
				rsp += kk * ys[dn.kS[i]]
			}
			if ok {
				for j := int64(0); j < ifgs; j++ {
					iz := fgi*ifgs + j
					li := lsp + idx[dn.outB]*xs[dn.inB] + (bgi*bgs%inBatch)*xs[dn.inB] + iz*xs[dn.inF]
					ri := rsp + idx[dn.outF]*ys[dn.kO] + j*ys[dn.kI]
					acc += float64(x[li] * y[ri])
				}
			}
			nextIndex(k, wsize)
		}
		out[o] = acc
		nextIndex(idx, od)
	}
	return out
}

// TestConvRandomAgainstReference checks random convolutions (0 to 3
// spatial dimensions, random dim_labels, windows with negative padding,
// dilations and reversal, feature or batch groups) against refConv.
func TestConvRandomAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 300; iter++ {
		nsp := rng.IntN(4)
		fgc, bgc := int64(1), int64(1)
		if rng.IntN(2) == 0 {
			fgc = 1 + rng.Int64N(3)
		} else {
			bgc = 1 + rng.Int64N(3)
		}
		kI, ob := 1+rng.Int64N(3), 1+rng.Int64N(2)
		kO := (1 + rng.Int64N(2)) * fgc * bgc
		base := make([]int64, nsp)
		for i := range base {
			base[i] = rng.Int64N(6)
		}
		ws, outSp, window := randomWindow(rng, base, true)
		ll, lb, lf, ls := randomLabels(rng, 'b', 'f', nsp)
		kl, ki, ko, ks := randomLabels(rng, 'i', 'o', nsp)
		ol, obd, ofd, os := randomLabels(rng, 'b', 'f', nsp)
		dn := &convDims{inB: lb, inF: lf, inS: ls, kI: ki, kO: ko, kS: ks, outB: obd, outF: ofd, outS: os}
		xd, yd, od := make([]int64, nsp+2), make([]int64, nsp+2), make([]int64, nsp+2)
		xd[lb], xd[lf], yd[ki], yd[ko], od[obd], od[ofd] = ob*bgc, kI*fgc, kI, kO, ob, kO
		for i := 0; i < nsp; i++ {
			xd[ls[i]], yd[ks[i]], od[os[i]] = base[i], ws[i].size, outSp[i]
		}
		src := convSrc(dimsText("f64", xd), dimsText("f64", yd), dimsText("f64", od),
			window+"dim_labels="+ll+"_"+kl+"->"+ol+", feature_group_count="+strconv.FormatInt(fgc, 10)+
				", batch_group_count="+strconv.FormatInt(bgc, 10))
		root := rootOf(t, src)
		ops := randomOperands(root, rng)
		got, err := Instruction(root, ops)
		require.NoError(t, err, src)
		x, err := logicalF(ops[0])
		require.NoError(t, err)
		y, err := logicalF(ops[1])
		require.NoError(t, err)
		g, err := logicalF(got)
		require.NoError(t, err)
		require.Equal(t, refConv(x, y, xd, yd, od, dn, ws, fgc, bgc), g, src)
	}
}

// TestReduceWindowRandomAgainstReference checks random reduce-windows, with
// the order-sensitive reducer acc*0.5 + x, against XLA's HloEvaluator loop
// (IterateThroughWindow) written out directly.
func TestReduceWindowRandomAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for iter := 0; iter < 200; iter++ {
		rank := rng.IntN(4)
		base := make([]int64, rank)
		for i := range base {
			base[i] = rng.Int64N(6)
		}
		ws, outDims, window := randomWindow(rng, base, false)
		window = strings.TrimSuffix(window, ", ")
		if window == "" {
			window = "metadata={}"
		}
		src := "HloModule t\nr {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  h = f64[] constant(0.5)\n  m = f64[] multiply(a, h)\n" +
			"  ROOT s = f64[] add(m, b)\n}\nENTRY e {\n  x = " + dimsText("f64", base) + " parameter(0)\n  i = f64[] parameter(1)\n" +
			"  ROOT w = " + dimsText("f64", outDims) + " reduce-window(x, i), " + window + ", to_apply=r\n}\n"
		root := rootOf(t, src)
		ops := randomOperands(root, rng)
		got, err := Instruction(root, ops)
		require.NoError(t, err, src)
		x, err := logicalF(ops[0])
		require.NoError(t, err)
		init, err := logicalF(ops[1])
		require.NoError(t, err)
		g, err := logicalF(got)
		require.NoError(t, err)

		want := make([]float64, len(g))
		xs := strides(base)
		wsize := make([]int64, rank)
		for i, w := range ws {
			wsize[i] = w.size
		}
		oi := make([]int64, rank)
		for o := range want {
			acc := init[0]
			wi := make([]int64, rank)
			for n := 0; n < elemCount(hlo.Shape{Dims: wsize}); n++ {
				lin, ok := int64(0), true
				for i, w := range ws {
					u := oi[i]*w.stride + wi[i]*w.rhsDil - w.padLo
					if u%w.lhsDil != 0 {
						ok = false
						break
					}
					u /= w.lhsDil
					if u < 0 || u >= base[i] {
						ok = false
						break
					}
					lin += u * xs[i]
				}
				if ok {
					acc = float64(acc*0.5) + x[lin]
				}
				nextIndex(wi, wsize)
			}
			want[o] = acc
			nextIndex(oi, outDims)
		}
		require.Equal(t, want, g, src)
	}
}
