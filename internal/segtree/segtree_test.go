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
			// ArgMax is the first step of the largest value; At reads one.
			arg := 0
			for i := range ref {
				if ref[i] > ref[arg] {
					arg = i
				}
			}
			require.Equal(t, arg, tree.ArgMax(), "n=%d", n)
			require.Equal(t, ref[lo%n], tree.At(lo%n))
		}
	}
	small := New[int32](3)
	small.Add(0, 3, 5)
	small.Add(1, 2, -7)
	require.Equal(t, int32(-2), small.Max(1, 2))
	require.Equal(t, int32(5), small.Max(0, 3))
	require.Equal(t, int32(0), small.Max(2, 2))
	require.Equal(t, -1, New[int64](0).ArgMax())
	require.Equal(t, int32(0), small.At(3))
}

// TestFromValues: a tree built from values answers range adds and range
// maxima as a plain slice does, negative values included.
func TestFromValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 0))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.IntN(30)
		ref := make([]int64, n)
		for i := range ref {
			ref[i] = int64(rng.IntN(50) - 40) // mostly negative: All must not see the padding
		}
		tr := FromValues(ref)
		for k := 0; k < 50; k++ {
			a := rng.IntN(n)
			b := a + 1 + rng.IntN(n-a)
			d := int64(rng.IntN(21) - 10)
			tr.Add(a, b, d)
			for s := a; s < b; s++ {
				ref[s] += d
			}
			lo := rng.IntN(n)
			hi := lo + 1 + rng.IntN(n-lo)
			want, all := ref[lo], ref[0]
			for _, v := range ref[lo:hi] {
				want = max(want, v)
			}
			for _, v := range ref {
				all = max(all, v)
			}
			if got := tr.Max(lo, hi); got != want {
				t.Fatalf("iter %d: Max(%d, %d) = %d, want %d", iter, lo, hi, got, want)
			}
			if got := tr.Max(0, n); got != all {
				t.Fatalf("iter %d: Max(0, %d) = %d, want %d", iter, n, got, all)
			}
			if got := tr.All(); got != all {
				t.Fatalf("iter %d: All() = %d, want %d", iter, got, all)
			}
		}
	}
}
