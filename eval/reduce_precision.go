package eval

import (
	"fmt"
	"strconv"

	"github.com/hlomem/hlomem/hlo"
)

// reduce-precision rounds each element of a float array to the number of
// exponent and mantissa bits it names, keeping the element type: the
// bit-level algorithm of XLA's HloEvaluator (HandleReducePrecision in
// hlo_evaluator_typed_visitor.h), which follows the CPU and GPU emitters.
// The mantissa is rounded to nearest, ties to even, by adding a bias and
// masking (a carry into the exponent is right); then an exponent above the
// reduced range becomes a signed infinity and one at or below its bottom a
// signed zero (denormals are flushed, not rounded). A NaN stays the same
// NaN, or becomes +inf when no mantissa bit is kept.

// floatBits are the exponent and mantissa widths of a float type.
var floatBits = map[hlo.ElementType]struct{ exp, mant uint }{
	hlo.F16:  {5, 10},
	hlo.BF16: {8, 7},
	hlo.F32:  {8, 23},
	hlo.F64:  {11, 52},
}

func evalReducePrecision(in *hlo.Instruction, x Literal) (Literal, error) {
	t := in.Shape.Elem
	src, ok := floatBits[t]
	if !ok {
		return Literal{}, cannotEval(in, t)
	}
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	bits := func(name string, min int) (uint, error) {
		v, ok := in.Attr(name)
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < min {
			return 0, fmt.Errorf("bad %s %q", name, v)
		}
		return uint(n), nil
	}
	exp, err := bits("exponent_bits", 1)
	if err != nil {
		return Literal{}, err
	}
	mant, err := bits("mantissa_bits", 0)
	if err != nil {
		return Literal{}, err
	}
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	out := make([]byte, len(b))
	for i := 0; i < len(b); i += w {
		v := readRaw(b[i:i+w], w)
		v = reducePrecisionBits(v, uint(8*w), src.exp, src.mant, exp, mant)
		writeRaw(out[i:i+w], w, v)
	}
	return fromLogical(in.Shape, out)
}

// reducePrecisionBits is reduce-precision on one element's bits, of a
// float of n bits with srcExp exponent and srcMant mantissa bits.
func reducePrecisionBits(v uint64, n, srcExp, srcMant, exp, mant uint) uint64 {
	expMask := (uint64(1)<<srcExp - 1) << srcMant
	signMask := uint64(1) << (n - 1)
	isNaN := v&expMask == expMask && v&(uint64(1)<<srcMant-1) != 0
	orig := v
	if mant < srcMant {
		last := uint64(1) << (srcMant - mant)
		bias := (last >> 1) - 1 + (v&last)>>(srcMant-mant)
		v = (v + bias) &^ (last - 1)
		if n < 64 {
			v &= uint64(1)<<n - 1
		}
	}
	if exp < srcExp {
		bias := uint64(1)<<(srcExp-1) - 1
		reduced := uint64(1)<<(exp-1) - 1
		e := v & expMask
		zero := v & signMask
		switch {
		case e <= (bias-reduced)<<srcMant:
			v = zero
		case e > (bias+reduced)<<srcMant:
			v = zero | expMask
		}
	}
	if isNaN {
		if mant > 0 {
			return orig
		}
		return expMask // +inf
	}
	return v
}
