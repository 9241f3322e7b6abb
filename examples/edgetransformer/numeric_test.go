package main

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// threefryRef is Threefry-2x32 with 20 rounds, written from the Random123
// specification (Salmon et al., SC 2011) independently of the HLO in rng.go.
func threefryRef(k0, k1, x0, x1 uint32) (uint32, uint32) {
	rot := [8]int{13, 15, 26, 6, 17, 29, 16, 24}
	ks := [3]uint32{k0, k1, k0 ^ k1 ^ 0x1BD11BDA}
	x0 += ks[0]
	x1 += ks[1]
	for r := 0; r < 20; r++ {
		x0 += x1
		x1 = bits.RotateLeft32(x1, rot[r%8]) ^ x0
		if r%4 == 3 {
			s := uint32(r/4 + 1)
			x0 += ks[s%3]
			x1 += ks[(s+1)%3] + s
		}
	}
	return x0, x1
}

// The Go reference agrees with Random123's known answers, the vectors JAX's
// random_test.py (testThreefry2x32) checks threefry_2x32 against.
func TestThreefryReferenceKnownAnswers(t *testing.T) {
	for _, tc := range [][6]uint32{
		{0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
		{math.MaxUint32, math.MaxUint32, math.MaxUint32, math.MaxUint32, 0x1cb996fc, 0xbb002be7},
		{0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
	} {
		y0, y1 := threefryRef(tc[0], tc[1], tc[2], tc[3])
		require.Equal(t, [2]uint32{tc[4], tc[5]}, [2]uint32{y0, y1})
	}
}

func u32s(l eval.Literal) []uint32 {
	out := make([]uint32, len(l.Data)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(l.Data[4*i:])
	}
	return out
}

func f32s(l eval.Literal) []float64 {
	out := make([]float64, len(l.Data)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(l.Data[4*i:])))
	}
	return out
}

func u32Lit(t *testing.T, sh string, v []uint32) eval.Literal {
	t.Helper()
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatUint(uint64(x), 10)
	}
	text := parts[0]
	if sh != "u32[]" {
		text = "{" + strings.Join(parts, ", ") + "}"
	}
	l, err := eval.ParseLiteral(mustShape(t, sh), text)
	require.NoError(t, err)
	return l
}

func mustShape(t *testing.T, text string) hlo.Shape {
	t.Helper()
	m, err := hlo.ParseModule("s.hlo", "HloModule s\nENTRY e {\n  ROOT p = "+text+" parameter(0)\n}\n")
	require.NoError(t, err)
	return m.Entry.Root.Shape
}

// The %threefry2x32 computation the generator emits computes the reference
// function bit for bit, on the known answers and on random keys and
// counters.
func TestThreefryComputationMatchesReference(t *testing.T) {
	const n = 8
	m := newModule("threefry_test")
	tf := threefry(m, n)
	c := m.newComp("main")
	ps := []value{c.param(u32(), "k0"), c.param(u32(), "k1"), c.param(u32(n), "x0"), c.param(u32(n), "x1")}
	out := c.call(tf, shape{tuple: []shape{u32(n), u32(n)}}, ps)
	c.finish(out, true)
	mod, err := hlo.ParseModule("threefry.hlo", m.text())
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(mod))

	r := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 4; trial++ {
		k0, k1 := r.Uint32(), r.Uint32()
		if trial == 0 {
			k0, k1 = 0x13198a2e, 0x03707344
		}
		x0, x1 := make([]uint32, n), make([]uint32, n)
		for i := range x0 {
			x0[i], x1[i] = r.Uint32(), r.Uint32()
		}
		if trial == 0 {
			x0[0], x1[0] = 0x243f6a88, 0x85a308d3
		}
		got, err := eval.Computation(mod.Entry, []eval.Literal{
			u32Lit(t, "u32[]", []uint32{k0}), u32Lit(t, "u32[]", []uint32{k1}),
			u32Lit(t, "u32[8]", x0), u32Lit(t, "u32[8]", x1)})
		require.NoError(t, err)
		y0, y1 := u32s(got.Elems[0]), u32s(got.Elems[1])
		for i := range x0 {
			w0, w1 := threefryRef(k0, k1, x0[i], x1[i])
			require.Equal(t, [2]uint32{w0, w1}, [2]uint32{y0[i], y1[i]}, "key %#x %#x counter %#x %#x", k0, k1, x0[i], x1[i])
		}
		if trial == 0 {
			require.Equal(t, [2]uint32{0xc4923a9c, 0x483df7a0}, [2]uint32{y0[0], y1[0]})
		}
	}
}

// evalInit evaluates init on random inputs with the given key.
func evalInit(t *testing.T, cfg config, key [2]uint32) (*hlo.Module, []param, []eval.Literal) {
	t.Helper()
	m, params := parse(t, cfg)
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(uint64(key[0]), uint64(key[1]))))
	args[0] = u32Lit(t, "u32[2]", key[:])
	out, err := eval.Computation(m.Entry, args)
	require.NoError(t, err)
	return m, params, out.Leaves()
}

// The parameters init returns: weights truncated normal with std
// 1/sqrt(fan_in) (Haiku's hk.Linear default, TruncatedNormal(1/sqrt(fan_in)),
// whose truncation to two standard deviations Haiku corrects so the std is
// the one asked), within (-2, 2) of those unscaled deviations; zero biases
// and offsets; unit scales.
func TestInitParameterStatistics(t *testing.T) {
	cfg := config{batch: 1, nodes: 2, hidden: 32, heads: 4, layers: 1}
	for _, key := range [][2]uint32{{0, 0}, {0, 42}} {
		_, params, leaves := evalInit(t, cfg, key)
		require.Len(t, leaves, len(params))
		want := expectedParams(cfg.hidden, cfg.layers)
		require.Len(t, leaves, len(want))
		for i, p := range params {
			require.Equal(t, want[p.module+"/"+p.name], leaves[i].Shape.String(), p.module+"/"+p.name)
		}
		firsts := map[float64]string{}
		for i, p := range params {
			v := f32s(leaves[i])
			name := p.module + "/" + p.name
			require.Equal(t, p.v.sh.elements(), int64(len(v)), name)
			switch p.kind {
			case kindZeros:
				for _, x := range v {
					require.Zero(t, x, name)
				}
			case kindOnes:
				for _, x := range v {
					require.Equal(t, 1.0, x, name)
				}
			case kindWeight:
				std := 1 / math.Sqrt(float64(p.fanIn))
				var sum, sq float64
				for _, x := range v {
					require.Less(t, math.Abs(x), 2*std/truncStdCorrection, name)
					sum += x
					sq += x * x
				}
				mean := sum / float64(len(v))
				got := math.Sqrt(sq/float64(len(v)) - mean*mean)
				// Sampling error: the mean within 4 standard errors,
				// the std within 8%.
				require.Less(t, math.Abs(mean), 4*std/math.Sqrt(float64(len(v))), name)
				require.InEpsilon(t, std, got, 0.08, name)
				// Each weight has its own key.
				require.NotContains(t, firsts, v[0], name)
				firsts[v[0]] = name
			}
		}
	}
}

// The forward pass inside init computes: with extraAtt the root also
// returns att = softmax(scores, axis=2), whose rows over axis 2 sum to 1.
func TestForwardPassSoftmaxRows(t *testing.T) {
	for _, cfg := range []config{
		{batch: 2, nodes: 3, hidden: 8, heads: 2, layers: 2, extraAtt: true},
		{batch: 1, nodes: 4, hidden: 4, heads: 1, layers: 1, extraAtt: true},
	} {
		_, params, leaves := evalInit(t, cfg, [2]uint32{1, 2})
		require.Len(t, leaves, len(params)+int(cfg.layers))
		b, n, h := cfg.batch, cfg.nodes, cfg.heads
		for _, l := range leaves[len(params):] {
			require.Equal(t, f32(b, n, n, n, h).String(), l.Shape.String())
			att := f32s(l)
			distinct := map[float64]bool{}
			// att is (b, x, a, y, h) row-major: sum over a.
			for bx := int64(0); bx < b*n; bx++ {
				for yh := int64(0); yh < n*h; yh++ {
					sum := 0.0
					for a := int64(0); a < n; a++ {
						x := att[(bx*n+a)*n*h+yh]
						require.True(t, x >= 0 && x <= 1, x)
						distinct[x] = true
						sum += x
					}
					require.InDelta(t, 1, sum, 1e-5)
				}
			}
			// Not a uniform 1/n: the scores depend on the inputs.
			require.Greater(t, len(distinct), 1)
		}
	}
}

// The %_softmax computation alone, on a known input: exp(x - max) / sum
// over axis 2, against the formula computed here.
func TestSoftmaxComputation(t *testing.T) {
	g := &gen{cfg: config{}, m: newModule("softmax_test")}
	sh := f32(1, 1, 3, 2, 1)
	sm := g.softmax(sh)
	c := g.m.newComp("main")
	x := c.param(sh, "x")
	c.finish(c.call(sm, sh, []value{x}), true)
	mod, err := hlo.ParseModule("softmax.hlo", g.m.text())
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(mod))
	in := []float64{1, -2, 3, 0.5, 1000, 4} // (a, y) = (3, 2)
	lit, err := eval.ParseLiteral(mod.Entry.Params[0].Shape, "{{{{{1}, {-2}}, {{3}, {0.5}}, {{1000}, {4}}}}}")
	require.NoError(t, err)
	out, err := eval.Computation(mod.Entry, []eval.Literal{lit})
	require.NoError(t, err)
	got := f32s(out)
	for y := 0; y < 2; y++ {
		mx := math.Inf(-1)
		for a := 0; a < 3; a++ {
			mx = math.Max(mx, in[a*2+y])
		}
		sum := 0.0
		for a := 0; a < 3; a++ {
			sum += math.Exp(in[a*2+y] - mx)
		}
		for a := 0; a < 3; a++ {
			require.InDelta(t, math.Exp(in[a*2+y]-mx)/sum, got[a*2+y], 1e-6, "a=%d y=%d", a, y)
		}
	}
}

// einsumRef computes a two-operand einsum naively over every assignment of
// the index letters (sizes by letter), operands row-major.
func einsumRef(spec string, sizes map[byte]int, a, b []float64) []float64 {
	ins, out, _ := strings.Cut(spec, "->")
	lhs, rhs, _ := strings.Cut(ins, ",")
	var letters []byte
	for i := 0; i < len(ins); i++ {
		if ins[i] != ',' && !strings.ContainsRune(string(letters), rune(ins[i])) {
			letters = append(letters, ins[i])
		}
	}
	offset := func(idx map[byte]int, s string) int {
		o := 0
		for i := 0; i < len(s); i++ {
			o = o*sizes[s[i]] + idx[s[i]]
		}
		return o
	}
	n := 1
	for i := 0; i < len(out); i++ {
		n *= sizes[out[i]]
	}
	res := make([]float64, n)
	idx := map[byte]int{}
	var walk func(int)
	walk = func(i int) {
		if i == len(letters) {
			res[offset(idx, out)] += a[offset(idx, lhs)] * b[offset(idx, rhs)]
			return
		}
		for v := 0; v < sizes[letters[i]]; v++ {
			idx[letters[i]] = v
			walk(i + 1)
		}
	}
	walk(0)
	return res
}

// Each %_einsum computation computes its einsum, dimension order included,
// against the naive reference (sizes all distinct, so a swapped dimension
// shows).
func TestEinsumComputations(t *testing.T) {
	cfg := config{batch: 2, nodes: 3, hidden: 8, heads: 2, layers: 1}
	b, n, h := cfg.batch, cfg.nodes, cfg.heads
	k := cfg.hidden / h
	sizes := map[byte]int{'b': int(b), 'x': int(n), 'a': int(n), 'y': int(n), 'h': int(h), 'd': int(k)}
	for _, tc := range []struct {
		spec     string
		mk       func(g *gen) string
		lhs, rhs shape
		out      shape
	}{
		{"bxahd,bayhd->bxayh", (*gen).einsumScores, f32(b, n, n, h, k), f32(b, n, n, h, k), f32(b, n, n, n, h)},
		{"bxahd,bayhd->bxayhd", (*gen).einsumVal, f32(b, n, n, h, k), f32(b, n, n, h, k), f32(b, n, n, n, h, k)},
		{"bxayh,bxayhd->bxyhd", (*gen).einsumOut, f32(b, n, n, n, h), f32(b, n, n, n, h, k), f32(b, n, n, h, k)},
	} {
		g := &gen{cfg: cfg, m: newModule("einsum_test")}
		callee := tc.mk(g)
		c := g.m.newComp("main")
		l, r := c.param(tc.lhs, "lhs"), c.param(tc.rhs, "rhs")
		c.finish(c.call(callee, tc.out, []value{l, r}), true)
		mod, err := hlo.ParseModule("einsum.hlo", g.m.text())
		require.NoError(t, err, tc.spec)
		require.NoError(t, hlo.Verify(mod), tc.spec)
		args := eval.RandomArgs(mod, rand.New(rand.NewPCG(3, 5)))
		out, err := eval.Computation(mod.Entry, args)
		require.NoError(t, err, tc.spec)
		want := einsumRef(tc.spec, sizes, f32s(args[0]), f32s(args[1]))
		got := f32s(out)
		require.Len(t, got, len(want), tc.spec)
		for i := range want {
			require.InDelta(t, want[i], got[i], 1e-4*(1+math.Abs(want[i])), "%s element %d", tc.spec, i)
		}
	}
}
