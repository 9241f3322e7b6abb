package hlo

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// PointerSize is the size of one entry of a tuple's index table on CPU and
// GPU, and the size of an opaque value.
const PointerSize = 8

// ByteSize returns the bytes a value of shape s occupies, as XLA's
// ShapeUtil::ByteSizeOf computes it with 8-byte pointers:
//
//   - tuple: 8 bytes per element (the index table; elements are separate buffers);
//   - token: 0; opaque: 8;
//   - array: elements × byte width, or ceil(elements × E(n) / 8) when the
//     layout packs sub-byte elements with E(n);
//   - tiled array: the dimensions are padded up to the first tile along
//     minor-to-major (ShapeUtil::ArraySize), then L(n) tail padding applies.
//
// Bounded dynamic dimensions (<=N) count at their bound N, as in XLA's
// ShapeUtil::ByteSizeOf. It fails on an unbounded dimension (?), whose
// size XLA leaves unknown (its kUnboundedSize is INT64_MIN, not a size),
// with an error matching ErrUnboundedShape, and when the size does not fit
// in int64.
func ByteSize(s Shape) (int64, error) {
	switch s.Elem {
	case Tuple:
		return mulCheck(int64(len(s.Tuple)), PointerSize, s)
	case Token:
		return 0, nil
	case Opaque, Buffer:
		return PointerSize, nil
	case InvalidType:
		return 0, fmt.Errorf("shape %s has no element type", s)
	}
	elems, err := paddedElements(s)
	if err != nil {
		return 0, err
	}
	if s.Layout != nil && s.Layout.ElementSizeBits != 0 {
		// ceil(elems*bits/8) in 128-bit arithmetic.
		hi, lo := bits.Mul64(uint64(elems), uint64(s.Layout.ElementSizeBits))
		var carry uint64
		lo, carry = bits.Add64(lo, 7, 0)
		hi += carry
		if hi >= 8 {
			return 0, overflowError(s)
		}
		q, _ := bits.Div64(hi, lo, 8)
		if q > math.MaxInt64 {
			return 0, overflowError(s)
		}
		return int64(q), nil
	}
	return mulCheck(elems, int64(s.Elem.ByteWidth()), s)
}

// DynamicSizeBytes is the size of one dimension's entry in the metadata
// XLA:GPU and XLA:CPU keep with a dynamic array: its runtime sizes, one
// S32 per dimension.
const DynamicSizeBytes = 4

// BufferSize returns the bytes of a buffer holding a value of shape s as
// XLA:GPU's and XLA:CPU's buffer assignment size it (GetSizeOfShape of
// xla/service/gpu, CpuExecutable::ShapeSizeBytes; the compilers'
// BufferSizeBytesFunction): ByteSize, and for an array with a dynamic
// dimension (not is_static) DynamicSizeBytes more per dimension for the
// runtime sizes. XLA's own test backends/gpu/tests/calling_convention.hlo
// passes s32[2,<=2,2] as a 44-byte buffer: 32 bytes of elements at the
// bound and 3 sizes. A static shape's BufferSize is its ByteSize; an
// unbounded one fails as in ByteSize.
func BufferSize(s Shape) (int64, error) {
	n, err := ByteSize(s)
	if err != nil || !s.IsArray() || s.Dynamic == nil {
		return n, err
	}
	for i := range s.Dims {
		if s.IsDynamic(i) {
			return checkedAdd(n, DynamicSizeBytes*int64(len(s.Dims)), s)
		}
	}
	return n, nil
}

// checkedAdd returns a+b, or an overflow error about s.
func checkedAdd(a, b int64, s Shape) (int64, error) {
	if a > math.MaxInt64-b {
		return 0, overflowError(s)
	}
	return a + b, nil
}

// UnpaddedByteSize returns ByteSize of s with its tiles and tail padding
// ignored (the "unpadded size" of XLA's TPU reports).
func UnpaddedByteSize(s Shape) (int64, error) {
	if s.Layout != nil && (len(s.Layout.Tiles) > 0 || s.Layout.TailPaddingAlignment > 1) {
		l := *s.Layout
		l.Tiles = nil
		l.TailPaddingAlignment = 0
		s.Layout = &l
	}
	return ByteSize(s)
}

// paddedElements counts the elements of an array shape after padding to
// the first tile (sub-tiles are assumed to add nothing, as in XLA).
func paddedElements(s Shape) (int64, error) {
	for _, d := range s.Dims {
		if d < 0 {
			return 0, &unboundedError{s}
		}
	}
	l := s.Layout
	if l == nil || len(l.Tiles) == 0 {
		n, ok := s.Elements()
		if !ok {
			return 0, overflowError(s)
		}
		return tailPad(n, l, s)
	}
	tile := l.Tiles[0].Dims
	k := len(tile)
	m2m := l.MinorToMajor
	if len(m2m) != len(s.Dims) {
		return 0, fmt.Errorf("shape %s: layout has %d minor-to-major entries for %d dimensions", s, len(m2m), len(s.Dims))
	}
	n := int64(1)
	mul := func(d int64) bool {
		if d != 0 && n > math.MaxInt64/d {
			return false
		}
		n *= d
		return true
	}
	// Walk from the most minor dimension; the j-th most minor dimension is
	// padded to the tile's (k-1-j)-th entry. A tile with more entries than
	// the shape has dimensions pads the missing ones from 1.
	for j := 0; j < k || j < len(m2m); j++ {
		var d int64 = 1
		if j < len(m2m) {
			dim := m2m[j]
			if dim < 0 || int(dim) >= len(s.Dims) {
				return 0, fmt.Errorf("shape %s: minor-to-major entry %d out of range", s, dim)
			}
			d = s.Dims[dim]
		}
		if j < k {
			t := tile[k-1-j]
			if t == CombineDim {
				t = 1
			}
			if t <= 0 {
				return 0, fmt.Errorf("shape %s: tile dimension %d must be positive", s, t)
			}
			var ok bool
			if d, ok = roundUp(d, t); !ok {
				return 0, overflowError(s)
			}
		}
		if !mul(d) {
			return 0, overflowError(s)
		}
	}
	return tailPad(n, l, s)
}

func tailPad(n int64, l *Layout, s Shape) (int64, error) {
	if l == nil || l.TailPaddingAlignment <= 1 {
		return n, nil
	}
	r, ok := roundUp(n, l.TailPaddingAlignment)
	if !ok {
		return 0, overflowError(s)
	}
	return r, nil
}

func roundUp(x, m int64) (int64, bool) {
	if r := x % m; r != 0 {
		if x > math.MaxInt64-(m-r) {
			return 0, false
		}
		return x + m - r, true
	}
	return x, true
}

func mulCheck(a, b int64, s Shape) (int64, error) {
	if b != 0 && a > math.MaxInt64/b {
		return 0, overflowError(s)
	}
	return a * b, nil
}

// ErrUnboundedShape is the kind (for errors.Is) of the error ByteSize
// returns for a shape with an unbounded dynamic dimension (?).
var ErrUnboundedShape = errors.New("unbounded dynamic shape: its size is unknown")

// unboundedError is ByteSize's error for a shape with an unbounded
// dimension.
type unboundedError struct{ s Shape }

func (e *unboundedError) Error() string {
	return fmt.Sprintf("unbounded dynamic shape %s: its size is unknown", e.s)
}

func (e *unboundedError) Unwrap() error { return ErrUnboundedShape }

// UnboundedErrors returns a positioned error for every instruction of m
// whose shape has an unbounded dynamic dimension (Shape.IsUnboundedDynamic)
// in module order, each matching ErrUnboundedShape, or nil when there is
// none: what a consumer that needs byte sizes reports for such a module.
func UnboundedErrors(m *Module) ErrorList {
	var errs ErrorList
	if m == nil {
		return nil
	}
	m.Instructions(func(in *Instruction) {
		if in.Shape.IsUnboundedDynamic() {
			errs = append(errs, &Error{File: m.File, Pos: in.Pos, Err: ErrUnboundedShape,
				Msg: fmt.Sprintf("%s: unbounded dynamic shape %s: its size is unknown", in.Name, in.Shape)})
		}
	})
	return errs
}

func overflowError(s Shape) error {
	return fmt.Errorf("size of shape %s overflows int64", s)
}
