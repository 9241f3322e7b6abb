package runtime

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// EvalInstruction computes the array result of in from its operands'
// literals. Unsupported opcodes or element types give an error, never a
// wrong answer.
func EvalInstruction(in *hlo.Instruction, operands []Literal) (Literal, error) {
	out, err := evalInstruction(in, operands)
	if err != nil {
		return Literal{}, fmt.Errorf("%s: %s: %w", in.Name, in.OpName(), err)
	}
	return out, nil
}

type unsupportedError struct{ in *hlo.Instruction }

func (e unsupportedError) Error() string {
	return fmt.Sprintf("cannot evaluate opcode %s", e.in.OpName())
}

// EvalComputation evaluates computation c on args (one literal per
// parameter) by walking its instructions in order; the root must be an array.
func EvalComputation(c *hlo.Computation, args []Literal) (Literal, error) {
	vals := make(map[*hlo.Instruction]Literal, len(c.Instructions))
	for _, in := range c.Instructions {
		if in.Opcode == hlo.OpParameter {
			if in.ParameterNumber < 0 || int(in.ParameterNumber) >= len(args) {
				return Literal{}, fmt.Errorf("%s: parameter %d of %d", in.Name, in.ParameterNumber, len(args))
			}
			vals[in] = args[in.ParameterNumber]
			continue
		}
		ops := make([]Literal, len(in.Operands))
		for i, o := range in.Operands {
			v, ok := vals[o]
			if !ok {
				return Literal{}, fmt.Errorf("%s: operand %s has no value", in.Name, o.Name)
			}
			ops[i] = v
		}
		v, err := EvalInstruction(in, ops)
		if err != nil {
			return Literal{}, err
		}
		vals[in] = v
	}
	v, ok := vals[c.Root]
	if !ok {
		return Literal{}, fmt.Errorf("computation %s: root has no value", c.Name)
	}
	return v, nil
}

func evalInstruction(in *hlo.Instruction, ops []Literal) (Literal, error) {
	if !in.Shape.IsArray() {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s with non-array shape %s", in.OpName(), in.Shape)
	}
	if _, err := elemWidth(in.Shape.Elem); err != nil {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s: %v", in.OpName(), err)
	}
	if a := in.Opcode.Arity(); a >= 0 && a != len(ops) && in.Opcode != hlo.OpUnknown {
		return Literal{}, fmt.Errorf("has %d operands, want %d", len(ops), a)
	}
	for i, o := range ops {
		if !o.Shape.IsArray() {
			return Literal{}, fmt.Errorf("operand %d is not an array", i)
		}
		if w := (o.Shape.Elem.BitWidth() + 7) / 8; len(o.Data) != w*elemCount(o.Shape) {
			return Literal{}, fmt.Errorf("operand %d (%s) has %d bytes, want %d", i, o.Shape, len(o.Data), w*elemCount(o.Shape))
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
	case hlo.OpNegate, hlo.OpAbs, hlo.OpExp, hlo.OpLog, hlo.OpSqrt, hlo.OpRsqrt, hlo.OpTanh,
		hlo.OpSin, hlo.OpCos, hlo.OpFloor, hlo.OpCeil, hlo.OpRoundNearestAfz, hlo.OpRoundNearestEven,
		hlo.OpSign, hlo.OpNot, hlo.OpIsFinite, hlo.OpLogistic, hlo.OpExpm1, hlo.OpLog1p, hlo.OpCbrt,
		hlo.OpPopcnt, hlo.OpClz, hlo.OpTan, hlo.OpAtanh, hlo.OpSinh, hlo.OpCosh, hlo.OpAsin, hlo.OpAcos,
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
	case hlo.OpReverse:
		return evalReverse(in, ops[0])
	case hlo.OpDynamicSlice:
		return evalDynamicSlice(in, ops)
	case hlo.OpDynamicUpdateSlice:
		return evalDynamicUpdateSlice(in, ops)
	case hlo.OpReduce:
		return evalReduce(in, ops)
	case hlo.OpDot:
		return evalDot(in, ops[0], ops[1])
	}
	return Literal{}, unsupportedError{in}
}

// --- helpers ---

func checkNumeric(in *hlo.Instruction, ts ...hlo.ElementType) error {
	for _, t := range ts {
		if !numericType(t) {
			return fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
		}
	}
	return nil
}

func sameDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// operandDims checks that an element-wise operand has the result's dims.
func operandDims(in *hlo.Instruction, o Literal, scalarOK bool) error {
	if sameDims(o.Shape.Dims, in.Shape.Dims) || (scalarOK && len(o.Shape.Dims) == 0) {
		return nil
	}
	return fmt.Errorf("operand dims %v do not match result dims %v", o.Shape.Dims, in.Shape.Dims)
}

// logicalF decodes an operand as float64 values in logical order.
func logicalF(o Literal) ([]float64, error) {
	b, _, err := o.logical()
	if err != nil {
		return nil, err
	}
	return decodeF(o.Shape.Elem, b), nil
}

func logicalI(o Literal) ([]int64, error) {
	b, _, err := o.logical()
	if err != nil {
		return nil, err
	}
	return decodeI(o.Shape.Elem, b), nil
}

func outF(s hlo.Shape, v []float64) (Literal, error) { return fromLogical(s, encodeF(s.Elem, v)) }
func outI(s hlo.Shape, v []int64) (Literal, error)   { return fromLogical(s, encodeI(s.Elem, v)) }

func strides(dims []int64) []int64 {
	st := make([]int64, len(dims))
	s := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = s
		s *= dims[i]
	}
	return st
}

// gather builds a result of shape s whose element at logical multi-index idx
// is the src element at src(idx) (a logical row-major index into srcB), or
// fill when src returns -1.
func gather(s hlo.Shape, srcB []byte, w int, fill []byte, src func(idx []int64) int64) (Literal, error) {
	n := elemCount(s)
	out := make([]byte, n*w)
	idx := make([]int64, len(s.Dims))
	for i := 0; i < n; i++ {
		j := src(idx)
		if j < 0 {
			copy(out[i*w:(i+1)*w], fill)
		} else {
			copy(out[i*w:(i+1)*w], srcB[j*int64(w):(j+1)*int64(w)])
		}
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < s.Dims[d] {
				break
			}
			idx[d] = 0
		}
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

func parseIntList(s string) ([]int64, error) {
	s = strings.Trim(strings.TrimSpace(s), "{}")
	var out []int64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", f)
		}
		out = append(out, v)
	}
	return out, nil
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
	n := elemCount(s)
	st := strides(s.Dims)
	if isFloat(s.Elem) {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64((int64(i) / st[dim]) % s.Dims[dim])
		}
		return outF(s, v)
	}
	v := make([]int64, n)
	for i := range v {
		v[i] = (int64(i) / st[dim]) % s.Dims[dim]
	}
	return outI(s, v)
}

// --- element-wise ---

func unaryF(op hlo.Opcode, x float64) (float64, bool) {
	switch op {
	case hlo.OpNegate:
		return -x, true
	case hlo.OpAbs:
		return math.Abs(x), true
	case hlo.OpExp:
		return math.Exp(x), true
	case hlo.OpLog:
		return math.Log(x), true
	case hlo.OpSqrt:
		return math.Sqrt(x), true
	case hlo.OpRsqrt:
		return 1 / math.Sqrt(x), true
	case hlo.OpTanh:
		return math.Tanh(x), true
	case hlo.OpSin:
		return math.Sin(x), true
	case hlo.OpCos:
		return math.Cos(x), true
	case hlo.OpTan:
		return math.Tan(x), true
	case hlo.OpFloor:
		return math.Floor(x), true
	case hlo.OpCeil:
		return math.Ceil(x), true
	case hlo.OpRoundNearestAfz:
		return math.Round(x), true
	case hlo.OpRoundNearestEven:
		return math.RoundToEven(x), true
	case hlo.OpSign:
		switch {
		case math.IsNaN(x) || x == 0:
			return x, true
		case x > 0:
			return 1, true
		}
		return -1, true
	case hlo.OpLogistic:
		return 1 / (1 + math.Exp(-x)), true
	case hlo.OpExpm1:
		return math.Expm1(x), true
	case hlo.OpLog1p:
		return math.Log1p(x), true
	case hlo.OpCbrt:
		return math.Cbrt(x), true
	case hlo.OpAtanh:
		return math.Atanh(x), true
	case hlo.OpSinh:
		return math.Sinh(x), true
	case hlo.OpCosh:
		return math.Cosh(x), true
	case hlo.OpAsin:
		return math.Asin(x), true
	case hlo.OpAcos:
		return math.Acos(x), true
	case hlo.OpAsinh:
		return math.Asinh(x), true
	case hlo.OpAcosh:
		return math.Acosh(x), true
	case hlo.OpErf:
		return math.Erf(x), true
	}
	return 0, false
}

func unaryI(op hlo.Opcode, t hlo.ElementType, x int64) (int64, bool) {
	bw := t.BitWidth()
	ux := uint64(x)
	if bw < 64 {
		ux &= 1<<uint(bw) - 1
	}
	switch op {
	case hlo.OpNegate:
		return -x, true
	case hlo.OpAbs:
		if x < 0 {
			return -x, true
		}
		return x, true
	case hlo.OpSign:
		switch {
		case x > 0:
			return 1, true
		case x < 0:
			return -1, true
		}
		return 0, true
	case hlo.OpNot:
		if t == hlo.PRED {
			return 1 - x, true
		}
		return ^x, true
	case hlo.OpPopcnt:
		return int64(bits.OnesCount64(ux)), true
	case hlo.OpClz:
		return int64(bits.LeadingZeros64(ux) - (64 - bw)), true
	}
	return 0, false
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
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		for i, f := range v {
			r, ok := unaryF(in.Opcode, f)
			if !ok {
				return Literal{}, fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
			}
			v[i] = r
		}
		return outF(in.Shape, v)
	}
	if t == hlo.PRED && in.Opcode != hlo.OpNot {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
	}
	v, err := logicalI(x)
	if err != nil {
		return Literal{}, err
	}
	if in.Opcode == hlo.OpAbs && t.IsUnsigned() {
		return outI(in.Shape, v)
	}
	for i, a := range v {
		r, ok := unaryI(in.Opcode, t, a)
		if !ok {
			return Literal{}, fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
		}
		v[i] = r
	}
	return outI(in.Shape, v)
}

func binaryF(op hlo.Opcode, a, b float64) (float64, bool) {
	switch op {
	case hlo.OpAdd:
		return a + b, true
	case hlo.OpSubtract:
		return a - b, true
	case hlo.OpMultiply:
		return a * b, true
	case hlo.OpDivide:
		return a / b, true
	case hlo.OpRemainder:
		return math.Mod(a, b), true
	case hlo.OpMaximum:
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN(), true
		}
		return math.Max(a, b), true
	case hlo.OpMinimum:
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN(), true
		}
		return math.Min(a, b), true
	case hlo.OpPower:
		return math.Pow(a, b), true
	case hlo.OpAtan2:
		return math.Atan2(a, b), true
	}
	return 0, false
}

// binaryI computes an integer op on values extended per t (see decodeI); the
// caller truncates the result to t.
func binaryI(op hlo.Opcode, t hlo.ElementType, a, b int64) (int64, bool) {
	unsigned := t.IsUnsigned() || t == hlo.PRED
	bw := uint64(t.BitWidth())
	switch op {
	case hlo.OpAdd:
		return a + b, true
	case hlo.OpSubtract:
		return a - b, true
	case hlo.OpMultiply:
		return a * b, true
	case hlo.OpDivide:
		if b == 0 {
			return -1, true
		}
		if unsigned {
			return int64(uint64(a) / uint64(b)), true
		}
		return a / b, true // Go: MinInt64 / -1 == MinInt64
	case hlo.OpRemainder:
		if b == 0 {
			return a, true
		}
		if unsigned {
			return int64(uint64(a) % uint64(b)), true
		}
		return a % b, true
	case hlo.OpMaximum:
		if unsigned && uint64(a) < uint64(b) || !unsigned && a < b {
			return b, true
		}
		return a, true
	case hlo.OpMinimum:
		if unsigned && uint64(a) > uint64(b) || !unsigned && a > b {
			return b, true
		}
		return a, true
	case hlo.OpAnd:
		return a & b, true
	case hlo.OpOr:
		return a | b, true
	case hlo.OpXor:
		return a ^ b, true
	case hlo.OpShiftLeft:
		if uint64(b) >= bw {
			return 0, true
		}
		return a << uint64(b), true
	case hlo.OpShiftRightLogical:
		if uint64(b) >= bw {
			return 0, true
		}
		ua := uint64(a)
		if bw < 64 {
			ua &= 1<<bw - 1
		}
		return int64(ua >> uint64(b)), true
	case hlo.OpShiftRightArithmetic:
		if uint64(b) >= bw {
			if normI(t, a) < 0 && !unsigned {
				return -1, true
			}
			if unsigned && bw < 64 && a>>(bw-1)&1 != 0 || unsigned && bw == 64 && a < 0 {
				return -1, true
			}
			return 0, true
		}
		if unsigned && bw < 64 {
			// Sign-extend from the type's width first.
			sh := 64 - bw
			a = a << sh >> sh
		}
		return a >> uint64(b), true
	case hlo.OpPower:
		return ipow(a, b, unsigned), true
	}
	return 0, false
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
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, y, false); err != nil {
		return Literal{}, err
	}
	if out, ok := fastF32Binary(in, x, y); ok {
		return out, nil
	}
	if isFloat(t) {
		a, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		b, err := logicalF(y)
		if err != nil {
			return Literal{}, err
		}
		for i := range a {
			r, ok := binaryF(in.Opcode, a[i], b[i])
			if !ok {
				return Literal{}, fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
			}
			a[i] = r
		}
		return outF(in.Shape, a)
	}
	if t == hlo.PRED {
		switch in.Opcode {
		case hlo.OpAnd, hlo.OpOr, hlo.OpXor, hlo.OpMaximum, hlo.OpMinimum:
		default:
			return Literal{}, fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
		}
	}
	a, err := logicalI(x)
	if err != nil {
		return Literal{}, err
	}
	b, err := logicalI(y)
	if err != nil {
		return Literal{}, err
	}
	for i := range a {
		r, ok := binaryI(in.Opcode, t, a[i], b[i])
		if !ok {
			return Literal{}, fmt.Errorf("cannot evaluate opcode %s on element type %s", in.OpName(), t)
		}
		a[i] = r
	}
	return outI(in.Shape, a)
}

func evalCompare(in *hlo.Instruction, x, y Literal) (Literal, error) {
	t := x.Shape.Elem
	if err := checkNumeric(in, t); err != nil {
		return Literal{}, err
	}
	if in.Shape.Elem != hlo.PRED || y.Shape.Elem != t {
		return Literal{}, fmt.Errorf("compare types %s, %s -> %s", t, y.Shape.Elem, in.Shape.Elem)
	}
	if err := operandDims(in, x, false); err != nil {
		return Literal{}, err
	}
	if err := operandDims(in, y, false); err != nil {
		return Literal{}, err
	}
	if ty, ok := in.Attr("type"); ok && ty != "FLOAT" && ty != "SIGNED" && ty != "UNSIGNED" {
		return Literal{}, fmt.Errorf("cannot evaluate opcode %s with comparison type %s", in.OpName(), ty)
	}
	dir, _ := in.Attr("direction")
	var cmp func(c int) bool // c: -1, 0, 1
	switch dir {
	case "EQ":
		cmp = func(c int) bool { return c == 0 }
	case "NE":
		cmp = func(c int) bool { return c != 0 }
	case "LT":
		cmp = func(c int) bool { return c < 0 }
	case "LE":
		cmp = func(c int) bool { return c <= 0 }
	case "GT":
		cmp = func(c int) bool { return c > 0 }
	case "GE":
		cmp = func(c int) bool { return c >= 0 }
	default:
		return Literal{}, fmt.Errorf("bad compare direction %q", dir)
	}
	out := make([]int64, elemCount(in.Shape))
	if out, ok := fastF32Binary(in, x, y); ok {
		return out, nil
	}
	if isFloat(t) {
		a, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		b, err := logicalF(y)
		if err != nil {
			return Literal{}, err
		}
		for i := range a {
			var r bool
			switch {
			case math.IsNaN(a[i]) || math.IsNaN(b[i]):
				r = dir == "NE"
			case a[i] < b[i]:
				r = cmp(-1)
			case a[i] > b[i]:
				r = cmp(1)
			default:
				r = cmp(0)
			}
			if r {
				out[i] = 1
			}
		}
		return outI(in.Shape, out)
	}
	a, err := logicalI(x)
	if err != nil {
		return Literal{}, err
	}
	b, err := logicalI(y)
	if err != nil {
		return Literal{}, err
	}
	unsigned := t.IsUnsigned() || t == hlo.PRED
	for i := range a {
		c := 0
		switch {
		case unsigned && uint64(a[i]) < uint64(b[i]) || !unsigned && a[i] < b[i]:
			c = -1
		case a[i] != b[i]:
			c = 1
		}
		if cmp(c) {
			out[i] = 1
		}
	}
	return outI(in.Shape, out)
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
	out := make([]byte, n*w)
	for i := 0; i < n; i++ {
		pi := i
		if len(pb) == 1 {
			pi = 0
		}
		src := yb
		if pb[pi] != 0 {
			src = xb
		}
		copy(out[i*w:(i+1)*w], src[i*w:(i+1)*w])
	}
	return fromLogical(in.Shape, out)
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
	pick := func(n int, i int) int {
		if n == 1 {
			return 0
		}
		return i
	}
	if isFloat(t) {
		l, err := logicalF(lo)
		if err != nil {
			return Literal{}, err
		}
		v, err := logicalF(x)
		if err != nil {
			return Literal{}, err
		}
		h, err := logicalF(hi)
		if err != nil {
			return Literal{}, err
		}
		for i := range v {
			r, _ := binaryF(hlo.OpMaximum, v[i], l[pick(len(l), i)])
			v[i], _ = binaryF(hlo.OpMinimum, r, h[pick(len(h), i)])
		}
		return outF(in.Shape, v)
	}
	l, err := logicalI(lo)
	if err != nil {
		return Literal{}, err
	}
	v, err := logicalI(x)
	if err != nil {
		return Literal{}, err
	}
	h, err := logicalI(hi)
	if err != nil {
		return Literal{}, err
	}
	for i := range v {
		r, _ := binaryI(hlo.OpMaximum, t, v[i], l[pick(len(l), i)])
		v[i], _ = binaryI(hlo.OpMinimum, t, r, h[pick(len(h), i)])
	}
	return outI(in.Shape, v)
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
		out := make([]float64, len(v))
		for i, a := range v {
			if from == hlo.U64 {
				out[i] = float64(uint64(a))
			} else {
				out[i] = float64(a)
			}
		}
		return outF(in.Shape, out)
	}
	if to == hlo.PRED {
		for i, a := range v {
			if a != 0 {
				v[i] = 1
			}
		}
	}
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
	b, _, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	return fromLogical(in.Shape, append([]byte(nil), b...))
}

// --- data movement ---

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
	b, _, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	return fromLogical(in.Shape, append([]byte(nil), b...))
}

// evalBitcast copies the bytes when both shapes carry explicit layouts (a
// bitcast of layout-assigned HLO is a no-op on the buffer) and otherwise
// reshapes the logical order.
func evalBitcast(in *hlo.Instruction, x Literal) (Literal, error) {
	if x.Shape.Layout != nil && in.Shape.Layout != nil || len(x.Shape.Dims) <= 1 && len(in.Shape.Dims) <= 1 {
		w, err := elemWidth(in.Shape.Elem)
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
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	st := strides(x.Shape.Dims)
	return gather(in.Shape, b, w, nil, func(idx []int64) int64 {
		j := int64(0)
		for i, d := range dims {
			j += idx[d] * st[i]
		}
		return j
	})
}

func transposeIndex(dims []int64, perm []int64) []int64 {
	// out dim i = in dim perm[i]
	st := strides(dims)
	od := make([]int64, len(perm))
	for i, p := range perm {
		od[i] = dims[p]
	}
	n := int64(1)
	for _, d := range od {
		n *= d
	}
	out := make([]int64, n)
	idx := make([]int64, len(od))
	j := int64(0)
	for i := int64(0); i < n; i++ {
		out[i] = j
		for d := len(od) - 1; d >= 0; d-- {
			idx[d]++
			j += st[perm[d]]
			if idx[d] < od[d] {
				break
			}
			j -= st[perm[d]] * idx[d]
			idx[d] = 0
		}
	}
	return out
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
		copy(out[i*w:(i+1)*w], b[int(j)*w:(int(j)+1)*w])
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
	for i, s := range sl {
		st := s.Stride
		if st <= 0 {
			st = 1
		}
		if s.Start < 0 || s.Limit > x.Shape.Dims[i] || s.Start > s.Limit || (s.Limit-s.Start+st-1)/st != in.Shape.Dims[i] {
			return Literal{}, fmt.Errorf("bad slice %v for dims %v", sl, x.Shape.Dims)
		}
	}
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	st := strides(x.Shape.Dims)
	return gather(in.Shape, b, w, nil, func(idx []int64) int64 {
		j := int64(0)
		for d, s := range sl {
			stride := s.Stride
			if stride <= 0 {
				stride = 1
			}
			j += (s.Start + idx[d]*stride) * st[d]
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
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < in.Shape.Dims[d] {
				break
			}
			idx[d] = 0
		}
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
	cfg, _ := in.Attr("padding_config")
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
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	st := strides(x.Shape.Dims)
	return gather(in.Shape, b, w, pv.Data, func(idx []int64) int64 {
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
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	st := strides(x.Shape.Dims)
	return gather(in.Shape, b, w, nil, func(idx []int64) int64 {
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

// startIndices reads scalar start-index operands and clamps each to
// [0, dim - size] as XLA does.
func startIndices(ops []Literal, dims, sizes []int64) ([]int64, error) {
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
	if len(in.Shape.Dims) != len(x.Shape.Dims) {
		return Literal{}, fmt.Errorf("rank mismatch")
	}
	for d := range in.Shape.Dims {
		if in.Shape.Dims[d] > x.Shape.Dims[d] {
			return Literal{}, fmt.Errorf("slice size exceeds operand")
		}
	}
	starts, err := startIndices(ops[1:], x.Shape.Dims, in.Shape.Dims)
	if err != nil {
		return Literal{}, err
	}
	b, w, err := x.logical()
	if err != nil {
		return Literal{}, err
	}
	st := strides(x.Shape.Dims)
	return gather(in.Shape, b, w, nil, func(idx []int64) int64 {
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
	if len(u.Shape.Dims) != len(x.Shape.Dims) {
		return Literal{}, fmt.Errorf("rank mismatch")
	}
	for d := range u.Shape.Dims {
		if u.Shape.Dims[d] > x.Shape.Dims[d] {
			return Literal{}, fmt.Errorf("update larger than operand")
		}
	}
	starts, err := startIndices(ops[2:], x.Shape.Dims, u.Shape.Dims)
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
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < u.Shape.Dims[d] {
				break
			}
			idx[d] = 0
		}
	}
	return fromLogical(in.Shape, out)
}
