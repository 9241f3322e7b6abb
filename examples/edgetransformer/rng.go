package main

import (
	"fmt"
	"math"
	"strconv"
)

// The parameter initialisation: JAX's threefry PRNG and Haiku's
// TruncatedNormal, written in HLO ops the project's evaluator runs (it does
// not evaluate rng-bit-generator).
//
// What is faithful and what is not:
//   - %threefry2x32 is Threefry-2x32 with 20 rounds (Salmon et al., "Parallel
//     random numbers: as easy as 1, 2, 3", SC 2011; JAX's threefry2x32_p):
//     bit-exact, checked against a Go implementation and the Random123
//     known-answer vectors in the tests. JAX lowers the 20 rounds as a while
//     loop of five 4-round steps; here they are unrolled (same values, no
//     loop), which changes the instruction count, not the memory shape.
//   - Key splitting and random bits follow JAX's partitionable threefry
//     (jax_threefry_partitionable, the default since JAX 0.5): split(key)[i] =
//     threefry(key, (0, i)); the bits of an array of N elements are
//     x0 ^ x1 of threefry(key, (hi, lo)) over the flat element index. The
//     counter is the flat index of the array rather than JAX's per-dimension
//     iota_2x32_shape, which gives the same counters for these row-major
//     shapes.
//   - Haiku's PRNGSequence splits its key once per parameter
//     (DEFAULT_PRNG_RESERVE_SIZE = 1): key, subkey = split(key).
//   - bits -> uniform in [erf(-2/√2), erf(2/√2)) as jax.random.uniform does
//     (mantissa bits | 1.0, minus one, scale and shift, max with the lower
//     bound); truncated normal as jax.random.truncated_normal does: √2 ·
//     erf_inv(u), erf_inv as XLA's single-precision polynomial (Giles), then
//     clipped to the open interval (-2, 2).
//   - Haiku's TruncatedNormal(stddev=s) returns unscaled · s/0.8796... + 0,
//     the factor making the truncated distribution's std equal s.

// Threefry-2x32 rotation constants and key-schedule parity (Random123).
var (
	threefryRot = [2][4]int{{13, 15, 26, 6}, {17, 29, 16, 24}}
)

const threefryParity = 0x1BD11BDA

// truncStdCorrection is the std of a standard normal truncated to (-2, 2):
// Haiku divides the requested stddev by it.
const truncStdCorrection = 0.87962566103423978

// threefry emits (once per n) %threefry2x32(k0, k1, x0[n], x1[n]) -> (y0, y1).
func threefry(m *module, n int64) string {
	return m.cached("threefry2x32/"+strconv.FormatInt(n, 10), func() string {
		c := m.newComp("threefry2x32")
		k0 := c.param(u32(), "Arg_0")
		k1 := c.param(u32(), "Arg_1")
		x0 := c.param(u32(n), "Arg_2")
		x1 := c.param(u32(n), "Arg_3")
		c.at = site{opName: "threefry2x32"}
		ks2 := c.binary("xor", c.binary("xor", k0, k1), c.constant("u32", strconv.Itoa(threefryParity)))
		ks := []value{k0, k1, ks2}
		vec := u32(n)
		x0 = c.binary("add", x0, c.broadcast(k0, vec, nil))
		x1 = c.binary("add", x1, c.broadcast(k1, vec, nil))
		for step := 0; step < 5; step++ {
			for _, r := range threefryRot[step%2] {
				x0 = c.binary("add", x0, x1)
				left := c.binary("shift-left", x1, c.splat(vec, strconv.Itoa(r)))
				right := c.binary("shift-right-logical", x1, c.splat(vec, strconv.Itoa(32-r)))
				x1 = c.binary("xor", x0, c.binary("or", left, right))
			}
			x0 = c.binary("add", x0, c.broadcast(ks[(step+1)%3], vec, nil))
			inj := c.binary("add", ks[(step+2)%3], c.constant("u32", strconv.Itoa(step+1)))
			x1 = c.binary("add", x1, c.broadcast(inj, vec, nil))
		}
		return c.finish(c.tuple([]value{x0, x1}), false)
	})
}

// threefrySplit emits %_threefry_split(key u32[2]) -> u32[2,2]: row i is
// threefry(key, (0, i)).
func threefrySplit(m *module) string {
	return m.cached("split", func() string {
		tf := threefry(m, 2)
		c := m.newComp("_threefry_split")
		key := c.param(u32(2), "Arg_0")
		c.at = site{opName: "threefry_split"}
		k0, k1 := c.slice1(key, 0), c.slice1(key, 1)
		hi := c.splat(u32(2), "0")
		lo := c.op(u32(2), "iota", "iota", nil, "iota_dimension=0")
		out := c.call(tf, shape{tuple: []shape{u32(2), u32(2)}}, []value{k0, k1, hi, lo})
		y0 := c.reshape(c.gte(out, 0), u32(2, 1))
		y1 := c.reshape(c.gte(out, 1), u32(2, 1))
		keys := c.op(u32(2, 2), "concatenate", "concatenate", []value{y0, y1}, "dimensions={1}")
		return c.finish(keys, false)
	})
}

// uniformBits emits %_uniform(key, lo, hi) -> f32[n]: uniform in [lo, hi).
func uniform(m *module, n int64) string {
	return m.cached("uniform/"+strconv.FormatInt(n, 10), func() string {
		tf := threefry(m, n)
		c := m.newComp("_uniform")
		key := c.param(u32(2), "Arg_0")
		lo := c.param(f32(), "Arg_1")
		hi := c.param(f32(), "Arg_2")
		c.at = site{opName: "random_bits"}
		k0, k1 := c.slice1(key, 0), c.slice1(key, 1)
		idx := c.op(arr("u64", n), "iota", "iota", nil, "iota_dimension=0")
		cHi := c.convert(c.binary("shift-right-logical", idx, c.splat(arr("u64", n), "32")), "u32")
		cLo := c.convert(idx, "u32")
		out := c.call(tf, shape{tuple: []shape{u32(n), u32(n)}}, []value{k0, k1, cHi, cLo})
		bits := c.binary("xor", c.gte(out, 0), c.gte(out, 1))
		c.at = site{opName: "uniform"}
		mant := c.binary("shift-right-logical", bits, c.splat(u32(n), "9"))
		one := c.binary("or", mant, c.splat(u32(n), strconv.Itoa(0x3f800000)))
		fl := c.op(f32(n), "bitcast_convert_type", "bitcast-convert", []value{one}, "")
		unit := c.binary("subtract", fl, c.splat(f32(n), "1"))
		width := c.broadcast(c.binary("subtract", hi, lo), f32(n), nil)
		lov := c.broadcast(lo, f32(n), nil)
		u := c.binary("add", c.binary("multiply", unit, width), lov)
		return c.finish(c.binary("maximum", lov, u), false)
	})
}

// XLA's ErfInv32 coefficients (Giles), highest degree first, for
// w = -log1p(-x²) < 5 and ≥ 5.
var (
	erfInvLt5 = []string{"2.81022636e-08", "3.43273939e-07", "-3.5233877e-06", "-4.39150654e-06",
		"0.00021858087", "-0.00125372503", "-0.00417768164", "0.246640727", "1.50140941"}
	erfInvGe5 = []string{"-0.000200214257", "0.000100950558", "0.00134934322", "-0.00367342844",
		"0.00573950773", "-0.0076224613", "0.00943887047", "1.00167406", "2.83297682"}
)

// erfInv emits erf_inv(x) element-wise as XLA expands it.
func erfInv(c *comp, x value) value {
	sh := x.sh
	c.at = site{opName: "erf_inv"}
	w := c.unary("negate", c.unary("log-plus-one", c.binary("multiply", x, c.unary("negate", x))))
	lt := c.op(sh.with("pred"), "compare", "compare", []value{w, c.splat(sh, "5")}, "direction=LT")
	sel := func(a, b value) value { return c.op(sh, "select", "select", []value{lt, a, b}, "") }
	w = sel(c.binary("subtract", w, c.splat(sh, "2.5")), c.binary("subtract", c.unary("sqrt", w), c.splat(sh, "3")))
	p := sel(c.splat(sh, erfInvLt5[0]), c.splat(sh, erfInvGe5[0]))
	for i := 1; i < len(erfInvLt5); i++ {
		p = c.binary("add", sel(c.splat(sh, erfInvLt5[i]), c.splat(sh, erfInvGe5[i])), c.binary("multiply", p, w))
	}
	res := c.binary("multiply", p, x)
	isOne := c.op(sh.with("pred"), "compare", "compare", []value{c.unary("abs", x), c.splat(sh, "1")}, "direction=EQ")
	return c.op(sh, "select", "select", []value{isOne, c.binary("multiply", x, c.splat(sh, "inf")), res}, "")
}

// truncatedNormal emits %_truncated_normal(key) -> f32[dims]: a standard
// normal truncated to (-2, 2), as jax.random.truncated_normal(key, -2, 2).
func truncatedNormal(m *module, sh shape) string {
	return m.cached("truncated_normal/"+sh.String(), func() string {
		n := sh.elements()
		un := uniform(m, n)
		c := m.newComp("_truncated_normal")
		key := c.param(u32(2), "Arg_0")
		c.at = site{opName: "truncated_normal"}
		sqrt2 := c.constant("f32", fmtF(math.Sqrt2))
		a := c.unary("erf", c.binary("divide", c.constant("f32", "-2"), sqrt2))
		b := c.unary("erf", c.binary("divide", c.constant("f32", "2"), sqrt2))
		c.at = site{opName: "jit(_uniform)"}
		u := c.call(un, f32(n), []value{key, a, b})
		e := erfInv(c, u)
		c.at = site{opName: "truncated_normal"}
		out := c.binary("multiply", e, c.broadcast(sqrt2, f32(n), nil))
		lo := c.splat(f32(n), fmtF(float64(math.Nextafter32(-2, float32(math.Inf(1))))))
		hi := c.splat(f32(n), fmtF(float64(math.Nextafter32(2, float32(math.Inf(-1))))))
		out = c.binary("minimum", c.binary("maximum", out, lo), hi)
		return c.finish(c.reshape(out, sh), false)
	})
}

// fmtF prints a float constant so that it parses back to the same f32.
func fmtF(x float64) string { return strconv.FormatFloat(float64(float32(x)), 'g', -1, 32) }

// nextKey is Haiku's next_rng_key: key, subkey = split(key). It returns the
// new key and the subkey.
func nextKey(c *comp, key value) (value, value) {
	split := threefrySplit(c.m)
	keys := c.call(split, u32(2, 2), []value{key})
	row := func(i int64) value {
		s := c.op(u32(1, 2), "slice", "slice", []value{keys}, fmt.Sprintf("slice={[%d:%d], [0:2]}", i, i+1))
		return c.reshape(s, u32(2))
	}
	return row(0), row(1)
}
