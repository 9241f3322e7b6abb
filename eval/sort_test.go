package eval

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// sortSrc is a module sorting one operand of type ty (dims shape) along
// dim with a comparator ROOT compare(lhs, rhs) of the given direction and
// extra attributes (", type=TOTALORDER").
func sortSrc(ty, shape, dim, lhs, rhs, dir, extra string) string {
	return strings.NewReplacer("%TY", ty, "%SHAPE", shape, "%DIM", dim, "%LHS", lhs, "%RHS", rhs, "%DIR", dir, "%EXTRA", extra).Replace(`HloModule t
cmp {
  p0 = %TY[] parameter(0)
  p1 = %TY[] parameter(1)
  ROOT c = pred[] compare(%LHS, %RHS), direction=%DIR%EXTRA
}
ENTRY main {
  x = %TY[%SHAPE] parameter(0)
  ROOT s = %TY[%SHAPE] sort(x), dimensions={%DIM}, is_stable=true, to_apply=cmp
}`)
}

// kvSrc sorts a key operand of type kt and an s32 value operand (both
// [n]) with the comparator body cmpBody (parameters p0, p1 keys; p2, p3
// values).
func kvSrc(kt, n, cmpBody string) string {
	return strings.NewReplacer("%KT", kt, "%N", n, "%BODY", cmpBody).Replace(`HloModule t
cmp {
  p0 = %KT[] parameter(0)
  p1 = %KT[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  %BODY
}
ENTRY main {
  k = %KT[%N] parameter(0)
  v = s32[%N] parameter(1)
  ROOT s = (%KT[%N], s32[%N]) sort(k, v), dimensions={0}, to_apply=cmp
}`)
}

func TestSort1D(t *testing.T) {
	x := "{3, -1, 2.5, 0, -7, 10}"
	check(t, "f32[6] {-7, -1, 0, 2.5, 3, 10}", sortSrc("f32", "6", "0", "p0", "p1", "LT", ""), x)
	check(t, "f32[6] {10, 3, 2.5, 0, -1, -7}", sortSrc("f32", "6", "0", "p0", "p1", "GT", ""), x)
	// compare(p1, p0), direction=LT is "rhs < lhs": descending.
	check(t, "f32[6] {10, 3, 2.5, 0, -1, -7}", sortSrc("f32", "6", "0", "p1", "p0", "LT", ""), x)
	check(t, "f64[6] {-7, -1, 0, 2.5, 3, 10}", sortSrc("f64", "6", "0", "p0", "p1", "LT", ", type=TOTALORDER"), x)
	// One element, and none.
	check(t, "f32[1] {5}", sortSrc("f32", "1", "0", "p0", "p1", "LT", ""), "{5}")
	check(t, "f32[0] {}", sortSrc("f32", "0", "0", "p0", "p1", "LT", ""), "{}")
	check(t, "f32[2,0] {{}, {}}", sortSrc("f32", "2,0", "0", "p0", "p1", "LT", ""), "{}")
}

func TestSort2D(t *testing.T) {
	x := "{{3, 1, 2}, {-1, 5, 0}}"
	check(t, "s32[2,3] {{1, 2, 3}, {-1, 0, 5}}", sortSrc("s32", "2,3", "1", "p0", "p1", "LT", ""), x)
	check(t, "s32[2,3] {{-1, 1, 0}, {3, 5, 2}}", sortSrc("s32", "2,3", "0", "p0", "p1", "LT", ""), x)
	check(t, "s32[2,3] {{3, 5, 2}, {-1, 1, 0}}", sortSrc("s32", "2,3", "0", "p0", "p1", "GT", ""), x)
	// Rank 3, middle dimension.
	check(t, "s32[2,2,2] {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}", sortSrc("s32", "2,2,2", "1", "p0", "p1", "LT", ""),
		"{{{3, 2}, {1, 4}}, {{5, 8}, {7, 6}}}")
	// Column-major operand and result.
	src := strings.Replace(sortSrc("f32", "2,3", "1", "p0", "p1", "LT", ""), "f32[2,3] parameter(0)", "f32[2,3]{0,1} parameter(0)", 1)
	src = strings.Replace(src, "ROOT s = f32[2,3]", "ROOT s = f32[2,3]{0,1}", 1)
	check(t, "f32[2,3] {{1, 2, 3}, {-1, 0, 5}}", src, x)
	root := rootOf(t, src)
	in, err := ParseLiteral(root.Operands[0].Shape, x)
	require.NoError(t, err)
	out, err := Instruction(root, []Literal{in})
	require.NoError(t, err)
	require.Equal(t, []float64{1, -1, 2, 0, 3, 5}, decodeF(hlo.F32, out.Data)) // physical order
}

func TestSortKeyValue(t *testing.T) {
	lt := "ROOT c = pred[] compare(p0, p1), direction=LT"
	// Values follow their keys; equal keys keep their order (stable).
	require.Equal(t, []string{"f32[6] {1, 1, 2, 2, 2, 3}", "s32[6] {1, 4, 0, 3, 5, 2}"},
		evalTuple(t, kvSrc("f32", "6", lt), "{2, 1, 3, 2, 1, 2}", "{0, 1, 2, 3, 4, 5}"))
	// Descending, still stable among equal keys.
	gt := "ROOT c = pred[] compare(p0, p1), direction=GT"
	require.Equal(t, []string{"f32[6] {3, 2, 2, 2, 1, 1}", "s32[6] {2, 0, 3, 5, 1, 4}"},
		evalTuple(t, kvSrc("f32", "6", gt), "{2, 1, 3, 2, 1, 2}", "{0, 1, 2, 3, 4, 5}"))
	// Keyed on the second operand (parameters 2 and 3).
	byValue := "ROOT c = pred[] compare(p2, p3), direction=LT"
	require.Equal(t, []string{"f32[3] {30, 10, 20}", "s32[3] {-5, 0, 7}"},
		evalTuple(t, kvSrc("f32", "3", byValue), "{10, 20, 30}", "{0, 7, -5}"))
	// Many equal keys through the radix path (more than 48 elements).
	const n = 200
	keys, vals := make([]string, n), make([]string, n)
	for i := range keys {
		keys[i] = []string{"2", "0", "1"}[i%3]
		vals[i] = itoa(i)
	}
	got := evalTuple(t, kvSrc("s32", itoa(n), lt), "{"+strings.Join(keys, ",")+"}", "{"+strings.Join(vals, ",")+"}")
	var want []string
	for r := 0; r < 3; r++ {
		for i := 0; i < n; i++ {
			if []int{2, 0, 1}[i%3] == r {
				want = append(want, itoa(i))
			}
		}
	}
	require.Equal(t, "s32["+itoa(n)+"] {"+strings.Join(want, ", ")+"}", got[1])
}

func itoa(i int) string { return strconv.Itoa(i) }

// f32Literal builds an f32[n] literal from raw bits (for signed NaNs,
// which the text format cannot write).
func f32Literal(bits ...uint32) Literal {
	b := make([]byte, 4*len(bits))
	for i, x := range bits {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return Literal{Shape: hlo.ArrayShape(hlo.F32, int64(len(bits))), Data: b}
}

// f32 bit patterns, signed NaNs and zeros included.
const (
	f32NaN     = 0x7fc00000
	f32NegNaN  = 0xffc00000
	f32Inf     = 0x7f800000
	f32NegInf  = 0xff800000
	f32NegZero = 0x80000000
	f32One     = 0x3f800000
	f32NegOne  = 0xbf800000
)

func TestSortNaN(t *testing.T) {
	x := f32Literal(f32NaN, f32One, f32NegNaN, 0, f32NegInf, f32NegZero, f32Inf, f32NegOne)
	iota, err := ParseLiteral(hlo.ArrayShape(hlo.S32, 8), "{0, 1, 2, 3, 4, 5, 6, 7}")
	require.NoError(t, err)
	run := func(body string) Literal {
		out, err := Instruction(rootOf(t, kvSrc("f32", "8", body)), []Literal{x, iota})
		require.NoError(t, err)
		return out
	}
	// Total order: -NaN < -inf < -1 < -0 < +0 < 1 < inf < NaN.
	out := run("ROOT c = pred[] compare(p0, p1), direction=LT, type=TOTALORDER")
	require.Equal(t, "s32[8] {2, 4, 7, 5, 3, 1, 6, 0}", out.Elems[1].String())
	require.Equal(t, []uint32{f32NegNaN, f32NegInf, f32NegOne, f32NegZero, 0, f32One, f32Inf, f32NaN}, u32s(out.Elems[0].Data))
	out = run("ROOT c = pred[] compare(p0, p1), direction=GT, type=TOTALORDER")
	require.Equal(t, "s32[8] {0, 6, 1, 3, 5, 7, 4, 2}", out.Elems[1].String())

	// IEEE compare: NaN is unordered with everything, so it is not a
	// strict weak order and the result is the one of this evaluator's
	// merge sort (insertion sort on short rows): an element moves left
	// only past elements it is less than, so a NaN stays and blocks.
	lt := sortSrc("f32", "5", "0", "p0", "p1", "LT", "")
	check(t, "f32[5] {1, 2, nan, 3, 4}", lt, "{2, 1, nan, 4, 3}")
	lt4 := strings.ReplaceAll(lt, "[5]", "[4]")
	check(t, "f32[4] {nan, 1, 2, 3}", lt4, "{nan, 3, 1, 2}")
	check(t, "f32[4] {3, nan, 1, 2}", lt4, "{3, nan, 1, 2}")
	// By hand: -inf moves left past 0 and stops at NaN; -1 moves past inf,
	// -0 and 0 and stops at -inf.
	out = run("ROOT c = pred[] compare(p0, p1), direction=LT, type=FLOAT")
	require.Equal(t, "s32[8] {0, 1, 2, 4, 7, 3, 5, 6}", out.Elems[1].String())
	// -0 and +0 are equal under IEEE compare: stable.
	y := f32Literal(f32NegZero, 0, f32NegZero, f32One, 0)
	out, err = Instruction(rootOf(t, kvSrc("f32", "5", "ROOT c = pred[] compare(p0, p1), direction=LT")), []Literal{y, mustParse(t, hlo.S32, 5, "{0, 1, 2, 3, 4}")})
	require.NoError(t, err)
	require.Equal(t, "s32[5] {0, 1, 2, 4, 3}", out.Elems[1].String())
	// Under total order -0 goes first.
	out, err = Instruction(rootOf(t, kvSrc("f32", "5", "ROOT c = pred[] compare(p0, p1), direction=LT, type=TOTALORDER")), []Literal{y, mustParse(t, hlo.S32, 5, "{0, 1, 2, 3, 4}")})
	require.NoError(t, err)
	require.Equal(t, "s32[5] {0, 2, 1, 4, 3}", out.Elems[1].String())
}

func mustParse(t *testing.T, e hlo.ElementType, n int64, text string) Literal {
	t.Helper()
	l, err := ParseLiteral(hlo.ArrayShape(e, n), text)
	require.NoError(t, err)
	return l
}

func u32s(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func TestSortTypes(t *testing.T) {
	check(t, "s8[5] {-128, -1, 0, 1, 127}", sortSrc("s8", "5", "0", "p0", "p1", "LT", ""), "{0, 127, -1, -128, 1}")
	check(t, "u8[5] {0, 3, 127, 200, 255}", sortSrc("u8", "5", "0", "p0", "p1", "LT", ""), "{200, 3, 255, 0, 127}")
	check(t, "u64[3] {1, 9223372036854775808, 18446744073709551615}", sortSrc("u64", "3", "0", "p0", "p1", "LT", ""),
		"{18446744073709551615, 1, 9223372036854775808}")
	check(t, "s64[3] {-9223372036854775808, 0, 9223372036854775807}", sortSrc("s64", "3", "0", "p0", "p1", "LT", ""),
		"{9223372036854775807, -9223372036854775808, 0}")
	check(t, "s16[3] {300, -2, -300}", sortSrc("s16", "3", "0", "p0", "p1", "GT", ""), "{-2, -300, 300}")
	check(t, "u32[3] {4294967295, 7, 0}", sortSrc("u32", "3", "0", "p0", "p1", "GT", ", type=UNSIGNED"), "{0, 4294967295, 7}")
	check(t, "pred[4] {false, false, true, true}", sortSrc("pred", "4", "0", "p0", "p1", "LT", ""), "{true, false, true, false}")
	check(t, "bf16[4] {-2, 0.5, 1.5, inf}", sortSrc("bf16", "4", "0", "p0", "p1", "LT", ""), "{1.5, inf, -2, 0.5}")
	check(t, "bf16[4] {-2, 0.5, 1.5, nan}", sortSrc("bf16", "4", "0", "p0", "p1", "LT", ", type=TOTALORDER"), "{1.5, nan, -2, 0.5}")
	check(t, "f16[4] {-65504, 6.1035156e-05, 1, 65504}", sortSrc("f16", "4", "0", "p0", "p1", "LT", ""), "{1, 65504, -65504, 6.1035156e-05}")
	// Larger rows take the radix path: compare with Go's sort.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ty := range []string{"s8", "u16", "s32", "u64", "bf16", "f64"} {
		shape := hlo.ArrayShape(mustElem(t, ty), 300)
		x := RandomLiteral(shape, rng)
		root := rootOf(t, sortSrc(ty, "300", "0", "p0", "p1", "LT", ""))
		out, err := Instruction(root, []Literal{x})
		require.NoError(t, err)
		if isFloat(shape.Elem) {
			v := decodeF(shape.Elem, x.Data)
			sort.Float64s(v)
			require.Equal(t, v, decodeF(shape.Elem, out.Data), ty)
		} else {
			v := decodeI(shape.Elem, x.Data)
			if shape.Elem.IsUnsigned() {
				sort.Slice(v, func(i, j int) bool { return uint64(v[i]) < uint64(v[j]) })
			} else {
				slices.Sort(v)
			}
			require.Equal(t, v, decodeI(shape.Elem, out.Data), ty)
		}
	}
}

func mustElem(t *testing.T, name string) hlo.ElementType {
	t.Helper()
	e, ok := hlo.LookupElementType(name)
	if !ok {
		t.Fatalf("no element type %s", name)
	}
	return e
}

func TestSortComparatorComputation(t *testing.T) {
	// Keys descending, values ascending among equal keys.
	body := `gt = pred[] compare(p0, p1), direction=GT
  eq = pred[] compare(p0, p1), direction=EQ
  vlt = pred[] compare(p2, p3), direction=LT
  tie = pred[] and(eq, vlt)
  ROOT c = pred[] or(gt, tie)`
	require.Equal(t, []string{"s32[6] {3, 2, 2, 2, 1, 1}", "s32[6] {9, 1, 4, 8, 0, 6}"},
		evalTuple(t, kvSrc("s32", "6", body), "{2, 1, 3, 2, 1, 2}", "{8, 6, 9, 4, 0, 1}"))
	// Sort by absolute value.
	abs := `HloModule t
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  x = f32[] abs(a)
  y = f32[] abs(b)
  ROOT c = pred[] compare(x, y), direction=LT
}
ENTRY main {
  p = f32[5] parameter(0)
  ROOT s = f32[5] sort(p), dimensions={0}, to_apply=cmp
}`
	check(t, "f32[5] {0.5, -1, 2, -3, 4}", abs, "{-3, 2, 0.5, 4, -1}")
	// A comparator that fails makes the sort fail (not panic).
	bad := strings.Replace(abs, "x = f32[] abs(a)", `x = f32[] custom-call(a), custom_call_target="foo"`, 1)
	_, err := evalText(t, bad, "{-3, 2, 0.5, 4, -1}")
	require.ErrorContains(t, err, "custom-call")
	// The comparator's instructions count against the step budget.
	ev := NewEvaluator(1)
	ev.MaxSteps = 10
	root := rootOf(t, abs)
	x := mustParse(t, hlo.F32, 5, "{-3, 2, 0.5, 4, -1}")
	_, err = ev.Instruction(root, []Literal{x})
	require.ErrorIs(t, err, ErrStepBudget)
}

// TestSortFastMatchesGeneral checks the fast comparator paths against the
// comparator evaluated as a computation (the same compare behind an and
// with true, which the fast path does not recognize), NaNs included.
func TestSortFastMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{7, 30, 100} {
		for _, dir := range []string{"LT", "GT", "LE", "GE", "NE", "EQ"} {
			for _, ty := range []string{"f32", "s32"} {
				fast := kvSrc(ty, itoa(n), "ROOT c = pred[] compare(p0, p1), direction="+dir)
				general := kvSrc(ty, itoa(n), "c = pred[] compare(p0, p1), direction="+dir+"\n  tr = pred[] constant(true)\n  ROOT r = pred[] and(c, tr)")
				e := mustElem(t, ty)
				b := make([]byte, 4*n)
				for i := 0; i < n; i++ {
					v := uint32(rng.IntN(5)) // few distinct values: many ties
					if e == hlo.F32 {
						f := []float32{1, -2, 0, float32(math.Copysign(0, -1)), float32(math.NaN())}[v]
						if n == 7 || rng.IntN(10) > 0 && v == 4 {
							f = 3 // some rows without NaN
						}
						v = math.Float32bits(f)
					}
					binary.LittleEndian.PutUint32(b[4*i:], v)
				}
				x := Literal{Shape: hlo.ArrayShape(e, int64(n)), Data: b}
				iota := Literal{Shape: hlo.ArrayShape(hlo.S32, int64(n)), Data: make([]byte, 4*n)}
				for i := 0; i < n; i++ {
					binary.LittleEndian.PutUint32(iota.Data[4*i:], uint32(i))
				}
				want, err := Instruction(rootOf(t, general), []Literal{x, iota})
				require.NoError(t, err)
				got, err := Instruction(rootOf(t, fast), []Literal{x, iota})
				require.NoError(t, err)
				require.Equal(t, want.Elems[1].String(), got.Elems[1].String(), "%s %s n=%d", ty, dir, n)
			}
		}
	}
	// Total order against Go's stable sort on the order keys.
	const n = 500
	x := RandomLiteral(hlo.ArrayShape(hlo.F32, n), rng)
	for i := 0; i < n; i += 7 {
		binary.LittleEndian.PutUint32(x.Data[4*i:], []uint32{0x7fc00000, 0xffc00001, 0x80000000, 0, 0xff800000}[i%5])
	}
	out, err := Instruction(rootOf(t, sortSrc("f32", "500", "0", "p0", "p1", "LT", ", type=TOTALORDER")), []Literal{x})
	require.NoError(t, err)
	want := u32s(x.Data)
	key := func(u uint32) int32 {
		if int32(u) < 0 {
			return int32(u) ^ math.MaxInt32 // MAX - x, as ComparisonExpander
		}
		return int32(u)
	}
	sort.SliceStable(want, func(i, j int) bool { return key(want[i]) < key(want[j]) })
	require.Equal(t, want, u32s(out.Data))
}

func TestSortMalformed(t *testing.T) {
	lt := sortSrc("f32", "3", "0", "p0", "p1", "LT", "")
	for _, c := range []struct{ name, src, err string }{
		{"dimension out of range", strings.Replace(lt, "dimensions={0}", "dimensions={1}", 1), "bad sort dimensions"},
		{"two dimensions", strings.Replace(lt, "dimensions={0}", "dimensions={0,0}", 1), "bad sort dimensions"},
		{"no dimensions", strings.Replace(lt, "dimensions={0}, ", "", 1), "bad sort dimensions"},
		{"comparator arity", strings.Replace(lt, "  p1 = f32[] parameter(1)\n", "  p1 = f32[] parameter(1)\n  p2 = f32[] parameter(2)\n", 1), "takes 3 parameters"},
		{"comparator type", strings.Replace(lt, "p1 = f32[] parameter(1)", "p1 = s32[] parameter(1)", 1), "parameter 1 is not f32[]"},
		{"comparator result", strings.Replace(lt, "ROOT c = pred[] compare(p0, p1), direction=LT", "ROOT c = f32[] add(p0, p1)", 1), "does not return pred[]"},
		{"no comparator", strings.Replace(lt, ", to_apply=cmp", "", 1), "no comparator"},
		{"result type", strings.Replace(lt, "ROOT s = f32[3]", "ROOT s = s32[3]", 1), "result 0"},
		{"is_stable", strings.Replace(lt, "is_stable=true", "is_stable=maybe", 1), "is_stable"},
	} {
		_, err := evalText(t, c.src, "{3, 1, 2}")
		require.ErrorContains(t, err, c.err, c.name)
	}
	kv := kvSrc("f32", "3", "ROOT c = pred[] compare(p0, p1), direction=LT")
	root := rootOf(t, kv)
	k := mustParse(t, hlo.F32, 3, "{1, 2, 3}")
	_, err := Instruction(root, []Literal{k, mustParse(t, hlo.S32, 2, "{1, 2}")})
	require.ErrorContains(t, err, "dims")
	_, err = Instruction(root, []Literal{k})
	require.Error(t, err)
	_, err = Instruction(rootOf(t, strings.Replace(kv, "ROOT s = (f32[3], s32[3])", "ROOT s = f32[3]", 1)), []Literal{k, mustParse(t, hlo.S32, 3, "{1, 2, 3}")})
	require.ErrorContains(t, err, "want a tuple")
	_, err = Instruction(rootOf(t, lt), []Literal{TupleLiteral(k)})
	require.Error(t, err)
}

func rngSrc(ty, shape, dist string) string {
	return "a = " + ty + "[] parameter(0)\nb = " + ty + "[] parameter(1)\nROOT r = " + ty + "[" + shape + "] rng(a, b), distribution=" + dist
}

func evalRng(t *testing.T, ev *Evaluator, src, a, b string) Literal {
	t.Helper()
	root := rootOf(t, src)
	la, err := ParseLiteral(root.Operands[0].Shape, a)
	require.NoError(t, err)
	lb, err := ParseLiteral(root.Operands[1].Shape, b)
	require.NoError(t, err)
	out, err := ev.Instruction(root, []Literal{la, lb})
	require.NoError(t, err)
	return out
}

func TestRng(t *testing.T) {
	// Uniform floats in [a, b).
	for _, ty := range []string{"f32", "f64", "bf16", "f16"} {
		e := mustElem(t, ty)
		out := evalRng(t, NewEvaluator(1), rngSrc(ty, "1000", "rng_uniform"), "2", "5")
		v := decodeF(e, out.Data)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range v {
			require.True(t, x >= 2 && x < 5, "%s %v", ty, x)
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		require.Less(t, lo, 2.1, ty)
		require.Greater(t, hi, 4.9, ty)
	}
	// A range holding one bf16 value: every draw that rounds up is redrawn.
	out := evalRng(t, NewEvaluator(1), rngSrc("bf16", "50", "rng_uniform"), "1", "1.0078125")
	for _, x := range decodeF(hlo.BF16, out.Data) {
		require.Equal(t, 1.0, x)
	}
	// Uniform integers in [a, b), every value drawn.
	out = evalRng(t, NewEvaluator(1), rngSrc("s32", "1000", "rng_uniform"), "-3", "4")
	seen := map[int64]int{}
	for _, x := range decodeI(hlo.S32, out.Data) {
		require.True(t, x >= -3 && x < 4, x)
		seen[x]++
	}
	require.Len(t, seen, 7)
	out = evalRng(t, NewEvaluator(1), rngSrc("u8", "500", "rng_uniform"), "250", "255")
	for _, x := range decodeI(hlo.U8, out.Data) {
		require.True(t, x >= 250 && x < 255, x)
	}
	out = evalRng(t, NewEvaluator(1), rngSrc("s64", "100", "rng_uniform"), "-9223372036854775808", "9223372036854775807")
	require.Len(t, out.Data, 800)
	out = evalRng(t, NewEvaluator(1), rngSrc("u64", "100", "rng_uniform"), "18446744073709551600", "18446744073709551615")
	for _, x := range decodeI(hlo.U64, out.Data) {
		require.True(t, uint64(x) >= 18446744073709551600 && uint64(x) < 18446744073709551615)
	}
	// Normal: mean and deviation.
	out = evalRng(t, NewEvaluator(1), rngSrc("f64", "20000", "rng_normal"), "3", "2")
	v := decodeF(hlo.F64, out.Data)
	var sum, sq float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	for _, x := range v {
		sq += (x - mean) * (x - mean)
	}
	require.InDelta(t, 3, mean, 0.05)
	require.InDelta(t, 2, math.Sqrt(sq/float64(len(v))), 0.05)
	out = evalRng(t, NewEvaluator(1), rngSrc("bf16", "10", "rng_normal"), "0", "1")
	for _, x := range decodeF(hlo.BF16, out.Data) {
		require.Equal(t, roundF(hlo.BF16, x), x)
	}
	// Layout: a column-major result holds the same values, laid out.
	src := rngSrc("s32", "2,3", "rng_uniform")
	rowMajor := evalRng(t, NewEvaluator(9), src, "0", "1000")
	colMajor := evalRng(t, NewEvaluator(9), strings.Replace(src, "s32[2,3] rng", "s32[2,3]{0,1} rng", 1), "0", "1000")
	require.Equal(t, rowMajor.String(), colMajor.String())
}

func TestRngDeterminism(t *testing.T) {
	src := rngSrc("f32", "64", "rng_uniform")
	root := rootOf(t, src)
	a, b := mustParse(t, hlo.F32, 1, "0"), mustParse(t, hlo.F32, 1, "1")
	a.Shape, b.Shape = root.Operands[0].Shape, root.Operands[1].Shape
	// Two fresh evaluators (Instruction uses DefaultSeed) agree.
	x, err := Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	y, err := Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	require.Equal(t, x.Data, y.Data)
	// One evaluator moves on: its second draw differs from its first, and
	// equals the second draw of another evaluator with the same seed.
	ev1, ev2 := NewEvaluator(7), NewEvaluator(7)
	first, err := ev1.Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	second, err := ev1.Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	require.NotEqual(t, first.Data, second.Data)
	_, err = ev2.Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	again, err := ev2.Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	require.Equal(t, second.Data, again.Data)
	// Another seed, other numbers.
	other, err := NewEvaluator(8).Instruction(root, []Literal{a, b})
	require.NoError(t, err)
	require.NotEqual(t, first.Data, other.Data)
}

// TestRngShapeOperand: rng(a, b, shape), StableHLO's form, which XLA's
// RngExpander test data holds, draws as rng(a, b) does; the shape operand
// is not read (the result's dimensions are the instruction's), but it must
// be a rank-1 array.
func TestRngShapeOperand(t *testing.T) {
	two := "a = f32[] parameter(0)\nb = f32[] parameter(1)\nROOT r = f32[2,2] rng(a, b), distribution=rng_uniform"
	three := "a = f32[] parameter(0)\nb = f32[] parameter(1)\ns = u64[3] parameter(2)\nROOT r = f32[2,2] rng(a, b, s), distribution=rng_uniform"
	want, err := evalText(t, two, "0", "1")
	require.NoError(t, err)
	got, err := evalText(t, three, "0", "1", "{2, 4, 8}")
	require.NoError(t, err)
	require.Equal(t, want, got)
	// XLA's f16 test case gives the dimensions as f16[3].
	got, err = evalText(t, strings.Replace(three, "u64[3]", "f32[3]", 1), "0", "1", "{2, 4, 8}")
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = evalText(t, strings.Replace(three, "u64[3]", "u64[3,1]", 1), "0", "1", "{{2}, {4}, {8}}")
	require.ErrorContains(t, err, "rng operand 2 is u64[3,1]")
	four := "a = f32[] parameter(0)\nb = f32[] parameter(1)\ns = u64[3] parameter(2)\nROOT r = f32[2,2] rng(a, b, s, s), distribution=rng_uniform"
	_, err = evalText(t, four, "0", "1", "{2, 4, 8}", "{2, 4, 8}")
	require.ErrorContains(t, err, "rng has 4 operands")
}

func TestRngMalformed(t *testing.T) {
	for _, c := range []struct{ src, a, b, err string }{
		{rngSrc("f32", "4", "rng_uniform"), "1", "1", "empty range"},
		{rngSrc("f32", "4", "rng_uniform"), "2", "1", "empty range"},
		{rngSrc("f32", "4", "rng_uniform"), "0", "inf", "not finite"},
		{rngSrc("f32", "4", "rng_uniform"), "nan", "1", "not finite"},
		{rngSrc("s32", "4", "rng_uniform"), "5", "5", "empty range"},
		{rngSrc("u8", "4", "rng_uniform"), "200", "100", "empty range"},
		{rngSrc("s32", "4", "rng_normal"), "0", "1", "integer"},
		{rngSrc("f32", "4", "rng_normal"), "0", "-1", "negative deviation"},
		{rngSrc("f32", "4", "rng_bernoulli"), "0", "1", "distribution"},
		{strings.Replace(rngSrc("f32", "4", "rng_uniform"), ", distribution=rng_uniform", "", 1), "0", "1", "distribution"},
		{"a = f32[2] parameter(0)\nb = f32[] parameter(1)\nROOT r = f32[4] rng(a, b), distribution=rng_uniform", "{0, 0}", "1", "operand 0"},
		{"a = s32[] parameter(0)\nb = f32[] parameter(1)\nROOT r = f32[4] rng(a, b), distribution=rng_uniform", "0", "1", "operand 0"},
		{"a = c64[] parameter(0)\nb = c64[] parameter(1)\nROOT r = c64[4] rng(a, b), distribution=rng_uniform", "(0, 0)", "(1, 1)", "c64"},
	} {
		_, err := evalText(t, c.src, c.a, c.b)
		require.ErrorContains(t, err, c.err, c.src)
	}
}

const mapModule = `HloModule t
f {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  BODY
}
ENTRY main {
  x = TY[2,3] parameter(0)
  y = TY[2,3] parameter(1)
  ROOT m = OUT[2,3] map(x, y), dimensions={0,1}, to_apply=f
}`

func mapSrc(ty, out, body string) string {
	return strings.NewReplacer("TY", ty, "OUT", out, "BODY", body).Replace(mapModule)
}

func TestMap(t *testing.T) {
	x, y := "{{1, 2, 3}, {4, 5, 6}}", "{{10, 20, 30}, {40, 50, 60}}"
	// One element-wise instruction on the parameters: the whole-array path.
	check(t, "f32[2,3] {{11, 22, 33}, {44, 55, 66}}", mapSrc("f32", "f32", "ROOT r = f32[] add(a, b)"), x, y)
	check(t, "s32[2,3] {{9, 18, 27}, {36, 45, 54}}", mapSrc("s32", "s32", "ROOT r = s32[] subtract(b, a)"), x, y)
	check(t, "pred[2,3] {{true, true, true}, {true, true, true}}", mapSrc("s32", "pred", "ROOT r = pred[] compare(a, b), direction=LT"), x, y)
	// Anything else: per element. a*b+1.
	body := "m = s32[] multiply(a, b)\n  one = s32[] constant(1)\n  ROOT r = s32[] add(m, one)"
	check(t, "s32[2,3] {{11, 41, 91}, {161, 251, 361}}", mapSrc("s32", "s32", body), x, y)
	// Both paths agree (a+b spelled so that it is not one instruction).
	body = "z = f32[] constant(0)\n  s = f32[] add(a, b)\n  ROOT r = f32[] add(s, z)"
	check(t, "f32[2,3] {{11, 22, 33}, {44, 55, 66}}", mapSrc("f32", "f32", body), x, y)
	// A map of one operand with another result type; column-major result.
	check(t, "f32[3] {1, -2, 3}", `HloModule t
f {
  a = s32[] parameter(0)
  ROOT r = f32[] convert(a)
}
ENTRY main {
  x = s32[3] parameter(0)
  ROOT m = f32[3] map(x), dimensions={0}, to_apply=f
}`, "{1, -2, 3}")
	src := strings.Replace(mapSrc("s32", "s32", "m = s32[] multiply(a, b)\n  ROOT r = s32[] negate(m)"), "ROOT m = s32[2,3]", "ROOT m = s32[2,3]{0,1}", 1)
	check(t, "s32[2,3] {{-10, -40, -90}, {-160, -250, -360}}", src, x, y)
	// Scalar map.
	check(t, "f32[] 3", `HloModule t
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] map(x, y), to_apply=f
}`, "3", "-1")
}

func TestMapMalformed(t *testing.T) {
	x, y := "{{1, 2, 3}, {4, 5, 6}}", "{{10, 20, 30}, {40, 50, 60}}"
	add := mapSrc("f32", "f32", "ROOT r = f32[] add(a, b)")
	for _, c := range []struct{ name, src, err string }{
		{"dimensions", strings.Replace(add, "dimensions={0,1}", "dimensions={1,0}", 1), "not the identity"},
		{"some dimensions", strings.Replace(add, "dimensions={0,1}", "dimensions={0}", 1), "not all"},
		{"parameter type", strings.Replace(add, "b = f32[] parameter(1)", "b = s32[] parameter(1)", 1), "parameter 1"},
		{"arity", strings.Replace(add, "  b = f32[] parameter(1)\n", "  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n", 1), "takes 3 parameters"},
		{"result type", strings.Replace(add, "ROOT r = f32[] add(a, b)", "ROOT r = s32[] convert(a)", 1), "does not return f32[]"},
		{"no computation", strings.Replace(add, ", to_apply=f", "", 1), "no to_apply"},
	} {
		_, err := evalText(t, c.src, x, y)
		require.ErrorContains(t, err, c.err, c.name)
	}
	root := rootOf(t, add)
	a := mustParse(t, hlo.F32, 6, x)
	a.Shape = root.Operands[0].Shape
	_, err := Instruction(root, []Literal{a, mustParse(t, hlo.F32, 6, y)})
	require.ErrorContains(t, err, "dims")
}

const argmaxModule = `HloModule t
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  xv = f32[] parameter(2)
  xi = s32[] parameter(3)
  gt = pred[] compare(av, xv), direction=GT
  eq = pred[] compare(av, xv), direction=EQ
  first = pred[] compare(ai, xi), direction=LT
  tie = pred[] and(eq, first)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, xv)
  i = s32[] select(keep, ai, xi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[2,4] parameter(0)
  idx = s32[2,4] parameter(1)
  lo = f32[] parameter(2)
  none = s32[] parameter(3)
  ROOT r = RESULT reduce(x, idx, lo, none), dimensions={DIMS}, to_apply=argmax
}`

func TestVariadicReduce(t *testing.T) {
	src := func(result, dims string) string {
		return strings.NewReplacer("RESULT", result, "DIMS", dims).Replace(argmaxModule)
	}
	x := "{{1, 7, 3, 7}, {-2, -5, -2, -9}}"
	iota := "{{0, 1, 2, 3}, {0, 1, 2, 3}}"
	// Per row: the maximum and its first index (ties go to the lower index).
	require.Equal(t, []string{"f32[2] {7, -2}", "s32[2] {1, 0}"},
		evalTuple(t, src("(f32[2], s32[2])", "1"), x, iota, "-inf", "-1"))
	// Per column.
	require.Equal(t, []string{"f32[4] {1, 7, 3, 7}", "s32[4] {0, 1, 2, 3}"},
		evalTuple(t, src("(f32[4], s32[4])", "0"), x, "{{0, 1, 2, 3}, {4, 5, 6, 7}}", "-inf", "-1"))
	// Everything: the first 7 in row-major order (flat index 1).
	require.Equal(t, []string{"f32[] 7", "s32[] 1"},
		evalTuple(t, src("(f32[], s32[])", "0,1"), x, "{{0, 1, 2, 3}, {4, 5, 6, 7}}", "-inf", "-1"))
	// No dimensions: the init folded with each element once.
	require.Equal(t, []string{"f32[2,4] {{1, 7, 3, 7}, {-2, -5, -2, -9}}", "s32[2,4] {{0, 1, 2, 3}, {0, 1, 2, 3}}"},
		evalTuple(t, src("(f32[2,4], s32[2,4])", ""), x, iota, "-inf", "-1"))
	// The init wins when nothing beats it.
	require.Equal(t, []string{"f32[2] {100, 100}", "s32[2] {-1, -1}"},
		evalTuple(t, src("(f32[2], s32[2])", "1"), x, iota, "100", "-1"))

	// A reducer returning its accumulators swapped: each step swaps them,
	// so reading all results before writing any matters.
	swap := `HloModule t
f {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT t = (s32[], s32[]) tuple(b, a)
}
ENTRY main {
  x = s32[2,3] parameter(0)
  y = s32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = (s32[2], s32[2]) reduce(x, y, i, j), dimensions={1}, to_apply=f
}`
	require.Equal(t, []string{"s32[2] {2, 2}", "s32[2] {1, 1}"}, evalTuple(t, swap, "0", "0", "1", "2"))
	// Different element types per input, a column-major result.
	mixed := `HloModule t
f {
  s = f64[] parameter(0)
  n = u8[] parameter(1)
  x = f64[] parameter(2)
  y = u8[] parameter(3)
  s2 = f64[] add(s, x)
  n2 = u8[] add(n, y)
  ROOT t = (f64[], u8[]) tuple(s2, n2)
}
ENTRY main {
  x = f64[3,2] parameter(0)
  y = u8[3,2] parameter(1)
  i = f64[] parameter(2)
  j = u8[] parameter(3)
  ROOT r = (f64[2]{0}, u8[2]) reduce(x, y, i, j), dimensions={0}, to_apply=f
}`
	require.Equal(t, []string{"f64[2] {9, 12}", "u8[2] {4, 3}"},
		evalTuple(t, mixed, "{{1, 2}, {3, 4}, {5, 6}}", "{{200, 1}, {60, 1}, {0, 1}}", "0", "0"))
}

func TestVariadicReduceMalformed(t *testing.T) {
	src := strings.NewReplacer("RESULT", "(f32[2], s32[2])", "DIMS", "1").Replace(argmaxModule)
	x, iota := "{{1, 7, 3, 7}, {-2, -5, -2, -9}}", "{{0, 1, 2, 3}, {0, 1, 2, 3}}"
	for _, c := range []struct{ name, src, err string }{
		{"dimension", strings.Replace(src, "dimensions={1}", "dimensions={2}", 1), "bad reduce dimensions"},
		{"repeated dimension", strings.Replace(src, "dimensions={1}", "dimensions={1,1}", 1), "bad reduce dimensions"},
		{"result dims", strings.Replace(src, "(f32[2], s32[2]) reduce", "(f32[4], s32[2]) reduce", 1), "result 0"},
		{"result type", strings.Replace(src, "(f32[2], s32[2]) reduce", "(f32[2], f32[2]) reduce", 1), "result 1"},
		{"reducer arity", strings.Replace(src, "  xi = s32[] parameter(3)\n", "  xi = s32[] parameter(3)\n  e = s32[] parameter(4)\n", 1), "takes 5 parameters"},
		{"reducer result", strings.Replace(src, "ROOT t = (f32[], s32[]) tuple(v, i)", "ROOT t = (f32[], s32[], s32[]) tuple(v, i, i)", 1), "want a tuple of 2"},
		{"reducer result type", strings.Replace(src, "ROOT t = (f32[], s32[]) tuple(v, i)", "ROOT t = (s32[], s32[]) tuple(i, i)", 1), "element 0"},
		{"reducer parameter", strings.Replace(src, "ai = s32[] parameter(1)", "ai = f32[] parameter(1)", 1), "argument is s32[]"},
		{"no reducer", strings.Replace(src, ", to_apply=argmax", "", 1), "no to_apply"},
	} {
		root := rootOf(t, c.src)
		ops := make([]Literal, len(root.Operands))
		for i, a := range []string{x, iota, "-inf", "-1"} {
			l, err := ParseLiteral(root.Operands[i].Shape, a)
			require.NoError(t, err, c.name)
			ops[i] = l
		}
		_, err := Instruction(root, ops)
		require.ErrorContains(t, err, c.err, c.name)
	}
	root := rootOf(t, src)
	xv := mustParse(t, hlo.F32, 8, x)
	xv.Shape = root.Operands[0].Shape
	iv := mustParse(t, hlo.S32, 8, iota)
	iv.Shape = root.Operands[1].Shape
	lo, none := mustParse(t, hlo.F32, 1, "0"), mustParse(t, hlo.S32, 1, "0")
	lo.Shape, none.Shape = root.Operands[2].Shape, root.Operands[3].Shape
	_, err := Instruction(root, []Literal{xv, iv, lo})
	require.ErrorContains(t, err, "want inputs and as many init values")
	_, err = Instruction(root, []Literal{xv, mustParse(t, hlo.S32, 4, "{0, 1, 2, 3}"), lo, none})
	require.ErrorContains(t, err, "dims")
	_, err = Instruction(root, []Literal{xv, iv, xv, none})
	require.ErrorContains(t, err, "not a scalar")
}

func BenchmarkSortF32(b *testing.B) {
	const n = 1 << 16
	root := rootOf(b, sortSrc("f32", "65536", "0", "p0", "p1", "LT", ""))
	x := RandomLiteral(root.Operands[0].Shape, rand.New(rand.NewPCG(1, 2)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Instruction(root, []Literal{x}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
}

// TestCompareTotalOrder: a standalone compare with type=TOTALORDER orders
// -NaN < -inf < -1 < -0 < +0 < 1 < inf < +NaN, and each element is equal
// only to itself, bit for bit (so NaN == NaN and -0 != +0).
func TestCompareTotalOrder(t *testing.T) {
	order := []uint32{f32NegNaN, f32NegInf, f32NegOne, f32NegZero, 0, f32One, f32Inf, f32NaN}
	var xs, ys []uint32
	for _, a := range order {
		for _, b := range order {
			xs, ys = append(xs, a), append(ys, b)
		}
	}
	n := len(xs)
	src := func(dir string) string {
		return fmt.Sprintf("a = f32[%d] parameter(0)\nb = f32[%d] parameter(1)\nROOT r = pred[%d] compare(a, b), direction=%s, type=TOTALORDER", n, n, n, dir)
	}
	for _, dir := range []string{"EQ", "NE", "LT", "LE", "GT", "GE"} {
		out, err := Instruction(rootOf(t, src(dir)), []Literal{f32Literal(xs...), f32Literal(ys...)})
		require.NoError(t, err, dir)
		for k := range n {
			i, j := k/len(order), k%len(order) // positions in the total order
			want := map[string]bool{"EQ": i == j, "NE": i != j, "LT": i < j, "LE": i <= j, "GT": i > j, "GE": i >= j}[dir]
			require.Equal(t, want, out.Data[k] == 1, "%08x %s %08x", xs[k], dir, ys[k])
		}
	}
	// Half-precision types in the same order; the IEEE compare of the same
	// operands differs on NaN and on the zeros.
	for _, ty := range []string{"bf16", "f16", "f64"} {
		c := func(typ string) string {
			return "a = " + ty + "[4] parameter(0)\nb = " + ty + "[4] parameter(1)\nROOT r = pred[4] compare(a, b), direction=LT" + typ
		}
		check(t, "pred[4] {true, false, true, true}", c(", type=TOTALORDER"), "{-0, nan, -inf, 1}", "{0, nan, nan, inf}")
		check(t, "pred[4] {false, false, false, true}", c(""), "{-0, nan, -inf, 1}", "{0, nan, nan, inf}")
	}
	_, err := Instruction(rootOf(t, "a = s32[2] parameter(0)\nb = s32[2] parameter(1)\nROOT r = pred[2] compare(a, b), direction=LT, type=TOTALORDER"), []Literal{mustParse(t, hlo.S32, 2, "{1, 2}"), mustParse(t, hlo.S32, 2, "{2, 1}")})
	require.ErrorContains(t, err, "TOTALORDER on s32")
}
