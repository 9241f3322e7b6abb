package assign

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// checkSlotsScan is checkSlots as it was before the slots were kept by
// offset: every live slot is compared with each starting one. The test
// holds it as the reference.
func checkSlotsScan(al *Allocation) error {
	if len(al.Slots) < 2 {
		return nil
	}
	slots := append([]Slot(nil), al.Slots...)
	for _, s := range slots {
		if !s.Value.Scheduled {
			return fmt.Errorf("assign: allocation %d shares space with value %s, which has no live range", al.Index, s.Value)
		}
	}
	sort.Slice(slots, func(i, j int) bool {
		a, b := slots[i].Value.Range, slots[j].Value.Range
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return slots[i].Value.ID < slots[j].Value.ID
	})
	var active []Slot
	for _, s := range slots {
		y := s.Value
		kept := active[:0]
		for _, a := range active {
			if a.Value.Range.End >= y.Range.Start {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			x := a.Value
			if a.Offset >= s.Offset+s.Size || s.Offset >= a.Offset+a.Size || a.Size == 0 || s.Size == 0 {
				continue
			}
			if x.Buffer == y.Buffer {
				continue
			}
			if x.Range.End == y.Range.Start && reads(y, x) || y.Range.End == x.Range.Start && reads(x, y) {
				continue
			}
			return fmt.Errorf("assign: allocation %d: %s (live %d-%d, bytes [%d,%d)) and %s (live %d-%d, bytes [%d,%d)) overlap",
				al.Index, x, x.Range.Start, x.Range.End, a.Offset, a.Offset+a.Size, y, y.Range.Start, y.Range.End, s.Offset, s.Offset+s.Size)
		}
		active = append(active, s)
	}
	return nil
}

// randomAllocation makes n slots of random ranges, offsets and sizes
// (some empty, some in shared buffers, some reading each other), over
// few offsets so that many overlap; valid makes them a plan that passes
// (each slot on bytes no other live slot uses).
func randomAllocation(r *rand.Rand, n int, valid bool) *Allocation {
	insts := make([]*hlo.Instruction, n)
	for i := range insts {
		insts[i] = &hlo.Instruction{Name: fmt.Sprintf("v%d", i)}
	}
	bufs := make([]liveness.Buffer, n)
	al := &Allocation{Index: 3, Size: 1 << 20}
	vals := make([]*liveness.Value, n)
	for i := range n {
		start := r.Intn(4 * n)
		end := start + r.Intn(1+r.Intn(n))
		if r.Intn(20) == 0 {
			end = start - 1 // an empty range
		}
		b := &bufs[i]
		if i > 0 && r.Intn(10) == 0 {
			b = vals[r.Intn(i)].Buffer
		}
		v := &liveness.Value{ID: i, Inst: insts[i], Range: liveness.Range{Start: start, End: end}, Scheduled: true, Buffer: b}
		if i > 0 && r.Intn(3) == 0 {
			v.Uses = []liveness.Use{{Inst: insts[r.Intn(n)]}}
		}
		vals[i] = v
		var off, size int64
		if valid {
			off, size = int64(i)*64, int64(r.Intn(3))*32
		} else {
			off, size = int64(r.Intn(16))*32, int64(r.Intn(5))*32
		}
		al.Slots = append(al.Slots, Slot{Value: v, Offset: off, Size: size})
	}
	return al
}

// TestCheckSlotsByOffset: the check by offset reports what the scan of
// every live slot reports (the same first overlap, or none) on random
// allocations, valid and not.
func TestCheckSlotsByOffset(t *testing.T) {
	r := rand.New(rand.NewSource(34))
	fails := 0
	for iter := range 3000 {
		n := 2 + r.Intn(60)
		if iter%100 == 0 {
			n = 600 + r.Intn(400) // past a chunk
		}
		al := randomAllocation(r, n, iter%4 == 0)
		want, got := checkSlotsScan(al), checkSlots(al)
		if want == nil {
			require.NoError(t, got, "iteration %d", iter)
			continue
		}
		fails++
		require.EqualError(t, got, want.Error(), "iteration %d", iter)
	}
	require.Greater(t, fails, 500, "the random plans should fail often")
	require.Less(t, fails, 3000, "and pass sometimes")
}

// TestCheckSlotsLongLived: many long-lived slots at once on disjoint
// bytes pass; one moved onto another's bytes fails.
func TestCheckSlotsLongLived(t *testing.T) {
	const n = 20_000
	r := rand.New(rand.NewSource(1))
	al := randomAllocation(r, n, true)
	for i := range al.Slots {
		v := al.Slots[i].Value
		v.Range = liveness.Range{Start: i, End: i + n/4} // n/4 live at once
		al.Slots[i].Size = 64
		v.Buffer = &liveness.Buffer{ID: i}
	}
	require.NoError(t, checkSlots(al))
	al.Slots[n/2].Offset = al.Slots[n/2+10].Offset
	require.ErrorContains(t, checkSlots(al), "overlap")
	require.Equal(t, checkSlotsScan(al).Error(), checkSlots(al).Error())
}

// TestActiveSlots: random inserts, removals and queries of activeSlots
// against a plain list.
func TestActiveSlots(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var a activeSlots
	ref := map[int32]activeSlot{}
	next := int32(0)
	for op := range 30_000 {
		switch x := r.Intn(10); {
		case x < 5 || len(ref) == 0:
			off := int64(r.Intn(2000))
			it := activeSlot{off: off, end: off + 1 + int64(r.Intn(50)), k: next}
			next++
			a.insert(it)
			ref[it.k] = it
		case x < 9:
			for k, it := range ref { // any one
				a.remove(it.off, k)
				delete(ref, k)
				break
			}
		default:
			lo := int64(r.Intn(2100))
			hi := lo + 1 + int64(r.Intn(100))
			got := map[int32]bool{}
			a.overlapping(lo, hi, func(k int32) { got[k] = true })
			want := map[int32]bool{}
			for k, it := range ref {
				if it.off < hi && it.end > lo {
					want[k] = true
				}
			}
			require.Equal(t, want, got, "op %d: slots over [%d,%d)", op, lo, hi)
		}
	}
	n := 0
	for _, c := range a.chunks {
		n += len(c.items)
	}
	require.Equal(t, len(ref), n)
}

// BenchmarkCheckSlots: the check of an allocation of n slots, a live set
// of live slots at every step (each on bytes of its own), by offset and
// by the scan of every live slot it replaced.
func BenchmarkCheckSlots(b *testing.B) {
	for _, c := range []struct{ n, live int }{{100_000, 300}, {100_000, 3_000}, {1_000_000, 3_000}} {
		r := rand.New(rand.NewSource(1))
		al := randomAllocation(r, c.n, true)
		for i := range al.Slots {
			v := al.Slots[i].Value
			v.Range = liveness.Range{Start: i, End: i + c.live}
			v.Uses = nil
			v.Buffer = &liveness.Buffer{ID: i}
			al.Slots[i].Offset, al.Slots[i].Size = int64(i%(c.live+1))*64, 64
		}
		for _, f := range []struct {
			name  string
			check func(*Allocation) error
		}{{"offset", checkSlots}, {"scan", checkSlotsScan}} {
			if f.name == "scan" && c.n*c.live > 1e9 {
				continue // minutes
			}
			b.Run(fmt.Sprintf("%s/n=%d/live=%d", f.name, c.n, c.live), func(b *testing.B) {
				for b.Loop() {
					require.NoError(b, f.check(al))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.n), "ns/slot")
			})
		}
	}
}
