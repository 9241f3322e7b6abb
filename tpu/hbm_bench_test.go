package tpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// fragmentedHBM returns an HBM holding live regions of seeded random
// sizes (1 to 16 KiB) with a free gap of random size after each, and the
// smallest request no gap holds but a compaction can place; tail bytes
// stay free at the top.
func fragmentedHBM(b *testing.B, live int, tail int64) (*HBM, int64) {
	rng := rand.New(rand.NewPCG(uint64(live), 14))
	var regions []hbmRegion
	at, inUse, largestGap := int64(0), int64(0), int64(0)
	for range live {
		size := 1 + rng.Int64N(16<<10)
		regions = append(regions, hbmRegion{addr: at, size: size, align: Granule})
		inUse += size
		gap := Granule * (1 + rng.Int64N(32))
		largestGap = max(largestGap, gap)
		at = (at + size + Granule - 1) &^ (Granule - 1)
		at += gap
	}
	h, err := NewHBM(at + tail)
	if err != nil {
		b.Fatal(err)
	}
	h.regions, h.inUse = regions, inUse
	return h, largestGap + Granule
}

// BenchmarkHBMAllocateFree: an Allocate and a Free of a random size next
// to 10^3 live regions, 16 of the new ones in flight (a tail of 1 MiB
// keeps compaction out of it); first fit walks the gaps, so the cost
// grows with the live regions.
func BenchmarkHBMAllocateFree(b *testing.B) {
	h, _ := fragmentedHBM(b, 1000, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int64, 1024)
	for i := range sizes {
		sizes[i] = 1 + rng.Int64N(24<<10)
	}
	var ring [16]int64
	for i := range ring {
		addr, err := h.Allocate(sizes[i], 0)
		if err != nil {
			b.Fatal(err)
		}
		ring[i] = addr
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		slot := i % len(ring)
		if err := h.Free(ring[slot]); err != nil {
			b.Fatal(err)
		}
		addr, err := h.Allocate(sizes[i%len(sizes)], 0)
		if err != nil {
			b.Fatal(err)
		}
		ring[slot] = addr
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pair")
	if h.Stats().Compactions != 0 {
		b.Fatalf("%d compactions: the benchmark measures first fit alone", h.Stats().Compactions)
	}
}

// BenchmarkHBMCompact: one Allocate that compacts 10^3 or 10^4 live
// regions: the layout pass, the moves and the retry. "bookkeeping" moves
// regions whose bytes were never written (what a run that never touched
// them costs); "bytes" has every region written, so each move copies.
func BenchmarkHBMCompact(b *testing.B) {
	for _, c := range []struct {
		live    int
		written bool
	}{{1000, false}, {10000, false}, {1000, true}, {10000, true}} {
		name := fmt.Sprintf("live=%d/bookkeeping", c.live)
		if c.written {
			name = fmt.Sprintf("live=%d/bytes", c.live)
		}
		b.Run(name, func(b *testing.B) {
			h, request := fragmentedHBM(b, c.live, 0)
			if c.written {
				for _, r := range h.regions {
					if err := h.WriteAt(pattern(uint64(r.addr), r.size), r.addr); err != nil {
						b.Fatal(err)
					}
				}
			}
			saved := slices.Clone(h.regions)
			savedPages := h.pages.Clone()
			inUse := h.inUse
			var moved int64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				h.regions = append(h.regions[:0], saved...)
				h.inUse = inUse
				if c.written {
					h.pages = savedPages.Clone()
				}
				before := h.bytesMoved
				b.StartTimer()
				if _, err := h.Allocate(request, 0); err != nil {
					b.Fatal(err)
				}
				moved = h.bytesMoved - before
			}
			b.StopTimer()
			if h.compactions != int64(b.N) {
				b.Fatalf("%d compactions in %d runs", h.compactions, b.N)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/compaction")
			b.ReportMetric(float64(moved), "bytes-moved/compaction")
		})
	}
}
