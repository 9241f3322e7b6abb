package eval

// Gather and scatter, as XLA defines them (operation semantics "Gather" and
// "Scatter"; StableHLO spec §gather, §scatter), including the explicit
// batching dimensions (operand_batching_dims/start_indices_batching_dims,
// input_batching_dims/scatter_indices_batching_dims).
//
// Both ops pair an operand with an "other" array (gather's result,
// scatter's updates) whose dimensions split into window dimensions
// (offset_dims / update_window_dims) and batch dimensions (the rest, in
// order the dimensions of the indices without index_vector_dim). For each
// batch position b the index vector at b gives a start in the operand
// (through start_index_map / scatter_dims_to_operand_dims); operand
// batching dims take b's coordinate along the matching indices dimension;
// the window then covers operand dims that are neither collapsed/inserted
// nor batching, in order. The loops below walk the batch positions in
// row-major order and, inside each, the window positions in row-major
// order, as XLA's HloEvaluator (HandleGather/HandleScatter) does.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// --- attributes ---

// gsList reads a braced integer-list attribute ("{1,2}", "{}").
func gsList(in *hlo.Instruction, name string, required bool) ([]int64, error) {
	v, ok := in.Attr(name)
	if !ok {
		if required {
			return nil, fmt.Errorf("missing attribute %s", name)
		}
		return []int64{}, nil
	}
	s := strings.TrimSpace(v)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, fmt.Errorf("bad %s=%s", name, v)
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	out := []int64{}
	if s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad %s=%s", name, v)
		}
		out = append(out, n)
	}
	return out, nil
}

// gsInt reads a required integer attribute.
func gsInt(in *hlo.Instruction, name string) (int64, error) {
	v, ok := in.Attr(name)
	if !ok {
		return 0, fmt.Errorf("missing attribute %s", name)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s=%s", name, v)
	}
	return n, nil
}

// gsBools checks that optional boolean attributes (promises such as
// indices_are_sorted, which do not change the result) are true or false.
func gsBools(in *hlo.Instruction, names ...string) error {
	for _, name := range names {
		if v, ok := in.Attr(name); ok && v != "true" && v != "false" {
			return fmt.Errorf("bad %s=%s", name, v)
		}
	}
	return nil
}

// gsSorted checks that v is strictly increasing within [0, bound).
func gsSorted(name string, v []int64, bound int) error {
	for i, d := range v {
		if d < 0 || d >= int64(bound) || i > 0 && d <= v[i-1] {
			return fmt.Errorf("%s %v must be sorted, unique and in [0, %d)", name, v, bound)
		}
	}
	return nil
}

// gsUnique checks that v has no repeats and lies within [0, bound).
func gsUnique(name string, v []int64, bound int) error {
	seen := make(map[int64]bool, len(v))
	for _, d := range v {
		if d < 0 || d >= int64(bound) || seen[d] {
			return fmt.Errorf("%s %v must be unique and in [0, %d)", name, v, bound)
		}
		seen[d] = true
	}
	return nil
}

func gsDisjoint(an string, a []int64, bn string, b []int64) error {
	for _, d := range a {
		if slices.Contains(b, d) {
			return fmt.Errorf("%s %v and %s %v share dimension %d", an, a, bn, b, d)
		}
	}
	return nil
}

// gsAttrs are the dimension numbers common to gather and scatter, named
// as gather names them (scatter's in parentheses).
type gsAttrs struct {
	window   []int64 // offset_dims (update_window_dims): dims of the other array
	elided   []int64 // collapsed_slice_dims (inserted_window_dims): operand dims
	opBatch  []int64 // operand_batching_dims (input_batching_dims)
	idxBatch []int64 // start_indices_batching_dims (scatter_indices_batching_dims)
	startMap []int64 // start_index_map (scatter_dims_to_operand_dims)
	ivd      int64   // index_vector_dim
}

// gatherNames and scatterNames are the attribute names, in gsAttrs order.
var (
	gatherNames  = [...]string{"offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map"}
	scatterNames = [...]string{"update_window_dims", "inserted_window_dims", "input_batching_dims", "scatter_indices_batching_dims", "scatter_dims_to_operand_dims"}
)

func gsReadAttrs(in *hlo.Instruction, names [5]string) (gsAttrs, error) {
	var a gsAttrs
	var err error
	dst := []*[]int64{&a.window, &a.elided, &a.opBatch, &a.idxBatch, &a.startMap}
	for i, name := range names {
		required := i != 2 && i != 3 // the batching dims are optional
		if *dst[i], err = gsList(in, name, required); err != nil {
			return a, err
		}
	}
	if a.ivd, err = gsInt(in, "index_vector_dim"); err != nil {
		return a, err
	}
	return a, nil
}

// --- the index plan ---

// gsPlan maps positions of the other array (gather's result, scatter's
// updates) to operand positions.
type gsPlan struct {
	operand   []int64 // operand dims
	other     []int64 // other array's dims
	window    []int   // positions in other of the window dims, increasing
	winOp     []int   // the operand dim each window dim covers
	batch     []int   // positions in other of the batch dims, increasing
	idx       []int64 // index values, logical row-major (u64 saturated)
	idxSt     []int64 // strides of the indices with index_vector_dim made explicit
	ivd       int     // index_vector_dim
	ivLen     int     // length of an index vector
	startComp []int   // per operand dim: its index-vector component, or -1
	batchSrc  []int   // per operand dim: the batch dim (index into batch) it follows, or -1
}

// gsNewPlan validates the dimension numbers against the operand and
// indices shapes and the dims other (gather's result, scatter's updates)
// by XLA's shape-inference rules (each failure an error), and builds the
// plan. The caller checks the window sizes against the operand.
func gsNewPlan(names [5]string, a gsAttrs, operand []int64, indices Literal, other []int64) (*gsPlan, error) {
	it := indices.Shape.Elem
	if !it.IsInteger() || !numericType(it) {
		return nil, fmt.Errorf("indices have type %s, want an integer type", it)
	}
	r, ir, or := len(operand), len(indices.Shape.Dims), len(other)
	if a.ivd < 0 || a.ivd > int64(ir) {
		return nil, fmt.Errorf("index_vector_dim %d out of range for indices of rank %d", a.ivd, ir)
	}
	ivd := int(a.ivd)
	idxDims := append([]int64(nil), indices.Shape.Dims...)
	if ivd == ir {
		idxDims = append(idxDims, 1) // implicit trailing index vector of length 1
	}
	ivLen := int(idxDims[ivd])
	if err := gsSorted(names[0], a.window, or); err != nil {
		return nil, err
	}
	if err := gsSorted(names[1], a.elided, r); err != nil {
		return nil, err
	}
	if err := gsSorted(names[2], a.opBatch, r); err != nil {
		return nil, err
	}
	if err := gsUnique(names[3], a.idxBatch, ir); err != nil {
		return nil, err
	}
	if slices.Contains(a.idxBatch, a.ivd) {
		return nil, fmt.Errorf("%s %v contains index_vector_dim %d", names[3], a.idxBatch, ivd)
	}
	if len(a.opBatch) != len(a.idxBatch) {
		return nil, fmt.Errorf("%s %v and %s %v differ in length", names[2], a.opBatch, names[3], a.idxBatch)
	}
	for i, d := range a.opBatch {
		if operand[d] != idxDims[a.idxBatch[i]] {
			return nil, fmt.Errorf("batching dims: operand dim %d has size %d, indices dim %d has size %d",
				d, operand[d], a.idxBatch[i], idxDims[a.idxBatch[i]])
		}
	}
	if err := gsDisjoint(names[1], a.elided, names[2], a.opBatch); err != nil {
		return nil, err
	}
	if len(a.startMap) != ivLen {
		return nil, fmt.Errorf("%s %v has %d entries, the index vectors have %d", names[4], a.startMap, len(a.startMap), ivLen)
	}
	if err := gsUnique(names[4], a.startMap, r); err != nil {
		return nil, err
	}
	if err := gsDisjoint(names[4], a.startMap, names[2], a.opBatch); err != nil {
		return nil, err
	}
	if r != len(a.window)+len(a.elided)+len(a.opBatch) {
		return nil, fmt.Errorf("operand rank %d is not %d %s + %d %s + %d %s", r,
			len(a.window), names[0], len(a.elided), names[1], len(a.opBatch), names[2])
	}
	if or != len(a.window)+len(idxDims)-1 {
		return nil, fmt.Errorf("rank %d, want %d (%s) + %d (indices batch dims)", or, len(a.window), names[0], len(idxDims)-1)
	}
	p := &gsPlan{operand: operand, other: other, ivd: ivd, ivLen: ivLen}
	for _, d := range a.window {
		p.window = append(p.window, int(d))
	}
	for d := 0; d < r; d++ {
		if !slices.Contains(a.elided, int64(d)) && !slices.Contains(a.opBatch, int64(d)) {
			p.winOp = append(p.winOp, d)
		}
	}
	j := 0
	for k := 0; k < or; k++ {
		if slices.Contains(a.window, int64(k)) {
			continue
		}
		id := j
		if id >= ivd {
			id++
		}
		if other[k] != idxDims[id] {
			return nil, fmt.Errorf("dim %d has size %d, indices dim %d has size %d", k, other[k], id, idxDims[id])
		}
		p.batch = append(p.batch, k)
		j++
	}
	p.startComp = make([]int, r)
	p.batchSrc = make([]int, r)
	for d := range p.startComp {
		p.startComp[d], p.batchSrc[d] = -1, -1
	}
	for c, d := range a.startMap {
		p.startComp[d] = c
	}
	for i, d := range a.opBatch {
		s := int(a.idxBatch[i])
		if s > ivd {
			s--
		}
		p.batchSrc[d] = s
	}
	b, _, err := indices.logical()
	if err != nil {
		return nil, err
	}
	p.idx = decodeI(it, b)
	if it == hlo.U64 {
		for i, v := range p.idx {
			if v < 0 { // above MaxInt64: as large as an index can be
				p.idx[i] = math.MaxInt64
			}
		}
	}
	p.idxSt = strides(idxDims)
	return p, nil
}

// each walks the batch positions (row-major), fills start with the operand
// start of each (the index vector through startComp, batching dims from
// the batch coordinates, 0 elsewhere) and lets fix adjust it (clamp) or
// refuse it (skip); then, over the window positions (row-major), it calls
// f with the operand's and the other array's logical element indices.
func (p *gsPlan) each(fix func(start []int64) bool, f func(op, other int)) {
	opSt, otSt := strides(p.operand), strides(p.other)
	bDims := make([]int64, len(p.batch))
	for j, k := range p.batch {
		bDims[j] = p.other[k]
	}
	wDims := make([]int64, len(p.window))
	for k, d := range p.window {
		wDims[k] = p.other[d]
	}
	nb, nw := 1, 1
	for _, d := range bDims {
		nb *= int(d)
	}
	for _, d := range wDims {
		nw *= int(d)
	}
	if nb == 0 || nw == 0 {
		return
	}
	bi := make([]int64, len(bDims))
	wi := make([]int64, len(wDims))
	vec := make([]int64, p.ivLen)
	start := make([]int64, len(p.operand))
	for n := 0; n < nb; n++ {
		base, otBase := int64(0), int64(0)
		for j, v := range bi {
			id := j
			if id >= p.ivd {
				id++
			}
			base += v * p.idxSt[id]
			otBase += v * otSt[p.batch[j]]
		}
		for c := range vec {
			vec[c] = p.idx[base+int64(c)*p.idxSt[p.ivd]]
		}
		for d := range start {
			switch {
			case p.startComp[d] >= 0:
				start[d] = vec[p.startComp[d]]
			case p.batchSrc[d] >= 0:
				start[d] = bi[p.batchSrc[d]]
			default:
				start[d] = 0
			}
		}
		if fix(start) {
			opBase := int64(0)
			for d, s := range start {
				opBase += s * opSt[d]
			}
			for i := range wi {
				wi[i] = 0
			}
			for m := 0; m < nw; m++ {
				o, t := opBase, otBase
				for k, v := range wi {
					o += v * opSt[p.winOp[k]]
					t += v * otSt[p.window[k]]
				}
				f(int(o), int(t))
				nextIndex(wi, wDims)
			}
		}
		nextIndex(bi, bDims)
	}
}

// extents returns, per operand dim, the window's size along it: the other
// array's size for a window dim, 1 for a collapsed or batching dim.
func (p *gsPlan) extents() []int64 {
	ext := make([]int64, len(p.operand))
	for d := range ext {
		ext[d] = 1
	}
	for k, d := range p.winOp {
		ext[d] = p.other[p.window[k]]
	}
	return ext
}

// --- gather ---

// evalGather evaluates gather: result[i] = operand[start(i) + offset(i)],
// each start clamped to [0, operand dim - slice size] so that the whole
// slice fits in the operand (XLA's HloEvaluator::HandleGather clamps each
// component so; collapsed and batching dims count as size 1). The
// indices_are_sorted promise is checked for form and otherwise ignored.
func evalGather(in *hlo.Instruction, ops []Literal) (Literal, error) {
	x, indices := ops[0], ops[1]
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	if err := gsBools(in, "indices_are_sorted"); err != nil {
		return Literal{}, err
	}
	a, err := gsReadAttrs(in, gatherNames)
	if err != nil {
		return Literal{}, err
	}
	sizes, err := gsList(in, "slice_sizes", true)
	if err != nil {
		return Literal{}, err
	}
	od := x.Shape.Dims
	if len(sizes) != len(od) {
		return Literal{}, fmt.Errorf("slice_sizes %v for operand rank %d", sizes, len(od))
	}
	for d, s := range sizes {
		if s < 0 || s > od[d] {
			return Literal{}, fmt.Errorf("slice_sizes %v do not fit operand dims %v", sizes, od)
		}
		if (slices.Contains(a.elided, int64(d)) || slices.Contains(a.opBatch, int64(d))) && s > 1 {
			return Literal{}, fmt.Errorf("slice size %d of collapsed or batching dim %d, want at most 1", s, d)
		}
	}
	p, err := gsNewPlan(gatherNames, a, od, indices, in.Shape.Dims)
	if err != nil {
		return Literal{}, err
	}
	for k, d := range p.winOp {
		if got := in.Shape.Dims[p.window[k]]; got != sizes[d] {
			return Literal{}, fmt.Errorf("result dim %d has size %d, slice_sizes[%d] is %d", p.window[k], got, d, sizes[d])
		}
	}
	xb, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	out := make([]byte, elemCount(in.Shape)*w)
	if elemCount(x.Shape) == 0 {
		// Nothing to read (only a size-0 collapsed or batching slice
		// gets here with elements to write): zeros, as XLA's evaluator.
		return fromLogical(in.Shape, out)
	}
	ext := p.extents()
	clamp := func(start []int64) bool {
		for d, s := range start {
			start[d] = min(max(s, 0), od[d]-ext[d])
		}
		return true
	}
	p.each(clamp, func(o, t int) {
		copy(out[t*w:(t+1)*w], xb[o*w:(o+1)*w])
	})
	return fromLogical(in.Shape, out)
}

// --- scatter ---

// scatter evaluates scatter(inputs..., scatter_indices, updates...): a copy
// of the inputs where each update window is combined, element by element,
// with to_apply (current values first, then the updates) into the window
// its index vector selects. A window that does not fit in the operand as a
// whole is skipped, not clamped: XLA's HloEvaluator::HandleScatter and its
// CPU runtime (xla/backends/cpu/runtime/scatter_thunk.cc) both check, for
// each operand dim, start < 0 || start > dim - window size and then "do not
// perform any update on the input" for that window; StableHLO's
// interpreter tests (index vector [0, 9]) expect the same. Updates are applied in a fixed order (batch positions
// row-major, then window positions row-major, as XLA's evaluator), so
// duplicate indices give reproducible results.
func (ev *Evaluator) scatter(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) < 3 || len(ops)%2 == 0 {
		return Literal{}, fmt.Errorf("has %d operands, want inputs, indices and as many updates as inputs", len(ops))
	}
	n := (len(ops) - 1) / 2
	inputs, indices, updates := ops[:n], ops[n], ops[n+1:]
	for i, o := range ops {
		if !o.Shape.IsArray() {
			return Literal{}, fmt.Errorf("operand %d is not an array", i)
		}
		if _, err := arrayBytes(o.Shape); err != nil {
			return Literal{}, fmt.Errorf("operand %d: %v", i, err)
		}
	}
	// Result shapes: the inputs' (a tuple of them for several inputs).
	outShapes := []hlo.Shape{in.Shape}
	if n > 1 {
		if !in.Shape.IsTuple() || len(in.Shape.Tuple) != n {
			return Literal{}, fmt.Errorf("result %s is not a tuple of %d arrays", in.Shape, n)
		}
		outShapes = in.Shape.Tuple
	}
	for i := 0; i < n; i++ {
		s, x, u := outShapes[i], inputs[i], updates[i]
		if !s.IsArray() || s.Elem != x.Shape.Elem || !hlo.SameDims(s, x.Shape) {
			return Literal{}, fmt.Errorf("result %s does not match input %d %s", s, i, x.Shape)
		}
		if u.Shape.Elem != x.Shape.Elem {
			return Literal{}, fmt.Errorf("updates %d have type %s, input %d has %s", i, u.Shape.Elem, i, x.Shape.Elem)
		}
		if !hlo.SameDims(x.Shape, inputs[0].Shape) || !hlo.SameDims(u.Shape, updates[0].Shape) {
			return Literal{}, fmt.Errorf("inputs (or updates) differ in dims")
		}
	}
	if err := gsBools(in, "indices_are_sorted", "unique_indices"); err != nil {
		return Literal{}, err
	}
	a, err := gsReadAttrs(in, scatterNames)
	if err != nil {
		return Literal{}, err
	}
	od := inputs[0].Shape.Dims
	p, err := gsNewPlan(scatterNames, a, od, indices, updates[0].Shape.Dims)
	if err != nil {
		return Literal{}, err
	}
	ext := p.extents()
	for _, d := range p.winOp {
		if ext[d] > od[d] {
			return Literal{}, fmt.Errorf("update window of size %d along operand dim %d of size %d", ext[d], d, od[d])
		}
	}
	c := in.ToApply()
	if c == nil {
		return Literal{}, fmt.Errorf("scatter has no to_apply computation")
	}
	if len(c.Params) != 2*n {
		return Literal{}, fmt.Errorf("to_apply %s takes %d parameters, want %d", c.Name, len(c.Params), 2*n)
	}
	outs := make([][]byte, n)
	ubs := make([][]byte, n)
	ws := make([]int, n)
	for i := 0; i < n; i++ {
		xb, w, err := inputs[i].logical()
		if err != nil {
			return Literal{}, err
		}
		if ubs[i], _, err = updates[i].logical(); err != nil {
			return Literal{}, err
		}
		outs[i], ws[i] = append([]byte(nil), xb...), w
	}
	skip := func(start []int64) bool {
		for d, s := range start {
			if s < 0 || s > od[d]-ext[d] {
				return false
			}
		}
		return true
	}
	ts := make([]hlo.ElementType, n)
	for i := range ts {
		ts[i] = inputs[i].Shape.Elem
	}
	src := scatterForwards(c, ts)
	switch {
	case src != nil:
		cur := make([][]byte, n)
		for i := range cur {
			cur[i] = make([]byte, ws[i])
		}
		p.each(skip, func(o, t int) {
			for i, w := range ws {
				copy(cur[i], outs[i][o*w:(o+1)*w])
			}
			for i, k := range src {
				w := ws[i]
				if k < n {
					copy(outs[i][o*w:(o+1)*w], cur[k])
				} else {
					copy(outs[i][o*w:(o+1)*w], ubs[k-n][t*w:(t+1)*w])
				}
			}
		})
	case n == 1 && scatterSimple(c, ts[0]):
		scatterReduce(c, ts[0], p, skip, outs[0], ubs[0])
	default:
		if err := ev.scatterApply(c, ts, p, skip, outs, ubs, ws); err != nil {
			return Literal{}, err
		}
	}
	lits := make([]Literal, n)
	for i := range lits {
		if lits[i], err = fromLogical(outShapes[i], outs[i]); err != nil {
			return Literal{}, err
		}
	}
	if n == 1 {
		return lits[0], nil
	}
	return TupleLiteral(lits...), nil
}

// scatterParamsOK reports whether c's 2n parameters are scalars of the
// element types ts (current values, then updates).
func scatterParamsOK(c *hlo.Computation, ts []hlo.ElementType) bool {
	n := len(ts)
	if len(c.Params) != 2*n {
		return false
	}
	for k, p := range c.Params {
		if p == nil || !p.Shape.IsArray() || len(p.Shape.Dims) != 0 || p.Shape.Elem != ts[k%n] {
			return false
		}
	}
	return true
}

// scatterForwards recognises a combiner that only forwards parameters (an
// overwrite, ROOT p1 = parameter(1), or a tuple of parameters) and returns
// the parameter number each output takes, or nil.
func scatterForwards(c *hlo.Computation, ts []hlo.ElementType) []int {
	if c == nil || c.Root == nil || !scatterParamsOK(c, ts) {
		return nil
	}
	n := len(ts)
	roots := []*hlo.Instruction{c.Root}
	if n > 1 {
		if c.Root.Opcode != hlo.OpTuple || len(c.Root.Operands) != n {
			return nil
		}
		roots = c.Root.Operands
	}
	src := make([]int, n)
	for i, r := range roots {
		if r == nil || r.Opcode != hlo.OpParameter || r.ParameterNumber < 0 || int(r.ParameterNumber) >= 2*n ||
			c.Params[r.ParameterNumber] != r || ts[r.ParameterNumber%int64(n)] != ts[i] {
			return nil
		}
		src[i] = int(r.ParameterNumber)
	}
	return src
}

// scatterSimple reports whether a one-input combiner is op(p0, p1) with op
// one the evaluator applies directly (reduce's fast path).
func scatterSimple(c *hlo.Computation, t hlo.ElementType) bool {
	if !numericType(t) || !scatterParamsOK(c, []hlo.ElementType{t}) {
		return false
	}
	_, ok := simpleReducer(c, t)
	return ok
}

// scatterReduce applies a simple combiner op(current, update) in place on
// out's elements.
func scatterReduce(c *hlo.Computation, t hlo.ElementType, p *gsPlan, skip func([]int64) bool, out, ub []byte) {
	op, _ := simpleReducer(c, t)
	ff, fi := foldFuncs(op, t)
	if ff != nil {
		acc, upd := decodeF(t, out), decodeF(t, ub)
		p.each(skip, func(o, u int) { acc[o] = ff(acc[o], upd[u]) })
		copy(out, encodeF(t, acc))
		return
	}
	acc, upd := decodeI(t, out), decodeI(t, ub)
	p.each(skip, func(o, u int) { acc[o] = fi(acc[o], upd[u]) })
	copy(out, encodeI(t, acc))
}

// scatterApply runs the combiner computation on each updated element: its
// arguments are the n current values then the n updates; it returns a
// scalar (one input) or a tuple of n scalars.
func (ev *Evaluator) scatterApply(c *hlo.Computation, ts []hlo.ElementType, p *gsPlan, skip func([]int64) bool, outs, ubs [][]byte, ws []int) error {
	n := len(ts)
	var err error
	p.each(skip, func(o, u int) {
		if err != nil {
			return
		}
		args := make([]Literal, 2*n)
		for i, t := range ts {
			w := ws[i]
			args[i] = Literal{Shape: hlo.Shape{Elem: t}, Data: append([]byte(nil), outs[i][o*w:(o+1)*w]...)}
			args[n+i] = Literal{Shape: hlo.Shape{Elem: t}, Data: ubs[i][u*w : (u+1)*w]}
		}
		var v Literal
		if v, err = ev.Computation(c, args); err != nil {
			return
		}
		res := []Literal{v}
		if n > 1 {
			if !v.IsTuple() || len(v.Elems) != n {
				err = fmt.Errorf("to_apply %s returned %s, want a tuple of %d scalars", c.Name, v.Shape, n)
				return
			}
			res = v.Elems
		}
		for i, r := range res {
			if r.IsTuple() || r.Shape.Elem != ts[i] || len(r.Shape.Dims) != 0 || len(r.Data) != ws[i] {
				err = fmt.Errorf("to_apply %s returned %s", c.Name, v.Shape)
				return
			}
		}
		for i, r := range res {
			copy(outs[i][o*ws[i]:(o+1)*ws[i]], r.Data)
		}
	})
	return err
}
