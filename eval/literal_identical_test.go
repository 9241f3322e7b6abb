package eval

import (
	"math"
	"testing"

	"github.com/hlomem/hlomem/hlo"
)

// Identical compares bytes, not values: two NaNs of the same bits are
// identical, +0 and -0 are not, and tuples compare leaf by leaf.
func TestIdentical(t *testing.T) {
	f32 := func(v float32) Literal {
		b := math.Float32bits(v)
		return Literal{Shape: hlo.Shape{Elem: hlo.F32}, Data: []byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)}}
	}
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	if !f32(nan).Identical(f32(nan)) {
		t.Error("the same NaN bits differ")
	}
	if f32(0).Identical(f32(negZero)) {
		t.Error("+0 and -0 are identical")
	}
	a, b := TupleLiteral(f32(1), f32(2)), TupleLiteral(f32(1), f32(3))
	if !a.Identical(a) || a.Identical(b) || a.Identical(TupleLiteral(f32(1))) {
		t.Error("tuples compare wrong")
	}
}
