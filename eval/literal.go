package eval

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// Literal is a value: an array or a tuple. An array's Data holds its
// elements in the shape's physical layout (minor_to_major; a missing layout
// is row-major), little-endian, pred one byte (0/1), f16 and bf16 two bytes,
// c64 two f32 and c128 two f64. A tuple's Elems holds one literal per
// element of its shape, and Data is nil.
type Literal struct {
	Shape hlo.Shape
	Data  []byte
	Elems []Literal
}

// TupleLiteral returns the tuple of elems, its shape made of theirs.
func TupleLiteral(elems ...Literal) Literal {
	s := hlo.Shape{Elem: hlo.Tuple, Tuple: make([]hlo.Shape, len(elems))}
	for i, e := range elems {
		s.Tuple[i] = e.Shape
	}
	return Literal{Shape: s, Elems: elems}
}

// Identical reports whether l and o hold the same bytes, leaf by leaf
// (bit for bit: NaNs and signed zeros included), through the same tuple
// nesting.
func (l Literal) Identical(o Literal) bool {
	if len(l.Elems) != len(o.Elems) || !bytes.Equal(l.Data, o.Data) {
		return false
	}
	for i := range l.Elems {
		if !l.Elems[i].Identical(o.Elems[i]) {
			return false
		}
	}
	return true
}

// IsTuple reports whether l is a tuple.
func (l Literal) IsTuple() bool { return l.Shape.IsTuple() }

// Leaves returns the arrays of l in shape-index pre-order (l itself for an
// array).
func (l Literal) Leaves() []Literal {
	if !l.IsTuple() {
		return []Literal{l}
	}
	var out []Literal
	for _, e := range l.Elems {
		out = append(out, e.Leaves()...)
	}
	return out
}

// Checksum is the FNV-1a hash of the literal's bytes (of its leaves in
// pre-order for a tuple).
func (l Literal) Checksum() uint64 {
	h := fnv.New64a()
	for _, x := range l.Leaves() {
		h.Write(x.Data)
	}
	return h.Sum64()
}

// Check reports whether l holds exactly the bytes its shape needs (every
// leaf of a tuple): the evaluator checks every operand so, and a caller
// that makes literals of its own (arguments) checks them the same way.
func (l Literal) Check() error {
	if l.IsTuple() {
		if len(l.Elems) != len(l.Shape.Tuple) {
			return fmt.Errorf("tuple %s has %d elements", l.Shape, len(l.Elems))
		}
		for i, e := range l.Elems {
			if !hlo.Compatible(e.Shape, l.Shape.Tuple[i]) {
				return fmt.Errorf("tuple element %d is %s, its shape says %s", i, e.Shape, l.Shape.Tuple[i])
			}
			if err := e.Check(); err != nil {
				return err
			}
		}
		return nil
	}
	if l.Shape.Elem == hlo.Token && len(l.Data) == 0 {
		return nil
	}
	if !l.Shape.IsArray() {
		return fmt.Errorf("%s is not an array", l.Shape)
	}
	n, err := arrayBytes(l.Shape)
	if err != nil {
		return err
	}
	if len(l.Data) != n {
		return fmt.Errorf("%s has %d bytes, want %d", l.Shape, len(l.Data), n)
	}
	return nil
}

// elemCount returns the number of elements of an array shape.
func elemCount(s hlo.Shape) int {
	n := 1
	for _, d := range s.Dims {
		n *= int(d)
	}
	return n
}

// ElemWidth is the bytes a Literal holds per element of type t, or an
// error for element types that are not whole bytes (sub-byte ints and
// floats, tuples, tokens), which the evaluator does not support.
func ElemWidth(t hlo.ElementType) (int, error) {
	if !t.IsArray() || t.BitWidth()%8 != 0 || t.BitWidth() == 0 {
		return 0, fmt.Errorf("element type %s is not supported", t)
	}
	return t.BitWidth() / 8, nil
}

// numericType reports whether the evaluator computes on elements of type t.
func numericType(t hlo.ElementType) bool {
	switch t {
	case hlo.PRED, hlo.S8, hlo.S16, hlo.S32, hlo.S64, hlo.U8, hlo.U16, hlo.U32, hlo.U64,
		hlo.F16, hlo.BF16, hlo.F32, hlo.F64:
		return true
	}
	return false
}

func isFloat(t hlo.ElementType) bool {
	return t == hlo.F16 || t == hlo.BF16 || t == hlo.F32 || t == hlo.F64
}

// MaxLiteralBytes is the largest array the evaluator makes: a literal of
// more bytes (1 TiB) is an error before anything is allocated, however
// much memory the host has. exec.HostBytes is what tells whether a run fits
// the memory there is; this bound only keeps an absurd shape from
// reaching an allocation.
const MaxLiteralBytes = 1 << 40

// arrayBytes is the byte length of a literal of array shape s, or an
// error when its element type is not evaluable, its element count does
// not compute (an unbounded dimension, an overflow) or its bytes exceed
// MaxLiteralBytes. Checked once at the entry points, it lets elemCount
// trust the shapes it is given.
func arrayBytes(s hlo.Shape) (int, error) {
	w, err := ElemWidth(s.Elem)
	if err != nil {
		return 0, err
	}
	if err := checkArraySize(s); err != nil {
		return 0, err
	}
	n, _ := s.Elements()
	return w * int(n), nil
}

// checkArraySize checks that the elements of array shape s can be counted
// and that their bytes (a whole byte each at least) are at most
// MaxLiteralBytes.
func checkArraySize(s hlo.Shape) error {
	n, ok := s.Elements()
	w := int64(max(s.Elem.ByteWidth(), 1))
	if !ok || n > math.MaxInt64/w {
		return fmt.Errorf("shape %s has no computable size", s.StringNoLayout())
	}
	if n*w > MaxLiteralBytes {
		return fmt.Errorf("shape %s is too large to evaluate: %d bytes, more than %d", s.StringNoLayout(), n*w, int64(MaxLiteralBytes))
	}
	return nil
}

// NewLiteral returns a zero literal of array shape s.
func NewLiteral(s hlo.Shape) (Literal, error) {
	n, err := arrayBytes(s)
	if err != nil {
		return Literal{}, err
	}
	return Literal{Shape: s, Data: make([]byte, n)}, nil
}

// physStrides returns, for each logical dimension, its stride in elements in
// the physical layout; ok is false when the layout is the row-major default.
// Tiles do not change a literal's order: a literal holds a tiled array
// densely in its minor-to-major order; a planned run stores it in tile
// order in its padded buffer and gathers it back (package exec, tiled.go).
func physStrides(s hlo.Shape) (strides []int64, custom bool, err error) {
	r := len(s.Dims)
	if s.Layout != nil && s.Layout.ElementSizeBits != 0 {
		return nil, false, fmt.Errorf("layout of %s (element size) is not supported", s)
	}
	if s.Layout == nil || len(s.Layout.MinorToMajor) == 0 || r <= 1 {
		return nil, false, nil
	}
	m2m := s.Layout.MinorToMajor
	if len(m2m) != r {
		return nil, false, fmt.Errorf("layout of %s does not match its rank", s)
	}
	def := true
	for i, d := range m2m {
		if d != int64(r-1-i) {
			def = false
		}
	}
	if def {
		return nil, false, nil
	}
	strides = make([]int64, r)
	st := int64(1)
	for _, d := range m2m {
		if d < 0 || int(d) >= r {
			return nil, false, fmt.Errorf("layout of %s is invalid", s)
		}
		strides[d] = st
		st *= s.Dims[d]
	}
	return strides, true, nil
}

// physIndex maps each logical row-major element index to its physical index.
func physIndex(dims []int64, strides []int64) []int {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	out := make([]int, n)
	if n == 0 {
		return out
	}
	idx := make([]int64, len(dims))
	p := int64(0)
	for i := 0; i < n; i++ {
		out[i] = int(p)
		for d := len(dims) - 1; d >= 0; d-- {
			idx[d]++
			p += strides[d]
			if idx[d] < dims[d] {
				break
			}
			p -= strides[d] * idx[d]
			idx[d] = 0
		}
	}
	return out
}

// logical returns the literal's elements in logical row-major order.
func (l Literal) logical() ([]byte, int, error) {
	w, err := ElemWidth(l.Shape.Elem)
	if err != nil {
		return nil, 0, err
	}
	n := elemCount(l.Shape)
	if len(l.Data) != n*w {
		return nil, 0, fmt.Errorf("literal of shape %s has %d bytes, want %d", l.Shape, len(l.Data), n*w)
	}
	strides, custom, err := physStrides(l.Shape)
	if err != nil {
		return nil, 0, err
	}
	if !custom {
		return l.Data, w, nil
	}
	out := make([]byte, len(l.Data))
	for i, p := range physIndex(l.Shape.Dims, strides) {
		copy(out[i*w:(i+1)*w], l.Data[p*w:(p+1)*w])
	}
	return out, w, nil
}

// fromLogical lays logical row-major element bytes out in s's layout.
func fromLogical(s hlo.Shape, b []byte) (Literal, error) {
	w, err := ElemWidth(s.Elem)
	if err != nil {
		return Literal{}, err
	}
	if len(b) != elemCount(s)*w {
		return Literal{}, fmt.Errorf("internal: %d bytes for shape %s", len(b), s)
	}
	strides, custom, err := physStrides(s)
	if err != nil {
		return Literal{}, err
	}
	if !custom {
		return Literal{Shape: s, Data: b}, nil
	}
	out := make([]byte, len(b))
	for i, p := range physIndex(s.Dims, strides) {
		copy(out[p*w:(p+1)*w], b[i*w:(i+1)*w])
	}
	return Literal{Shape: s, Data: out}, nil
}

// --- element encodings ---

// toMini rounds x to nearest-even into a binary float format with ebits
// exponent and mbits mantissa bits (IEEE-style, with inf and NaN).
func toMini(x float64, ebits, mbits uint) uint64 {
	bias := 1<<(ebits-1) - 1
	var sign uint64
	if math.Signbit(x) {
		sign = 1 << (ebits + mbits)
	}
	expAll := uint64(1<<ebits-1) << mbits
	if math.IsNaN(x) {
		return sign | expAll | 1<<(mbits-1)
	}
	a := math.Abs(x)
	if math.IsInf(a, 0) {
		return sign | expAll
	}
	if a == 0 {
		return sign
	}
	frac, exp := math.Frexp(a) // a = frac * 2^exp, frac in [0.5, 1)
	e := exp - 1
	minE := 1 - bias
	if e < minE {
		m := math.RoundToEven(math.Ldexp(a, -minE+int(mbits)))
		return sign | uint64(m) // m == 1<<mbits encodes the smallest normal
	}
	m := math.RoundToEven(math.Ldexp(frac, int(mbits)+1))
	if m == float64(uint64(1)<<(mbits+1)) {
		m /= 2
		e++
	}
	E := e + bias
	if E >= 1<<ebits-1 {
		return sign | expAll
	}
	return sign | uint64(E)<<mbits | (uint64(m) - 1<<mbits)
}

func fromMini(b uint64, ebits, mbits uint) float64 {
	bias := 1<<(ebits-1) - 1
	sign := 1.0
	if b>>(ebits+mbits)&1 != 0 {
		sign = -1
	}
	E := int(b>>mbits) & (1<<ebits - 1)
	m := b & (1<<mbits - 1)
	switch {
	case E == 1<<ebits-1 && m == 0:
		return math.Inf(int(sign))
	case E == 1<<ebits-1:
		return math.NaN()
	case E == 0:
		return sign * math.Ldexp(float64(m), 1-bias-int(mbits))
	}
	return sign * math.Ldexp(float64(m|1<<mbits), E-bias-int(mbits))
}

// BF16Bits rounds x to bfloat16 (nearest even) and returns its bits. Like
// XLA (Eigen), it rounds x to f32 first, so a float64 is rounded twice.
func BF16Bits(x float64) uint16 { return uint16(toMini(float64(float32(x)), 8, 7)) }

// F16Bits rounds x to IEEE half precision (nearest even) and returns its
// bits, rounding to f32 first as BF16Bits does.
func F16Bits(x float64) uint16 { return uint16(toMini(float64(float32(x)), 5, 10)) }

// roundF rounds x to the precision of floating type t.
func roundF(t hlo.ElementType, x float64) float64 {
	switch t {
	case hlo.F32:
		return float64(float32(x))
	case hlo.BF16:
		return fromMini(uint64(BF16Bits(x)), 8, 7)
	case hlo.F16:
		return fromMini(uint64(F16Bits(x)), 5, 10)
	}
	return x
}

func readRaw(b []byte, w int) uint64 {
	switch w {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func writeRaw(b []byte, w int, v uint64) {
	switch w {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// decodeF reads logical element bytes of float type t as float64.
func decodeF(t hlo.ElementType, b []byte) []float64 {
	switch t {
	case hlo.F32:
		out := make([]float64, len(b)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return out
	case hlo.F64:
		out := make([]float64, len(b)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return out
	case hlo.BF16:
		out := make([]float64, len(b)/2)
		for i := range out {
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		}
		return out
	case hlo.F16:
		out := make([]float64, len(b)/2)
		for i := range out {
			out[i] = fromMini(uint64(binary.LittleEndian.Uint16(b[2*i:])), 5, 10)
		}
		return out
	}
	panic("decodeF: " + t.String())
}

func encodeF(t hlo.ElementType, v []float64) []byte {
	switch t {
	case hlo.F32:
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
		}
		return b
	case hlo.F64:
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b
	case hlo.BF16:
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], BF16Bits(x))
		}
		return b
	case hlo.F16:
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], F16Bits(x))
		}
		return b
	}
	panic("encodeF: " + t.String())
}

// decodeI reads integer or pred elements as int64: signed types sign-extended,
// unsigned zero-extended (u64 bit for bit).
func decodeI(t hlo.ElementType, b []byte) []int64 {
	w := t.BitWidth() / 8
	out := make([]int64, len(b)/w)
	var sh uint // shifting left then arithmetically right sign-extends
	if !t.IsUnsigned() && t != hlo.PRED {
		sh = 64 - 8*uint(w)
	}
	for i := range out {
		out[i] = int64(readRaw(b[i*w:], w)<<sh) >> sh
	}
	return out
}

func encodeI(t hlo.ElementType, v []int64) []byte {
	w := t.BitWidth() / 8
	b := make([]byte, w*len(v))
	for i, x := range v {
		if t == hlo.PRED && x != 0 {
			x = 1
		}
		writeRaw(b[i*w:], w, uint64(x))
	}
	return b
}

// normI truncates x to type t's width and re-extends it.
func normI(t hlo.ElementType, x int64) int64 {
	if t == hlo.PRED {
		if x != 0 {
			return 1
		}
		return 0
	}
	bw := uint(t.BitWidth())
	if bw >= 64 {
		return x
	}
	sh := 64 - bw
	if t.IsUnsigned() {
		return int64(uint64(x) << sh >> sh)
	}
	return x << sh >> sh
}

// --- text ---

// ParseLiteral parses an array literal in XLA syntax ({1, 2}, nested braces
// for rank > 1, true/false, nan/inf; a single value fills the array).
func ParseLiteral(shape hlo.Shape, text string) (Literal, error) {
	if !numericType(shape.Elem) && !shape.Elem.IsComplex() {
		return Literal{}, fmt.Errorf("literal of type %s is not supported", shape.Elem)
	}
	if _, err := arrayBytes(shape); err != nil {
		return Literal{}, err
	}
	words := strings.FieldsFunc(text, func(r rune) bool {
		return strings.ContainsRune("{}, \t\n\r()", r)
	})
	if shape.Elem.IsComplex() {
		return complexLiteral(shape, words)
	}
	return literalFromWords(shape, words)
}

func literalFromWords(shape hlo.Shape, words []string) (Literal, error) {
	n := elemCount(shape)
	if len(words) == 1 && n > 1 {
		for len(words) < n {
			words = append(words, words[0])
		}
	}
	if len(words) != n {
		return Literal{}, errCount(shape, n, len(words))
	}
	if isFloat(shape.Elem) {
		v := make([]float64, n)
		for i, w := range words {
			f, err := parseFloatWord(w)
			if err != nil {
				return Literal{}, err
			}
			v[i] = f
		}
		return outF(shape, v)
	}
	v := make([]int64, n)
	for i, w := range words {
		switch {
		case w == "true":
			v[i] = 1
		case w == "false":
			v[i] = 0
		case shape.Elem.IsUnsigned():
			u, err := strconv.ParseUint(w, 0, 64)
			if err != nil {
				return Literal{}, fmt.Errorf("bad integer value %q", w)
			}
			v[i] = int64(u)
		default:
			s, err := strconv.ParseInt(w, 0, 64)
			if err != nil {
				return Literal{}, fmt.Errorf("bad integer value %q", w)
			}
			v[i] = s
		}
	}
	return outI(shape, v)
}

func errCount(shape hlo.Shape, want, got int) error {
	return fmt.Errorf("literal of shape %s needs %d values, has %d", shape.StringNoLayout(), want, got)
}

func parseFloatWord(w string) (float64, error) {
	switch strings.ToLower(w) {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	case "true":
		return 1, nil
	case "false":
		return 0, nil
	}
	f, err := strconv.ParseFloat(w, 64)
	if err != nil {
		return 0, fmt.Errorf("bad floating-point value %q", w)
	}
	return f, nil
}

// String prints the literal as XLA does: shape, then nested-brace values.
func (l Literal) String() string {
	var sb strings.Builder
	l.WriteText(&sb) // a strings.Builder does not fail
	return sb.String()
}

// textBlock is how many elements WriteText decodes at a time.
const textBlock = 4096

// WriteText writes the literal as String does, element by element: beside
// the text it holds only the elements in logical order (a copy when the
// layout is not row-major) and a block of them decoded, so that a large
// literal prints without its text in memory.
func (l Literal) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(l.Shape.StringNoLayout())
	bw.WriteByte(' ')
	b, width, err := l.logical()
	if err != nil || !numericType(l.Shape.Elem) && !l.Shape.Elem.IsComplex() {
		fmt.Fprintf(bw, "<%d bytes>", len(l.Data))
		return bw.Flush()
	}
	t := l.Shape.Elem
	// word appends the text of elements [k, k+textBlock) to words.
	word := func(words []string, k int) []string {
		chunk := b[k*width : min(k+textBlock, len(b)/width)*width]
		switch {
		case t.IsComplex():
			for _, c := range decodeC(t, chunk) {
				words = append(words, formatComplex(t, c))
			}
		case isFloat(t):
			bitsz := 64
			if t != hlo.F64 {
				bitsz = 32
			}
			for _, f := range decodeF(t, chunk) {
				switch {
				case math.IsNaN(f):
					words = append(words, "nan")
				case math.IsInf(f, 1):
					words = append(words, "inf")
				case math.IsInf(f, -1):
					words = append(words, "-inf")
				default:
					words = append(words, strconv.FormatFloat(f, 'g', -1, bitsz))
				}
			}
		case t == hlo.PRED:
			for _, v := range decodeI(t, chunk) {
				words = append(words, strconv.FormatBool(v != 0))
			}
		case t.IsUnsigned():
			for _, v := range decodeI(t, chunk) {
				words = append(words, strconv.FormatUint(uint64(v), 10))
			}
		default:
			for _, v := range decodeI(t, chunk) {
				words = append(words, strconv.FormatInt(v, 10))
			}
		}
		return words
	}
	var words []string // the block of elements [k0, k0+len(words))
	k0, k := 0, 0
	var walk func(d int)
	walk = func(d int) {
		if d == len(l.Shape.Dims) {
			if k-k0 >= len(words) {
				k0 = k
				words = word(words[:0], k)
			}
			bw.WriteString(words[k-k0])
			k++
			return
		}
		bw.WriteByte('{')
		for i := int64(0); i < l.Shape.Dims[d]; i++ {
			if i > 0 {
				bw.WriteString(", ")
			}
			walk(d + 1)
		}
		bw.WriteByte('}')
	}
	walk(0)
	return bw.Flush()
}

// RandomLiteral fills an array of shape with random values: floats in
// [-1, 1), signed ints in [-8, 8), unsigned in [0, 16), random preds.
// Other element types get random bytes.
//
// A shape whose size does not compute or exceeds MaxLiteralBytes gets a
// literal without data, which exec.Execute and the evaluator refuse; nothing is
// allocated for it.
func RandomLiteral(shape hlo.Shape, rng *rand.Rand) Literal {
	if !shape.IsArray() || checkArraySize(shape) != nil {
		return Literal{Shape: shape}
	}
	n := elemCount(shape)
	var b []byte
	t := shape.Elem
	switch {
	case t.IsComplex():
		v := make([]complex128, n)
		for i := range v {
			v[i] = complex(rng.Float64()*2-1, rng.Float64()*2-1)
		}
		b = encodeC(t, v)
	case isFloat(t):
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.Float64()*2 - 1
		}
		b = encodeF(t, v)
	case numericType(t):
		v := make([]int64, n)
		for i := range v {
			switch {
			case t == hlo.PRED:
				v[i] = int64(rng.IntN(2))
			case t.IsUnsigned():
				v[i] = int64(rng.IntN(16))
			default:
				v[i] = int64(rng.IntN(16)) - 8
			}
		}
		b = encodeI(t, v)
	default:
		b = make([]byte, t.ByteWidth()*n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return Literal{Shape: shape, Data: b}
	}
	l, err := fromLogical(shape, b)
	if err != nil {
		return Literal{Shape: shape, Data: b}
	}
	return l
}
