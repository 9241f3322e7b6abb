package eval

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// --- window attribute ---

// winDim is one dimension of an XLA Window: size, stride, padding (which
// may be negative), base (lhs) dilation, window (rhs) dilation and
// reversal.
type winDim struct {
	size, stride, padLo, padHi, lhsDil, rhsDil int64
	rev                                        bool
}

// maxWindowValue bounds every number of a window attribute (XLA's are
// int64, but no real window comes near this) so that the index arithmetic
// below cannot overflow.
const maxWindowValue = 1<<31 - 1

// parseWindow parses the instruction's window attribute, printed by XLA as
// {size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=2x2 rhs_dilate=1x1
// rhs_reversal=0x1}. As XLA's parser does, it requires size= and defaults
// the other fields (stride 1, pad 0_0, dilations 1, no reversal); a missing
// window attribute (XLA prints none for a zero-dimension window) or {} is a
// window of no dimensions.
func parseWindow(in *hlo.Instruction) ([]winDim, error) {
	v, ok := in.Attr("window")
	if !ok {
		return nil, nil
	}
	s := strings.TrimSpace(v)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("bad window %q", v)
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	if s == "" {
		return nil, nil
	}
	fields := map[string][]int64{}
	var pads [][2]int64
	for _, f := range strings.Fields(s) {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("bad window field %q in %q", f, v)
		}
		if _, dup := fields[key]; dup || key == "pad" && pads != nil {
			return nil, fmt.Errorf("window field %s given twice in %q", key, v)
		}
		switch key {
		case "size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal":
			var nums []int64
			for _, p := range strings.Split(val, "x") {
				n, err := parseWindowInt(p)
				if err != nil {
					return nil, fmt.Errorf("bad window %s=%s", key, val)
				}
				nums = append(nums, n)
			}
			fields[key] = nums
		case "pad":
			pads = [][2]int64{}
			for _, p := range strings.Split(val, "x") {
				lo, hi, ok := strings.Cut(p, "_")
				a, err1 := parseWindowInt(lo)
				b, err2 := parseWindowInt(hi)
				if !ok || err1 != nil || err2 != nil {
					return nil, fmt.Errorf("bad window pad=%s", val)
				}
				pads = append(pads, [2]int64{a, b})
			}
		default:
			return nil, fmt.Errorf("unknown window field %q in %q", key, v)
		}
	}
	size, ok := fields["size"]
	if !ok {
		return nil, fmt.Errorf("window %q has no size", v)
	}
	n := len(size)
	for _, k := range []string{"stride", "lhs_dilate", "rhs_dilate", "rhs_reversal"} {
		if nums, ok := fields[k]; ok && len(nums) != n {
			return nil, fmt.Errorf("window %s= has %d dimensions, size= has %d", k, len(nums), n)
		}
	}
	if pads != nil && len(pads) != n {
		return nil, fmt.Errorf("window pad= has %d dimensions, size= has %d", len(pads), n)
	}
	get := func(key string, i int, def int64) int64 {
		if nums, ok := fields[key]; ok {
			return nums[i]
		}
		return def
	}
	out := make([]winDim, n)
	for i := range out {
		w := winDim{
			size:   size[i],
			stride: get("stride", i, 1),
			lhsDil: get("lhs_dilate", i, 1),
			rhsDil: get("rhs_dilate", i, 1),
		}
		if pads != nil {
			w.padLo, w.padHi = pads[i][0], pads[i][1]
		}
		switch get("rhs_reversal", i, 0) {
		case 0:
		case 1:
			w.rev = true
		default:
			return nil, fmt.Errorf("window rhs_reversal must be 0 or 1 in %q", v)
		}
		// InferWindowOutputShape's checks.
		if w.size <= 0 || w.stride <= 0 || w.lhsDil <= 0 || w.rhsDil <= 0 {
			return nil, fmt.Errorf("window %q: size, stride and dilations must be positive", v)
		}
		out[i] = w
	}
	return out, nil
}

func parseWindowInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n > maxWindowValue || n < -maxWindowValue {
		return 0, fmt.Errorf("window value %d out of range", n)
	}
	return n, nil
}

// outSize is the number of window positions over a base dimension of n
// elements (XLA's InferWindowOutputShape: DilatedBound, padding, then
// StridedBound of the dilated window).
func (w winDim) outSize(n int64) (int64, error) {
	dilated := int64(0)
	if n > 0 {
		hi, lo := bits.Mul64(uint64(n-1), uint64(w.lhsDil))
		if hi != 0 || lo >= math.MaxInt64/2 {
			return 0, fmt.Errorf("dimension %d dilated by %d is too large", n, w.lhsDil)
		}
		dilated = int64(lo) + 1
	}
	padded := w.padLo + dilated + w.padHi
	if padded < 0 {
		return 0, fmt.Errorf("window padding %d_%d leaves a negative size for dimension %d", w.padLo, w.padHi, n)
	}
	win := (w.size-1)*w.rhsDil + 1
	if padded < win {
		return 0, nil
	}
	return (padded-win)/w.stride + 1, nil
}

// windowOutDims is the output dims of window ws over base dims.
func windowOutDims(ws []winDim, base []int64) ([]int64, error) {
	if len(ws) != len(base) {
		return nil, fmt.Errorf("window has %d dimensions, base has %d", len(ws), len(base))
	}
	out := make([]int64, len(ws))
	for i, w := range ws {
		n, err := w.outSize(base[i])
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// tap is one window element that lands on a base element: in is the base
// element's offset, k the kernel element's offset (convolution only).
type tap struct{ in, k int }

// windowTaps lists, for a window position, the taps that land on base
// elements, skipping padding and base-dilation holes, in row-major window
// order (the first window dimension outermost): the order in which XLA's
// HloEvaluator visits them (IterateThroughWindow for reduce-window, the
// rhs_spatial_index loop of HandleConvolution). Its buffers are reused from
// call to call.
type windowTaps struct {
	dims     []winDim
	inSize   []int64 // base size per window dimension
	inStride []int64 // base element stride per window dimension
	kStride  []int64 // kernel element stride per window dimension, or nil
	dimTaps  [][]tap
	a, b     []tap
}

func newWindowTaps(dims []winDim, inSize, inStride, kStride []int64) *windowTaps {
	return &windowTaps{dims: dims, inSize: inSize, inStride: inStride, kStride: kStride, dimTaps: make([][]tap, len(dims))}
}

// at returns the taps of the window at output position pos; the slice is
// valid until the next call.
func (w *windowTaps) at(pos []int64) []tap {
	cur := append(w.a[:0], tap{})
	for d, wd := range w.dims {
		dt := w.dimTaps[d][:0]
		base := pos[d]*wd.stride - wd.padLo
		for k := int64(0); k < wd.size; k++ {
			u := base + k*wd.rhsDil
			if wd.lhsDil > 1 {
				if u%wd.lhsDil != 0 {
					continue // a hole of the dilated base
				}
				u /= wd.lhsDil
			}
			if u < 0 || u >= w.inSize[d] {
				continue // padding
			}
			var ko int64
			if w.kStride != nil {
				kk := k
				if wd.rev {
					kk = wd.size - 1 - k
				}
				ko = kk * w.kStride[d]
			}
			dt = append(dt, tap{int(u * w.inStride[d]), int(ko)})
		}
		w.dimTaps[d] = dt
		next := w.b[:0]
		for _, c := range cur {
			for _, t := range dt {
				next = append(next, tap{c.in + t.in, c.k + t.k})
			}
		}
		w.a, w.b = next, cur
		cur = next
	}
	w.a = cur
	return cur
}

// --- convolution ---

// convDims is a parsed dim_labels attribute: the batch, feature and
// spatial dimensions of the input (lhs), kernel (rhs) and output.
type convDims struct {
	inB, inF   int
	inS        []int
	kI, kO     int
	kS         []int
	outB, outF int
	outS       []int
}

// parseDimLabels parses dim_labels such as b01f_01io->b01f: lhs letters b
// and f, kernel letters i and o, output letters b and f, and the spatial
// dimensions numbered from 0 in each part, each exactly once.
func parseDimLabels(s string) (*convDims, error) {
	bad := func() (*convDims, error) { return nil, fmt.Errorf("bad dim_labels %q", s) }
	ops, out, ok := strings.Cut(s, "->")
	if !ok {
		return bad()
	}
	lhs, rhs, ok := strings.Cut(ops, "_")
	if !ok || len(lhs) < 2 || len(rhs) != len(lhs) || len(out) != len(lhs) {
		return bad()
	}
	nsp := len(lhs) - 2
	if nsp > 10 {
		return bad()
	}
	part := func(p string, a, b byte) (int, int, []int, bool) {
		ia, ib := -1, -1
		sp := make([]int, nsp)
		for i := range sp {
			sp[i] = -1
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			switch {
			case c == a && ia < 0:
				ia = i
			case c == b && ib < 0:
				ib = i
			case c >= '0' && int(c-'0') < nsp && sp[c-'0'] < 0:
				sp[c-'0'] = i
			default:
				return 0, 0, nil, false
			}
		}
		return ia, ib, sp, ia >= 0 && ib >= 0
	}
	var d convDims
	var ok1, ok2, ok3 bool
	d.inB, d.inF, d.inS, ok1 = part(lhs, 'b', 'f')
	d.kI, d.kO, d.kS, ok2 = part(rhs, 'i', 'o')
	d.outB, d.outF, d.outS, ok3 = part(out, 'b', 'f')
	if !ok1 || !ok2 || !ok3 {
		return bad()
	}
	return &d, nil
}

// groupCount reads feature_group_count or batch_group_count (default 1).
func groupCount(in *hlo.Instruction, name string) (int64, error) {
	v, ok := in.Attr(name)
	if !ok {
		return 1, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad %s %q", name, v)
	}
	return n, nil
}

// convRun is a run of output features [s, e) that read the same input
// feature group and batch group: the lhs offset of both is off.
type convRun struct{ s, e, off int }

// convPlan is a convolution's index arithmetic, worked out once.
type convPlan struct {
	bOut   int     // output batch
	outSp  []int64 // output spatial dims
	oz     int     // output features
	ifg    int     // input features per group (the kernel's input features)
	stB    int     // lhs batch stride
	stF    int     // lhs feature stride
	runs   []convRun
	taps   *windowTaps
	outPos int // product of outSp
}

// convCore computes the convolution with lhs l (logical row-major) and the
// kernel r arranged as [spatial..., input feature, output feature], into
// an output arranged as [batch, spatial..., output feature]. Each output
// element sums over the window taps in row-major order, then over the input
// features of its group in increasing order, as XLA's HloEvaluator does.
// The product is converted to T before it is added so that the compiler
// does not fuse the multiply-add: results are the same on every platform.
func convCore[T float32 | float64 | int64](p *convPlan, l, r []T) []T {
	out := make([]T, p.bOut*p.outPos*p.oz)
	pos := make([]int64, len(p.outSp))
	oz, ifg, stF := p.oz, p.ifg, p.stF
	for b := 0; b < p.bOut; b++ {
		for i := range pos {
			pos[i] = 0
		}
		for q := 0; q < p.outPos; q++ {
			row := out[(b*p.outPos+q)*oz : (b*p.outPos+q+1)*oz]
			for _, t := range p.taps.at(pos) {
				rk := r[t.k : t.k+ifg*oz]
				lb := b*p.stB + t.in
				for _, run := range p.runs {
					acc := row[run.s:run.e]
					l0 := lb + run.off
					j := 0
					// Four input features at a time; each acc[o] still
					// adds their products one by one, in order.
					for ; j+4 <= ifg; j += 4 {
						v0, v1, v2, v3 := l[l0+j*stF], l[l0+(j+1)*stF], l[l0+(j+2)*stF], l[l0+(j+3)*stF]
						r0 := rk[j*oz+run.s : j*oz+run.e]
						r1 := rk[(j+1)*oz+run.s : (j+1)*oz+run.e]
						r2 := rk[(j+2)*oz+run.s : (j+2)*oz+run.e]
						r3 := rk[(j+3)*oz+run.s : (j+3)*oz+run.e]
						r0, r1, r2, r3 = r0[:len(acc)], r1[:len(acc)], r2[:len(acc)], r3[:len(acc)]
						for o, a := range acc {
							a += T(v0 * r0[o])
							a += T(v1 * r1[o])
							a += T(v2 * r2[o])
							a += T(v3 * r3[o])
							acc[o] = a
						}
					}
					for ; j < ifg; j++ {
						lv := l[l0+j*stF]
						rr := rk[j*oz+run.s : j*oz+run.e]
						rr = rr[:len(acc)]
						for o := range acc {
							acc[o] += T(lv * rr[o])
						}
					}
				}
			}
			nextIndex(pos, p.outSp)
		}
	}
	return out
}

// convGeometry is a convolution's dimensions as its attributes and
// operands give them, checked against each other and the result.
type convGeometry struct {
	dn          *convDims
	ws          []winDim
	base, outSp []int64 // input and output spatial sizes
	inB, kI, kO int64   // input batch, kernel input and output features
	fgc, bgc    int64   // feature and batch group counts
}

// convolutionGeometry reads and checks in's dim_labels, group counts and
// window against the operands' dims xd (input) and yd (kernel) and the
// result's.
func convolutionGeometry(in *hlo.Instruction, xd, yd []int64) (convGeometry, error) {
	labels, ok := in.Attr("dim_labels")
	if !ok {
		return convGeometry{}, fmt.Errorf("convolution has no dim_labels")
	}
	dn, err := parseDimLabels(strings.TrimSpace(labels))
	if err != nil {
		return convGeometry{}, err
	}
	nsp := len(dn.inS)
	if len(xd) != nsp+2 || len(yd) != nsp+2 || len(in.Shape.Dims) != nsp+2 {
		return convGeometry{}, fmt.Errorf("dim_labels %s for ranks %d, %d -> %d", labels, len(xd), len(yd), len(in.Shape.Dims))
	}
	fgc, err := groupCount(in, "feature_group_count")
	if err != nil {
		return convGeometry{}, err
	}
	bgc, err := groupCount(in, "batch_group_count")
	if err != nil {
		return convGeometry{}, err
	}
	if fgc > 1 && bgc > 1 {
		return convGeometry{}, fmt.Errorf("feature_group_count %d and batch_group_count %d cannot both exceed 1", fgc, bgc)
	}
	ws, err := parseWindow(in)
	if err != nil {
		return convGeometry{}, err
	}
	if len(ws) != nsp {
		return convGeometry{}, fmt.Errorf("window has %d dimensions, convolution has %d spatial dimensions", len(ws), nsp)
	}
	inB, inF := xd[dn.inB], xd[dn.inF]
	kI, kO := yd[dn.kI], yd[dn.kO]
	switch {
	case kO%bgc != 0:
		return convGeometry{}, fmt.Errorf("output features %d not a multiple of batch_group_count %d", kO, bgc)
	case inF%fgc != 0 || inF/fgc != kI:
		return convGeometry{}, fmt.Errorf("input features %d / feature_group_count %d != kernel input features %d", inF, fgc, kI)
	case kO%fgc != 0:
		return convGeometry{}, fmt.Errorf("output features %d not a multiple of feature_group_count %d", kO, fgc)
	case inB%bgc != 0:
		return convGeometry{}, fmt.Errorf("input batch %d not a multiple of batch_group_count %d", inB, bgc)
	}
	base := make([]int64, nsp)
	for i := range ws {
		if ws[i].size != yd[dn.kS[i]] {
			return convGeometry{}, fmt.Errorf("window size %d differs from kernel spatial dimension %d", ws[i].size, yd[dn.kS[i]])
		}
		base[i] = xd[dn.inS[i]]
	}
	outSp, err := windowOutDims(ws, base)
	if err != nil {
		return convGeometry{}, err
	}
	want := make([]int64, nsp+2)
	want[dn.outB] = inB / bgc
	want[dn.outF] = kO
	for i, d := range dn.outS {
		want[d] = outSp[i]
	}
	for i, d := range want {
		if in.Shape.Dims[i] != d {
			return convGeometry{}, fmt.Errorf("result dims %v, convolution gives %v", in.Shape.Dims, want)
		}
	}

	return convGeometry{dn: dn, ws: ws, base: base, outSp: outSp, inB: inB, kI: kI, kO: kO, fgc: fgc, bgc: bgc}, nil
}

// evalConvolution evaluates convolution with XLA's semantics (operation
// semantics "Conv"; HloEvaluatorTypedVisitor::HandleConvolution, whose
// indexing this follows, and ShapeInference::InferConvolveShape, whose
// checks it makes). Operands are first converted to the result type, as
// XLA does; floating results other than f64 accumulate in f32 (as dot
// does here and XLA's evaluator does for f32, f16 and bf16), f64 in f64,
// integers in 64-bit two's complement truncated to the result type.
func evalConvolution(in *hlo.Instruction, ops []Literal) (Literal, error) {
	x, y := ops[0], ops[1]
	t := in.Shape.Elem
	if err := checkNumeric(in, t, x.Shape.Elem, y.Shape.Elem); err != nil {
		return Literal{}, err
	}
	if isFloat(t) != isFloat(x.Shape.Elem) || isFloat(t) != isFloat(y.Shape.Elem) || t == hlo.PRED || x.Shape.Elem == hlo.PRED || y.Shape.Elem == hlo.PRED {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s for types %s, %s -> %s", in.OpName(), x.Shape.Elem, y.Shape.Elem, t)
	}
	cg, err := convolutionGeometry(in, x.Shape.Dims, y.Shape.Dims)
	if err != nil {
		return Literal{}, err
	}
	dn, ws, base, outSp := cg.dn, cg.ws, cg.base, cg.outSp
	inB, kI, kO, fgc, bgc := cg.inB, cg.kI, cg.kO, cg.fgc, cg.bgc
	nsp := len(dn.inS)
	xd, yd := x.Shape.Dims, y.Shape.Dims
	// The kernel as [spatial..., input feature, output feature].
	rPerm := make([]int64, 0, nsp+2)
	for _, d := range dn.kS {
		rPerm = append(rPerm, int64(d))
	}
	rPerm = append(rPerm, int64(dn.kI), int64(dn.kO))
	rDims := make([]int64, nsp+2)
	for i, d := range rPerm {
		rDims[i] = yd[d]
	}
	rSt := strides(rDims)
	xSt := strides(xd)
	inStride := make([]int64, nsp)
	for i, d := range dn.inS {
		inStride[i] = xSt[d]
	}
	p := &convPlan{
		bOut: int(inB / bgc), outSp: outSp, oz: int(kO), ifg: int(kI),
		stB: int(xSt[dn.inB]), stF: int(xSt[dn.inF]),
		taps:   newWindowTaps(ws, base, inStride, rSt[:nsp]),
		outPos: 1,
	}
	for _, n := range outSp {
		p.outPos *= int(n)
	}
	// Output feature oz reads input features [g*kI, (g+1)*kI) of feature
	// group g = oz / (kO/fgc) and, with batch groups, input batch
	// b + h*(inB/bgc) of batch group h = oz / (kO/bgc).
	prev := [2]int64{-1, -1}
	for oz := int64(0); oz < kO; oz++ {
		g, h := oz/(kO/fgc), int64(0)
		if bgc > 1 {
			h = oz / (kO / bgc)
		}
		if [2]int64{g, h} != prev {
			p.runs = append(p.runs, convRun{s: int(oz), off: int(g*kI*xSt[dn.inF] + h*(inB/bgc)*xSt[dn.inB])})
			prev = [2]int64{g, h}
		}
		p.runs[len(p.runs)-1].e = int(oz + 1)
	}
	// The output, [batch, spatial..., feature], transposed to its dims.
	cDims := append(append([]int64{int64(p.bOut)}, outSp...), kO)
	oPerm := make([]int64, nsp+2)
	oPerm[dn.outB] = 0
	oPerm[dn.outF] = int64(nsp + 1)
	for i, d := range dn.outS {
		oPerm[d] = int64(i + 1)
	}

	if !isFloat(t) {
		v, err := logicalAll(logicalI, x, y)
		if err != nil {
			return Literal{}, err
		}
		for i, o := range []Literal{x, y} {
			if o.Shape.Elem != t {
				mapInPlace(v[i], func(a int64) int64 { return normI(t, a) })
			}
		}
		c := convCore(p, v[0], permute(v[1], yd, rPerm))
		return outI(in.Shape, permute(c, cDims, oPerm))
	}
	v, err := logicalAll(logicalF, x, y)
	if err != nil {
		return Literal{}, err
	}
	for i, o := range []Literal{x, y} {
		if o.Shape.Elem != t {
			mapInPlace(v[i], func(a float64) float64 { return roundF(t, a) })
		}
	}
	if t == hlo.F64 {
		c := convCore(p, v[0], permute(v[1], yd, rPerm))
		return outF(in.Shape, permute(c, cDims, oPerm))
	}
	l := convertSlice[float64, float32](v[0])
	r := convertSlice[float64, float32](permute(v[1], yd, rPerm))
	c := convertSlice[float32, float64](convCore(p, l, r))
	return outF(in.Shape, permute(c, cDims, oPerm))
}

// --- reduce-window ---

// foldWindows folds, for each of the m output elements, the elements xs of
// its window taps into init with f.
func foldWindows[T any](m int, fold func(func(o int, ts []tap) error) error, xs []T, init T, f func(a, b T) T) []T {
	out := make([]T, m)
	_ = fold(func(o int, ts []tap) error {
		acc := init
		for _, tp := range ts {
			acc = f(acc, xs[tp.in])
		}
		out[o] = acc
		return nil
	})
	return out
}

// reduceWindow evaluates a single-input reduce-window. Each output element
// starts from the init value and folds in, with to_apply(accumulator,
// element), the input elements its window covers, in row-major window
// order. Window positions on padding or on base-dilation holes are skipped,
// not fed the init value: that is what XLA's HloEvaluator
// (IterateThroughWindow, "we index a 0 (pad or hole), and we don't need to
// apply the callback") and CPU backend (IrEmitter::HandleReduceWindow: "We
// are not in the padding, so carry out the computation") do, although
// xla_data.proto's WindowDimension says reduce-window pads with the init
// value; the two agree when init is the reducer's identity.
func (ev *Evaluator) reduceWindow(in *hlo.Instruction, ops []Literal) (Literal, error) {
	x, init, err := reduceOperands(in, ops)
	if err != nil {
		return Literal{}, err
	}
	t := in.Shape.Elem
	ws, err := parseWindow(in)
	if err != nil {
		return Literal{}, err
	}
	outDims, err := windowOutDims(ws, x.Shape.Dims)
	if err != nil {
		return Literal{}, err
	}
	if !hlo.SameDims(hlo.Shape{Elem: t, Dims: outDims}, in.Shape) {
		return Literal{}, fmt.Errorf("result dims %v, window gives %v", in.Shape.Dims, outDims)
	}
	taps := newWindowTaps(ws, x.Shape.Dims, strides(x.Shape.Dims), nil)
	m := elemCount(in.Shape)
	pos := make([]int64, len(outDims))
	// fold calls f(o, taps) for each output element o in row-major order.
	fold := func(f func(o int, ts []tap) error) error {
		for o := 0; o < m; o++ {
			if err := f(o, taps.at(pos)); err != nil {
				return err
			}
			nextIndex(pos, outDims)
		}
		return nil
	}
	if op, simple := simpleReducer(in.ToApply(), t); simple {
		ff, fi := foldFuncs(op, t)
		if ff != nil {
			v, err := logicalAll(logicalF, x, init)
			if err != nil {
				return Literal{}, err
			}
			return outF(in.Shape, foldWindows(m, fold, v[0], v[1][0], ff))
		}
		v, err := logicalAll(logicalI, x, init)
		if err != nil {
			return Literal{}, err
		}
		return outI(in.Shape, foldWindows(m, fold, v[0], v[1][0], fi))
	}
	c := in.ToApply()
	if c == nil {
		return Literal{}, fmt.Errorf("reduce-window has no to_apply computation")
	}
	xb, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	scalar := hlo.Shape{Elem: t}
	out := make([]byte, m*w)
	err = fold(func(o int, ts []tap) error {
		acc := Literal{Shape: scalar, Data: init.Data}
		for _, tp := range ts {
			e := Literal{Shape: scalar, Data: xb[tp.in*w : (tp.in+1)*w]}
			var err error
			if acc, err = ev.reduceStep(c, t, acc, e); err != nil {
				return err
			}
		}
		copy(out[o*w:], acc.Data)
		return nil
	})
	if err != nil {
		return Literal{}, err
	}
	return fromLogical(in.Shape, out)
}
