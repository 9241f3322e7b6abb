package eval

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// rootOf parses src (an ENTRY body, or a whole module when it mentions
// ENTRY) and returns the entry's ROOT.
func rootOf(t testing.TB, src string) *hlo.Instruction {
	t.Helper()
	if !strings.Contains(src, "ENTRY") {
		src = "HloModule t\nENTRY main {\n" + src + "\n}\n"
	}
	m, err := hlo.ParseModule("t.hlo", src)
	require.NoError(t, err)
	return m.Entry.Root
}

// evalLiteral evaluates the ROOT of src on operands given as literal text
// (one per ROOT operand, parsed with that operand's shape).
func evalLiteral(t testing.TB, src string, args ...string) (*hlo.Instruction, Literal, error) {
	t.Helper()
	root := rootOf(t, src)
	require.Len(t, args, len(root.Operands))
	ops := make([]Literal, len(args))
	for i, a := range args {
		l, err := ParseLiteral(root.Operands[i].Shape, a)
		require.NoError(t, err)
		ops[i] = l
	}
	out, err := Instruction(root, ops)
	return root, out, err
}

// evalText evaluates the ROOT of src on operands given as literal text and
// prints the result.
func evalText(t testing.TB, src string, args ...string) (string, error) {
	t.Helper()
	_, out, err := evalLiteral(t, src, args...)
	if err != nil {
		return "", err
	}
	return out.String(), nil
}

// evalTuple evaluates the ROOT of src, whose result must be a tuple of the
// ROOT's shape, and prints each of its elements.
func evalTuple(t *testing.T, src string, args ...string) []string {
	t.Helper()
	root, out, err := evalLiteral(t, src, args...)
	require.NoError(t, err)
	require.True(t, out.IsTuple(), "result %s is not a tuple", out.Shape)
	require.Equal(t, root.Shape.String(), out.Shape.String())
	got := make([]string, len(out.Elems))
	for i, e := range out.Elems {
		got[i] = e.String()
	}
	return got
}

func check(t *testing.T, want, src string, args ...string) {
	t.Helper()
	got, err := evalText(t, src, args...)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// unarySrc is a module body applying op to a parameter of type ty.
func unarySrc(ty, op string) string {
	return "p = " + ty + " parameter(0)\nROOT r = " + ty + " " + op + "(p)"
}

// binarySrc is a module body applying op to two parameters of type ty.
func binarySrc(ty, op string) string {
	return "a = " + ty + " parameter(0)\nb = " + ty + " parameter(1)\nROOT r = " + ty + " " + op + "(a, b)"
}

func TestConstantIota(t *testing.T) {
	check(t, "f32[2,2] {{1, 2.5}, {-3, inf}}", `ROOT c = f32[2,2] constant({{1, 2.5}, {-3, inf}})`)
	check(t, "pred[3] {true, false, true}", `ROOT c = pred[3] constant({true, false, true})`)
	check(t, "u64[1] {18446744073709551615}", `ROOT c = u64[1] constant({18446744073709551615})`)
	check(t, "s32[2,3] {{0, 0, 0}, {1, 1, 1}}", `ROOT i = s32[2,3] iota(), iota_dimension=0`)
	check(t, "f32[2,3] {{0, 1, 2}, {0, 1, 2}}", `ROOT i = f32[2,3] iota(), iota_dimension=1`)
	// Column-major layout: the bytes are in physical order.
	root := rootOf(t, `ROOT i = s32[2,3]{0,1} iota(), iota_dimension=1`)
	out, err := Instruction(root, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 0, 1, 1, 2, 2}, decodeI(hlo.S32, out.Data))
	require.Equal(t, "s32[2,3] {{0, 1, 2}, {0, 1, 2}}", out.String())
}

func TestUnary(t *testing.T) {
	p := unarySrc
	check(t, "f32[4] {-1, 2, -0, nan}", p("f32[4]", "negate"), "{1, -2, 0, nan}")
	check(t, "f32[3] {1, 2, 0}", p("f32[3]", "abs"), "{-1, 2, -0}")
	check(t, "f64[2] {1, 2.718281828459045}", p("f64[2]", "exponential"), "{0, 1}")
	check(t, "f32[2] {0, -inf}", p("f32[2]", "log"), "{1, 0}")
	check(t, "f32[2] {3, nan}", p("f32[2]", "sqrt"), "{9, -1}")
	check(t, "f32[2] {0.5, inf}", p("f32[2]", "rsqrt"), "{4, 0}")
	check(t, "f32[4] {-2, 1, 2, -3}", p("f32[4]", "floor"), "{-1.5, 1.5, 2, -2.5}")
	check(t, "f32[4] {-1, 2, 2, -2}", p("f32[4]", "ceil"), "{-1.5, 1.5, 2, -2.5}")
	check(t, "f32[4] {-2, 2, 3, -3}", p("f32[4]", "round-nearest-afz"), "{-1.5, 1.5, 2.5, -2.5}")
	check(t, "f32[4] {-2, 2, 2, -2}", p("f32[4]", "round-nearest-even"), "{-1.5, 1.5, 2.5, -2.5}")
	check(t, "f32[4] {-1, 1, 0, nan}", p("f32[4]", "sign"), "{-3, 0.5, 0, nan}")
	check(t, "s32[3] {-1, 1, 0}", p("s32[3]", "sign"), "{-7, 3, 0}")
	check(t, "s32[2] {-2147483648, 5}", p("s32[2]", "abs"), "{-2147483648, -5}")
	check(t, "s8[2] {-1, -128}", p("s8[2]", "not"), "{0, 127}")
	check(t, "pred[2] {false, true}", p("pred[2]", "not"), "{true, false}")
	check(t, "f32[2] {0.5, 0}", p("f32[2]", "logistic"), "{0, -inf}")
	check(t, "f32[2] {2, -3}", p("f32[2]", "cbrt"), "{8, -27}")
	check(t, "f32[1] {0}", p("f32[1]", "tanh"), "{0}")
	check(t, "f32[1] {0}", p("f32[1]", "sine"), "{0}")
	check(t, "f32[1] {1}", p("f32[1]", "cosine"), "{0}")
	check(t, "f32[1] {0}", p("f32[1]", "exponential-minus-one"), "{0}")
	check(t, "f32[1] {0}", p("f32[1]", "log-plus-one"), "{0}")
	check(t, "u8[3] {0, 8, 1}", p("u8[3]", "popcnt"), "{0, 255, 16}")
	check(t, "s32[3] {32, 0, 31}", p("s32[3]", "count-leading-zeros"), "{0, -1, 1}")
	check(t, "u16[2] {16, 3}", p("u16[2]", "count-leading-zeros"), "{0, 4096}")
	check(t, "pred[4] {true, false, false, false}",
		"p = f32[4] parameter(0)\nROOT r = pred[4] is-finite(p)", "{1, inf, -inf, nan}")
}

func TestBinary(t *testing.T) {
	p := binarySrc
	check(t, "f32[3] {5, 0, inf}", p("f32[3]", "add"), "{2, 1, inf}", "{3, -1, 1}")
	check(t, "s8[2] {-128, 2}", p("s8[2]", "add"), "{127, 1}", "{1, 1}") // wraps
	check(t, "u8[1] {255}", p("u8[1]", "subtract"), "{0}", "{1}")
	check(t, "s32[1] {-6}", p("s32[1]", "multiply"), "{2}", "{-3}")
	check(t, "f32[2] {2.5, -inf}", p("f32[2]", "divide"), "{5, -1}", "{2, 0}")
	check(t, "f32[2] {1, -1}", p("f32[2]", "remainder"), "{7, -7}", "{3, 3}")
	check(t, "f32[3] {2, nan, nan}", p("f32[3]", "maximum"), "{1, nan, 1}", "{2, 1, nan}")
	check(t, "f32[2] {1, nan}", p("f32[2]", "minimum"), "{1, nan}", "{2, 1}")
	check(t, "u32[1] {4294967295}", p("u32[1]", "maximum"), "{4294967295}", "{1}")
	check(t, "f32[2] {8, 0.5}", p("f32[2]", "power"), "{2, 4}", "{3, -0.5}")
	check(t, "s32[4] {8, 1, 0, -1}", p("s32[4]", "power"), "{2, 1, 2, -1}", "{3, -2, -1, -3}")
	check(t, "f64[1] {0.7853981633974483}", p("f64[1]", "atan2"), "{1}", "{1}")
	check(t, "u8[1] {8}", p("u8[1]", "and"), "{12}", "{10}")
	check(t, "u8[1] {14}", p("u8[1]", "or"), "{12}", "{10}")
	check(t, "u8[1] {6}", p("u8[1]", "xor"), "{12}", "{10}")
	check(t, "pred[2] {true, false}", p("pred[2]", "xor"), "{true, true}", "{false, true}")
	check(t, "s8[3] {-128, 0, 4}", p("s8[3]", "shift-left"), "{1, 1, 1}", "{7, 8, 2}")
	check(t, "s8[3] {127, 0, 1}", p("s8[3]", "shift-right-logical"), "{-1, -1, 4}", "{1, 8, 2}")
	check(t, "s8[3] {-1, -1, 1}", p("s8[3]", "shift-right-arithmetic"), "{-2, -1, 4}", "{1, 9, 2}")
	check(t, "u8[2] {192, 255}", p("u8[2]", "shift-right-arithmetic"), "{128, 128}", "{1, 200}")
}

func TestIntegerDivision(t *testing.T) {
	p := binarySrc
	check(t, "s32[4] {-1, -2147483648, -3, 3}", p("s32[4]", "divide"), "{5, -2147483648, -7, -7}", "{0, -1, 2, -2}")
	check(t, "s64[1] {-9223372036854775808}", p("s64[1]", "divide"), "{-9223372036854775808}", "{-1}")
	check(t, "u32[2] {4294967295, 2147483647}", p("u32[2]", "divide"), "{5, 4294967295}", "{0, 2}")
	check(t, "s32[4] {5, 0, -1, -1}", p("s32[4]", "remainder"), "{5, -2147483648, -7, -7}", "{0, -1, 2, -2}")
	check(t, "u8[2] {7, 1}", p("u8[2]", "remainder"), "{7, 255}", "{0, 2}")
}

func TestCompare(t *testing.T) {
	c := func(ty, dir string) string {
		return "a = " + ty + " parameter(0)\nb = " + ty + " parameter(1)\nROOT r = pred[4] compare(a, b), direction=" + dir
	}
	a, b := "{1, nan, 2, 1}", "{1, 1, nan, 2}"
	check(t, "pred[4] {true, false, false, false}", c("f32[4]", "EQ"), a, b)
	check(t, "pred[4] {false, true, true, true}", c("f32[4]", "NE"), a, b)
	check(t, "pred[4] {false, false, false, true}", c("f32[4]", "LT"), a, b)
	check(t, "pred[4] {true, false, false, true}", c("f32[4]", "LE"), a, b)
	check(t, "pred[4] {false, false, false, false}", c("f32[4]", "GT"), a, b)
	check(t, "pred[4] {true, false, false, false}", c("f32[4]", "GE"), a, b)
	// NaN against NaN, and in every floating-point type.
	c3 := func(ty, dir string) string {
		return strings.Replace(c(ty, dir), "pred[4]", "pred[3]", 1)
	}
	for _, ty := range []string{"f16[3]", "bf16[3]", "f32[3]", "f64[3]"} {
		x, y, c := "{nan, nan, 0}", "{nan, 0, -0}", c3
		check(t, "pred[3] {false, false, true}", c(ty, "EQ"), x, y)
		check(t, "pred[3] {true, true, false}", c(ty, "NE"), x, y)
		check(t, "pred[3] {false, false, false}", c(ty, "LT"), x, y)
		check(t, "pred[3] {false, false, true}", c(ty, "LE"), x, y)
		check(t, "pred[3] {false, false, false}", c(ty, "GT"), x, y)
		check(t, "pred[3] {false, false, true}", c(ty, "GE"), x, y)
	}
	check(t, "pred[4] {false, true, false, true}", c("s32[4]", "LT"), "{1, -1, 3, 0}", "{1, 0, 2, 5}")
	check(t, "pred[4] {false, false, false, true}", c("u32[4]", "LT"), "{1, 4294967295, 3, 0}", "{1, 0, 2, 5}")
}

func TestSelectClampConvert(t *testing.T) {
	check(t, "s32[3] {1, 20, 3}", `p = pred[3] parameter(0)
a = s32[3] parameter(1)
b = s32[3] parameter(2)
ROOT r = s32[3] select(p, a, b)`, "{true, false, true}", "{1, 2, 3}", "{10, 20, 30}")
	check(t, "f32[4] {0, 0.5, 1, nan}", `lo = f32[] parameter(0)
x = f32[4] parameter(1)
hi = f32[] parameter(2)
ROOT r = f32[4] clamp(lo, x, hi)`, "0", "{-3, 0.5, 7, nan}", "1")
	conv := func(from, to string) string {
		return "p = " + from + " parameter(0)\nROOT r = " + to + " convert(p)"
	}
	check(t, "s32[5] {1, -1, 0, 2147483647, -2147483648}", conv("f32[5]", "s32[5]"), "{1.9, -1.9, nan, 1e10, -1e10}")
	check(t, "u8[3] {0, 255, 3}", conv("f32[3]", "u8[3]"), "{-5, 300, 3.7}")
	check(t, "f32[1] {1.8446744e+19}", conv("u64[1]", "f32[1]"), "{18446744073709551615}")
	check(t, "pred[3] {true, false, true}", conv("s32[3]", "pred[3]"), "{5, 0, -1}")
	check(t, "s32[2] {1, 0}", conv("pred[2]", "s32[2]"), "{true, false}")
	check(t, "s8[2] {-1, 0}", conv("s32[2]", "s8[2]"), "{255, 256}")
	// bf16: round to nearest even on the f32 bits.
	check(t, "bf16[4] {1, 1.0078125, 1.015625, 1.015625}", conv("f32[4]", "bf16[4]"),
		"{1.00390625, 1.0039065, 1.01171875, 1.01953125}")
	check(t, "f16[3] {65504, inf, 5.9604645e-08}", conv("f32[3]", "f16[3]"), "{65504, 65520, 5.9604645e-08}")
	check(t, "u32[2] {1065353216, 3221225472}", `p = f32[2] parameter(0)
ROOT r = u32[2] bitcast-convert(p)`, "{1, -2}")
}

func TestBF16Bits(t *testing.T) {
	require.Equal(t, uint16(0x3f80), BF16Bits(1))
	require.Equal(t, uint16(0x3f80), BF16Bits(float64(math.Float32frombits(0x3f808000)))) // tie -> even
	require.Equal(t, uint16(0x3f82), BF16Bits(float64(math.Float32frombits(0x3f818000)))) // tie -> even (up)
	require.Equal(t, uint16(0x3f81), BF16Bits(float64(math.Float32frombits(0x3f808001))))
	require.Equal(t, uint16(0x7f80), BF16Bits(math.Inf(1)))
	require.Equal(t, uint16(0x3c00), F16Bits(1))
	require.Equal(t, uint16(0x0001), F16Bits(math.Ldexp(1, -24)))
	require.Equal(t, uint16(0x0000), F16Bits(math.Ldexp(1, -25))) // tie -> even (zero)
	require.Equal(t, uint16(0x8000), F16Bits(math.Copysign(0, -1)))
}

func TestShapes(t *testing.T) {
	check(t, "s32[2,3] {{1, 2, 3}, {1, 2, 3}}", `p = s32[3] parameter(0)
ROOT r = s32[2,3] broadcast(p), dimensions={1}`, "{1, 2, 3}")
	check(t, "s32[2,3] {{1, 1, 1}, {2, 2, 2}}", `p = s32[2] parameter(0)
ROOT r = s32[2,3] broadcast(p), dimensions={0}`, "{1, 2}")
	check(t, "s32[3,2] {{1, 2}, {3, 4}, {5, 6}}", `p = s32[2,3] parameter(0)
ROOT r = s32[3,2] reshape(p)`, "{{1, 2, 3}, {4, 5, 6}}")
	check(t, "s32[3,2] {{1, 4}, {2, 5}, {3, 6}}", `p = s32[2,3] parameter(0)
ROOT r = s32[3,2] transpose(p), dimensions={1,0}`, "{{1, 2, 3}, {4, 5, 6}}")
	check(t, "s32[2,3] {{1, 2, 3}, {4, 5, 6}}", `p = s32[2,3] parameter(0)
ROOT r = s32[2,3]{0,1} copy(p)`, "{{1, 2, 3}, {4, 5, 6}}")
	check(t, "s32[2,2] {{2, 4}, {12, 14}}", `p = s32[3,5] parameter(0)
ROOT r = s32[2,2] slice(p), slice={[0:3:2], [1:5:2]}`, "{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}}")
	check(t, "s32[2,2] {{7, 9}, {12, 14}}", `p = s32[3,5] parameter(0)
ROOT r = s32[2,2] slice(p), slice={[1:3], [1:5:2]}`, "{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}}")
	check(t, "s32[2,3] {{1, 2, 5}, {3, 4, 6}}", `a = s32[2,2] parameter(0)
b = s32[2,1] parameter(1)
ROOT r = s32[2,3] concatenate(a, b), dimensions={1}`, "{{1, 2}, {3, 4}}", "{{5}, {6}}")
	check(t, "s32[3,2] {{1, 2}, {3, 4}, {5, 6}}", `a = s32[2,2] parameter(0)
b = s32[1,2] parameter(1)
ROOT r = s32[3,2] concatenate(a, b), dimensions={0}`, "{{1, 2}, {3, 4}}", "{{5, 6}}")
	check(t, "s32[2,6] {{9, 1, 9, 2, 9, 9}, {9, 3, 9, 4, 9, 9}}", `p = s32[2,2] parameter(0)
z = s32[] parameter(1)
ROOT r = s32[2,6] pad(p, z), padding_config=0_0x1_2_1`, "{{1, 2}, {3, 4}}", "9")
	// XLA's own spelling of the attribute, padding= (the corpus's pads).
	check(t, "s32[2,6] {{9, 1, 9, 2, 9, 9}, {9, 3, 9, 4, 9, 9}}", `p = s32[2,2] parameter(0)
z = s32[] parameter(1)
ROOT r = s32[2,6] pad(p, z), padding=0_0x1_2_1`, "{{1, 2}, {3, 4}}", "9")
	check(t, "s32[1,1] {{3}}", `p = s32[2,2] parameter(0)
z = s32[] parameter(1)
ROOT r = s32[1,1] pad(p, z), padding_config=-1_0x0_-1_0`, "{{1, 2}, {3, 4}}", "0")
	check(t, "s32[2,3] {{6, 5, 4}, {3, 2, 1}}", `p = s32[2,3] parameter(0)
ROOT r = s32[2,3] reverse(p), dimensions={0,1}`, "{{1, 2, 3}, {4, 5, 6}}")
	check(t, "s32[2,3] {{1, 2, 3}, {4, 5, 6}}", `p = s32[3,2] parameter(0)
ROOT r = s32[2,3] bitcast(p)`, "{{1, 2}, {3, 4}, {5, 6}}")
}

func TestDynamicSlice(t *testing.T) {
	ds := `p = s32[3,3] parameter(0)
i = s32[] parameter(1)
j = s32[] parameter(2)
ROOT r = s32[2,2] dynamic-slice(p, i, j), dynamic_slice_sizes={2,2}`
	m := "{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}"
	check(t, "s32[2,2] {{2, 3}, {5, 6}}", ds, m, "0", "1")
	check(t, "s32[2,2] {{5, 6}, {8, 9}}", ds, m, "7", "5")  // clamped to 1
	check(t, "s32[2,2] {{1, 2}, {4, 5}}", ds, m, "-3", "0") // clamped to 0
	dus := `p = s32[3,3] parameter(0)
u = s32[2,2] parameter(1)
i = u32[] parameter(2)
j = u32[] parameter(3)
ROOT r = s32[3,3] dynamic-update-slice(p, u, i, j)`
	check(t, "s32[3,3] {{1, 2, 3}, {4, 0, 0}, {7, 0, 0}}", dus, m, "0", "9", "9")
	check(t, "s32[3,3] {{0, 0, 3}, {0, 0, 6}, {7, 8, 9}}", dus, m, "0", "0", "0")
}

const reduceModule = `HloModule t
%%add {
  a = %[1]s[] parameter(0)
  b = %[1]s[] parameter(1)
  ROOT s = %[1]s[] %[2]s(a, b)
}
ENTRY main {
  p = %[1]s[2,3] parameter(0)
  z = %[1]s[] parameter(1)
  ROOT r = %[1]s[%[3]s] reduce(p, z), dimensions={%[4]s}, to_apply=%%add
}`

func TestReduce(t *testing.T) {
	mod := func(ty, op, dims, rdims string) string {
		r := strings.NewReplacer("%%", "%", "%[1]s", ty, "%[2]s", op, "%[3]s", dims, "%[4]s", rdims)
		return r.Replace(reduceModule)
	}
	x := "{{1, 2, 3}, {4, 5, 6}}"
	check(t, "f32[3] {5, 7, 9}", mod("f32", "add", "3", "0"), x, "0")
	check(t, "f32[2] {16, 25}", mod("f32", "add", "2", "1"), x, "10")
	check(t, "f32[] 21", mod("f32", "add", "", "0,1"), x, "0")
	check(t, "s32[2] {3, 6}", mod("s32", "maximum", "2", "1"), x, "-100")
	check(t, "s32[2] {6, 120}", mod("s32", "multiply", "2", "1"), x, "1")
	// A non-trivial reducer goes through Computation: a*b+1 folds as
	// ((init*x0+1)*x1+1)...
	src := `HloModule t
f {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  m = s32[] multiply(a, b)
  one = s32[] constant(1)
  ROOT s = s32[] add(m, one)
}
ENTRY main {
  p = s32[2,3] parameter(0)
  z = s32[] parameter(1)
  ROOT r = s32[2] reduce(p, z), dimensions={1}, to_apply=f
}`
	// row 0: ((1*1+1)*2+1)*3+1 = 16; row 1: ((1*4+1)*5+1)*6+1 = 157
	check(t, "s32[2] {16, 157}", src, x, "1")
	// f32 accumulation rounds each step: 1 + 2^-24 + 2^-24 stays 1 in f32.
	check(t, "f32[1] {1}", strings.Replace(mod("f32", "add", "1", "1"), "[2,3]", "[1,3]", 1), "{{1, 5.9604645e-08, 5.9604645e-08}}", "0")
}

func TestDot(t *testing.T) {
	check(t, "f32[2,2] {{19, 22}, {43, 50}}", `a = f32[2,2] parameter(0)
b = f32[2,2] parameter(1)
ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}`, "{{1, 2}, {3, 4}}", "{{5, 6}, {7, 8}}")
	// Contract lhs dim 0 with rhs dim 1: out[i,j] = sum_k a[k,i]*b[j,k].
	check(t, "s32[2,2] {{26, 30}, {38, 44}}", `a = s32[2,2] parameter(0)
b = s32[2,2] parameter(1)
ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}`, "{{1, 2}, {3, 4}}", "{{5, 7}, {6, 8}}")
	check(t, "f64[2,1,1] {{{5}}, {{25}}}", `a = f64[2,1,2] parameter(0)
b = f64[2,2,1] parameter(1)
ROOT d = f64[2,1,1] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}`,
		"{{{1, 2}}, {{3, 4}}}", "{{{1}, {2}}, {{3}, {4}}}")
	check(t, "bf16[1,1] {{3}}", `a = bf16[1,2] parameter(0)
b = bf16[2,1] parameter(1)
ROOT d = bf16[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}`, "{{1, 1}}", "{{1, 2}}")
	// Outer product (no contracting dims).
	check(t, "s32[2,2] {{3, 4}, {6, 8}}", `a = s32[2] parameter(0)
b = s32[2] parameter(1)
ROOT d = s32[2,2] dot(a, b)`, "{1, 2}", "{3, 4}")
}

func TestUnsupported(t *testing.T) {
	_, err := evalText(t, `p = f32[4] parameter(0)
ROOT r = f32[4] custom-call(p), custom_call_target="cublas_gemm"`, "{1, 2, 3, 4}")
	require.ErrorContains(t, err, "r: ")
	require.ErrorContains(t, err, "cannot evaluate opcode custom-call")
	_, err = evalText(t, `HloModule t
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(p), replica_groups={}, to_apply=add
}`, "{1, 2, 3, 4}")
	require.ErrorContains(t, err, "cannot evaluate opcode all-reduce")
	_, err = evalText(t, `p = pred[2] parameter(0)
ROOT r = pred[2] exponential(p)`, "{true, false}")
	require.Error(t, err)
}

func TestLiteralText(t *testing.T) {
	s := hlo.ArrayShape(hlo.F32, 2, 2)
	s.Layout.MinorToMajor = []int64{0, 1}
	l, err := ParseLiteral(s, "{{1, 2}, {3, 4}}")
	require.NoError(t, err)
	require.Equal(t, []float64{1, 3, 2, 4}, decodeF(hlo.F32, l.Data))
	require.Equal(t, "f32[2,2] {{1, 2}, {3, 4}}", l.String())
	l2, err := ParseLiteral(hlo.ArrayShape(hlo.F32, 4), "{1, 3, 2, 4}")
	require.NoError(t, err)
	require.Equal(t, l.Checksum(), l2.Checksum())
	_, err = ParseLiteral(hlo.ArrayShape(hlo.F32, 3), "{1, 2}")
	require.Error(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	r := RandomLiteral(hlo.ArrayShape(hlo.F32, 100), rng)
	for _, f := range decodeF(hlo.F32, r.Data) {
		require.True(t, f >= -1 && f < 1)
	}
	r = RandomLiteral(hlo.ArrayShape(hlo.PRED, 100), rng)
	for _, b := range r.Data {
		require.True(t, b <= 1)
	}
}

func dotOperands(b *testing.B) (*hlo.Instruction, []Literal) {
	root := rootOf(b, strings.NewReplacer("N", "256").Replace(`a = f32[N,N] parameter(0)
b = f32[N,N] parameter(1)
ROOT d = f32[N,N] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}`))
	rng := rand.New(rand.NewPCG(1, 2))
	return root, []Literal{RandomLiteral(root.Operands[0].Shape, rng), RandomLiteral(root.Operands[1].Shape, rng)}
}

func BenchmarkDotF32_256(b *testing.B) {
	root, ops := dotOperands(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Instruction(root, ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*256*256*256*float64(b.N)/b.Elapsed().Seconds()/1e6, "MFLOP/s")
}

func BenchmarkAddF32(b *testing.B) {
	const n = 1 << 16
	root := rootOf(b, `a = f32[65536] parameter(0)
b = f32[65536] parameter(1)
ROOT r = f32[65536] add(a, b)`)
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []Literal{RandomLiteral(root.Operands[0].Shape, rng), RandomLiteral(root.Operands[1].Shape, rng)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Instruction(root, ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
}

func TestLayouts(t *testing.T) {
	// Same column-major layout everywhere (fast path) and mixed layouts.
	for _, src := range []string{
		"a = f32[2,2]{0,1} parameter(0)\nb = f32[2,2]{0,1} parameter(1)\nROOT r = f32[2,2]{0,1} subtract(a, b)",
		"a = f32[2,2]{1,0} parameter(0)\nb = f32[2,2]{0,1} parameter(1)\nROOT r = f32[2,2]{0,1} subtract(a, b)",
		"a = f32[2,2]{0,1} parameter(0)\nb = f32[2,2]{0,1} parameter(1)\nROOT r = f32[2,2]{1,0} subtract(a, b)",
	} {
		check(t, "f32[2,2] {{9, 18}, {27, 36}}", src, "{{10, 20}, {30, 40}}", "{{1, 2}, {3, 4}}")
	}
	root := rootOf(t, "a = f32[2,2]{0,1} parameter(0)\nb = f32[2,2]{0,1} parameter(1)\nROOT r = f32[2,2]{0,1} maximum(a, b)")
	a, err := ParseLiteral(root.Operands[0].Shape, "{{1, nan}, {5, 0}}")
	require.NoError(t, err)
	b, err := ParseLiteral(root.Operands[1].Shape, "{{2, 1}, {3, -0.5}}")
	require.NoError(t, err)
	out, err := Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	require.Equal(t, "f32[2,2] {{2, nan}, {5, 0}}", out.String())
	// Physical order is column-major: 2, 5, nan, 0.
	v := decodeF(hlo.F32, out.Data)
	require.Equal(t, []float64{2, 5}, v[:2])
	require.True(t, math.IsNaN(v[2]))
}

func TestBadOperands(t *testing.T) {
	root := rootOf(t, "a = f32[2] parameter(0)\nb = f32[2] parameter(1)\nROOT r = f32[2] add(a, b)")
	_, err := Instruction(root, []Literal{{Shape: root.Operands[0].Shape, Data: make([]byte, 4)}, {Shape: root.Operands[1].Shape, Data: make([]byte, 8)}})
	require.ErrorContains(t, err, "has 4 bytes")
	// A scalar on-true operand is not broadcast (only the predicate may be).
	root = rootOf(t, "p = pred[2] parameter(0)\na = pred[] parameter(1)\nb = pred[2] parameter(2)\nROOT r = pred[2] select(p, a, b)")
	ops := make([]Literal, 3)
	for i, o := range root.Operands {
		ops[i], err = ParseLiteral(o.Shape, "true")
		require.NoError(t, err)
	}
	_, err = Instruction(root, ops)
	require.Error(t, err)
	check(t, "s32[2] {1, 20}", "p = pred[] parameter(0)\na = s32[2] parameter(1)\nb = s32[2] parameter(2)\nROOT r = s32[2] select(p, a, b)", "true", "{1, 20}", "{10, 20}")

	// A shape whose element count overflows is an error, not a panic in
	// make: the library takes unverified instructions and shapes.
	huge := hlo.Shape{Elem: hlo.F32, Dims: []int64{1 << 62, 4}}
	_, err = NewLiteral(huge)
	require.ErrorContains(t, err, "no computable size")
	root = rootOf(t, "a = f32[2] parameter(0)\nROOT r = f32[2] negate(a)")
	bad := *root
	bad.Shape = huge
	_, err = Instruction(&bad, []Literal{{Shape: root.Operands[0].Shape, Data: make([]byte, 8)}})
	require.ErrorContains(t, err, "no computable size")
	_, err = Instruction(root, []Literal{{Shape: huge}})
	require.ErrorContains(t, err, "no computable size")
}

func TestComplex(t *testing.T) {
	bin := binarySrc
	check(t, "c64[2] {(4, 6), (0, 0)}", bin("c64[2]", "add"), "{(1, 2), (1, -1)}", "{(3, 4), (-1, 1)}")
	check(t, "c64[1] {(-5, 10)}", bin("c64[1]", "multiply"), "{(1, 2)}", "{(3, 4)}")
	check(t, "c128[1] {(0.44, 0.08)}", bin("c128[1]", "divide"), "{(1, 2)}", "{(3, 4)}")
	check(t, "c64[2] {(1, -2), (0.5, 3)}", "ROOT c = c64[2] constant({(1, -2), (0.5, 3)})")
	check(t, "f32[2] {5, 0}", "p = c64[2] parameter(0)\nROOT r = f32[2] abs(p)", "{(3, 4), (0, 0)}")
	check(t, "f64[2] {4, 0}", "p = c128[2] parameter(0)\nROOT r = f64[2] imag(p)", "{(3, 4), (1, 0)}")
	check(t, "c64[2] {(1, 3), (2, 4)}", "a = f32[2] parameter(0)\nb = f32[2] parameter(1)\nROOT r = c64[2] complex(a, b)", "{1, 2}", "{3, 4}")
	check(t, "c64[2] {(2, 0), (-1, 0)}", "p = s32[2] parameter(0)\nROOT r = c64[2] convert(p)", "{2, -1}")
	check(t, "pred[2] {true, false}", "a = c64[2] parameter(0)\nb = c64[2] parameter(1)\nROOT r = pred[2] compare(a, b), direction=EQ", "{(1, 2), (1, 2)}", "{(1, 2), (1, 3)}")
	// atan2 as XLA's HloEvaluator defines it on complex numbers: the real
	// atan2 on real parts, and -i*log((x+iy)/sqrt(x*x+y*y)) beyond them
	// (the figures from Python's cmath).
	_, out, err := evalLiteral(t, bin("c128[3]", "atan2"), "{(1, 0), (1, 0), (1, 1)}", "{(1, 0), (-1, 0), (2, 0)}")
	require.NoError(t, err)
	want := []complex128{complex(math.Pi/4, 0), complex(3*math.Pi/4, 0), complex(0.5535743588970453, 0.4023594781085253)}
	for i, c := range decodeC(hlo.C128, out.Data) {
		require.InDelta(t, real(want[i]), real(c), 1e-12, "atan2 element %d: %v", i, c)
		require.InDelta(t, imag(want[i]), imag(c), 1e-12, "atan2 element %d: %v", i, c)
	}
	check(t, "c64[1] {(0.7853982, 0)}", bin("c64[1]", "atan2"), "{(1, 0)}", "{(1, 0)}")
	// Data movement works on complex bytes.
	check(t, "c64[2] {(3, 4), (1, 2)}", "p = c64[2] parameter(0)\nROOT r = c64[2] reverse(p), dimensions={0}", "{(1, 2), (3, 4)}")
	_, err = evalText(t, "a = c64[2] parameter(0)\nb = c64[2] parameter(1)\nROOT r = c64[2] maximum(a, b)", "{(1, 2), (1, 2)}", "{(1, 2), (1, 3)}")
	require.ErrorContains(t, err, "cannot evaluate opcode maximum")
}

// TestReducePrecision: the cases of XLA's reduce-precision, on f32 rounded
// to bf16's and f16's widths: ties to even, overflow to a signed
// infinity, denormals flushed to a signed zero, NaN kept (or +inf when no
// mantissa bit is left); on bf16 to its own width, nothing changes.
func TestReducePrecision(t *testing.T) {
	rp := func(ty string, e, m int) string {
		return "p = " + ty + "[6] parameter(0)\nROOT r = " + ty + "[6] reduce-precision(p), exponent_bits=" + strconv.Itoa(e) + ", mantissa_bits=" + strconv.Itoa(m)
	}
	check(t, "f32[6] {1, 1.015625, 1.0078125, -1.0078125, 3, nan}", rp("f32", 8, 7), "{1.00390625, 1.01171875, 1.0078125, -1.0078125, 3, nan}")
	check(t, "f32[6] {inf, -inf, 0, -0, 65504, 6.1035156e-05}", rp("f32", 5, 10), "{70000, -70000, 1e-8, -1e-8, 65504, 6.1035156e-05}")
	check(t, "f32[6] {inf, inf, 1, 4, inf, -0}", rp("f32", 8, 0), "{nan, -nan, 1.2, 3.5, inf, -0}")
	check(t, "bf16[6] {1, 2, 3, 0.5, -4, 0}", rp("bf16", 8, 7), "{1, 2, 3, 0.5, -4, 0}")
	_, err := evalText(t, rp("s32", 8, 7), "{1, 2, 3, 4, 5, 6}")
	require.ErrorContains(t, err, "s32")
	_, err = evalText(t, strings.Replace(rp("f32", 8, 7), "exponent_bits=8", "exponent_bits=0", 1), "{1, 2, 3, 4, 5, 6}")
	require.ErrorContains(t, err, "bad exponent_bits")
}

// TestShardingAnnotation: custom-call "Sharding" is its operand (laid out
// in the result's layout), and only on one array of its own shape.
func TestShardingAnnotation(t *testing.T) {
	check(t, "f32[2,2] {{1, 2}, {3, 4}}", `p = f32[2,2]{1,0} parameter(0)
ROOT r = f32[2,2]{0,1} custom-call(p), custom_call_target="Sharding", sharding={devices=[2,1]0,1}`, "{{1, 2}, {3, 4}}")
	_, err := evalText(t, `p = f32[2,2] parameter(0)
ROOT r = f32[4] custom-call(p), custom_call_target="Sharding"`, "{{1, 2}, {3, 4}}")
	require.ErrorContains(t, err, "cannot evaluate opcode custom-call")
	_, err = evalText(t, `p = f32[4] parameter(0)
q = f32[4] parameter(1)
ROOT r = f32[4] custom-call(p, q), custom_call_target="Sharding"`, "{1, 2, 3, 4}", "{1, 2, 3, 4}")
	require.ErrorContains(t, err, "cannot evaluate opcode custom-call")
}

// TestWorkBudget: a run is bounded by the element operations it
// computes: a 64x64 dot counts 64·64·64 of them, and a budget below that
// stops the run with ErrStepBudget, one at or above it does not.
func TestWorkBudget(t *testing.T) {
	m, err := hlo.ParseModule("work.hlo", `HloModule work
ENTRY e {
  a = f32[64,64] parameter(0)
  b = f32[64,64] parameter(1)
  ROOT d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
`)
	require.NoError(t, err)
	require.EqualValues(t, 64*64*64, InstructionWork(m.Entry.Root))
	args := RandomArgs(m, rand.New(rand.NewPCG(1, 2)))
	for _, budget := range []int64{64*64*64 - 1, 64 * 64 * 64} {
		ev := NewEvaluator(DefaultSeed)
		ev.MaxWork = budget
		_, err := ev.Computation(m.Entry, args)
		if budget < 64*64*64 {
			require.ErrorIs(t, err, ErrStepBudget)
		} else {
			require.NoError(t, err)
			require.EqualValues(t, 64*64*64, ev.Work)
		}
	}
}
