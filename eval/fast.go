package eval

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// sameLayout reports whether two shapes of equal dims place elements at the
// same physical positions.
func sameLayout(a, b hlo.Shape) bool {
	sa, ca, err := physStrides(a)
	if err != nil {
		return false
	}
	sb, cb, err := physStrides(b)
	if err != nil || ca != cb {
		return false
	}
	return !ca || slices.Equal(sa, sb)
}

// fastF32Binary computes f32 add, subtract, multiply, divide, maximum and
// minimum directly on the physical bytes when operands and result share a
// layout. float32 arithmetic is correctly rounded, as XLA's is.
func fastF32Binary(in *hlo.Instruction, x, y Literal) (Literal, bool) {
	if in.Shape.Elem != hlo.F32 || x.Shape.Elem != hlo.F32 || y.Shape.Elem != hlo.F32 ||
		!hlo.SameDims(x.Shape, in.Shape) || !hlo.SameDims(y.Shape, in.Shape) ||
		!sameLayout(x.Shape, in.Shape) || !sameLayout(y.Shape, in.Shape) {
		return Literal{}, false
	}
	n := elemCount(in.Shape)
	if len(x.Data) != 4*n || len(y.Data) != 4*n {
		return Literal{}, false
	}
	a, b := x.Data, y.Data
	out := make([]byte, 4*n)
	get := func(p []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:])) }
	put := func(i int, v float32) { binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v)) }
	switch in.Opcode {
	case hlo.OpAdd:
		for i := 0; i < n; i++ {
			put(i, get(a, i)+get(b, i))
		}
	case hlo.OpSubtract:
		for i := 0; i < n; i++ {
			put(i, get(a, i)-get(b, i))
		}
	case hlo.OpMultiply:
		for i := 0; i < n; i++ {
			put(i, get(a, i)*get(b, i))
		}
	case hlo.OpDivide:
		for i := 0; i < n; i++ {
			put(i, get(a, i)/get(b, i))
		}
	case hlo.OpMaximum, hlo.OpMinimum:
		f := binaryFloat[in.Opcode]
		for i := 0; i < n; i++ {
			put(i, float32(f(float64(get(a, i)), float64(get(b, i)))))
		}
	default:
		return Literal{}, false
	}
	return Literal{Shape: in.Shape, Data: out}, true
}
