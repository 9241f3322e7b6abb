package cost

import (
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// winDim is one dimension of a window attribute.
type winDim struct {
	size, stride, padLo, padHi, baseDil, winDil int64
}

func attr(in *hlo.Instruction, name string) string {
	v, _ := in.Attr(name)
	return v
}

// intList parses "{1,2,3}" or "1x2x3"-free comma lists; bad entries are
// skipped.
func intList(s string) []int64 {
	s = strings.Trim(strings.TrimSpace(s), "{}")
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// parseWindow reads window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=..
// rhs_dilate=..}; fields default as in XLA's parser (stride and dilations
// 1, pad 0). It returns false when the attribute is malformed.
func parseWindow(in *hlo.Instruction) ([]winDim, bool) {
	v, ok := in.Attr("window")
	if !ok {
		return nil, true
	}
	s := strings.Trim(strings.TrimSpace(v), "{}")
	fields := map[string][]string{}
	for _, f := range strings.Fields(s) {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return nil, false
		}
		fields[key] = strings.Split(val, "x")
	}
	sizes := fields["size"]
	dims := make([]winDim, len(sizes))
	num := func(key string, i int, def int64) (int64, bool) {
		vs, ok := fields[key]
		if !ok {
			return def, true
		}
		if i >= len(vs) {
			return 0, false
		}
		n, err := strconv.ParseInt(vs[i], 10, 64)
		return n, err == nil
	}
	for i := range dims {
		d := &dims[i]
		var oks [5]bool
		d.size, oks[0] = num("size", i, 1)
		d.stride, oks[1] = num("stride", i, 1)
		d.baseDil, oks[2] = num("lhs_dilate", i, 1)
		d.winDil, oks[3] = num("rhs_dilate", i, 1)
		oks[4] = true
		if p, ok := fields["pad"]; ok {
			lo, hi, cut := "", "", false
			if i < len(p) {
				lo, hi, cut = strings.Cut(p[i], "_")
			}
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.ParseInt(hi, 10, 64)
			oks[4] = cut && err1 == nil && err2 == nil
			d.padLo, d.padHi = a, b
		}
		for _, ok := range oks {
			if !ok {
				return nil, false
			}
		}
	}
	return dims, true
}

// reduceWindowCount is HandleReduceWindow's reduction count: (window
// elements − 1) × output elements, or, for a window that reduces one
// padded dimension and broadcasts it back (size 2p+1, pad p_p, p = that
// dimension's size − 1), output/size + size − 1.
func reduceWindowCount(in *hlo.Instruction) int64 {
	dims, _ := parseWindow(in)
	out := in.Shape
	if out.IsTuple() && len(out.Tuple) > 0 {
		out = out.Tuple[0]
	}
	outElems := elems(out)
	win := int64(1)
	reducing, padded := 0, 0
	for _, d := range dims {
		win = mul(win, max(d.size, 0))
		if d.size != 1 {
			reducing++
		}
		if d.padLo != 0 || d.padHi != 0 {
			padded++
		}
	}
	if reducing == 1 && padded == 1 && in.Shape.IsArray() {
		for i, d := range dims {
			if d.size != 1 && d.padLo != 0 && d.padLo == d.padHi && d.size == 2*d.padLo+1 {
				if i < len(out.Dims) && d.padLo == out.Dims[i]-1 && out.Dims[i] > 0 {
					n := out.Dims[i]
					return add(outElems/n, n-1)
				}
				break
			}
		}
	}
	return mul(win-1, outElems)
}

// convLabels holds a convolution's dim_labels: the batch and feature
// dimensions of the input, the output feature dimension, and the spatial
// dimensions of input, kernel and output in window order.
type convLabels struct {
	inBatch, inFeature, outFeature  int
	inSpatial, kSpatial, outSpatial []int
}

// parseDimLabels parses dim_labels such as b01f_01io->b01f.
func parseDimLabels(s string) (convLabels, bool) {
	lhs, rest, ok1 := strings.Cut(s, "_")
	rhs, out, ok2 := strings.Cut(rest, "->")
	if !ok1 || !ok2 {
		return convLabels{}, false
	}
	l := convLabels{inBatch: strings.IndexByte(lhs, 'b'), inFeature: strings.IndexByte(lhs, 'f'),
		outFeature: strings.IndexByte(out, 'f')}
	n := len(lhs) - 2
	if n < 0 || len(rhs) != n+2 || len(out) != n+2 || l.inBatch < 0 || l.inFeature < 0 || l.outFeature < 0 {
		return convLabels{}, false
	}
	for i := 0; i < n; i++ {
		c := byte('0' + i)
		a, b, o := strings.IndexByte(lhs, c), strings.IndexByte(rhs, c), strings.IndexByte(out, c)
		if i > 9 || a < 0 || b < 0 || o < 0 {
			return convLabels{}, false
		}
		l.inSpatial = append(l.inSpatial, a)
		l.kSpatial = append(l.kSpatial, b)
		l.outSpatial = append(l.outSpatial, o)
	}
	return l, true
}

func dim(s hlo.Shape, i int) int64 {
	if i < 0 || i >= len(s.Dims) {
		return 0
	}
	return max(s.Dims[i], 0)
}

// maxEnumerate bounds the kernel × output positions counted one by one.
const maxEnumerate = 1 << 22

// validPositions counts the (kernel, output) index pairs of one spatial
// dimension that read an input element (GetConvolutionFlops).
func validPositions(in, k, out int64, w winDim) int64 {
	if in == out && k == out && in == w.baseDil && w.winDil == 1 &&
		max(1, in-1) == w.stride && w.padLo == 0 && w.padHi == 0 {
		return in
	}
	if in == 1 && k == out && w.winDil == 1 && w.baseDil == 1 && w.stride == 1 &&
		w.padHi == out-1 && w.padLo == out-1 {
		return out
	}
	if k > 0 && out > maxEnumerate/k {
		return mul(out, min(k, in))
	}
	var n int64
	for ki := int64(0); ki < k; ki++ {
		for oi := int64(0); oi < out; oi++ {
			u := oi*w.stride - w.padLo + ki*w.winDil
			x := u
			if w.baseDil > 1 {
				x = u / w.baseDil
				if x*w.baseDil != u {
					continue
				}
			}
			if x >= 0 && x < in {
				n++
			}
		}
	}
	return n
}

func groupCount(in *hlo.Instruction, name string) int64 {
	if v, ok := in.Attr(name); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// convolutionFlops is XLA's GetConvolutionFlops.
func convolutionFlops(in *hlo.Instruction, out hlo.Shape) int64 {
	lab, ok := parseDimLabels(attr(in, "dim_labels"))
	if !ok {
		return 0
	}
	lhs, rhs := operandShape(in, 0), operandShape(in, 1)
	win, ok := parseWindow(in)
	if !ok {
		return 0
	}
	positions := int64(1)
	if len(win) != 0 && len(win) != len(lab.inSpatial) {
		return 0
	}
	for i, w := range win {
		if w.stride <= 0 || w.baseDil <= 0 || w.winDil <= 0 {
			return 0
		}
		v := validPositions(dim(lhs, lab.inSpatial[i]), dim(rhs, lab.kSpatial[i]), dim(out, lab.outSpatial[i]), w)
		positions = mul(positions, v)
	}
	fma := mul(mul(dim(lhs, lab.inFeature)/groupCount(in, "feature_group_count"), dim(out, lab.outFeature)),
		mul(dim(lhs, lab.inBatch)/groupCount(in, "batch_group_count"), positions))
	return mul(fma, fmaFlops)
}
