package segtree

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddMaxAgainstArray: random adds and queries agree with a plain
// array, negative values included.
func TestAddMaxAgainstArray(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 64, 100} {
		tree := New[int64](n)
		ref := make([]int64, n)
		for range 2000 {
			lo, hi := rng.IntN(n+1), rng.IntN(n+1)
			if lo > hi {
				lo, hi = hi, lo
			}
			if rng.IntN(2) == 0 {
				d := rng.Int64N(200) - 100
				tree.Add(lo, hi, d)
				for i := lo; i < hi; i++ {
					ref[i] += d
				}
				continue
			}
			var want int64
			for i := lo; i < hi; i++ {
				if i == lo || ref[i] > want {
					want = ref[i]
				}
			}
			require.Equal(t, want, tree.Max(lo, hi), "n=%d [%d,%d)", n, lo, hi)
		}
	}
	small := New[int32](3)
	small.Add(0, 3, 5)
	small.Add(1, 2, -7)
	require.Equal(t, int32(-2), small.Max(1, 2))
	require.Equal(t, int32(5), small.Max(0, 3))
	require.Equal(t, int32(0), small.Max(2, 2))
}
