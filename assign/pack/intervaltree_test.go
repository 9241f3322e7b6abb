package pack

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOccupancyAgainstBruteForce compares the occupancy index with a plain
// list of rectangles on random inserts and queries, for several fan-outs.
func TestOccupancyAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	type rect struct {
		a, b   int32
		lo, hi int64
	}
	for iter := 0; iter < 300; iter++ {
		nslot := 1 + rng.Intn(40)
		o := newOccupancy(nslot)
		var rects []rect
		for k := 0; k < 60; k++ {
			a := int32(rng.Intn(nslot))
			b := a + 1 + int32(rng.Intn(nslot-int(a)))
			if rng.Intn(2) == 0 {
				lo := int64(rng.Intn(100))
				r := rect{a, b, lo, lo + 1 + int64(rng.Intn(10))}
				rects = append(rects, r)
				o.insert(r.a, r.b, r.lo, r.hi)
				continue
			}
			got := o.taken(a, b, nil)
			// Reference: union of the byte ranges of rectangles meeting [a, b).
			var want []span
			for _, r := range rects {
				if r.a < b && a < r.b {
					want = append(want, span{r.lo, r.hi})
				}
			}
			slices.SortFunc(want, func(x, y span) int { return cmpInt64(x.lo, y.lo) })
			var merged []span
			for _, s := range want {
				if n := len(merged); n > 0 && s.lo <= merged[n-1].hi {
					merged[n-1].hi = max(merged[n-1].hi, s.hi)
					continue
				}
				merged = append(merged, s)
			}
			require.True(t, slices.Equal(got, merged), "slots [%d,%d): got %v, want %v", a, b, got, merged)
		}
	}
}

func TestUnion2(t *testing.T) {
	x := []span{{0, 2}, {5, 7}, {9, 10}}
	y := []span{{2, 3}, {6, 9}, {20, 21}}
	got := union2(x, y, nil)
	want := []span{{0, 3}, {5, 10}, {20, 21}}
	require.Equal(t, want, got)
}

func TestUnionGallop(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for iter := 0; iter < 2000; iter++ {
		mk := func(n int) []span {
			var out []span
			var at int64
			for len(out) < n {
				at += int64(rng.Intn(5))
				hi := at + 1 + int64(rng.Intn(4))
				out = append(out, span{at, hi})
				at = hi + 1
			}
			return out
		}
		big, small := mk(1+rng.Intn(60)), mk(rng.Intn(6))
		got := unionGallop(big, small, nil)
		var all []span
		all = append(all, big...)
		all = append(all, small...)
		slices.SortFunc(all, func(x, y span) int { return cmpInt64(x.lo, y.lo) })
		var want []span
		for _, s := range all {
			if n := len(want); n > 0 && s.lo <= want[n-1].hi {
				want[n-1].hi = max(want[n-1].hi, s.hi)
				continue
			}
			want = append(want, s)
		}
		require.True(t, slices.Equal(got, want), "big %v small %v: got %v, want %v", big, small, got, want)
	}
}
