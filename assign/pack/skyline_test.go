package pack

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChmaxTree(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.Intn(30)
		tr := newChmaxTree(n)
		ref := make([]int64, n)
		for k := 0; k < 50; k++ {
			a := int32(rng.Intn(n))
			b := a + 1 + int32(rng.Intn(n-int(a)))
			if rng.Intn(2) == 0 {
				v := int64(rng.Intn(100))
				tr.chmax(a, b, v)
				for s := a; s < b; s++ {
					ref[s] = max(ref[s], v)
				}
				continue
			}
			var want int64
			for s := a; s < b; s++ {
				want = max(want, ref[s])
			}
			require.Equal(t, want, tr.max(a, b), "max [%d,%d)", a, b)
		}
	}
}
