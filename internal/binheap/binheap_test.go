package binheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHeapSorts: pushes, pops, Init and FixTop agree with a sorted slice.
func TestHeapSorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 0))
	for iter := 0; iter < 300; iter++ {
		n := rng.IntN(60)
		var ref []int
		h := &Heap[int]{Less: func(a, b int) bool { return a < b }}
		if iter%2 == 0 {
			for i := 0; i < n; i++ {
				h.Items = append(h.Items, rng.IntN(20))
			}
			ref = slices.Clone(h.Items)
			h.Init()
		}
		for k := 0; k < n; k++ {
			switch rng.IntN(3) {
			case 0:
				x := rng.IntN(20)
				h.Push(x)
				ref = append(ref, x)
			case 1:
				if h.Len() > 0 {
					slices.Sort(ref)
					if got := h.Pop(); got != ref[0] {
						t.Fatalf("iter %d: Pop = %d, want %d", iter, got, ref[0])
					}
					ref = ref[1:]
				}
			case 2:
				if h.Len() > 0 {
					slices.Sort(ref)
					d := rng.IntN(10)
					h.Items[0] += d
					ref[0] += d
					h.FixTop()
				}
			}
			if h.Len() != len(ref) {
				t.Fatalf("iter %d: Len = %d, want %d", iter, h.Len(), len(ref))
			}
		}
		slices.Sort(ref)
		for _, want := range ref {
			if got := h.Pop(); got != want {
				t.Fatalf("iter %d: drained %d, want %d", iter, got, want)
			}
		}
	}
}
