package eval

// Sort, rng, map and variadic reduce: the opcodes that call a computation
// per element (or per pair of elements) or draw random numbers.
//
// The semantics follow XLA's HloEvaluator (xla/hlo/evaluator/
// hlo_evaluator.cc, HandleSort and HandleReduce with PerformReductionStep;
// hlo_evaluator_typed_visitor.h, HandleRng) and the total order of
// compare type=TOTALORDER that XLA's ComparisonExpander
// (xla/service/comparison_expander.cc) lowers to an integer compare.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// --- sort ---

// sort evaluates sort(x0, ..., x{N-1}), dimensions={d}, to_apply=cmp.
//
// As in XLA's HandleSort, every row along dimension d is sorted on its own;
// the N operands are permuted together; the comparator takes 2N scalars,
// parameters 2k and 2k+1 being the two elements of operand k being
// compared (the "lhs" and "rhs"), and returns pred[] "lhs goes first". One
// operand gives an array, several a tuple.
//
// XLA uses std::stable_sort when is_stable=true and std::sort otherwise.
// Here the sort is always the same stable merge sort (mergeSort): a stable
// result is a valid unstable one, and the result is then a function of the
// comparator's answers alone, also for a comparator that is not a strict
// weak order (an IEEE compare meeting a NaN), where two correct sorting
// algorithms may disagree and XLA's result depends on its library.
//
// A comparator that is ROOT compare(p[2k], p[2k+1]) (either order, any
// direction, with or without type=) is computed directly on the elements
// of operand k instead of through the computation; it gives the same
// permutation the computation would (see sortFast).
func (ev *Evaluator) sort(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) == 0 {
		return Literal{}, errors.New("sort without operands")
	}
	for k, o := range ops {
		if o.IsTuple() {
			return Literal{}, fmt.Errorf("operand %d is a tuple", k)
		}
		if !numericType(o.Shape.Elem) && !o.Shape.Elem.IsComplex() {
			return Literal{}, cannotEval(in, o.Shape.Elem)
		}
		if !hlo.SameDims(o.Shape, ops[0].Shape) {
			return Literal{}, fmt.Errorf("operand %d dims %v differ from operand 0 dims %v", k, o.Shape.Dims, ops[0].Shape.Dims)
		}
	}
	// The result: the operand's shape, or the tuple of the operands' shapes.
	outShapes := []hlo.Shape{in.Shape}
	if len(ops) > 1 {
		if !in.Shape.IsTuple() || len(in.Shape.Tuple) != len(ops) {
			return Literal{}, fmt.Errorf("sort of %d operands has shape %s, want a tuple of %d arrays", len(ops), in.Shape, len(ops))
		}
		outShapes = in.Shape.Tuple
	}
	for k, s := range outShapes {
		if !s.IsArray() || s.Elem != ops[k].Shape.Elem || !hlo.SameDims(s, ops[k].Shape) {
			return Literal{}, fmt.Errorf("result %d has shape %s, operand %d is %s", k, s, k, ops[k].Shape.StringNoLayout())
		}
	}
	dims := ops[0].Shape.Dims
	if len(in.Dimensions) != 1 || in.Dimensions[0] < 0 || int(in.Dimensions[0]) >= len(dims) {
		return Literal{}, fmt.Errorf("bad sort dimensions %v for rank %d", in.Dimensions, len(dims))
	}
	if s, ok := in.Attr("is_stable"); ok && s != "true" && s != "false" {
		return Literal{}, fmt.Errorf("bad is_stable=%s", s)
	}
	c := in.ToApply()
	if err := checkComparator(c, ops); err != nil {
		return Literal{}, err
	}

	src := make([][]byte, len(ops))
	widths := make([]int, len(ops))
	for k, o := range ops {
		b, w, err := o.logical()
		if err != nil {
			return Literal{}, err
		}
		src[k], widths[k] = b, w
	}
	d := int(in.Dimensions[0])
	n := int(dims[d])
	if n > math.MaxInt32 {
		return Literal{}, fmt.Errorf("cannot sort rows of %d elements", n)
	}
	inner := 1
	for _, x := range dims[d+1:] {
		inner *= int(x)
	}
	total := elemCount(ops[0].Shape)
	outer := 0
	if n > 0 && inner > 0 {
		outer = total / (n * inner)
	}
	dst := make([][]byte, len(ops))
	for k := range ops {
		dst[k] = make([]byte, len(src[k]))
	}
	fast := fastComparatorOf(c, ops)
	s := newRowSorter(n)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			base := o*n*inner + i
			var err error
			if fast != nil {
				s.sortFast(fast, src[fast.key], widths[fast.key], base, inner)
			} else {
				err = s.sortGeneral(ev, c, ops, src, widths, base, inner)
			}
			if err != nil {
				return Literal{}, err
			}
			for k := range ops {
				permuteRow(dst[k], src[k], widths[k], s.perm, base, inner)
			}
		}
	}
	outs := make([]Literal, len(ops))
	for k := range ops {
		l, err := fromLogical(outShapes[k], dst[k])
		if err != nil {
			return Literal{}, err
		}
		outs[k] = l
	}
	if len(ops) == 1 {
		return outs[0], nil
	}
	return TupleLiteral(outs...), nil
}

// permuteRow sets row element j of dst (the row at base, stride inner, of
// elements of w bytes) to row element perm[j] of src.
func permuteRow(dst, src []byte, w int, perm []int32, base, inner int) {
	switch w {
	case 4:
		for j, p := range perm {
			from, to := (base+int(p)*inner)*4, (base+j*inner)*4
			binary.LittleEndian.PutUint32(dst[to:to+4], binary.LittleEndian.Uint32(src[from:from+4]))
		}
	case 8:
		for j, p := range perm {
			from, to := (base+int(p)*inner)*8, (base+j*inner)*8
			binary.LittleEndian.PutUint64(dst[to:to+8], binary.LittleEndian.Uint64(src[from:from+8]))
		}
	default:
		for j, p := range perm {
			from, to := (base+int(p)*inner)*w, (base+j*inner)*w
			copy(dst[to:to+w], src[from:from+w])
		}
	}
}

// checkComparator checks that c takes two scalars of each operand's type,
// in operand order, and returns pred[].
func checkComparator(c *hlo.Computation, ops []Literal) error {
	if c == nil {
		return errors.New("sort has no comparator (to_apply)")
	}
	if len(c.Params) != 2*len(ops) {
		return fmt.Errorf("comparator %s takes %d parameters, sort of %d operands needs %d", c.Name, len(c.Params), len(ops), 2*len(ops))
	}
	for i, p := range c.Params {
		t := ops[i/2].Shape.Elem
		if p == nil || !p.Shape.IsArray() || len(p.Shape.Dims) != 0 || p.Shape.Elem != t {
			return fmt.Errorf("comparator %s parameter %d is not %s[]", c.Name, i, t)
		}
	}
	if c.Root == nil || !isPredScalar(c.Root.Shape) {
		return fmt.Errorf("comparator %s does not return pred[]", c.Name)
	}
	return nil
}

func isPredScalar(s hlo.Shape) bool {
	return s.IsArray() && s.Elem == hlo.PRED && len(s.Dims) == 0
}

// fastComparator is a comparator of the form compare(lhs, rhs) on the two
// elements of one operand.
type fastComparator struct {
	key int // the operand compared
	// dir is the direction applied to (element a, element b) when the
	// comparator is asked whether a goes before b (the written direction,
	// or its converse when the compare takes p[2k+1] first).
	dir string
	// ordered: compare order-preserving integer keys (integers, and floats
	// under type=TOTALORDER); otherwise compare floats as IEEE does.
	ordered bool
	elem    hlo.ElementType
}

// fastComparatorOf recognizes ROOT compare(p[2k], p[2k+1]) (or with the
// parameters swapped) in a comparator checkComparator accepted, or
// returns nil.
func fastComparatorOf(c *hlo.Computation, ops []Literal) *fastComparator {
	r := c.Root
	if r.Opcode != hlo.OpCompare || len(r.Operands) != 2 {
		return nil
	}
	param := func(x *hlo.Instruction) int {
		if x == nil || x.Opcode != hlo.OpParameter {
			return -1
		}
		i := int(x.ParameterNumber)
		if i < 0 || i >= len(c.Params) || c.Params[i] != x {
			return -1
		}
		return i
	}
	a, b := param(r.Operands[0]), param(r.Operands[1])
	if a < 0 || b < 0 || a/2 != b/2 || a == b {
		return nil
	}
	dir, _ := r.Attr("direction")
	if compareDirection(dir) == nil {
		return nil
	}
	if a > b { // compare(rhs, lhs): the converse direction on (lhs, rhs)
		dir = map[string]string{"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}[dir]
	}
	t := ops[a/2].Shape.Elem
	typ, _ := r.Attr("type")
	f := &fastComparator{key: a / 2, dir: dir, elem: t}
	switch {
	case isFloat(t) && (typ == "" || typ == "FLOAT"):
	case isFloat(t) && typ == "TOTALORDER":
		f.ordered = true
	case (t.IsUnsigned() || t == hlo.PRED) && (typ == "" || typ == "UNSIGNED"):
		f.ordered = true
	case numericType(t) && !isFloat(t) && !t.IsUnsigned() && t != hlo.PRED && (typ == "" || typ == "SIGNED"):
		f.ordered = true
	default:
		return nil
	}
	return f
}

// orderKey maps the raw bits of an element of type t (w bytes) to a
// uint64 whose unsigned order is the comparator's order: signed integers
// with the sign bit flipped, unsigned as they are, floats in XLA's total
// order -NaN < -inf < ... < -0 < +0 < ... < inf < NaN. ComparisonExpander
// defines that order as a signed compare of y = x < 0 ? MAX - x : x for x
// the float's bits as a signed integer (bf16 widened to f32, which keeps
// the order); flipping the sign bit of y maps it to the unsigned order
// used here, which is ^x for negative x and x with its sign bit set
// otherwise.
func orderKey(t hlo.ElementType, w int, raw uint64) uint64 {
	bits := uint(8 * w)
	sign := uint64(1) << (bits - 1)
	mask := sign | (sign - 1)
	switch {
	case isFloat(t):
		if raw&sign != 0 {
			return ^raw & mask
		}
		return raw | sign
	case t.IsUnsigned() || t == hlo.PRED:
		return raw
	}
	return raw ^ sign
}

// rowSorter holds the scratch space of sorting rows of n elements.
type rowSorter struct {
	perm, tmp   []int32
	keys, tmpK  []uint64
	vals        []float64
	args        []Literal
	compareErr  error
	scalarShape []hlo.Shape
}

func newRowSorter(n int) *rowSorter {
	return &rowSorter{
		perm: make([]int32, n), tmp: make([]int32, n),
		keys: make([]uint64, n), tmpK: make([]uint64, n),
	}
}

func (s *rowSorter) identity() {
	for j := range s.perm {
		s.perm[j] = int32(j)
	}
}

// sortFast sorts the row at base (stride inner) of the key operand's
// logical bytes b with the comparator f, leaving the permutation in perm.
//
// With LT or GT on a strict weak order (integers, floats in total order,
// IEEE floats in a row without NaN, where -0 and +0 are equivalent), the
// stable sorted order is unique, so any stable sort computes the one the
// general path's mergeSort would: a radix sort of order keys. Any other
// case (LE, GE, EQ, NE, or an IEEE compare in a row holding a NaN) runs
// mergeSort itself with the compare computed in Go, so that the result is
// the general path's, comparison for comparison.
func (s *rowSorter) sortFast(f *fastComparator, b []byte, w, base, inner int) {
	s.identity()
	n := len(s.perm)
	keys := s.keys
	sign := uint64(1) << (8*uint(w) - 1)
	inf := floatInfBits(f.elem)
	nan := false
	for j := 0; j < n; j++ {
		p := (base + j*inner) * w
		raw := readRaw(b[p:p+w], w)
		if !f.ordered {
			// IEEE: -0 == +0 (one key), NaN unordered (see below).
			switch abs := raw &^ sign; {
			case abs == 0:
				raw = 0
			case abs > inf:
				nan = true
			}
		}
		keys[j] = orderKey(f.elem, w, raw)
	}
	if (f.dir == "LT" || f.dir == "GT") && !nan {
		if f.dir == "GT" {
			mask := uint64(1)<<(8*uint(w)-1)<<1 - 1
			for j := range keys {
				keys[j] = ^keys[j] & mask
			}
		}
		if w <= 4 {
			// Key and position in one word: sorting the words sorts by key,
			// then by position, which is the stable order.
			for j := range keys {
				keys[j] = keys[j]<<32 | uint64(j)
			}
			for j, x := range radixSortWords(keys, s.tmpK, 4, w) {
				s.perm[j] = int32(uint32(x))
			}
			return
		}
		radixSort(keys, s.perm, s.tmpK, s.tmp, w)
		return
	}
	test := compareDirection(f.dir)
	var less func(a, b int32) bool
	if f.ordered {
		less = func(a, b int32) bool {
			ka, kb := keys[a], keys[b]
			switch {
			case ka < kb:
				return test(-1)
			case ka > kb:
				return test(1)
			}
			return test(0)
		}
	} else {
		if s.vals == nil {
			s.vals = make([]float64, n)
		}
		for j := 0; j < n; j++ {
			p := (base + j*inner) * w
			s.vals[j] = floatFromRaw(f.elem, readRaw(b[p:p+w], w))
		}
		vals, unordered := s.vals, f.dir == "NE"
		less = func(a, b int32) bool {
			va, vb := vals[a], vals[b]
			switch {
			case math.IsNaN(va) || math.IsNaN(vb):
				return unordered
			case va < vb:
				return test(-1)
			case va > vb:
				return test(1)
			}
			return test(0)
		}
	}
	mergeSort(s.perm, s.tmp, less)
}

// floatInfBits is the bit pattern of +inf in float type t: the magnitudes
// (bits without the sign) above it are NaNs.
func floatInfBits(t hlo.ElementType) uint64 {
	switch t {
	case hlo.F64:
		return 0x7ff0000000000000
	case hlo.F32:
		return 0x7f800000
	case hlo.BF16:
		return 0x7f80
	case hlo.F16:
		return 0x7c00
	}
	return math.MaxUint64
}

// floatFromRaw is the value of the raw bits of an element of float type t.
func floatFromRaw(t hlo.ElementType, raw uint64) float64 {
	switch t {
	case hlo.F64:
		return math.Float64frombits(raw)
	case hlo.F32:
		return float64(math.Float32frombits(uint32(raw)))
	case hlo.BF16:
		return float64(math.Float32frombits(uint32(raw) << 16))
	}
	return fromMini(raw, 5, 10)
}

// sortGeneral sorts the row at base (stride inner) by evaluating the
// comparator c on the 2N scalars of each comparison.
func (s *rowSorter) sortGeneral(ev *Evaluator, c *hlo.Computation, ops []Literal, src [][]byte, widths []int, base, inner int) error {
	s.identity()
	if s.args == nil {
		s.args = make([]Literal, 2*len(ops))
		s.scalarShape = make([]hlo.Shape, len(ops))
		for k, o := range ops {
			s.scalarShape[k] = hlo.Shape{Elem: o.Shape.Elem}
		}
	}
	s.compareErr = nil
	less := func(a, b int32) bool {
		if s.compareErr != nil {
			return false // stop asking; the sort still ends
		}
		pa, pb := base+int(a)*inner, base+int(b)*inner
		for k := range ops {
			w := widths[k]
			s.args[2*k] = Literal{Shape: s.scalarShape[k], Data: src[k][pa*w : (pa+1)*w]}
			s.args[2*k+1] = Literal{Shape: s.scalarShape[k], Data: src[k][pb*w : (pb+1)*w]}
		}
		v, err := ev.Computation(c, s.args)
		if err == nil {
			var r bool
			if r, err = Predicate(v); err == nil {
				return r
			}
			err = fmt.Errorf("comparator %s: %v", c.Name, err)
		}
		s.compareErr = err
		return false
	}
	mergeSort(s.perm, s.tmp, less)
	return s.compareErr
}

// mergeSort sorts perm stably by less (tmp is scratch of the same length):
// a top-down merge sort with insertion sort below 12 elements, which ends
// and gives one answer for any less, a strict weak order or not. An
// element moves before an earlier one only when less says it goes first.
func mergeSort(perm, tmp []int32, less func(a, b int32) bool) {
	n := len(perm)
	if n <= 12 {
		for i := 1; i < n; i++ {
			for j := i; j > 0 && less(perm[j], perm[j-1]); j-- {
				perm[j], perm[j-1] = perm[j-1], perm[j]
			}
		}
		return
	}
	m := n / 2
	mergeSort(perm[:m], tmp[:m], less)
	mergeSort(perm[m:], tmp[m:], less)
	if !less(perm[m], perm[m-1]) {
		return // already in order
	}
	copy(tmp, perm)
	i, j, k := 0, m, 0
	for i < m && j < n {
		if less(tmp[j], tmp[i]) {
			perm[k] = tmp[j]
			j++
		} else {
			perm[k] = tmp[i]
			i++
		}
		k++
	}
	k += copy(perm[k:], tmp[i:m])
	copy(perm[k:], tmp[j:n])
}

// radixSortWords sorts the words of a, ordered by their bytes lo to
// lo+nbytes-1 (all their other bytes equal or ignored), with a
// least-significant-byte-first radix sort (tmp is scratch of the same
// length), and returns the sorted words (a or tmp). Short rows go to
// slices.Sort, which orders by the whole word: with the position in the
// low bytes, that is the same order.
func radixSortWords(a, tmp []uint64, lo, nbytes int) []uint64 {
	n := len(a)
	if n <= 64 {
		slices.Sort(a)
		return a
	}
	var counts [8][256]int
	radixCounts(&counts, a, lo, nbytes)
	for b := 0; b < nbytes; b++ {
		c, shift := &counts[b], uint(8*(lo+b))
		if !radixOffsets(c, n, byte(a[0]>>shift)) {
			continue
		}
		for _, x := range a {
			d := byte(x >> shift)
			tmp[c[d]] = x
			c[d]++
		}
		a, tmp = tmp, a
	}
	return a
}

// radixSort sorts perm stably by keys (of nbytes significant bytes),
// moving the keys along: insertion sort for short rows, else a
// least-significant-byte-first radix sort (tmpK and tmp are scratch of the
// same length). Both are stable, so equal keys keep their order.
func radixSort(keys []uint64, perm []int32, tmpK []uint64, tmp []int32, nbytes int) {
	n := len(keys)
	if n <= 48 {
		for i := 1; i < n; i++ {
			k, p := keys[i], perm[i]
			j := i
			for ; j > 0 && keys[j-1] > k; j-- {
				keys[j], perm[j] = keys[j-1], perm[j-1]
			}
			keys[j], perm[j] = k, p
		}
		return
	}
	var counts [8][256]int
	radixCounts(&counts, keys, 0, nbytes)
	origPerm := perm
	for b := 0; b < nbytes; b++ {
		c, shift := &counts[b], uint(8*b)
		if !radixOffsets(c, n, byte(keys[0]>>shift)) {
			continue
		}
		for i, k := range keys {
			d := byte(k >> shift)
			p := c[d]
			c[d]++
			tmpK[p], tmp[p] = k, perm[i]
		}
		keys, tmpK = tmpK, keys
		perm, tmp = tmp, perm
	}
	if &perm[0] != &origPerm[0] {
		copy(origPerm, perm)
	}
}

// radixCounts sets counts[b][v] to the number of words of a whose byte
// lo+b is v, for b < nbytes: the histograms of every pass of a radix sort,
// taken in one sweep.
func radixCounts(counts *[8][256]int, a []uint64, lo, nbytes int) {
	for _, x := range a {
		for b := 0; b < nbytes; b++ {
			counts[b][byte(x>>(8*(lo+b)))]++
		}
	}
}

// radixOffsets turns the histogram c of one pass over n words into the
// first output position of each byte value, or reports false when every
// word has the byte first (the first word's): the pass would move nothing.
func radixOffsets(c *[256]int, n int, first byte) bool {
	if c[first] == n {
		return false
	}
	sum := 0
	for i, x := range c {
		c[i] = sum
		sum += x
	}
	return true
}

// --- rng ---

// rngAttempts bounds the draws of one uniform float element: a draw that
// rounds to b (or outside [a, b)) is drawn again, as XLA does, and for
// a < b at least half the draws land in range, so running out means
// something is wrong, not bad luck.
const rngAttempts = 1000

// rng evaluates rng(a, b), distribution=rng_uniform|rng_normal, drawing
// from the evaluator's random state (ev.random, seeded, so that two
// evaluations in the same order draw the same numbers), one element after
// the other in logical row-major order.
//
// As XLA's HandleRng: uniform floats are in [a, b), a draw rounded to the
// element type that is not below b is drawn again; uniform integers are in
// [a, b) (std::uniform_int_distribution(a, b-1)); normal floats have mean
// a and standard deviation b, rounded to the element type; normal integers
// are an error. XLA uses its own engine (std::minstd_rand0), so the numbers
// are not XLA's, only their distribution is. An empty range (a >= b), a
// bound that is not finite or a negative deviation is an error (XLA leaves
// them undefined).
//
// A third operand, a rank-1 array, is the result's dimensions as
// StableHLO's rng(a, b, shape) carries them; XLA's RngExpander and
// HloEvaluator read only operands 0 and 1 and take the dimensions from the
// instruction's own shape, and so does this (the operand is not checked
// against them: XLA's expander test data has rng(a, b, shape) with a shape
// operand u64[3] {2, 4, 8} and a result of f32[], and one f16[3] operand,
// the type the expander converts every operand of an f16 rng from).
func (ev *Evaluator) rng(in *hlo.Instruction, ops []Literal) (Literal, error) {
	t := in.Shape.Elem
	if len(ops) == 3 {
		if s := ops[2].Shape; !s.IsArray() || len(s.Dims) != 1 {
			return Literal{}, fmt.Errorf("rng operand 2 is %s, want the result's dimensions as a rank-1 array", s.StringNoLayout())
		}
		ops = ops[:2]
	}
	if len(ops) != 2 {
		return Literal{}, fmt.Errorf("rng has %d operands, want 2 (or 3, with the result's dimensions)", len(ops))
	}
	if err := checkNumeric(in, t); err != nil {
		return Literal{}, err
	}
	for i, o := range ops {
		if o.Shape.Elem != t || len(o.Shape.Dims) != 0 {
			return Literal{}, fmt.Errorf("rng operand %d is %s, want %s[]", i, o.Shape.StringNoLayout(), t)
		}
	}
	dist, _ := in.Attr("distribution")
	if dist != "rng_uniform" && dist != "rng_normal" {
		return Literal{}, fmt.Errorf("bad rng distribution %q", dist)
	}
	n := elemCount(in.Shape)
	r := ev.random()
	if isFloat(t) {
		a, b := decodeF(t, ops[0].Data)[0], decodeF(t, ops[1].Data)[0]
		if math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) {
			return Literal{}, fmt.Errorf("rng parameters %v, %v are not finite", a, b)
		}
		v := make([]float64, n)
		if dist == "rng_normal" {
			if b < 0 {
				return Literal{}, fmt.Errorf("rng_normal with negative deviation %v", b)
			}
			for i := range v {
				v[i] = roundF(t, a+b*r.NormFloat64())
			}
			return outF(in.Shape, v)
		}
		if !(a < b) {
			return Literal{}, fmt.Errorf("rng_uniform on the empty range [%v, %v)", a, b)
		}
		span := b - a
		for i := range v {
			ok := false
			for try := 0; try < rngAttempts && !ok; try++ {
				u := r.Float64()
				x := a + span*u
				if math.IsInf(span, 0) { // b - a overflows f64
					x = a*(1-u) + b*u
				}
				x = roundF(t, x)
				v[i], ok = x, a <= x && x < b
			}
			if !ok {
				return Literal{}, fmt.Errorf("rng_uniform: no draw in [%v, %v)", a, b)
			}
		}
		return outF(in.Shape, v)
	}
	if dist == "rng_normal" {
		return Literal{}, fmt.Errorf("rng_normal on integer type %s", t)
	}
	a, b := decodeI(t, ops[0].Data)[0], decodeI(t, ops[1].Data)[0]
	unsigned := t.IsUnsigned() || t == hlo.PRED
	if unsigned && uint64(a) >= uint64(b) || !unsigned && a >= b {
		return Literal{}, fmt.Errorf("rng_uniform on the empty range [%s, %s)", intText(t, a), intText(t, b))
	}
	span := uint64(b) - uint64(a) // exact modulo 2^64 since a < b
	v := make([]int64, n)
	for i := range v {
		v[i] = a + int64(r.Uint64N(span))
	}
	return outI(in.Shape, v)
}

func intText(t hlo.ElementType, x int64) string {
	if t.IsUnsigned() || t == hlo.PRED {
		return fmt.Sprint(uint64(x))
	}
	return fmt.Sprint(x)
}

// --- map ---

// mapOp evaluates map(x0, ..., x{N-1}), dimensions={0, ..., rank-1},
// to_apply=f: element i of the result is f(x0[i], ..., x{N-1}[i]). XLA's
// shape inference (InferMapShape in xla/service/shape_inference.cc) takes
// only the identity dimensions {0, ..., rank-1} and operands of one shape,
// f taking one scalar per operand and returning a scalar.
//
// When f is a single element-wise instruction on f's parameters (ROOT
// add(p0, p1), ROOT convert(p0), ...), that instruction is evaluated once
// on the whole arrays, which is the same per element; otherwise f is
// evaluated per element.
func (ev *Evaluator) mapOp(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) == 0 {
		return Literal{}, errors.New("map without operands")
	}
	if err := operandsDims(in, ops...); err != nil {
		return Literal{}, err
	}
	if in.HasDimensions {
		if len(in.Dimensions) != len(in.Shape.Dims) {
			return Literal{}, fmt.Errorf("map dimensions %v are not all %d dimensions", in.Dimensions, len(in.Shape.Dims))
		}
		for i, d := range in.Dimensions {
			if d != int64(i) {
				return Literal{}, fmt.Errorf("map dimensions %v are not the identity", in.Dimensions)
			}
		}
	}
	c := in.ToApply()
	if c == nil {
		return Literal{}, errors.New("map has no to_apply computation")
	}
	if len(c.Params) != len(ops) {
		return Literal{}, fmt.Errorf("computation %s takes %d parameters, map has %d operands", c.Name, len(c.Params), len(ops))
	}
	for i, p := range c.Params {
		if p == nil || !p.Shape.IsArray() || len(p.Shape.Dims) != 0 || p.Shape.Elem != ops[i].Shape.Elem {
			return Literal{}, fmt.Errorf("computation %s parameter %d is not %s[]", c.Name, i, ops[i].Shape.Elem)
		}
	}
	t := in.Shape.Elem
	if c.Root == nil || !c.Root.Shape.IsArray() || len(c.Root.Shape.Dims) != 0 || c.Root.Shape.Elem != t {
		return Literal{}, fmt.Errorf("computation %s does not return %s[]", c.Name, t)
	}
	if whole, ok := wholeArrayOp(c, in.Shape, ops); ok {
		return ev.array(whole, reorder(whole, c, ops))
	}
	src := make([][]byte, len(ops))
	widths := make([]int, len(ops))
	args := make([]Literal, len(ops))
	for k, o := range ops {
		b, w, err := o.logical()
		if err != nil {
			return Literal{}, err
		}
		src[k], widths[k] = b, w
		args[k].Shape = hlo.Shape{Elem: o.Shape.Elem}
	}
	w, err := ElemWidth(t)
	if err != nil {
		return Literal{}, err
	}
	n := elemCount(in.Shape)
	out := make([]byte, n*w)
	for i := 0; i < n; i++ {
		for k := range ops {
			args[k].Data = src[k][i*widths[k] : (i+1)*widths[k]]
		}
		v, err := ev.Computation(c, args)
		if err != nil {
			return Literal{}, err
		}
		if v.IsTuple() || v.Shape.Elem != t || len(v.Shape.Dims) != 0 || len(v.Data) != w {
			return Literal{}, fmt.Errorf("computation %s returned %s", c.Name, v.Shape)
		}
		copy(out[i*w:], v.Data)
	}
	return fromLogical(in.Shape, out)
}

// wholeArrayOp returns a copy of c's root with the map's shape when the
// root is an element-wise instruction whose operands are all parameters of
// c, so that it computes the whole map at once.
func wholeArrayOp(c *hlo.Computation, shape hlo.Shape, ops []Literal) (*hlo.Instruction, bool) {
	r := c.Root
	if !r.IsElementwise() || r.Opcode == hlo.OpMap || len(r.Operands) == 0 {
		return nil, false
	}
	for _, o := range r.Operands {
		if o == nil || o.Opcode != hlo.OpParameter || o.ParameterNumber < 0 ||
			int(o.ParameterNumber) >= len(c.Params) || c.Params[o.ParameterNumber] != o {
			return nil, false
		}
	}
	whole := *r
	whole.Shape = shape
	whole.Users = nil
	return &whole, true
}

// reorder lists the map operands in the order whole's operands (parameters
// of c) name them.
func reorder(whole *hlo.Instruction, c *hlo.Computation, ops []Literal) []Literal {
	out := make([]Literal, len(whole.Operands))
	for i, o := range whole.Operands {
		out[i] = ops[o.ParameterNumber]
	}
	return out
}

// --- variadic reduce ---

// reduceVariadic evaluates reduce(x0, ..., x{N-1}, init0, ..., init{N-1}),
// dimensions={...}, to_apply=f with a tuple result of N arrays.
//
// As XLA's PerformReductionStep, f takes the N accumulators first, then the
// N input elements, and returns the N new accumulators as a tuple. Every
// accumulator starts at its init value and the input elements are folded
// into their output position in row-major order of the input, the order of
// the single-input reduce (eval_reduce.go), which for one output position
// is XLA's order too (the reduced dimensions, row-major).
func (ev *Evaluator) reduceVariadic(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) < 2 || len(ops)%2 != 0 {
		return Literal{}, fmt.Errorf("reduce has %d operands, want inputs and as many init values", len(ops))
	}
	nIn := len(ops) / 2
	xs, inits := ops[:nIn], ops[nIn:]
	if !in.Shape.IsTuple() || len(in.Shape.Tuple) != nIn {
		return Literal{}, fmt.Errorf("reduce of %d inputs has shape %s, want a tuple of %d arrays", nIn, in.Shape, nIn)
	}
	for k := 0; k < nIn; k++ {
		x, init := xs[k], inits[k]
		if x.IsTuple() || init.IsTuple() {
			return Literal{}, fmt.Errorf("reduce input or init value %d is a tuple", k)
		}
		for _, t := range []hlo.ElementType{x.Shape.Elem, init.Shape.Elem} {
			if !numericType(t) && !t.IsComplex() {
				return Literal{}, cannotEval(in, t)
			}
		}
		if !hlo.SameDims(x.Shape, xs[0].Shape) {
			return Literal{}, fmt.Errorf("reduce input %d dims %v differ from input 0 dims %v", k, x.Shape.Dims, xs[0].Shape.Dims)
		}
		if len(init.Shape.Dims) != 0 {
			return Literal{}, fmt.Errorf("init value %d is not a scalar", k)
		}
	}
	dims := xs[0].Shape.Dims
	keep, err := keptDims(in.Dimensions, len(dims))
	if err != nil {
		return Literal{}, err
	}
	for k, s := range in.Shape.Tuple {
		if !s.IsArray() || s.Elem != inits[k].Shape.Elem || len(s.Dims) != len(keep) {
			return Literal{}, fmt.Errorf("result %d is %s, want %s of rank %d", k, s, inits[k].Shape.Elem, len(keep))
		}
		for i, d := range keep {
			if s.Dims[i] != dims[d] {
				return Literal{}, fmt.Errorf("result %d dims %v do not match the kept input dims", k, s.Dims)
			}
		}
	}
	c := in.ToApply()
	if c == nil {
		return Literal{}, errors.New("reduce has no to_apply computation")
	}
	if len(c.Params) != len(ops) {
		return Literal{}, fmt.Errorf("reducer %s takes %d parameters, reduce of %d inputs needs %d", c.Name, len(c.Params), nIn, len(ops))
	}

	n := elemCount(xs[0].Shape)
	m := elemCount(in.Shape.Tuple[0])
	outIdx := reduceTargets(dims, keep, in.Shape.Tuple[0].Dims)
	src := make([][]byte, nIn)
	xw := make([]int, nIn)
	aw := make([]int, nIn)
	acc := make([][]byte, nIn)
	scratch := make([][]byte, nIn)
	args := make([]Literal, len(ops))
	for k := 0; k < nIn; k++ {
		b, w, err := xs[k].logical()
		if err != nil {
			return Literal{}, err
		}
		src[k], xw[k] = b, w
		if aw[k], err = ElemWidth(inits[k].Shape.Elem); err != nil {
			return Literal{}, err
		}
		acc[k] = make([]byte, m*aw[k])
		for o := 0; o < m; o++ {
			copy(acc[k][o*aw[k]:], inits[k].Data)
		}
		scratch[k] = make([]byte, aw[k])
		args[k].Shape = hlo.Shape{Elem: inits[k].Shape.Elem}
		args[nIn+k].Shape = hlo.Shape{Elem: xs[k].Shape.Elem}
	}
	for i := 0; i < n; i++ {
		o := outIdx[i]
		for k := 0; k < nIn; k++ {
			args[k].Data = acc[k][o*aw[k] : (o+1)*aw[k]]
			args[nIn+k].Data = src[k][i*xw[k] : (i+1)*xw[k]]
		}
		v, err := ev.Computation(c, args)
		if err != nil {
			return Literal{}, err
		}
		if !v.IsTuple() || len(v.Elems) != nIn {
			return Literal{}, fmt.Errorf("reducer %s returned %s, want a tuple of %d scalars", c.Name, v.Shape, nIn)
		}
		// The results may be the accumulators passed in (ROOT tuple(p1,
		// p0) swaps them): read them all before writing any.
		for k, e := range v.Elems {
			if e.IsTuple() || e.Shape.Elem != inits[k].Shape.Elem || len(e.Shape.Dims) != 0 || len(e.Data) != aw[k] {
				return Literal{}, fmt.Errorf("reducer %s returned %s, element %d should be %s[]", c.Name, v.Shape, k, inits[k].Shape.Elem)
			}
			copy(scratch[k], e.Data)
		}
		for k := 0; k < nIn; k++ {
			copy(acc[k][o*aw[k]:], scratch[k])
		}
	}
	outs := make([]Literal, nIn)
	for k := 0; k < nIn; k++ {
		l, err := fromLogical(in.Shape.Tuple[k], acc[k])
		if err != nil {
			return Literal{}, err
		}
		outs[k] = l
	}
	return TupleLiteral(outs...), nil
}
