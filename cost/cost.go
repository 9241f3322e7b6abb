package cost

import (
	"math"
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// fmaFlops is XLA's kFmaFlops: a fused multiply-add counts as two FLOPs.
const fmaFlops = 2

// Cost is the compute and memory traffic of an instruction, a computation
// or a module. Every figure is non-negative and saturates at math.MaxInt64.
type Cost struct {
	FLOPs           int64
	BytesRead       int64
	BytesWritten    int64
	Transcendentals int64
	// Loop is set when a while loop without a known trip count was counted
	// once (body + condition), as XLA's HandleWhile does: the real figure
	// is that many times larger.
	Loop bool
	// Unknown is set when a custom-call was counted (its compute unknown,
	// here 0 FLOPs).
	Unknown bool
}

// Add returns c + d, saturating.
func (c Cost) Add(d Cost) Cost {
	return Cost{
		FLOPs:           add(c.FLOPs, d.FLOPs),
		BytesRead:       add(c.BytesRead, d.BytesRead),
		BytesWritten:    add(c.BytesWritten, d.BytesWritten),
		Transcendentals: add(c.Transcendentals, d.Transcendentals),
		Loop:            c.Loop || d.Loop,
		Unknown:         c.Unknown || d.Unknown,
	}
}

// Bytes returns BytesRead + BytesWritten (XLA's bytes accessed), saturating.
func (c Cost) Bytes() int64 { return add(c.BytesRead, c.BytesWritten) }

// scale multiplies every figure by n, saturating.
func (c Cost) scale(n int64) Cost {
	return Cost{
		FLOPs:           mul(c.FLOPs, n),
		BytesRead:       mul(c.BytesRead, n),
		BytesWritten:    mul(c.BytesWritten, n),
		Transcendentals: mul(c.Transcendentals, n),
		Loop:            c.Loop,
		Unknown:         c.Unknown,
	}
}

// max returns the figure-by-figure maximum (XLA's HandleConditional).
func (c Cost) max(d Cost) Cost {
	return Cost{
		FLOPs:           max(c.FLOPs, d.FLOPs),
		BytesRead:       max(c.BytesRead, d.BytesRead),
		BytesWritten:    max(c.BytesWritten, d.BytesWritten),
		Transcendentals: max(c.Transcendentals, d.Transcendentals),
		Loop:            c.Loop || d.Loop,
		Unknown:         c.Unknown || d.Unknown,
	}
}

func add(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// Module returns the module's own compute: its entry computation's cost,
// through calls, fusions, conditionals and loops.
func Module(m *hlo.Module) Cost {
	if m == nil || m.Entry == nil {
		return Cost{}
	}
	return Computation(m.Entry)
}

// Computation returns the sum of the costs of c's instructions.
func Computation(c *hlo.Computation) Cost {
	w := walker{}
	return w.computation(c)
}

// Instruction returns the cost of one instruction, its called computations
// included.
func Instruction(in *hlo.Instruction) Cost {
	w := walker{}
	return w.instruction(in)
}

// walker memoises called computations' costs within one query, so that a
// computation called from many places is counted once per call without
// being walked again, and a computation that calls itself stops.
type walker struct {
	memo map[*hlo.Computation]Cost
	busy map[*hlo.Computation]bool
}

func (w *walker) computation(c *hlo.Computation) Cost {
	if c == nil {
		return Cost{}
	}
	if w.memo == nil {
		w.memo = map[*hlo.Computation]Cost{}
		w.busy = map[*hlo.Computation]bool{}
	}
	if v, ok := w.memo[c]; ok {
		return v
	}
	if w.busy[c] {
		return Cost{}
	}
	w.busy[c] = true
	var sum Cost
	for _, in := range c.Instructions {
		sum = sum.Add(w.instruction(in))
	}
	delete(w.busy, c)
	w.memo[c] = sum
	return sum
}

// elems is the element count of an array shape, 0 for any other shape or
// an unbounded or overflowing one.
func elems(s hlo.Shape) int64 {
	if !s.IsArray() {
		return 0
	}
	n, ok := s.Elements()
	if !ok {
		return 0
	}
	return n
}

// elemsRecursive sums elems over the array leaves of s.
func elemsRecursive(s hlo.Shape) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		n = add(n, elems(sub))
	})
	return n
}

// size is hlo.ByteSize, 0 when it cannot be computed.
func size(s hlo.Shape) int64 {
	n, err := hlo.ByteSize(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// operand returns in's k-th operand, or nil.
func operand(in *hlo.Instruction, k int) *hlo.Instruction {
	if k < 0 || k >= len(in.Operands) {
		return nil
	}
	return in.Operands[k]
}

// operandShape returns the shape of in's k-th operand (the zero shape when
// it has none).
func operandShape(in *hlo.Instruction, k int) hlo.Shape {
	if op := operand(in, k); op != nil {
		return op.Shape
	}
	return hlo.Shape{}
}

// defaultBytes is XLA's Preprocess: every operand read whole, the output
// written whole.
func defaultBytes(in *hlo.Instruction) Cost {
	var c Cost
	for _, op := range in.Operands {
		if op != nil {
			c.BytesRead = add(c.BytesRead, size(op.Shape))
		}
	}
	c.BytesWritten = size(in.Shape)
	return c
}

// transcendental lists the opcodes HandleElementwiseOp counts as
// transcendentals.
var transcendental = map[hlo.Opcode]bool{
	hlo.OpExponential: true, hlo.OpLog: true, hlo.OpLogistic: true,
	hlo.OpPower: true, hlo.OpSqrt: true, hlo.OpCbrt: true, hlo.OpRsqrt: true,
	hlo.OpTanh: true, hlo.OpSine: true, hlo.OpCosine: true,
	hlo.OpExponentialMinusOne: true, hlo.OpLogPlusOne: true, hlo.OpAtan2: true,
	hlo.OpErf: true, hlo.OpTan: true,
}

func (w *walker) instruction(in *hlo.Instruction) Cost {
	if in == nil {
		return Cost{}
	}
	switch in.Opcode {
	case hlo.OpParameter, hlo.OpConstant, hlo.OpGetTupleElement, hlo.OpBitcast,
		hlo.OpDomain, hlo.OpAfterAll, hlo.OpAddDependency:
		return Cost{}
	case hlo.OpTuple:
		return Cost{BytesWritten: size(in.Shape)}
	case hlo.OpFusion:
		return w.fusion(in)
	case hlo.OpCall, hlo.OpAsyncStart:
		c := Cost{}
		for _, callee := range in.Callees() {
			c = c.Add(w.computation(callee))
		}
		return c
	case hlo.OpConditional:
		return w.conditional(in)
	case hlo.OpWhile:
		return w.while(in)
	}
	c := defaultBytes(in)
	w.compute(in, &c)
	w.traffic(in, &c)
	return c
}

// compute sets the FLOPs and transcendentals of an instruction that is not
// a caller of whole computations.
func (w *walker) compute(in *hlo.Instruction, c *Cost) {
	switch op := in.Opcode; {
	case transcendental[op]:
		c.Transcendentals = elems(in.Shape)
	case op == hlo.OpMap:
		c.setSub(w.computation(in.ToApply()), elems(in.Shape))
	case op.Has(hlo.Elementwise):
		if op != hlo.OpCopy {
			c.FLOPs = elems(in.Shape)
		}
	case op == hlo.OpDot:
		c.FLOPs = dotFlops(in)
	case op == hlo.OpConvolution:
		c.FLOPs = convolutionFlops(in, in.Shape)
	case op == hlo.OpReduce:
		out := in.Shape
		if out.IsTuple() && len(out.Tuple) > 0 {
			out = out.Tuple[0]
		}
		c.setSub(w.computation(in.ToApply()), elems(operandShape(in, 0))-elems(out))
	case op == hlo.OpReduceWindow:
		c.setSub(w.computation(in.ToApply()), reduceWindowCount(in))
	case op == hlo.OpSelectAndScatter:
		w.selectAndScatter(in, c)
	case op == hlo.OpScatter:
		n := (len(in.Operands) - 1) / 2
		c.setSub(w.computation(in.ToApply()), elems(operandShape(in, n+1)))
	case op == hlo.OpSort:
		n := elems(operandShape(in, 0))
		c.FLOPs = mul(n, int64(log2Ceil(n)))
	case op == hlo.OpFft:
		c.FLOPs = fftFlops(in)
	case op == hlo.OpTriangularSolve:
		a := operandShape(in, 0)
		if len(a.Dims) > 0 {
			c.FLOPs = mul(fmaFlops, mul(max(a.Dims[len(a.Dims)-1], 0), elems(operandShape(in, 1))))
		}
	case op == hlo.OpCholesky:
		a := operandShape(in, 0)
		if len(a.Dims) > 0 {
			c.FLOPs = mul(max(a.Dims[len(a.Dims)-1], 0), elems(a)) / 3
		}
	case op == hlo.OpAllReduce, op == hlo.OpAllReduceStart:
		c.FLOPs = elemsRecursive(in.Shape)
	case op == hlo.OpRng:
		c.Transcendentals = elems(in.Shape)
	case op == hlo.OpRngBitGenerator:
		c.Transcendentals = elemsRecursive(in.Shape)
	case op == hlo.OpCustomCall:
		w.customCall(in, c)
	}
}

// setSub sets c's compute to a called computation's, applied n times
// (XLA copies FLOPs and transcendentals from a subcomputation, not bytes).
func (c *Cost) setSub(sub Cost, n int64) {
	c.FLOPs = mul(sub.FLOPs, n)
	c.Transcendentals = mul(sub.Transcendentals, n)
	c.Loop = c.Loop || sub.Loop
	c.Unknown = c.Unknown || sub.Unknown
}

// traffic applies XLA's per-opcode byte rules that differ from Preprocess.
func (w *walker) traffic(in *hlo.Instruction, c *Cost) {
	out := size(in.Shape)
	switch in.Opcode {
	case hlo.OpSlice:
		c.BytesRead = out
	case hlo.OpDynamicSlice:
		c.BytesRead = add(out, size(operandShape(in, 1)))
	case hlo.OpGather:
		c.BytesRead = add(out, size(operandShape(in, 1)))
	case hlo.OpDynamicUpdateSlice:
		upd := size(operandShape(in, 1))
		c.BytesRead = add(upd, size(operandShape(in, 2)))
		c.BytesWritten = upd
	case hlo.OpScatter:
		n := (len(in.Operands) - 1) / 2
		var upd int64
		for k := n + 1; k < len(in.Operands); k++ {
			upd = add(upd, size(operandShape(in, k)))
		}
		c.BytesRead = add(mul(upd, 2), size(operandShape(in, n)))
		c.BytesWritten = upd
	case hlo.OpInfeed:
		c.BytesRead, c.BytesWritten = 0, leafBytes(in.Shape)
	case hlo.OpOutfeed:
		c.BytesRead, c.BytesWritten = 0, 0
		for _, op := range in.Operands {
			if op != nil {
				c.BytesRead = add(c.BytesRead, leafBytes(op.Shape))
			}
		}
	case hlo.OpAllReduce, hlo.OpAllReduceStart:
		c.BytesWritten = arrayBytes(in.Shape)
	}
}

// leafBytes sums the sizes of s's leaves (ShapeUtil::GetLeafShapes: arrays
// and tokens, not the tuples' pointer tables).
func leafBytes(s hlo.Shape) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if !sub.IsTuple() {
			n = add(n, size(sub))
		}
	})
	return n
}

// arrayBytes sums the sizes of s's array subshapes.
func arrayBytes(s hlo.Shape) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if sub.IsArray() {
			n = add(n, size(sub))
		}
	})
	return n
}

func (w *walker) selectAndScatter(in *hlo.Instruction, c *Cost) {
	var sel, sc *hlo.Computation
	if in.Ext != nil {
		sel, sc = in.Ext.Select, in.Ext.Scatter
	}
	source := elems(operandShape(in, 1))
	win := int64(1)
	dims, _ := parseWindow(in)
	for _, d := range dims {
		win = mul(win, d.size)
	}
	var s, t Cost
	s.setSub(w.computation(sel), mul(source, win-1))
	t.setSub(w.computation(sc), source)
	c.FLOPs = add(s.FLOPs, t.FLOPs)
	c.Transcendentals = add(s.Transcendentals, t.Transcendentals)
	c.Loop, c.Unknown = s.Loop || t.Loop, s.Unknown || t.Unknown
}

func (w *walker) conditional(in *hlo.Instruction) Cost {
	var c Cost
	for i, b := range in.Branches() {
		bc := w.computation(b)
		if i == 0 {
			c = bc
		} else {
			c = c.max(bc)
		}
	}
	return c
}

// tripCount matches XLA's known_trip_count annotation in backend_config.
var tripCount = regexp.MustCompile(`"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)"?`)

// TripCount returns a while's trip count: the one XLA's
// WhileLoopTripCountAnnotator wrote in its backend_config, else the one of
// a counted loop (patternTripCount); false when neither is known.
func TripCount(in *hlo.Instruction) (int64, bool) {
	if in == nil || in.Opcode != hlo.OpWhile {
		return 0, false
	}
	m := tripCount.FindStringSubmatch(in.BackendConfig())
	if m == nil {
		return patternTripCount(in)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

func (w *walker) while(in *hlo.Instruction) Cost {
	c := w.computation(in.Body()).Add(w.computation(in.Condition()))
	if n, ok := TripCount(in); ok {
		return c.scale(n)
	}
	c.Loop = true
	return c
}

// log2Ceil is ⌈log2 n⌉ (0 for n <= 1).
func log2Ceil(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}

func dotFlops(in *hlo.Instruction) int64 {
	d := in.Dot()
	lhs := operandShape(in, 0)
	width := int64(1)
	if d != nil {
		for _, k := range d.LhsContracting {
			if k >= 0 && k < int64(len(lhs.Dims)) {
				width = mul(width, max(lhs.Dims[k], 0))
			}
		}
	}
	return mul(fmaFlops, mul(elems(in.Shape), width))
}

func fftFlops(in *hlo.Instruction) int64 {
	real := operandShape(in, 0)
	if real.IsTuple() && len(real.Tuple) > 0 {
		real = real.Tuple[0]
	}
	factors := int64(1)
	for _, n := range intList(attr(in, "fft_length")) {
		if n > 0 {
			factors = mul(factors, int64(bits.Len64(uint64(n))-1))
		}
	}
	return mul(fmaFlops*4, mul(factors, elems(real)))
}

// cuBLAS and cuDNN custom-call targets (xla/service/gpu/cublas_cudnn.h).
var (
	gemmTargets = map[string]bool{"__cublas$gemm": true, "__cublas$lt$matmul": true, "__cublas$lt$matmul$f8": true}
	convTargets = map[string]bool{"__cudnn$convForward": true, "__cudnn$convBackwardInput": true,
		"__cudnn$convBackwardFilter": true, "__cudnn$convBiasActivationForward": true,
		"__cudnn$convForwardGraph": true}
	lhsContracting = regexp.MustCompile(`"lhs_contracting_dimensions"\s*:\s*\[([^\]]*)\]`)
)

// customCall is GpuHloCostAnalysis::HandleCustomCall: a cuBLAS gemm
// counts as the dot its backend_config's dot_dimension_numbers describe,
// a cuDNN convolution as its convolution, both on the result (tuple
// element 0; the rest is scratch), which is also what they write. Any
// other custom-call is unknown (HloCostAnalysis::HandleCustomCall).
func (w *walker) customCall(in *hlo.Instruction, c *Cost) {
	target := in.CustomCallTarget()
	out := in.Shape
	if out.IsTuple() && len(out.Tuple) > 0 {
		out = out.Tuple[0]
	}
	switch {
	case gemmTargets[target]:
		width := int64(1)
		lhs := operandShape(in, 0)
		if m := lhsContracting.FindStringSubmatch(in.BackendConfig()); m != nil {
			for _, k := range intList(strings.ReplaceAll(m[1], `"`, "")) {
				if k >= 0 && k < int64(len(lhs.Dims)) {
					width = mul(width, max(lhs.Dims[k], 0))
				}
			}
		}
		c.FLOPs = mul(fmaFlops, mul(elems(out), width))
	case convTargets[target]:
		c.FLOPs = convolutionFlops(in, out)
	default:
		c.Unknown = true
		return
	}
	c.BytesWritten = size(out)
}
