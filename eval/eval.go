package eval

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// array evaluates an instruction whose result and operands are arrays; it
// is reached through instruction only.
func (ev *Evaluator) array(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if !in.Shape.IsArray() {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s with non-array shape %s", in.OpName(), in.Shape)
	}
	if _, err := ElemWidth(in.Shape.Elem); err != nil {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s: %v", in.OpName(), err)
	}
	if _, err := arrayBytes(in.Shape); err != nil {
		return Literal{}, err
	}
	// instruction has checked the operand count and each operand's bytes.
	for i, o := range ops {
		if !o.Shape.IsArray() {
			return Literal{}, fmt.Errorf("operand %d is not an array", i)
		}
	}
	if involvesComplex(in, ops) {
		if out, ok, err := evalComplex(in, ops); ok {
			return out, err
		}
	}
	switch in.Opcode {
	case hlo.OpConstant:
		return evalConstant(in)
	case hlo.OpIota:
		return evalIota(in)
	case hlo.OpNegate, hlo.OpAbs, hlo.OpExponential, hlo.OpLog, hlo.OpSqrt, hlo.OpRsqrt, hlo.OpTanh,
		hlo.OpSine, hlo.OpCosine, hlo.OpFloor, hlo.OpCeil, hlo.OpRoundNearestAfz, hlo.OpRoundNearestEven,
		hlo.OpSign, hlo.OpNot, hlo.OpIsFinite, hlo.OpLogistic, hlo.OpExponentialMinusOne, hlo.OpLogPlusOne, hlo.OpCbrt,
		hlo.OpPopcnt, hlo.OpCountLeadingZeros, hlo.OpTan, hlo.OpAtanh, hlo.OpSinh, hlo.OpCosh, hlo.OpAsin, hlo.OpAcos,
		hlo.OpAsinh, hlo.OpAcosh, hlo.OpErf:
		return evalUnary(in, ops[0])
	case hlo.OpAdd, hlo.OpSubtract, hlo.OpMultiply, hlo.OpDivide, hlo.OpRemainder, hlo.OpMaximum,
		hlo.OpMinimum, hlo.OpPower, hlo.OpAtan2, hlo.OpAnd, hlo.OpOr, hlo.OpXor, hlo.OpShiftLeft,
		hlo.OpShiftRightLogical, hlo.OpShiftRightArithmetic:
		return evalBinary(in, ops[0], ops[1])
	case hlo.OpCompare:
		return evalCompare(in, ops[0], ops[1])
	case hlo.OpSelect:
		return evalSelect(in, ops)
	case hlo.OpClamp:
		return evalClamp(in, ops)
	case hlo.OpConvert:
		return evalConvert(in, ops[0])
	case hlo.OpBitcastConvert:
		return evalBitcastConvert(in, ops[0])
	case hlo.OpCopy, hlo.OpReshape:
		return evalReshape(in, ops[0])
	case hlo.OpBitcast:
		return evalBitcast(in, ops[0])
	case hlo.OpBroadcast:
		return evalBroadcast(in, ops[0])
	case hlo.OpTranspose:
		return evalTranspose(in, ops[0])
	case hlo.OpSlice:
		return evalSlice(in, ops[0])
	case hlo.OpConcatenate:
		return evalConcatenate(in, ops)
	case hlo.OpPad:
		return evalPad(in, ops[0], ops[1])
	case hlo.OpReducePrecision:
		return evalReducePrecision(in, ops[0])
	case hlo.OpReverse:
		return evalReverse(in, ops[0])
	case hlo.OpDynamicSlice:
		return evalDynamicSlice(in, ops)
	case hlo.OpDynamicUpdateSlice:
		return evalDynamicUpdateSlice(in, ops)
	case hlo.OpReduce:
		return ev.reduce(in, ops)
	case hlo.OpReduceWindow:
		return ev.reduceWindow(in, ops)
	case hlo.OpConvolution:
		return evalConvolution(in, ops)
	case hlo.OpGather:
		return evalGather(in, ops)
	case hlo.OpRng:
		return ev.rng(in, ops)
	case hlo.OpMap:
		return ev.mapOp(in, ops)
	case hlo.OpDot:
		return evalDot(in, ops[0], ops[1])
	}
	return Literal{}, unsupportedError{in}
}

// --- helpers ---

func cannotEval(in *hlo.Instruction, t hlo.ElementType) error {
	return fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
}

func checkNumeric(in *hlo.Instruction, ts ...hlo.ElementType) error {
	for _, t := range ts {
		if !numericType(t) {
			return cannotEval(in, t)
		}
	}
	return nil
}

// operandDims checks that an element-wise operand has the result's dims.
func operandDims(in *hlo.Instruction, o Literal, scalarOK bool) error {
	if hlo.SameDims(o.Shape, in.Shape) || (scalarOK && len(o.Shape.Dims) == 0) {
		return nil
	}
	return fmt.Errorf("operand dims %v do not match result dims %v", o.Shape.Dims, in.Shape.Dims)
}

// operandsDims checks that each operand has exactly the result's dims.
func operandsDims(in *hlo.Instruction, ops ...Literal) error {
	for _, o := range ops {
		if err := operandDims(in, o, false); err != nil {
			return err
		}
	}
	return nil
}

// logicalAs decodes an operand's elements, in logical order, with dec.
func logicalAs[T any](o Literal, dec func(hlo.ElementType, []byte) []T) ([]T, error) {
	b, _, err := o.logical()
	if err != nil {
		return nil, err
	}
	return dec(o.Shape.Elem, b), nil
}

// logicalF decodes an operand as float64 values in logical order.
func logicalF(o Literal) ([]float64, error) { return logicalAs(o, decodeF) }
func logicalI(o Literal) ([]int64, error)   { return logicalAs(o, decodeI) }

// logicalAll decodes each operand with dec.
func logicalAll[T any](dec func(Literal) ([]T, error), ops ...Literal) ([][]T, error) {
	out := make([][]T, len(ops))
	for i, o := range ops {
		v, err := dec(o)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func outF(s hlo.Shape, v []float64) (Literal, error) { return fromLogical(s, encodeF(s.Elem, v)) }
func outI(s hlo.Shape, v []int64) (Literal, error)   { return fromLogical(s, encodeI(s.Elem, v)) }

// mapInPlace sets v[i] = f(v[i]) and returns v.
func mapInPlace[T any](v []T, f func(T) T) []T {
	for i, x := range v {
		v[i] = f(x)
	}
	return v
}

// zipInPlace sets a[i] = f(a[i], b[i]) and returns a.
func zipInPlace[T any](a, b []T, f func(a, b T) T) []T {
	b = b[:len(a)]
	for i, x := range a {
		a[i] = f(x, b[i])
	}
	return a
}

// zipPred returns the pred elements (0 or 1) of f(a[i], b[i]).
func zipPred[T any](a, b []T, f func(a, b T) bool) []int64 {
	b = b[:len(a)]
	out := make([]int64, len(a))
	for i, x := range a {
		if f(x, b[i]) {
			out[i] = 1
		}
	}
	return out
}

// intsToFloats converts integers decoded from type t (u64 bit for bit) to
// float64.
func intsToFloats(t hlo.ElementType, v []int64) []float64 {
	out := make([]float64, len(v))
	if t == hlo.U64 {
		for i, a := range v {
			out[i] = float64(uint64(a))
		}
		return out
	}
	for i, a := range v {
		out[i] = float64(a)
	}
	return out
}

func strides(dims []int64) []int64 {
	st := make([]int64, len(dims))
	s := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = s
		s *= dims[i]
	}
	return st
}

// nextIndex advances the row-major multi-index idx within dims.
func nextIndex(idx, dims []int64) {
	for d := len(idx) - 1; d >= 0; d-- {
		idx[d]++
		if idx[d] < dims[d] {
			return
		}
		idx[d] = 0
	}
}

// gather builds a result of shape s whose element at logical multi-index
// idx is x's element at src(idx, st), a logical row-major index into x (st
// being x's row-major strides), or fill when src returns -1.
func gather(s hlo.Shape, x Literal, fill []byte, src func(idx, st []int64) int64) (Literal, error) {
	srcB, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	st := strides(x.Shape.Dims)
	n := elemCount(s)
	out := make([]byte, n*w)
	idx := make([]int64, len(s.Dims))
	for i := 0; i < n; i++ {
		j := src(idx, st)
		if j < 0 {
			copy(out[i*w:(i+1)*w], fill)
		} else {
			copy(out[i*w:(i+1)*w], srcB[j*int64(w):(j+1)*int64(w)])
		}
		nextIndex(idx, s.Dims)
	}
	return fromLogical(s, out)
}

func sameElem(in *hlo.Instruction, ops ...Literal) error {
	for _, o := range ops {
		if o.Shape.Elem != in.Shape.Elem {
			return fmt.Errorf("operand type %s differs from result type %s", o.Shape.Elem, in.Shape.Elem)
		}
	}
	return nil
}

// --- constant, iota ---

func evalConstant(in *hlo.Instruction) (Literal, error) {
	lit := in.Literal()
	if lit == nil || lit.Elided {
		return Literal{}, fmt.Errorf("constant has no literal values")
	}
	s := in.Shape
	if err := checkNumeric(in, s.Elem); err != nil {
		return Literal{}, err
	}
	n := elemCount(s)
	if isFloat(s.Elem) {
		if len(lit.Floats) != n {
			return Literal{}, fmt.Errorf("constant has %d values, want %d", len(lit.Floats), n)
		}
		return outF(s, lit.Floats)
	}
	if len(lit.Ints) != n {
		return Literal{}, fmt.Errorf("constant has %d values, want %d", len(lit.Ints), n)
	}
	return outI(s, lit.Ints)
}

func evalIota(in *hlo.Instruction) (Literal, error) {
	s := in.Shape
	if err := checkNumeric(in, s.Elem); err != nil {
		return Literal{}, err
	}
	dim := int64(0)
	if v, ok := in.Attr("iota_dimension"); ok {
		d, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return Literal{}, fmt.Errorf("bad iota_dimension %q", v)
		}
		dim = d
	}
	if dim < 0 || int(dim) >= len(s.Dims) {
		return Literal{}, fmt.Errorf("iota_dimension %d out of range", dim)
	}
	st := strides(s.Dims)
	v := make([]int64, elemCount(s))
	for i := range v {
		v[i] = (int64(i) / st[dim]) % s.Dims[dim]
	}
	if isFloat(s.Elem) {
		return outF(s, intsToFloats(hlo.S64, v))
	}
	return outI(s, v)
}

// --- element-wise ---

func signF(x float64) float64 {
	switch {
	case math.IsNaN(x) || x == 0:
		return x
	case x > 0:
		return 1
	}
	return -1
}

// unaryFloat holds the floating-point unary ops.
var unaryFloat = map[hlo.Opcode]func(float64) float64{
	hlo.OpNegate:              func(x float64) float64 { return -x },
	hlo.OpAbs:                 math.Abs,
	hlo.OpExponential:         math.Exp,
	hlo.OpLog:                 math.Log,
	hlo.OpSqrt:                math.Sqrt,
	hlo.OpRsqrt:               func(x float64) float64 { return 1 / math.Sqrt(x) },
	hlo.OpTanh:                math.Tanh,
	hlo.OpSine:                math.Sin,
	hlo.OpCosine:              math.Cos,
	hlo.OpTan:                 math.Tan,
	hlo.OpFloor:               math.Floor,
	hlo.OpCeil:                math.Ceil,
	hlo.OpRoundNearestAfz:     math.Round,
	hlo.OpRoundNearestEven:    math.RoundToEven,
	hlo.OpSign:                signF,
	hlo.OpLogistic:            func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	hlo.OpExponentialMinusOne: math.Expm1,
	hlo.OpLogPlusOne:          math.Log1p,
	hlo.OpCbrt:                math.Cbrt,
	hlo.OpAtanh:               math.Atanh,
	hlo.OpSinh:                math.Sinh,
	hlo.OpCosh:                math.Cosh,
	hlo.OpAsin:                math.Asin,
	hlo.OpAcos:                math.Acos,
	hlo.OpAsinh:               math.Asinh,
	hlo.OpAcosh:               math.Acosh,
	hlo.OpErf:                 math.Erf,
}

// unaryInt returns op on integers (or preds) of type t, or nil.
func unaryInt(op hlo.Opcode, t hlo.ElementType) func(int64) int64 {
	bw := t.BitWidth()
	mask := ^uint64(0)
	if bw < 64 {
		mask = 1<<uint(bw) - 1
	}
	if t == hlo.PRED && op != hlo.OpNot {
		return nil
	}
	switch op {
	case hlo.OpNegate:
		return func(x int64) int64 { return -x }
	case hlo.OpAbs:
		if t.IsUnsigned() {
			return func(x int64) int64 { return x }
		}
		return func(x int64) int64 {
			if x < 0 {
				return -x
			}
			return x
		}
	case hlo.OpSign:
		return func(x int64) int64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}
	case hlo.OpNot:
		if t == hlo.PRED {
			return func(x int64) int64 { return 1 - x }
		}
		return func(x int64) int64 { return ^x }
	case hlo.OpPopcnt:
		return func(x int64) int64 { return int64(bits.OnesCount64(uint64(x) & mask)) }
	case hlo.OpCountLeadingZeros:
		return func(x int64) int64 { return int64(bits.LeadingZeros64(uint64(x)&mask) - (64 - bw)) }
	}
	return nil
}

func evalUnary(in *hlo.Instruction, x Literal) (Literal, error) {
	t := x.Shape.Elem
	if err := checkNumeric(in, t, in.Shape.Elem); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	if in.Opcode == hlo.OpIsFinite {
		if !isFloat(t) || in.Shape.Elem != hlo.PRED {
			return Literal{}, unsupportedError{in}
		}
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		out := make([]int64, len(v))
		for i, f := range v {
			if !math.IsInf(f, 0) && !math.IsNaN(f) {
				out[i] = 1
			}
		}
		return outI(in.Shape, out)
	}
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	if isFloat(t) {
		f := unaryFloat[in.Opcode]
		if f == nil {
			return Literal{}, cannotEval(in, t)
		}
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		return outF(in.Shape, mapInPlace(v, f))
	}
	f := unaryInt(in.Opcode, t)
	if f == nil {
		return Literal{}, cannotEval(in, t)
	}
	v, err := logicalI(x)
	if err != nil {
		return Literal{}, err
	}
	return outI(in.Shape, mapInPlace(v, f))
}

func maxF(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

func minF(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

// binaryFloat holds the floating-point binary ops.
var binaryFloat = map[hlo.Opcode]func(a, b float64) float64{
	hlo.OpAdd:       func(a, b float64) float64 { return a + b },
	hlo.OpSubtract:  func(a, b float64) float64 { return a - b },
	hlo.OpMultiply:  func(a, b float64) float64 { return a * b },
	hlo.OpDivide:    func(a, b float64) float64 { return a / b },
	hlo.OpRemainder: math.Mod,
	hlo.OpMaximum:   maxF,
	hlo.OpMinimum:   minF,
	hlo.OpPower:     math.Pow,
	hlo.OpAtan2:     math.Atan2,
}

// binaryInt returns op on values extended per t (see decodeI), or nil; the
// caller truncates the results to t.
func binaryInt(op hlo.Opcode, t hlo.ElementType) func(a, b int64) int64 {
	unsigned := t.IsUnsigned() || t == hlo.PRED
	bw := uint64(t.BitWidth())
	switch op {
	case hlo.OpAdd:
		return func(a, b int64) int64 { return a + b }
	case hlo.OpSubtract:
		return func(a, b int64) int64 { return a - b }
	case hlo.OpMultiply:
		return func(a, b int64) int64 { return a * b }
	case hlo.OpDivide:
		return func(a, b int64) int64 {
			if b == 0 {
				return -1
			}
			if unsigned {
				return int64(uint64(a) / uint64(b))
			}
			return a / b // Go: MinInt64 / -1 == MinInt64
		}
	case hlo.OpRemainder:
		return func(a, b int64) int64 {
			if b == 0 {
				return a
			}
			if unsigned {
				return int64(uint64(a) % uint64(b))
			}
			return a % b
		}
	case hlo.OpMaximum:
		return func(a, b int64) int64 {
			if unsigned && uint64(a) < uint64(b) || !unsigned && a < b {
				return b
			}
			return a
		}
	case hlo.OpMinimum:
		return func(a, b int64) int64 {
			if unsigned && uint64(a) > uint64(b) || !unsigned && a > b {
				return b
			}
			return a
		}
	case hlo.OpAnd:
		return func(a, b int64) int64 { return a & b }
	case hlo.OpOr:
		return func(a, b int64) int64 { return a | b }
	case hlo.OpXor:
		return func(a, b int64) int64 { return a ^ b }
	case hlo.OpShiftLeft:
		return func(a, b int64) int64 {
			if uint64(b) >= bw {
				return 0
			}
			return a << uint64(b)
		}
	case hlo.OpShiftRightLogical:
		return func(a, b int64) int64 {
			if uint64(b) >= bw {
				return 0
			}
			ua := uint64(a)
			if bw < 64 {
				ua &= 1<<bw - 1
			}
			return int64(ua >> uint64(b))
		}
	case hlo.OpShiftRightArithmetic:
		return func(a, b int64) int64 {
			if uint64(b) >= bw {
				if normI(t, a) < 0 && !unsigned {
					return -1
				}
				if unsigned && bw < 64 && a>>(bw-1)&1 != 0 || unsigned && bw == 64 && a < 0 {
					return -1
				}
				return 0
			}
			if unsigned && bw < 64 {
				// Sign-extend from the type's width first.
				sh := 64 - bw
				a = a << sh >> sh
			}
			return a >> uint64(b)
		}
	case hlo.OpPower:
		return func(a, b int64) int64 { return ipow(a, b, unsigned) }
	}
	return nil
}

func ipow(base, exp int64, unsigned bool) int64 {
	if !unsigned && exp < 0 {
		switch base {
		case 1:
			return 1
		case -1:
			if exp%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	e := uint64(exp)
	for e > 0 {
		if e&1 != 0 {
			r *= base
		}
		base *= base
		e >>= 1
	}
	return r
}

func evalBinary(in *hlo.Instruction, x, y Literal) (Literal, error) {
	t := in.Shape.Elem
	if err := checkNumeric(in, t); err != nil {
		return Literal{}, err
	}
	if err := sameElem(in, x, y); err != nil {
		return Literal{}, err
	}
	if err := operandsDims(in, x, y); err != nil {
		return Literal{}, err
	}
	if out, ok := fastF32Binary(in, x, y); ok {
		return out, nil
	}
	if isFloat(t) {
		f := binaryFloat[in.Opcode]
		if f == nil {
			return Literal{}, cannotEval(in, t)
		}
		v, err := logicalAll(logicalF, x, y)
		if err != nil {
			return Literal{}, err
		}
		return outF(in.Shape, zipInPlace(v[0], v[1], f))
	}
	f := binaryInt(in.Opcode, t)
	if t == hlo.PRED {
		switch in.Opcode {
		case hlo.OpAnd, hlo.OpOr, hlo.OpXor, hlo.OpMaximum, hlo.OpMinimum:
		default:
			f = nil
		}
	}
	if f == nil {
		return Literal{}, cannotEval(in, t)
	}
	v, err := logicalAll(logicalI, x, y)
	if err != nil {
		return Literal{}, err
	}
	return outI(in.Shape, zipInPlace(v[0], v[1], f))
}

// compareDirection returns the test of a compare direction on the sign c
// (-1, 0, 1) of a - b.
func compareDirection(dir string) func(c int) bool {
	switch dir {
	case "EQ":
		return func(c int) bool { return c == 0 }
	case "NE":
		return func(c int) bool { return c != 0 }
	case "LT":
		return func(c int) bool { return c < 0 }
	case "LE":
		return func(c int) bool { return c <= 0 }
	case "GT":
		return func(c int) bool { return c > 0 }
	case "GE":
		return func(c int) bool { return c >= 0 }
	}
	return nil
}

func evalCompare(in *hlo.Instruction, x, y Literal) (Literal, error) {
	t := x.Shape.Elem
	if err := checkNumeric(in, t); err != nil {
		return Literal{}, err
	}
	if in.Shape.Elem != hlo.PRED || y.Shape.Elem != t {
		return Literal{}, fmt.Errorf("compare types %s, %s -> %s", t, y.Shape.Elem, in.Shape.Elem)
	}
	if err := operandsDims(in, x, y); err != nil {
		return Literal{}, err
	}
	ty, _ := in.Attr("type")
	switch {
	case ty == "" || ty == "FLOAT" || ty == "SIGNED" || ty == "UNSIGNED":
	case ty == "TOTALORDER" && !isFloat(t):
		return Literal{}, fmt.Errorf("comparison type TOTALORDER on %s, which is not a floating-point type", t)
	case ty != "TOTALORDER":
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s with comparison type %s", in.OpName(), ty)
	}
	dir, _ := in.Attr("direction")
	holds := compareDirection(dir)
	if holds == nil {
		return Literal{}, fmt.Errorf("bad compare direction %q", dir)
	}
	if ty == "TOTALORDER" {
		// XLA's total order: -NaN < -inf < ... < -0 < +0 < ... < inf <
		// NaN, every element equal only to itself bit for bit.
		xb, w, err := x.logical()
		if err != nil {
			return Literal{}, err
		}
		yb, _, err := y.logical()
		if err != nil {
			return Literal{}, err
		}
		out := make([]int64, len(xb)/w)
		for i := range out {
			a, b := orderKey(t, w, readRaw(xb[i*w:], w)), orderKey(t, w, readRaw(yb[i*w:], w))
			if holds(cmp.Compare(a, b)) {
				out[i] = 1
			}
		}
		return outI(in.Shape, out)
	}
	if isFloat(t) {
		v, err := logicalAll(logicalF, x, y)
		if err != nil {
			return Literal{}, err
		}
		unordered := dir == "NE"
		return outI(in.Shape, zipPred(v[0], v[1], func(a, b float64) bool {
			switch {
			case math.IsNaN(a) || math.IsNaN(b):
				return unordered
			case a < b:
				return holds(-1)
			case a > b:
				return holds(1)
			}
			return holds(0)
		}))
	}
	v, err := logicalAll(logicalI, x, y)
	if err != nil {
		return Literal{}, err
	}
	unsigned := t.IsUnsigned() || t == hlo.PRED
	return outI(in.Shape, zipPred(v[0], v[1], func(a, b int64) bool {
		switch {
		case unsigned && uint64(a) < uint64(b) || !unsigned && a < b:
			return holds(-1)
		case a != b:
			return holds(1)
		}
		return holds(0)
	}))
}

func evalSelect(in *hlo.Instruction, ops []Literal) (Literal, error) {
	p, x, y := ops[0], ops[1], ops[2]
	if p.Shape.Elem != hlo.PRED {
		return Literal{}, fmt.Errorf("select predicate has type %s", p.Shape.Elem)
	}
	if err := sameElem(in, x, y); err != nil {
		return Literal{}, err
	}
	for i, o := range ops {
		if err := operandDims(in, o, i == 0); err != nil {
			return Literal{}, err
		}
	}
	pb, _, err := p.logical()
	if err != nil {
		return Literal{}, err
	}
	xb, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	yb, _, err := y.logical()
	if err != nil {
		return Literal{}, err
	}
	n := elemCount(in.Shape)
	ps := step(len(pb))
	out := make([]byte, n*w)
	for i := 0; i < n; i++ {
		src := yb
		if pb[i*ps] != 0 {
			src = xb
		}
		copy(out[i*w:(i+1)*w], src[i*w:(i+1)*w])
	}
	return fromLogical(in.Shape, out)
}

// step is the index step of an operand of n elements that may be a scalar
// standing for every element: 0 for a scalar, else 1.
func step(n int) int {
	if n == 1 {
		return 0
	}
	return 1
}

// clampInPlace sets v[i] = min(max(v[i], lo[i]), hi[i]) and returns v; lo
// and hi may be scalars.
func clampInPlace[T any](lo, v, hi []T, maxOf, minOf func(a, b T) T) []T {
	ls, hs := step(len(lo)), step(len(hi))
	for i, x := range v {
		v[i] = minOf(maxOf(x, lo[i*ls]), hi[i*hs])
	}
	return v
}

func evalClamp(in *hlo.Instruction, ops []Literal) (Literal, error) {
	lo, x, hi := ops[0], ops[1], ops[2]
	t := in.Shape.Elem
	if err := checkNumeric(in, t); err != nil {
		return Literal{}, err
	}
	if err := sameElem(in, lo, x, hi); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	for _, o := range []Literal{lo, hi} {
		if err := operandDims(in, o, true); err != nil {
			return Literal{}, err
		}
	}
	if isFloat(t) {
		v, err := logicalAll(logicalF, lo, x, hi)
		if err != nil {
			return Literal{}, err
		}
		return outF(in.Shape, clampInPlace(v[0], v[1], v[2], maxF, minF))
	}
	v, err := logicalAll(logicalI, lo, x, hi)
	if err != nil {
		return Literal{}, err
	}
	return outI(in.Shape, clampInPlace(v[0], v[1], v[2], binaryInt(hlo.OpMaximum, t), binaryInt(hlo.OpMinimum, t)))
}

// --- conversions ---

// floatToInt converts per XLA: NaN gives 0, out-of-range values saturate.
func floatToInt(t hlo.ElementType, f float64) int64 {
	if t == hlo.PRED {
		if f != 0 {
			return 1
		}
		return 0
	}
	if math.IsNaN(f) {
		return 0
	}
	f = math.Trunc(f)
	bw := uint(t.BitWidth())
	if t.IsUnsigned() {
		if f <= 0 {
			return 0
		}
		max := math.Ldexp(1, int(bw)) // 2^bw
		if f >= max {
			if bw == 64 {
				return -1
			}
			return int64(1)<<bw - 1
		}
		return int64(uint64(f))
	}
	max := math.Ldexp(1, int(bw)-1)
	if f >= max {
		if bw == 64 {
			return math.MaxInt64
		}
		return int64(1)<<(bw-1) - 1
	}
	if f < -max {
		return -(int64(1) << (bw - 1))
	}
	return int64(f)
}

func evalConvert(in *hlo.Instruction, x Literal) (Literal, error) {
	from, to := x.Shape.Elem, in.Shape.Elem
	if err := checkNumeric(in, from, to); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	switch {
	case isFloat(from) && isFloat(to):
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		return outF(in.Shape, v)
	case isFloat(from):
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		out := make([]int64, len(v))
		for i, f := range v {
			out[i] = floatToInt(to, f)
		}
		return outI(in.Shape, out)
	}
	v, err := logicalI(x)
	if err != nil {
		return Literal{}, err
	}
	if isFloat(to) {
		return outF(in.Shape, intsToFloats(from, v))
	}
	// encodeI truncates to the result's width and makes a pred 0 or 1.
	return outI(in.Shape, v)
}

func evalBitcastConvert(in *hlo.Instruction, x Literal) (Literal, error) {
	if x.Shape.Elem.BitWidth() != in.Shape.Elem.BitWidth() {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s between widths %d and %d",
			in.OpName(), x.Shape.Elem.BitWidth(), in.Shape.Elem.BitWidth())
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	return relayout(in.Shape, x)
}

// --- data movement ---

// relayout copies x's elements, in logical order, into a literal of shape s
// (of the same element count and width).
func relayout(s hlo.Shape, x Literal) (Literal, error) {
	b, _, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	return fromLogical(s, append([]byte(nil), b...))
}

func evalReshape(in *hlo.Instruction, x Literal) (Literal, error) {
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	if elemCount(x.Shape) != elemCount(in.Shape) {
		return Literal{}, fmt.Errorf("element count %d differs from result's %d", elemCount(x.Shape), elemCount(in.Shape))
	}
	if in.Opcode == hlo.OpCopy {
		if err := operandDims(in, x, false); err != nil {
			return Literal{}, err
		}
	}
	return relayout(in.Shape, x)
}

// evalBitcast copies the bytes when both shapes carry explicit layouts (a
// bitcast of layout-assigned HLO is a no-op on the buffer) and otherwise
// reshapes the logical order.
func evalBitcast(in *hlo.Instruction, x Literal) (Literal, error) {
	if x.Shape.Layout != nil && in.Shape.Layout != nil || len(x.Shape.Dims) <= 1 && len(in.Shape.Dims) <= 1 {
		w, err := ElemWidth(in.Shape.Elem)
		if err != nil {
			return Literal{}, err
		}
		if len(x.Data) != w*elemCount(in.Shape) {
			return Literal{}, fmt.Errorf("operand has %d bytes, result %d", len(x.Data), w*elemCount(in.Shape))
		}
		if _, _, err := physStrides(in.Shape); err != nil {
			return Literal{}, err
		}
		return Literal{Shape: in.Shape, Data: append([]byte(nil), x.Data...)}, nil
	}
	return evalReshape(in, x)
}

func evalBroadcast(in *hlo.Instruction, x Literal) (Literal, error) {
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	dims := in.Dimensions
	if len(dims) != len(x.Shape.Dims) {
		return Literal{}, fmt.Errorf("broadcast dimensions %v for operand rank %d", dims, len(x.Shape.Dims))
	}
	for i, d := range dims {
		if d < 0 || int(d) >= len(in.Shape.Dims) || in.Shape.Dims[d] != x.Shape.Dims[i] {
			return Literal{}, fmt.Errorf("bad broadcast dimensions %v", dims)
		}
	}
	return gather(in.Shape, x, nil, func(idx, st []int64) int64 {
		j := int64(0)
		for i, d := range dims {
			j += idx[d] * st[i]
		}
		return j
	})
}

// transposeIndex maps each row-major index of the transposed dims (out dim
// i = in dim perm[i]) to its row-major index in dims.
func transposeIndex(dims []int64, perm []int64) []int {
	st := strides(dims)
	od := make([]int64, len(perm))
	ost := make([]int64, len(perm))
	for i, p := range perm {
		od[i], ost[i] = dims[p], st[p]
	}
	return physIndex(od, ost)
}

func validPerm(p []int64, r int) bool {
	if len(p) != r {
		return false
	}
	seen := make([]bool, r)
	for _, d := range p {
		if d < 0 || int(d) >= r || seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}

func evalTranspose(in *hlo.Instruction, x Literal) (Literal, error) {
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	perm := in.Dimensions
	if !validPerm(perm, len(x.Shape.Dims)) {
		return Literal{}, fmt.Errorf("bad transpose dimensions %v", perm)
	}
	for i, p := range perm {
		if in.Shape.Dims[i] != x.Shape.Dims[p] {
			return Literal{}, fmt.Errorf("transpose result dims %v do not match", in.Shape.Dims)
		}
	}
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	out := make([]byte, len(b))
	for i, j := range transposeIndex(x.Shape.Dims, perm) {
		copy(out[i*w:(i+1)*w], b[j*w:(j+1)*w])
	}
	return fromLogical(in.Shape, out)
}

func evalSlice(in *hlo.Instruction, x Literal) (Literal, error) {
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	sl := in.Slice()
	if len(sl) != len(x.Shape.Dims) {
		return Literal{}, fmt.Errorf("slice has %d dims, operand rank %d", len(sl), len(x.Shape.Dims))
	}
	// A missing (0) or negative stride is 1.
	stride := make([]int64, len(sl))
	for i, s := range sl {
		stride[i] = max(s.Stride, 1)
		if s.Start < 0 || s.Limit > x.Shape.Dims[i] || s.Start > s.Limit || (s.Limit-s.Start+stride[i]-1)/stride[i] != in.Shape.Dims[i] {
			return Literal{}, fmt.Errorf("bad slice %v for dims %v", sl, x.Shape.Dims)
		}
	}
	return gather(in.Shape, x, nil, func(idx, st []int64) int64 {
		j := int64(0)
		for d, s := range sl {
			j += (s.Start + idx[d]*stride[d]) * st[d]
		}
		return j
	})
}

func evalConcatenate(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) == 0 || len(in.Dimensions) != 1 {
		return Literal{}, fmt.Errorf("concatenate needs operands and one dimension")
	}
	if err := sameElem(in, ops...); err != nil {
		return Literal{}, err
	}
	cd := int(in.Dimensions[0])
	r := len(in.Shape.Dims)
	if cd < 0 || cd >= r {
		return Literal{}, fmt.Errorf("bad concatenate dimension %d", cd)
	}
	var bs [][]byte
	var sts [][]int64
	offs := []int64{0}
	w := 0
	for _, o := range ops {
		if len(o.Shape.Dims) != r {
			return Literal{}, fmt.Errorf("operand rank mismatch")
		}
		for d := 0; d < r; d++ {
			if d != cd && o.Shape.Dims[d] != in.Shape.Dims[d] {
				return Literal{}, fmt.Errorf("operand dims %v do not match result %v", o.Shape.Dims, in.Shape.Dims)
			}
		}
		b, ww, err := o.logical()
		if err != nil {
			return Literal{}, err
		}
		w = ww
		bs = append(bs, b)
		sts = append(sts, strides(o.Shape.Dims))
		offs = append(offs, offs[len(offs)-1]+o.Shape.Dims[cd])
	}
	if offs[len(offs)-1] != in.Shape.Dims[cd] {
		return Literal{}, fmt.Errorf("concatenated size %d, result %d", offs[len(offs)-1], in.Shape.Dims[cd])
	}
	n := elemCount(in.Shape)
	out := make([]byte, n*w)
	idx := make([]int64, r)
	for i := 0; i < n; i++ {
		k := 0
		for idx[cd] >= offs[k+1] {
			k++
		}
		j := int64(0)
		for d := 0; d < r; d++ {
			v := idx[d]
			if d == cd {
				v -= offs[k]
			}
			j += v * sts[k][d]
		}
		copy(out[i*w:(i+1)*w], bs[k][int(j)*w:(int(j)+1)*w])
		nextIndex(idx, in.Shape.Dims)
	}
	return fromLogical(in.Shape, out)
}

type padDim struct{ lo, hi, interior int64 }

func parsePadding(s string, rank int) ([]padDim, error) {
	s = strings.TrimSpace(s)
	var out []padDim
	if s != "" {
		for _, part := range strings.Split(s, "x") {
			f := strings.Split(part, "_")
			if len(f) < 2 || len(f) > 3 {
				return nil, fmt.Errorf("bad padding_config %q", s)
			}
			var v [3]int64
			for i, x := range f {
				n, err := strconv.ParseInt(x, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("bad padding_config %q", s)
				}
				v[i] = n
			}
			out = append(out, padDim{v[0], v[1], v[2]})
		}
	}
	if len(out) != rank {
		return nil, fmt.Errorf("padding_config %q for rank %d", s, rank)
	}
	return out, nil
}

func evalPad(in *hlo.Instruction, x, pv Literal) (Literal, error) {
	if err := sameElem(in, x, pv); err != nil {
		return Literal{}, err
	}
	if len(pv.Shape.Dims) != 0 {
		return Literal{}, fmt.Errorf("padding value is not a scalar")
	}
	// XLA prints the configuration as padding=; padding_config= is the
	// name this package's own tests and fusion's simplifier also accept.
	cfg, ok := in.Attr("padding")
	if !ok {
		cfg, _ = in.Attr("padding_config")
	}
	pads, err := parsePadding(cfg, len(x.Shape.Dims))
	if err != nil {
		return Literal{}, err
	}
	for d, p := range pads {
		n := x.Shape.Dims[d]
		want := p.lo + p.hi + n
		if n > 0 {
			want += (n - 1) * p.interior
		}
		if p.interior < 0 || want != in.Shape.Dims[d] {
			return Literal{}, fmt.Errorf("padding_config %q does not give dims %v", cfg, in.Shape.Dims)
		}
	}
	return gather(in.Shape, x, pv.Data, func(idx, st []int64) int64 {
		j := int64(0)
		for d, p := range pads {
			pos := idx[d] - p.lo
			if pos < 0 || pos%(p.interior+1) != 0 {
				return -1
			}
			s := pos / (p.interior + 1)
			if s >= x.Shape.Dims[d] {
				return -1
			}
			j += s * st[d]
		}
		return j
	})
}

func evalReverse(in *hlo.Instruction, x Literal) (Literal, error) {
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	rev := make([]bool, len(x.Shape.Dims))
	for _, d := range in.Dimensions {
		if d < 0 || int(d) >= len(rev) {
			return Literal{}, fmt.Errorf("bad reverse dimension %d", d)
		}
		rev[d] = true
	}
	return gather(in.Shape, x, nil, func(idx, st []int64) int64 {
		j := int64(0)
		for d, v := range idx {
			if rev[d] {
				v = x.Shape.Dims[d] - 1 - v
			}
			j += v * st[d]
		}
		return j
	})
}

// startIndices checks that a window of sizes fits in dims (tooLarge is the
// error when it does not), reads the scalar start-index operands and clamps
// each to [0, dim - size] as XLA does.
func startIndices(ops []Literal, dims, sizes []int64, tooLarge string) ([]int64, error) {
	if len(sizes) != len(dims) {
		return nil, fmt.Errorf("rank mismatch")
	}
	for d := range sizes {
		if sizes[d] > dims[d] {
			return nil, errors.New(tooLarge)
		}
	}
	if len(ops) != len(dims) {
		return nil, fmt.Errorf("%d start indices for rank %d", len(ops), len(dims))
	}
	out := make([]int64, len(ops))
	for i, o := range ops {
		t := o.Shape.Elem
		if !t.IsInteger() || len(o.Shape.Dims) != 0 || !numericType(t) {
			return nil, fmt.Errorf("start index %d is not an integer scalar", i)
		}
		v := decodeI(t, o.Data)[0]
		if t == hlo.U64 && v < 0 {
			v = math.MaxInt64
		}
		v = min(max(v, 0), dims[i]-sizes[i])
		out[i] = v
	}
	return out, nil
}

func evalDynamicSlice(in *hlo.Instruction, ops []Literal) (Literal, error) {
	x := ops[0]
	if err := sameElem(in, x); err != nil {
		return Literal{}, err
	}
	starts, err := startIndices(ops[1:], x.Shape.Dims, in.Shape.Dims, "slice size exceeds operand")
	if err != nil {
		return Literal{}, err
	}
	return gather(in.Shape, x, nil, func(idx, st []int64) int64 {
		j := int64(0)
		for d, v := range idx {
			j += (v + starts[d]) * st[d]
		}
		return j
	})
}

func evalDynamicUpdateSlice(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if len(ops) < 2 {
		return Literal{}, fmt.Errorf("needs operand and update")
	}
	x, u := ops[0], ops[1]
	if err := sameElem(in, x, u); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	starts, err := startIndices(ops[2:], x.Shape.Dims, u.Shape.Dims, "update larger than operand")
	if err != nil {
		return Literal{}, err
	}
	xb, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	ub, _, err := u.logical()
	if err != nil {
		return Literal{}, err
	}
	out := append([]byte(nil), xb...)
	st := strides(x.Shape.Dims)
	n := elemCount(u.Shape)
	idx := make([]int64, len(u.Shape.Dims))
	for i := 0; i < n; i++ {
		j := int64(0)
		for d, v := range idx {
			j += (v + starts[d]) * st[d]
		}
		copy(out[int(j)*w:(int(j)+1)*w], ub[i*w:(i+1)*w])
		nextIndex(idx, u.Shape.Dims)
	}
	return fromLogical(in.Shape, out)
}
