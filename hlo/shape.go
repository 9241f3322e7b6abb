package hlo

import (
	"math"
	"strconv"
	"strings"
)

// ElementType is an XLA primitive type (xla_data.proto PrimitiveType).
type ElementType uint8

// Element types. Tuple, Token and Opaque are the non-array types.
const (
	InvalidType ElementType = iota
	PRED
	S1
	S2
	S4
	S8
	S16
	S32
	S64
	U1
	U2
	U4
	U8
	U16
	U32
	U64
	F16
	BF16
	F32
	F64
	C64
	C128
	F8E5M2
	F8E4M3
	F8E4M3FN
	F8E4M3B11FNUZ
	F8E3M4
	F8E5M2FNUZ
	F8E4M3FNUZ
	F8E8M0FNU
	F4E2M1FN
	F6E3M2FN
	F6E2M3FN
	Tuple
	Token
	Opaque
	Buffer
	numElementTypes
)

type typeInfo struct {
	name string
	bits int // logical bit width (pred counts as 8: it is stored as a byte)
}

var typeTable = [numElementTypes]typeInfo{
	InvalidType:   {"invalid", 0},
	PRED:          {"pred", 8},
	S1:            {"s1", 1},
	S2:            {"s2", 2},
	S4:            {"s4", 4},
	S8:            {"s8", 8},
	S16:           {"s16", 16},
	S32:           {"s32", 32},
	S64:           {"s64", 64},
	U1:            {"u1", 1},
	U2:            {"u2", 2},
	U4:            {"u4", 4},
	U8:            {"u8", 8},
	U16:           {"u16", 16},
	U32:           {"u32", 32},
	U64:           {"u64", 64},
	F16:           {"f16", 16},
	BF16:          {"bf16", 16},
	F32:           {"f32", 32},
	F64:           {"f64", 64},
	C64:           {"c64", 64},
	C128:          {"c128", 128},
	F8E5M2:        {"f8e5m2", 8},
	F8E4M3:        {"f8e4m3", 8},
	F8E4M3FN:      {"f8e4m3fn", 8},
	F8E4M3B11FNUZ: {"f8e4m3b11fnuz", 8},
	F8E3M4:        {"f8e3m4", 8},
	F8E5M2FNUZ:    {"f8e5m2fnuz", 8},
	F8E4M3FNUZ:    {"f8e4m3fnuz", 8},
	F8E8M0FNU:     {"f8e8m0fnu", 8},
	F4E2M1FN:      {"f4e2m1fn", 4},
	F6E3M2FN:      {"f6e3m2fn", 6},
	F6E2M3FN:      {"f6e2m3fn", 6},
	Tuple:         {"tuple", 0},
	Token:         {"token", 0},
	Opaque:        {"opaque", 0},
	Buffer:        {"buffer", 0},
}

var typeByName = func() map[string]ElementType {
	m := make(map[string]ElementType, numElementTypes)
	for t := ElementType(1); t < numElementTypes; t++ {
		m[typeTable[t].name] = t
	}
	return m
}()

// LookupElementType returns the element type with the given text name.
func LookupElementType(name string) (ElementType, bool) {
	t, ok := typeByName[name]
	return t, ok
}

// String returns the text name of t, as HLO prints it.
func (t ElementType) String() string {
	if t >= numElementTypes {
		return "invalid"
	}
	return typeTable[t].name
}

// BitWidth returns the logical width of one element in bits (pred: 8).
func (t ElementType) BitWidth() int {
	if t >= numElementTypes {
		return 0
	}
	return typeTable[t].bits
}

// ByteWidth returns the bytes one unpacked element takes: ceil(bits/8).
func (t ElementType) ByteWidth() int { return (t.BitWidth() + 7) / 8 }

// IsArray reports whether t is an array element type (not tuple, token, opaque).
func (t ElementType) IsArray() bool { return t > InvalidType && t < Tuple }

// IsFloat reports whether t is a real floating-point type.
func (t ElementType) IsFloat() bool {
	return t == F16 || t == BF16 || t == F32 || t == F64 || (t >= F8E5M2 && t <= F6E2M3FN)
}

// IsComplex reports whether t is c64 or c128.
func (t ElementType) IsComplex() bool { return t == C64 || t == C128 }

// IsInteger reports whether t is a signed or unsigned integer type.
func (t ElementType) IsInteger() bool { return t >= S1 && t <= U64 }

// IsUnsigned reports whether t is an unsigned integer type.
func (t ElementType) IsUnsigned() bool { return t >= U1 && t <= U64 }

// UnboundedDim is the size of a dimension printed as "?" (XLA's kUnboundedSize).
const UnboundedDim = math.MinInt64

// CombineDim is a tile dimension printed as "*" (XLA's kCombineDimension).
const CombineDim = math.MinInt64

// Shape is an HLO shape: an array (element type, dimensions, optional
// layout), a tuple of shapes, a token or an opaque. Shapes are values; the
// parser shares the slices of identical shapes between instructions, so
// treat Dims, Dynamic, Tuple and Layout as read-only and Clone before editing.
type Shape struct {
	Elem ElementType
	// Dims holds the dimension sizes; for a bounded dynamic dimension (<=N)
	// the bound N, for an unbounded one UnboundedDim.
	Dims []int64
	// Dynamic marks the dynamic dimensions; nil when all are static.
	Dynamic []bool
	// Layout is nil when the text printed none.
	Layout *Layout
	// Tuple holds the element shapes of a tuple.
	Tuple []Shape
}

// Layout is an array layout: minor-to-major order plus the extras XLA
// prints after a colon, in XLA's order D, T, L, #, *, E, S, then the rest.
type Layout struct {
	MinorToMajor []int64
	// DimLevelTypes is the text inside D(...), kept verbatim ("" when absent).
	DimLevelTypes string
	// Tiles is the tiling, outermost first: T(8,128)(2,1) is two tiles.
	Tiles []Tile
	// TailPaddingAlignment is the L(n) value in elements; 0 when absent.
	TailPaddingAlignment int64
	// IndexType and PointerType are the #(t) and *(t) primitive types.
	IndexType, PointerType ElementType
	// ElementSizeBits is E(n); 0 means the element type's own width.
	ElementSizeBits int64
	// MemorySpace is S(n); 0 is the default space.
	MemorySpace int64
	// Rest keeps further extras (split configs SC(...), physical shape
	// P(...), dynamic metadata M(...)) verbatim, in order.
	Rest []string
}

// Tile is one level of tiling: the tile's dimension sizes, most major
// first; CombineDim marks a combined dimension.
type Tile struct {
	Dims []int64
}

// ShapeIndex addresses a subshape of a tuple: {} is the whole shape, {1,0}
// the first element of the second element.
type ShapeIndex []int64

// String prints the index as XLA does: {} or {1,0}.
func (ix ShapeIndex) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range ix {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	b.WriteByte('}')
	return b.String()
}

// Equal reports whether two indices are the same.
func (ix ShapeIndex) Equal(o ShapeIndex) bool {
	if len(ix) != len(o) {
		return false
	}
	for i := range ix {
		if ix[i] != o[i] {
			return false
		}
	}
	return true
}

// ArrayShape returns an array shape with the default (descending) layout.
func ArrayShape(t ElementType, dims ...int64) Shape {
	s := Shape{Elem: t, Dims: append([]int64(nil), dims...)}
	if len(dims) > 0 {
		m2m := make([]int64, len(dims))
		for i := range m2m {
			m2m[i] = int64(len(dims) - 1 - i)
		}
		s.Layout = &Layout{MinorToMajor: m2m}
	}
	return s
}

// TupleShape returns a tuple of the given shapes.
func TupleShape(elems ...Shape) Shape {
	return Shape{Elem: Tuple, Tuple: append([]Shape{}, elems...)}
}

// IsTuple reports whether s is a tuple.
func (s Shape) IsTuple() bool { return s.Elem == Tuple }

// IsArray reports whether s is an array.
func (s Shape) IsArray() bool { return s.Elem.IsArray() }

// Rank returns the number of dimensions.
func (s Shape) Rank() int { return len(s.Dims) }

// IsDynamic reports whether dimension i is dynamic.
func (s Shape) IsDynamic(i int) bool { return s.Dynamic != nil && s.Dynamic[i] }

// IsUnboundedDynamic reports whether s, or for a tuple any element at any
// depth, has an unbounded dynamic dimension (?), as XLA's
// Shape::is_unbounded_dynamic.
func (s Shape) IsUnboundedDynamic() bool {
	for _, e := range s.Tuple {
		if e.IsUnboundedDynamic() {
			return true
		}
	}
	for _, d := range s.Dims {
		if d == UnboundedDim {
			return true
		}
	}
	return false
}

// MemorySpace returns the layout's memory space (0 without a layout).
func (s Shape) MemorySpace() int64 {
	if s.Layout == nil {
		return 0
	}
	return s.Layout.MemorySpace
}

// Elements returns the number of elements of an array shape (the product of
// its dimensions, bounds for dynamic ones), and false on overflow or an
// unbounded dimension.
func (s Shape) Elements() (int64, bool) {
	n := int64(1)
	for _, d := range s.Dims {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// Subshape returns the subshape at index ix and whether it exists.
func (s Shape) Subshape(ix ShapeIndex) (Shape, bool) {
	for _, i := range ix {
		if !s.IsTuple() || i < 0 || i >= int64(len(s.Tuple)) {
			return Shape{}, false
		}
		s = s.Tuple[i]
	}
	return s, true
}

// ForEachSubshape calls f for every subshape of s in pre-order (a tuple
// before its elements), with the subshape's index. The index slice is
// reused between calls; copy it to keep it.
func (s Shape) ForEachSubshape(f func(sub Shape, ix ShapeIndex)) {
	var ix ShapeIndex
	var walk func(Shape)
	walk = func(sh Shape) {
		f(sh, ix)
		if sh.IsTuple() {
			for i, e := range sh.Tuple {
				ix = append(ix, int64(i))
				walk(e)
				ix = ix[:len(ix)-1]
			}
		}
	}
	walk(s)
}

// NumSubshapes returns the number of subshapes of s, itself included.
func (s Shape) NumSubshapes() int {
	n := 1
	for _, e := range s.Tuple {
		n += e.NumSubshapes()
	}
	return n
}

// Clone returns a deep copy of s.
func (s Shape) Clone() Shape {
	c := Shape{Elem: s.Elem}
	if s.Dims != nil {
		c.Dims = append([]int64{}, s.Dims...)
	}
	if s.Dynamic != nil {
		c.Dynamic = append([]bool{}, s.Dynamic...)
	}
	if s.Layout != nil {
		l := *s.Layout
		l.MinorToMajor = append([]int64(nil), s.Layout.MinorToMajor...)
		l.Tiles = make([]Tile, len(s.Layout.Tiles))
		for i, t := range s.Layout.Tiles {
			l.Tiles[i] = Tile{Dims: append([]int64(nil), t.Dims...)}
		}
		l.Rest = append([]string(nil), s.Layout.Rest...)
		c.Layout = &l
	}
	if s.Tuple != nil {
		c.Tuple = make([]Shape, len(s.Tuple))
		for i, e := range s.Tuple {
			c.Tuple[i] = e.Clone()
		}
	}
	return c
}

// SameDims reports whether a and b are arrays with equal dimensions.
func SameDims(a, b Shape) bool {
	if len(a.Dims) != len(b.Dims) {
		return false
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] {
			return false
		}
	}
	return true
}

// String prints the shape as HLO text, with its layout: f32[2,3]{1,0}.
func (s Shape) String() string {
	var b strings.Builder
	s.write(&b, true)
	return b.String()
}

// StringNoLayout prints the shape without layouts: f32[2,3].
func (s Shape) StringNoLayout() string {
	var b strings.Builder
	s.write(&b, false)
	return b.String()
}

func (s Shape) write(b *strings.Builder, layout bool) {
	switch s.Elem {
	case Tuple:
		b.WriteByte('(')
		for i, e := range s.Tuple {
			writeTupleSep(b, i)
			e.write(b, layout)
		}
		b.WriteByte(')')
		return
	case Token, Opaque, Buffer:
		b.WriteString(s.Elem.String())
		b.WriteString("[]")
		return
	}
	b.WriteString(s.Elem.String())
	b.WriteByte('[')
	for i, d := range s.Dims {
		if i > 0 {
			b.WriteByte(',')
		}
		if s.IsDynamic(i) {
			if d == UnboundedDim {
				b.WriteByte('?')
				continue
			}
			b.WriteString("<=")
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	if layout && s.Layout != nil {
		s.Layout.write(b, len(s.Dims))
	}
}

// writeTupleSep writes what XLA's shape printer puts before tuple element
// i: a comma after the first, and /*index=i*/ before every fifth.
func writeTupleSep(b *strings.Builder, i int) {
	if i == 0 {
		return
	}
	b.WriteString(", ")
	if i%5 == 0 {
		b.WriteString("/*index=")
		b.WriteString(strconv.Itoa(i))
		b.WriteString("*/")
	}
}

func writeInts(b *strings.Builder, v []int64) {
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
}

// String prints the layout in braces: {1,0:T(8,128)S(1)}.
func (l *Layout) String() string {
	var b strings.Builder
	l.write(&b, len(l.MinorToMajor))
	return b.String()
}

func (l *Layout) hasExtras() bool {
	return l.DimLevelTypes != "" || len(l.Tiles) > 0 || l.TailPaddingAlignment != 0 ||
		l.IndexType != InvalidType || l.PointerType != InvalidType || l.ElementSizeBits != 0 ||
		l.MemorySpace != 0 || len(l.Rest) > 0
}

func (l *Layout) write(b *strings.Builder, rank int) {
	if rank == 0 && !l.hasExtras() {
		return // scalars print no layout unless it has extras
	}
	b.WriteByte('{')
	writeInts(b, l.MinorToMajor)
	if l.hasExtras() {
		b.WriteByte(':')
		if l.DimLevelTypes != "" {
			b.WriteString("D(")
			b.WriteString(l.DimLevelTypes)
			b.WriteByte(')')
		}
		if len(l.Tiles) > 0 {
			b.WriteByte('T')
			for _, t := range l.Tiles {
				b.WriteByte('(')
				for i, d := range t.Dims {
					if i > 0 {
						b.WriteByte(',')
					}
					if d == CombineDim {
						b.WriteByte('*')
					} else {
						b.WriteString(strconv.FormatInt(d, 10))
					}
				}
				b.WriteByte(')')
			}
		}
		if l.TailPaddingAlignment != 0 {
			b.WriteString("L(")
			b.WriteString(strconv.FormatInt(l.TailPaddingAlignment, 10))
			b.WriteByte(')')
		}
		if l.IndexType != InvalidType {
			b.WriteString("#(")
			b.WriteString(l.IndexType.String())
			b.WriteByte(')')
		}
		if l.PointerType != InvalidType {
			b.WriteString("*(")
			b.WriteString(l.PointerType.String())
			b.WriteByte(')')
		}
		if l.ElementSizeBits != 0 {
			b.WriteString("E(")
			b.WriteString(strconv.FormatInt(l.ElementSizeBits, 10))
			b.WriteByte(')')
		}
		if l.MemorySpace != 0 {
			b.WriteString("S(")
			b.WriteString(strconv.FormatInt(l.MemorySpace, 10))
			b.WriteByte(')')
		}
		for _, r := range l.Rest {
			b.WriteString(r)
		}
	}
	b.WriteByte('}')
}

// SameShape reports whether a and b are the same shape with the same
// physical layout, treating a missing layout as the default (descending)
// one, as XLA's ShapeUtil::Equal does for parsed shapes.
func SameShape(a, b Shape) bool {
	if a.Elem != b.Elem || len(a.Dims) != len(b.Dims) || len(a.Tuple) != len(b.Tuple) {
		return false
	}
	if a.IsTuple() {
		for i := range a.Tuple {
			if !SameShape(a.Tuple[i], b.Tuple[i]) {
				return false
			}
		}
		return true
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] || a.IsDynamic(i) != b.IsDynamic(i) {
			return false
		}
	}
	la, lb := a.effectiveLayout(), b.effectiveLayout()
	return la.String() == lb.String()
}

func (s Shape) effectiveLayout() *Layout {
	if s.Layout != nil && (len(s.Layout.MinorToMajor) == len(s.Dims) || len(s.Dims) == 0) {
		return s.Layout
	}
	l := &Layout{MinorToMajor: make([]int64, len(s.Dims))}
	for i := range l.MinorToMajor {
		l.MinorToMajor[i] = int64(len(s.Dims) - 1 - i)
	}
	if s.Layout != nil {
		c := *s.Layout
		c.MinorToMajor = l.MinorToMajor
		return &c
	}
	return l
}

// StringWithLayout prints the shape with a layout on every array of rank
// one or more, the default (descending) one where none was given, as XLA
// prints shapes after layout assignment: f32[2,3]{1,0}.
func (s Shape) StringWithLayout() string {
	var b strings.Builder
	s.writeWithLayout(&b)
	return b.String()
}

func (s Shape) writeWithLayout(b *strings.Builder) {
	if s.IsTuple() {
		b.WriteByte('(')
		for i, e := range s.Tuple {
			writeTupleSep(b, i)
			e.writeWithLayout(b)
		}
		b.WriteByte(')')
		return
	}
	if s.IsArray() && s.Layout == nil && len(s.Dims) > 0 {
		s.Layout = s.effectiveLayout()
	}
	s.write(b, true)
}

// Compatible reports whether a and b are the same shape but for layouts
// (XLA's ShapeUtil::Compatible): element types, dimensions and dynamic
// dimensions, tuple by tuple; what StringNoLayout prints alike.
func Compatible(a, b Shape) bool {
	if a.Elem != b.Elem || len(a.Dims) != len(b.Dims) || len(a.Tuple) != len(b.Tuple) {
		return false
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] || a.IsDynamic(i) != b.IsDynamic(i) {
			return false
		}
	}
	for i := range a.Tuple {
		if !Compatible(a.Tuple[i], b.Tuple[i]) {
			return false
		}
	}
	return true
}

// SameStructure reports whether a and b have the same tuple tree: tuples
// of the same arity at the same places, non-tuples elsewhere (element
// types, dimensions and layouts aside).
func SameStructure(a, b Shape) bool {
	if a.IsTuple() != b.IsTuple() {
		return false
	}
	if !a.IsTuple() {
		return true
	}
	if len(a.Tuple) != len(b.Tuple) {
		return false
	}
	for i := range a.Tuple {
		if !SameStructure(a.Tuple[i], b.Tuple[i]) {
			return false
		}
	}
	return true
}
