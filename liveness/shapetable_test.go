package liveness

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// TestShapeTable checks every ordinal's index, subshape and subtree size
// against a plain walk of the shape, on shapes whose indices share storage
// in different ways, and that no index changes after the table is built
// (shared storage must never be overwritten).
func TestShapeTable(t *testing.T) {
	a, b := hlo.ArrayShape(hlo.F32, 2), hlo.ArrayShape(hlo.S32)
	nest := a
	chain := a
	for i := 0; i < 6; i++ {
		nest = hlo.TupleShape(nest)
		chain = hlo.TupleShape(b, chain)
	}
	wide := hlo.TupleShape(a, hlo.TupleShape(nest, b, hlo.TupleShape()), chain, hlo.TupleShape(hlo.TupleShape(a, a), b))
	for _, s := range []hlo.Shape{a, nest, chain, wide, hlo.TupleShape()} {
		tab := newShapeTable(s)
		var want []hlo.ShapeIndex
		var subs []hlo.Shape
		s.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			want = append(want, append(hlo.ShapeIndex{}, ix...))
			subs = append(subs, sub)
		})
		require.Len(t, tab.index, len(want))
		for o := range want {
			require.True(t, want[o].Equal(tab.index[o]), "%s ordinal %d: %v, want %v", s, o, tab.index[o], want[o])
			require.True(t, hlo.SameShape(subs[o], tab.sub[o]))
			require.Equal(t, int32(subs[o].NumSubshapes()), tab.size[o])
			got, ok := tab.ordinal(want[o])
			require.True(t, ok)
			require.Equal(t, o, got)
		}
		_, ok := tab.ordinal(hlo.ShapeIndex{int64(len(s.Tuple))})
		require.False(t, ok)
	}
}
