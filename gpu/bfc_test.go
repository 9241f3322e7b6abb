package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	bfcKiB = int64(1) << 10
	bfcMiB = int64(1) << 20
)

// checkBFC checks the allocator's invariants from its fields, sharing no
// code with the allocator: the regions tile their address ranges with
// chunks (no gap, no overlap, links consistent), no two free chunks are
// adjacent in a region, every free chunk is in the right bin exactly once
// and each bin is a valid treap in (size, address) order, the live map
// holds exactly the chunks in use, the counters add up and every handle
// is either in a region or unused.
func checkBFC(a *BFC) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	binOf := func(n int64) int {
		b := 0
		for v := max(n, 256) >> 8; v > 1 && b < 20; v >>= 1 {
			b++
		}
		return b
	}
	seen := make([]bool, len(a.chunks))
	seenCount := 0
	var pool, inUse, largestFree, largestUsed int64
	freeCount, usedCount := 0, 0
	for i, r := range a.regions {
		if r.size <= 0 || r.size%256 != 0 {
			return fmt.Errorf("region %d: size %d, want a positive multiple of 256", i, r.size)
		}
		switch {
		case i == 0 && r.addr != a.base:
			return fmt.Errorf("region 0 at %#x, want the base %#x", r.addr, a.base)
		case i > 0 && r.addr%(2<<20) != 0:
			return fmt.Errorf("region %d at %#x, want 2 MiB aligned", i, r.addr)
		case i > 0 && r.addr < a.regions[i-1].addr+a.regions[i-1].size:
			return fmt.Errorf("region %d at %#x overlaps region %d", i, r.addr, i-1)
		}
		pool += r.size
		addr, prev, prevFree := r.addr, bfcNone, false
		for h := r.first; h != bfcNone; h = a.chunks[h].next {
			if h < 0 || int(h) >= len(a.chunks) {
				return fmt.Errorf("region %d: handle %d out of range", i, h)
			}
			if seen[h] {
				return fmt.Errorf("region %d: chunk %d seen twice", i, h)
			}
			seen[h] = true
			seenCount++
			c := a.chunks[h]
			switch {
			case c.addr != addr:
				return fmt.Errorf("region %d: chunk %d at %#x, want %#x (gap or overlap)", i, h, c.addr, addr)
			case c.size <= 0 || c.size%256 != 0:
				return fmt.Errorf("chunk %d: size %d", h, c.size)
			case c.prev != prev:
				return fmt.Errorf("chunk %d: prev %d, want %d", h, c.prev, prev)
			case !c.inUse && prevFree:
				return fmt.Errorf("chunk %d at %#x: two adjacent free chunks", h, c.addr)
			}
			if c.inUse {
				usedCount++
				inUse += c.size
				largestUsed = max(largestUsed, c.size)
				if c.bin != -1 || c.requested < 0 || c.requested > c.size {
					return fmt.Errorf("chunk %d in use: bin %d requested %d size %d", h, c.bin, c.requested, c.size)
				}
				if lh, ok := a.live.get(c.addr); !ok || lh != h {
					return fmt.Errorf("chunk %d in use at %#x: not in the live map", h, c.addr)
				}
			} else {
				freeCount++
				largestFree = max(largestFree, c.size)
				if int(c.bin) != binOf(c.size) || c.requested != 0 {
					return fmt.Errorf("free chunk %d of size %d: bin %d (want %d), requested %d", h, c.size, c.bin, binOf(c.size), c.requested)
				}
			}
			addr += c.size
			prev, prevFree = h, !c.inUse
		}
		if addr != r.addr+r.size {
			return fmt.Errorf("region %d: chunks end at %#x, want %#x", i, addr, r.addr+r.size)
		}
	}
	// Bins: every node a free chunk of that bin, in strict key order, heap
	// ordered, counted once.
	inBins := 0
	for b := range NumBins {
		var last *bfcChunk
		var walk func(t int32, depth int) error
		walk = func(t int32, depth int) error {
			if t == bfcNone {
				return nil
			}
			if depth > 1000 {
				return fmt.Errorf("bin %d: treap too deep", b)
			}
			c := &a.chunks[t]
			for _, k := range []int32{c.left, c.right} {
				if k != bfcNone && a.chunks[k].prio > c.prio {
					return fmt.Errorf("bin %d: chunk %d: heap order broken", b, t)
				}
			}
			if err := walk(c.left, depth+1); err != nil {
				return err
			}
			if !seen[t] || c.inUse || int(c.bin) != b {
				return fmt.Errorf("bin %d holds chunk %d (in a region %v, in use %v, bin %d)", b, t, seen[t], c.inUse, c.bin)
			}
			if last != nil && !(last.size < c.size || last.size == c.size && last.addr < c.addr) {
				return fmt.Errorf("bin %d: (%d, %#x) after (%d, %#x)", b, c.size, c.addr, last.size, last.addr)
			}
			last = c
			inBins++
			return walk(c.right, depth+1)
		}
		if err := walk(a.bins[b], 0); err != nil {
			return err
		}
		if (a.bins[b] != bfcNone) != (a.nonEmpty&(1<<b) != 0) {
			return fmt.Errorf("bin %d: non-empty mask wrong", b)
		}
	}
	if inBins != freeCount {
		return fmt.Errorf("%d chunks in bins, %d free chunks in regions", inBins, freeCount)
	}
	if a.live.n != usedCount {
		return fmt.Errorf("%d live addresses, %d chunks in use", a.live.n, usedCount)
	}
	liveKeys := 0
	for _, k := range a.live.keys {
		if k != 0 {
			liveKeys++
		}
	}
	if liveKeys != usedCount {
		return fmt.Errorf("%d keys in the live table, %d chunks in use", liveKeys, usedCount)
	}
	for _, h := range a.unused {
		if h < 0 || int(h) >= len(a.chunks) || seen[h] {
			return fmt.Errorf("unused handle %d is out of range, in a region or unused twice", h)
		}
		seen[h] = true
		seenCount++
	}
	if seenCount != len(a.chunks) {
		return fmt.Errorf("%d handles accounted for, %d chunks", seenCount, len(a.chunks))
	}
	st := a.stats()
	switch {
	case st.BytesInUse != inUse:
		return fmt.Errorf("bytes_in_use %d, chunks in use sum to %d", st.BytesInUse, inUse)
	case st.PoolBytes != pool || st.BytesReserved != pool:
		return fmt.Errorf("pool_bytes %d, bytes_reserved %d, regions sum to %d", st.PoolBytes, st.BytesReserved, pool)
	case pool > a.limit || pool > a.device:
		return fmt.Errorf("pool %d beyond limit %d or device %d", pool, a.limit, a.device)
	case st.PeakBytesInUse < inUse || st.PeakPoolBytes < pool:
		return fmt.Errorf("peaks %d, %d below %d, %d", st.PeakBytesInUse, st.PeakPoolBytes, inUse, pool)
	case st.LargestAllocSize < largestUsed:
		return fmt.Errorf("largest_alloc_size %d below a chunk in use of %d", st.LargestAllocSize, largestUsed)
	case st.LargestFreeBlockBytes != largestFree:
		return fmt.Errorf("largest_free_block_bytes %d, largest free chunk %d", st.LargestFreeBlockBytes, largestFree)
	}
	return nil
}

func bfcNew(t testing.TB, opts BFCOptions) *BFC {
	t.Helper()
	a, err := NewBFC(opts)
	require.NoError(t, err)
	require.NoError(t, checkBFC(a))
	return a
}

func bfcMustAlloc(t testing.TB, a *BFC, size int64) int64 {
	t.Helper()
	addr, err := a.Allocate(size)
	require.NoError(t, err)
	require.NoError(t, checkBFC(a))
	return addr
}

func bfcMustFree(t testing.TB, a *BFC, addr int64) {
	t.Helper()
	require.NoError(t, a.Free(addr))
	require.NoError(t, checkBFC(a))
}

func bfcRequireOOM(t testing.TB, a *BFC, size int64) *OOMError {
	t.Helper()
	_, err := a.Allocate(size)
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.NoError(t, checkBFC(a))
	return oom
}

type bfcChunkState struct {
	off, size int64
	inUse     bool
}

// layout is the chunks as (offset from the base, size, in use).
func bfcLayout(a *BFC) []bfcChunkState {
	var out []bfcChunkState
	for _, c := range a.Chunks() {
		out = append(out, bfcChunkState{c.Addr - bfcDefaultBase, c.Size, c.InUse})
	}
	return out
}

func TestBinForSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want int
	}{
		{-1, 0}, {0, 0}, {255, 0}, {256, 0}, {511, 0}, {512, 1}, {1023, 1}, {1024, 2},
		{bfcMiB, 12}, {2*bfcMiB - 1, 12}, {2 * bfcMiB, 13},
		{256*bfcMiB - 1, 19}, {256 * bfcMiB, 20}, {1 << 40, 20}, {math.MaxInt64, 20},
	} {
		require.Equal(t, tc.want, BinForSize(tc.n), "BinForSize(%d)", tc.n)
	}
	require.Equal(t, int64(256), BinSize(0))
	require.Equal(t, int64(1024), BinSize(2))
	require.Equal(t, int64(256*bfcMiB), BinSize(20))
	require.Equal(t, int64(0), BinSize(-1))
	require.Equal(t, int64(0), BinSize(NumBins))
	for b := range NumBins {
		require.Equal(t, b, BinForSize(BinSize(b)))
		if b > 0 {
			require.Equal(t, b-1, BinForSize(BinSize(b)-1))
		}
	}
}

func TestRoundBytes(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{0, 256}, {1, 256}, {255, 256}, {256, 256}, {257, 512}, {1000, 1024},
		{3*bfcMiB + 1, 3*bfcMiB + 256},
		{math.MaxInt64 - 255, math.MaxInt64 - 255},
		{math.MaxInt64 - 254, -1}, {math.MaxInt64, -1}, {-1, -1},
	} {
		require.Equal(t, tc.want, RoundBytes(tc.n), "RoundBytes(%d)", tc.n)
	}
}

func TestNewBFCErrors(t *testing.T) {
	for _, opts := range []BFCOptions{
		{Limit: 0},
		{Limit: -bfcMiB},
		{Limit: bfcMiB, DeviceMemory: -1},
		{Limit: bfcMiB, Base: -256},
		{Limit: bfcMiB, Base: 100},
		{Limit: bfcMiB, DriverCost: -time.Second},
		{Limit: 100},                            // nothing of 256 bytes to reserve
		{Limit: 64 * bfcMiB, DeviceMemory: 100}, // the device cannot give 256 bytes
	} {
		_, err := NewBFC(opts)
		require.Error(t, err, "%+v", opts)
	}
	// A limit beyond the address space: the reservation backs off as a
	// refused one does, until it fits.
	huge := bfcNew(t, BFCOptions{Limit: math.MaxInt64})
	r := huge.Regions()[0]
	require.LessOrEqual(t, r.Size, int64(math.MaxInt64)-r.Addr)
	bfcRequireOOM(t, huge, math.MaxInt64-1000)

	a := bfcNew(t, BFCOptions{Limit: 100, AllowGrowth: true})
	bfcRequireOOM(t, a, 0)
	require.Equal(t, "GPU_0_bfc", a.Name())
	require.Equal(t, "GPU_3_bfc", bfcNew(t, BFCOptions{Name: "GPU_3_bfc", Limit: bfcMiB}).Name())
}

// Best fit: the smallest free chunk that holds the request, the lowest
// address among equal sizes, whatever order they were freed in.
func TestBFCBestFit(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 64 * bfcMiB})
	sizes := []int64{bfcMiB, 2 * bfcMiB, bfcMiB, 3 * bfcMiB / 2}
	var holes []int64
	for _, s := range sizes {
		holes = append(holes, bfcMustAlloc(t, a, s))
		bfcMustAlloc(t, a, bfcKiB) // a separator that stays in use
	}
	for _, i := range []int{2, 1, 3, 0} {
		bfcMustFree(t, a, holes[i])
	}
	// 1 MiB: the two 1 MiB holes fit exactly; the lower one is taken.
	require.Equal(t, holes[0], bfcMustAlloc(t, a, bfcMiB))
	require.Equal(t, holes[2], bfcMustAlloc(t, a, bfcMiB))
	// 1.25 MiB: the 1.5 MiB hole, not the 2 MiB one nor the tail; handed
	// out whole (1.5 < 2×1.25, waste 0.25 MiB < 128 MiB).
	x := bfcMustAlloc(t, a, 5*bfcMiB/4)
	require.Equal(t, holes[3], x)
	size, ok := a.Size(x)
	require.True(t, ok)
	require.Equal(t, 3*bfcMiB/2, size)
	// 1.75 MiB: the 2 MiB hole, in a higher bin than the request's.
	require.Equal(t, holes[1], bfcMustAlloc(t, a, 7*bfcMiB/4))
	// Now only the tail is free.
	tail := a.Chunks()[len(a.Chunks())-1]
	require.False(t, tail.InUse)
	require.Equal(t, tail.Addr, bfcMustAlloc(t, a, 1))
}

func TestBFCSplit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		chunk, req    int64
		wantChunkSize int64
	}{
		{"under 2x, whole", 3 * bfcMiB / 2, bfcMiB, 3 * bfcMiB / 2},
		{"exactly 2x, split", 2 * bfcMiB, bfcMiB, bfcMiB},
		{"above 2x, split", 5 * bfcMiB, 2 * bfcMiB, 2 * bfcMiB},
		{"2x minus a granule, whole", 2*bfcMiB - 256, bfcMiB, 2*bfcMiB - 256},
		{"rest exactly 128 MiB, split", 288 * bfcMiB, 160 * bfcMiB, 160 * bfcMiB},
		{"rest 128 MiB less a granule, whole", 288*bfcMiB - 256, 160 * bfcMiB, 288*bfcMiB - 256},
		{"rest above 128 MiB under 2x, split", 300 * bfcMiB, 160 * bfcMiB, 160 * bfcMiB},
		{"request rounds up, whole", 2 * bfcMiB, bfcMiB + 1, 2 * bfcMiB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := bfcNew(t, BFCOptions{Limit: tc.chunk})
			addr := bfcMustAlloc(t, a, tc.req)
			require.Equal(t, int64(bfcDefaultBase), addr)
			size, ok := a.Size(addr)
			require.True(t, ok)
			require.Equal(t, tc.wantChunkSize, size)
			st := a.Stats()
			require.Equal(t, tc.wantChunkSize, st.BytesInUse, "bytes_in_use counts the chunk, not the request")
			require.Equal(t, tc.wantChunkSize, st.LargestAllocSize)
			cs := a.Chunks()
			require.Equal(t, Chunk{Addr: addr, Size: tc.wantChunkSize, Requested: tc.req, InUse: true, Bin: -1}, cs[0])
			if tc.wantChunkSize == tc.chunk {
				require.Len(t, cs, 1)
			} else {
				rest := tc.chunk - tc.wantChunkSize
				require.Equal(t, []Chunk{cs[0], {Addr: addr + tc.wantChunkSize, Size: rest, Bin: BinForSize(rest)}}, cs)
			}
		})
	}
}

// bfcFourChunks is a 4 MiB arena cut into four 1 MiB chunks in use.
func bfcFourChunks(t *testing.T) (*BFC, [4]int64) {
	a := bfcNew(t, BFCOptions{Limit: 4 * bfcMiB})
	var c [4]int64
	for i := range c {
		c[i] = bfcMustAlloc(t, a, bfcMiB)
		require.Equal(t, int64(bfcDefaultBase)+int64(i)*bfcMiB, c[i])
	}
	require.Len(t, a.Chunks(), 4)
	require.Equal(t, int64(0), a.LargestFreeChunk())
	return a, c
}

func TestBFCCoalesce(t *testing.T) {
	t.Run("with next", func(t *testing.T) {
		a, c := bfcFourChunks(t)
		bfcMustFree(t, a, c[1])
		bfcMustFree(t, a, c[0])
		require.Equal(t, []bfcChunkState{{0, 2 * bfcMiB, false}, {2 * bfcMiB, bfcMiB, true}, {3 * bfcMiB, bfcMiB, true}}, bfcLayout(a))
	})
	t.Run("with prev", func(t *testing.T) {
		a, c := bfcFourChunks(t)
		bfcMustFree(t, a, c[1])
		bfcMustFree(t, a, c[2])
		require.Equal(t, []bfcChunkState{{0, bfcMiB, true}, {bfcMiB, 2 * bfcMiB, false}, {3 * bfcMiB, bfcMiB, true}}, bfcLayout(a))
	})
	t.Run("both sides", func(t *testing.T) {
		a, c := bfcFourChunks(t)
		bfcMustFree(t, a, c[0])
		bfcMustFree(t, a, c[2])
		require.Len(t, a.Chunks(), 4)
		bfcMustFree(t, a, c[1])
		require.Equal(t, []bfcChunkState{{0, 3 * bfcMiB, false}, {3 * bfcMiB, bfcMiB, true}}, bfcLayout(a))
		require.Equal(t, 3*bfcMiB, a.LargestFreeChunk())
		bfcMustFree(t, a, c[3])
		require.Equal(t, []bfcChunkState{{0, 4 * bfcMiB, false}}, bfcLayout(a))
		require.Equal(t, Chunk{Addr: bfcDefaultBase, Size: 4 * bfcMiB, Bin: BinForSize(4 * bfcMiB)}, a.Chunks()[0])
	})
}

func TestBFCRegionsDoNotCoalesce(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 8 * bfcMiB, AllowGrowth: true})
	x := bfcMustAlloc(t, a, 2*bfcMiB) // the first region, 2 MiB, all of it
	y := bfcMustAlloc(t, a, 2*bfcMiB) // the second, 4 MiB, split
	require.Equal(t, []Region{{bfcDefaultBase, 2 * bfcMiB}, {bfcDefaultBase + 2*bfcMiB, 4 * bfcMiB}}, a.Regions())
	bfcMustFree(t, a, x)
	bfcMustFree(t, a, y)
	// The two regions are adjacent in the address space, yet their free
	// chunks stay apart.
	require.Equal(t, []bfcChunkState{{0, 2 * bfcMiB, false}, {2 * bfcMiB, 4 * bfcMiB, false}}, bfcLayout(a))
	require.Equal(t, 4*bfcMiB, a.LargestFreeChunk())
	// 6 MiB are free in the pool and 2 MiB more may be reserved, but no
	// chunk holds 5 MiB and only 2 MiB are available for a region.
	oom := bfcRequireOOM(t, a, 5*bfcMiB)
	require.True(t, oom.Fragmented())
	require.Equal(t, 8*bfcMiB, oom.Free)
}

func TestBFCRegionAlignment(t *testing.T) {
	base := int64(0x7f0000000100)
	a := bfcNew(t, BFCOptions{Limit: 16 * bfcMiB, AllowGrowth: true, Base: base})
	require.Equal(t, base, bfcMustAlloc(t, a, 2*bfcMiB))
	require.Equal(t, int64(0x7f0000400000), bfcMustAlloc(t, a, bfcMiB))
	require.Equal(t, []Region{{base, 2 * bfcMiB}, {0x7f0000400000, 4 * bfcMiB}}, a.Regions())
}

func TestBFCGrowth(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 64 * bfcMiB, AllowGrowth: true, DriverCost: time.Millisecond})
	require.Empty(t, a.Regions())
	require.Equal(t, 2*bfcMiB, a.CurrentRegionBytes())
	require.Equal(t, "<allocator contains no memory>", a.Occupancy())

	type step struct {
		size     int64
		regions  []int64 // region sizes after the step
		curr     int64
		wantAddr int64 // offset from the base
	}
	for i, s := range []step{
		// 2 MiB holds it; curr was not grown for it, so it doubles for
		// next time.
		{bfcKiB, []int64{2 * bfcMiB}, 4 * bfcMiB, 0},
		// No free chunk holds 3 MiB; curr 4 MiB does: doubled after. The
		// region is handed out whole (4 < 2x3, waste 1 MiB).
		{3 * bfcMiB, []int64{2 * bfcMiB, 4 * bfcMiB}, 8 * bfcMiB, 2 * bfcMiB},
		// 12 MiB: curr doubles 8 -> 16 to hold it and stays there.
		{12 * bfcMiB, []int64{2 * bfcMiB, 4 * bfcMiB, 16 * bfcMiB}, 16 * bfcMiB, 6 * bfcMiB},
		// 5 MiB: curr holds it unchanged, so the region is 16 MiB (split)
		// and curr doubles.
		{5 * bfcMiB, []int64{2 * bfcMiB, 4 * bfcMiB, 16 * bfcMiB, 16 * bfcMiB}, 32 * bfcMiB, 22 * bfcMiB},
		// 20 MiB: the 11 MiB rest of region 4 is too small; curr holds
		// it, but only 64-38 = 26 MiB remain under the limit.
		{20 * bfcMiB, []int64{2 * bfcMiB, 4 * bfcMiB, 16 * bfcMiB, 16 * bfcMiB, 26 * bfcMiB}, 64 * bfcMiB, 38 * bfcMiB},
		// 10 MiB: the 11 MiB rest of region 4, whole; no new region.
		{10 * bfcMiB, []int64{2 * bfcMiB, 4 * bfcMiB, 16 * bfcMiB, 16 * bfcMiB, 26 * bfcMiB}, 64 * bfcMiB, 27 * bfcMiB},
	} {
		require.Equal(t, int64(bfcDefaultBase)+s.wantAddr, bfcMustAlloc(t, a, s.size), "step %d", i)
		var got []int64
		for _, r := range a.Regions() {
			got = append(got, r.Size)
		}
		require.Equal(t, s.regions, got, "step %d", i)
		require.Equal(t, s.curr, a.CurrentRegionBytes(), "step %d", i)
	}
	st := a.Stats()
	require.Equal(t, 64*bfcMiB, st.PoolBytes)
	require.Equal(t, int64(5), st.DriverCalls)
	require.Equal(t, 5*time.Millisecond, st.DriverTime)
	// The pool is at the limit: the rest of region 1 is the largest free
	// chunk, and 3 MiB fails without a driver call.
	require.Equal(t, 2*bfcMiB-bfcKiB, a.LargestFreeChunk())
	oom := bfcRequireOOM(t, a, 3*bfcMiB)
	require.Equal(t, 3*bfcMiB, oom.Rounded)
	require.Equal(t, int64(5), oom.Stats.DriverCalls)
	require.Equal(t, 64*bfcMiB-st.BytesInUse, oom.Free)
	require.False(t, oom.Fragmented(), "2 MiB less 1 KiB is free in all")
	bfcMustAlloc(t, a, 2*bfcMiB-bfcKiB)
}

// A device with less memory than the limit refuses the region; Extend
// backs off by 0.9x (XLA's float32 product, rounded up to 256) while the
// size still holds the request.
func TestBFCBackoff(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 64 * bfcMiB, AllowGrowth: true, DeviceMemory: 10 * bfcMiB})
	bfcMustAlloc(t, a, bfcKiB)   // region 2 MiB
	bfcMustAlloc(t, a, 3*bfcMiB) // region 4 MiB; 4 MiB left on the device
	require.Equal(t, int64(2), a.Stats().DriverCalls)
	bfcMustAlloc(t, a, 3*bfcMiB)
	// 8 MiB, 7549952, 6795008, 6115584, 5504256, 4953856, 4458496 refused,
	// 4012800 given.
	require.Equal(t, []Region{{bfcDefaultBase, 2 * bfcMiB}, {bfcDefaultBase + 2*bfcMiB, 4 * bfcMiB}, {bfcDefaultBase + 6*bfcMiB, 4012800}}, a.Regions())
	require.Equal(t, int64(10), a.Stats().DriverCalls)
	require.Equal(t, 16*bfcMiB, a.CurrentRegionBytes())
	// 181504 bytes are left on the device: 2 MiB backs off below the
	// request and fails; curr is not doubled by a failed Extend.
	bfcRequireOOM(t, a, 2*bfcMiB)
	require.Equal(t, 16*bfcMiB, a.CurrentRegionBytes())
	require.Len(t, a.Regions(), 3)
}

func TestBFCPreallocation(t *testing.T) {
	limit := 64 * bfcMiB
	a := bfcNew(t, BFCOptions{Limit: limit, DriverCost: time.Second})
	require.Equal(t, []Region{{bfcDefaultBase, limit}}, a.Regions())
	st := a.Stats()
	require.Equal(t, Stats{
		BytesLimit: limit, BytesReserved: limit, PeakBytesReserved: limit,
		LargestFreeBlockBytes: limit, PoolBytes: limit, PeakPoolBytes: limit,
		DriverCalls: 1, DriverTime: time.Second,
	}, st)
	// The first Extend held the limit without growing curr, so it doubled.
	require.Equal(t, 2*limit, a.CurrentRegionBytes())
	oom := bfcRequireOOM(t, a, limit+1)
	require.Equal(t, limit+256, oom.Rounded)
	require.False(t, oom.Fragmented())
	x := bfcMustAlloc(t, a, limit)
	bfcRequireOOM(t, a, 1)
	bfcMustFree(t, a, x)
	require.Equal(t, int64(1), a.Stats().DriverCalls, "regions are never returned or added")

	// A device short of the limit: the reservation backs off by 0.9x.
	b := bfcNew(t, BFCOptions{Limit: limit, DeviceMemory: 60 * bfcMiB})
	require.Equal(t, []Region{{bfcDefaultBase, 60398080}}, b.Regions())
	require.Equal(t, int64(2), b.Stats().DriverCalls)
}

func TestBFCStats(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 64 * bfcMiB, AllowGrowth: true})
	x := bfcMustAlloc(t, a, 1000) // 1024 bytes of region 1 (2 MiB)
	bfcMustAlloc(t, a, 3*bfcMiB)  // region 2 (4 MiB), whole: 4 < 2x3 and rest 1 MiB
	bfcMustFree(t, a, x)          // region 1 is one free chunk again
	y := bfcMustAlloc(t, a, 5000) // 5120 bytes
	require.Equal(t, int64(bfcDefaultBase), y)
	require.Equal(t, Stats{
		NumAllocs:             3,
		BytesInUse:            4*bfcMiB + 5120,
		PeakBytesInUse:        4*bfcMiB + 5120,
		LargestAllocSize:      4 * bfcMiB,
		BytesLimit:            64 * bfcMiB,
		BytesReserved:         6 * bfcMiB,
		PeakBytesReserved:     6 * bfcMiB,
		LargestFreeBlockBytes: 2*bfcMiB - 5120,
		PoolBytes:             6 * bfcMiB,
		PeakPoolBytes:         6 * bfcMiB,
		DriverCalls:           2,
	}, a.Stats())
	bfcMustFree(t, a, y)
	st := a.Stats()
	require.Equal(t, 4*bfcMiB, st.BytesInUse)
	require.Equal(t, 4*bfcMiB+5120, st.PeakBytesInUse)
	require.Equal(t, 2*bfcMiB, st.LargestFreeBlockBytes)
}

func TestBFCFragmentation(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 32 * bfcMiB})
	x := bfcMustAlloc(t, a, 4*bfcMiB)
	bfcMustAlloc(t, a, bfcMiB)
	y := bfcMustAlloc(t, a, 12*bfcMiB)
	bfcMustAlloc(t, a, bfcMiB)
	bfcMustAlloc(t, a, 14*bfcMiB) // the rest, exactly
	require.Zero(t, a.Stats().Fragmentation())
	bfcMustFree(t, a, x)
	bfcMustFree(t, a, y)
	st := a.Stats()
	require.Equal(t, 12*bfcMiB, st.LargestFreeBlockBytes)
	require.Equal(t, 16*bfcMiB, st.BytesInUse)
	require.InDelta(t, 0.25, st.Fragmentation(), 1e-12) // (16-12)/16
	oom := bfcRequireOOM(t, a, 13*bfcMiB)
	require.True(t, oom.Fragmented())
	require.Equal(t, 16*bfcMiB, oom.Free)
}

func TestBFCOccupancy(t *testing.T) {
	// 100 granules: one cell each.
	a := bfcNew(t, BFCOptions{Limit: 100 * 256})
	require.Equal(t, strings.Repeat("_", 100), a.Occupancy())
	x := bfcMustAlloc(t, a, 1536)
	bfcMustAlloc(t, a, 512)
	bfcMustFree(t, a, x)
	// 1000 bytes take the 1536-byte hole whole: 1000 requested bytes in
	// cells 0-3 (the 24 wasted bytes of cell 3 show '*'), 536 wasted in
	// 4-5; then the 512 bytes; then a 0-byte request, all waste.
	require.Equal(t, x, bfcMustAlloc(t, a, 1000))
	bfcMustAlloc(t, a, 0)
	require.Equal(t, "****xx**x"+strings.Repeat("_", 91), a.Occupancy())

	// Regions are laid end to end: 2 MiB all in use, then 1 MiB of 2 MiB.
	g := bfcNew(t, BFCOptions{Limit: 4 * bfcMiB, AllowGrowth: true})
	bfcMustAlloc(t, g, 2*bfcMiB)
	bfcMustAlloc(t, g, bfcMiB)
	require.Equal(t, []Region{{bfcDefaultBase, 2 * bfcMiB}, {bfcDefaultBase + 2*bfcMiB, 2 * bfcMiB}}, g.Regions())
	require.Equal(t, strings.Repeat("*", 75)+strings.Repeat("_", 25), g.Occupancy())
}

func TestBFCDump(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 64 * bfcMiB, AllowGrowth: true})
	bfcMustAlloc(t, a, 1000)
	bfcMustAlloc(t, a, 1000)
	bfcMustAlloc(t, a, 3*bfcMiB)
	var b strings.Builder
	require.NoError(t, a.Dump(&b, 18*bfcMiB))
	got := b.String()
	for _, want := range []string{
		"BFCAllocator dump for GPU_0_bfc\n",
		"Bin (256): \tTotal Chunks: 0, Chunks in use: 0. 0B allocated for chunks. 0B in use in bin. 0B client-requested in use in bin.\n",
		"Bin (1024): \tTotal Chunks: 2, Chunks in use: 2. 2.0KiB allocated for chunks. 2.0KiB in use in bin. 2.0KiB client-requested in use in bin.\n",
		"Bin (1048576): \tTotal Chunks: 1, Chunks in use: 0. 2.00MiB allocated for chunks. 0B in use in bin. 0B client-requested in use in bin.\n",
		"Bin (4194304): \tTotal Chunks: 1, Chunks in use: 1. 4.00MiB allocated for chunks. 4.00MiB in use in bin. 3.00MiB client-requested in use in bin.\n",
		"Bin for 18.00MiB was 16.00MiB, Chunk State: \n",
		"Next region of size 2097152\n",
		"InUse at 7f0000000000 of size 1024 next 1\n",
		"InUse at 7f0000000400 of size 1024 next 2\n",
		"Free  at 7f0000000800 of size 2095104 next 18446744073709551615\n",
		"Next region of size 4194304\n",
		"InUse at 7f0000200000 of size 4194304 next 18446744073709551615\n",
		"     Summary of in-use Chunks by size: \n",
		"2 Chunks of size 1024 totalling 2.0KiB\n",
		"1 Chunks of size 4194304 totalling 4.00MiB\n",
		"Sum Total of in-use chunks: 4.00MiB\n",
		"Total bytes in pool: 6291456 memory_limit_: 67108864 available bytes: 60817408 curr_region_allocation_bytes_: 8388608\n",
	} {
		require.Contains(t, got, want)
	}
	var stats strings.Builder
	require.NoError(t, a.Stats().WriteXLA(&stats))
	require.True(t, strings.HasSuffix(got, "curr_region_allocation_bytes_: 8388608\nStats: \n"+stats.String()))
	require.Equal(t, 21, strings.Count(got, "Bin ("))

	// The free chunks of the request's bin, with their neighbours.
	b.Reset()
	require.NoError(t, a.Dump(&b, 1))
	require.Contains(t, b.String(), "Bin for 256B was 256B, Chunk State: \nNext region")
	b.Reset()
	require.NoError(t, a.Dump(&b, bfcMiB))
	require.Contains(t, b.String(), "Bin for 1.00MiB was 1.00MiB, Chunk State: \n"+
		"  Size: 2.00MiB | Requested Size: 0B | in_use: 0 | bin_num: 12, prev:   Size: 1.0KiB | Requested Size: 1000B | in_use: 1 | bin_num: -1\n")

	// The OOM carries the same dump and the occupancy.
	oom := bfcRequireOOM(t, a, 80*bfcMiB)
	b.Reset()
	require.NoError(t, a.Dump(&b, 80*bfcMiB))
	require.Equal(t, b.String(), oom.Dump)
	require.Equal(t, a.Occupancy(), oom.Occupancy)
	require.Equal(t, "GPU_0_bfc", oom.Allocator)
	require.Equal(t, 80*bfcMiB, oom.Requested)
	require.Equal(t, 80*bfcMiB, oom.Rounded)
	require.Equal(t, a.Stats(), oom.Stats)
	require.Equal(t, 64*bfcMiB-(4*bfcMiB+2048), oom.Free)
	require.Empty(t, oom.Op)
	require.Nil(t, oom.Peak)

	require.ErrorIs(t, a.Dump(bfcFailingWriter{}, 1), errBFCWrite)
}

var errBFCWrite = errors.New("write failed")

type bfcFailingWriter struct{}

func (bfcFailingWriter) Write([]byte) (int, error) { return 0, errBFCWrite }

func TestBFCDumpIsBounded(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: bfcMiB})
	for range 1500 {
		_, err := a.Allocate(256)
		require.NoError(t, err)
	}
	var b bytes.Buffer
	require.NoError(t, a.Dump(&b, 2*bfcMiB))
	got := b.String()
	require.Equal(t, 1000, strings.Count(got, "InUse at ")+strings.Count(got, "Free  at "))
	require.Contains(t, got, "\n... 501 more chunks\n     Summary")
	require.Contains(t, got, "\n1500 Chunks of size 256 totalling 375.0KiB\n")
}

func TestBFCFreeErrors(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 4 * bfcMiB})
	x := bfcMustAlloc(t, a, bfcMiB)
	require.Error(t, a.Free(x+256), "inside a chunk")
	require.Error(t, a.Free(0), "unknown")
	bfcMustFree(t, a, x)
	err := a.Free(x)
	require.ErrorContains(t, err, "not a live allocation")
	_, ok := a.Size(x)
	require.False(t, ok)
	require.Error(t, a.Free(x+bfcMiB), "a free chunk's address")
	require.NoError(t, checkBFC(a))
}

func TestBFCBadSizes(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 4 * bfcMiB, AllowGrowth: true})
	_, err := a.Allocate(-1)
	require.Error(t, err)
	var oom *OOMError
	require.False(t, errors.As(err, &oom))
	for _, n := range []int64{math.MaxInt64, math.MaxInt64 - 254, 1 << 62, 4*bfcMiB + 1} {
		oom := bfcRequireOOM(t, a, n)
		require.Equal(t, n, oom.Requested)
		require.GreaterOrEqual(t, oom.Rounded, n)
		require.Len(t, oom.Occupancy, len("<allocator contains no memory>"))
	}
	require.Equal(t, int64(0), a.Stats().DriverCalls)
	// 0 bytes take a minimum chunk each, at distinct addresses.
	x, y := bfcMustAlloc(t, a, 0), bfcMustAlloc(t, a, 0)
	require.Equal(t, x+256, y)
	size, _ := a.Size(x)
	require.Equal(t, int64(256), size)
	require.Len(t, a.Occupancy(), 100)
}

// bfcBestFit is the oracle for Allocate: the smallest free chunk that holds
// rounded, the lowest address among equals (bins only speed this up).
func bfcBestFit(cs []Chunk, rounded int64) (Chunk, bool) {
	var best Chunk
	found := false
	for _, c := range cs {
		if !c.InUse && c.Size >= rounded && (!found || c.Size < best.Size || c.Size == best.Size && c.Addr < best.Addr) {
			best, found = c, true
		}
	}
	return best, found
}

// bfcRun runs random operations on a, checking each against the oracle.
type bfcRun struct {
	a    *BFC
	live []int64
}

func (r *bfcRun) alloc(size int64) error {
	before := r.a.Chunks()
	rounded := RoundBytes(size)
	want, fits := bfcBestFit(before, rounded)
	fits = fits && rounded > 0
	regions := len(r.a.Regions())
	addr, err := r.a.Allocate(size)
	var oom *OOMError
	switch {
	case size < 0:
		if err == nil || errors.As(err, &oom) {
			return fmt.Errorf("Allocate(%d): %v, want a plain error", size, err)
		}
		return nil
	case err != nil && !errors.As(err, &oom):
		return fmt.Errorf("Allocate(%d): %v", size, err)
	case err != nil && fits:
		return fmt.Errorf("Allocate(%d): OOM while a free chunk of %d fits", size, want.Size)
	case err != nil:
		if oom.Requested != size || oom.Free != r.a.Stats().BytesLimit-r.a.Stats().BytesInUse || len(oom.Occupancy) != 100 && regions > 0 {
			return fmt.Errorf("Allocate(%d): OOM fields %+v", size, oom)
		}
		return nil
	case fits && addr != want.Addr:
		return fmt.Errorf("Allocate(%d) = %#x, want best fit %#x", size, addr, want.Addr)
	case !fits && len(r.a.Regions()) != regions+1:
		return fmt.Errorf("Allocate(%d) = %#x with no fitting chunk and no new region", size, addr)
	}
	got, ok := r.a.Size(addr)
	if !ok || got < rounded {
		return fmt.Errorf("Allocate(%d): chunk size %d", size, got)
	}
	r.live = append(r.live, addr)
	return nil
}

func (r *bfcRun) free(i int) error {
	if len(r.live) == 0 {
		return nil
	}
	i %= len(r.live)
	addr := r.live[i]
	r.live[i] = r.live[len(r.live)-1]
	r.live = r.live[:len(r.live)-1]
	if err := r.a.Free(addr); err != nil {
		return err
	}
	if r.a.Free(addr) == nil {
		return fmt.Errorf("double free of %#x succeeded", addr)
	}
	return nil
}

func TestBFCRandom(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 1))
		opts := BFCOptions{Limit: 256 * bfcMiB, AllowGrowth: seed%2 == 0}
		if seed >= 4 {
			opts.DeviceMemory = 100 * bfcMiB
		}
		a := bfcNew(t, opts)
		r := &bfcRun{a: a}
		for step := range 3000 {
			var err error
			if rng.IntN(2) == 0 {
				err = r.alloc(int64(1) << rng.IntN(27) * int64(1+rng.IntN(3)) / 2)
			} else {
				err = r.free(rng.IntN(1 << 20))
			}
			require.NoError(t, err, "seed %d step %d", seed, step)
			require.NoError(t, checkBFC(a), "seed %d step %d", seed, step)
		}
		for len(r.live) > 0 {
			require.NoError(t, r.free(0))
		}
		require.NoError(t, checkBFC(a))
		require.Zero(t, a.Stats().BytesInUse)
		require.Len(t, a.Chunks(), len(a.Regions()), "all free: one chunk per region")
	}
}

// FuzzBFC runs random operation sequences and checks the invariants and
// the best-fit oracle after each.
func FuzzBFC(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 0x10, 0x20, 0x30, 0x41, 0x55, 0x66, 0x7f, 0x80, 0x91, 0xa2, 0xb3})
	f.Add([]byte{2, 0xff, 0xfe, 0xfd, 0x01, 0x02, 0xf0, 0x0f, 0x33})
	f.Add([]byte{3, 0x13, 0x13, 0x13, 0x13, 0x99, 0x99, 0x99, 0xe0, 0xe1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		// Each step checks everything in O(chunks): keep an input's run short.
		data = data[:min(len(data), 400)]
		mode := data[0]
		opts := BFCOptions{Limit: int64(1+mode>>3) * bfcMiB, AllowGrowth: mode&1 == 0}
		if mode&2 != 0 {
			opts.DeviceMemory = opts.Limit * 3 / 4
		}
		if mode&4 != 0 {
			opts.Limit += int64(mode) * 256 // not a multiple of 2 MiB
		}
		a, err := NewBFC(opts)
		if err != nil {
			return
		}
		if err := checkBFC(a); err != nil {
			t.Fatal(err)
		}
		r := &bfcRun{a: a}
		for i := 1; i < len(data); i++ {
			op := data[i]
			switch op >> 6 {
			case 0: // a power of two up to 64 MiB, plus a little
				err = r.alloc(int64(1)<<min(op&0x1f, 26) + int64(op>>5)*100)
			case 1: // up to 252 KiB
				err = r.alloc(int64(op&0x3f)*4096 + 7)
			case 2:
				err = r.free(int(op & 0x3f))
			default:
				switch op & 3 {
				case 0:
					err = r.alloc(-int64(op))
				case 1:
					err = r.alloc(math.MaxInt64 - int64(op))
				case 2:
					if a.Free(int64(op)) == nil {
						err = fmt.Errorf("free of an unknown address succeeded")
					}
				default:
					var b bytes.Buffer
					err = a.Dump(&b, int64(op)<<10)
					if len(a.Occupancy()) != 100 && len(a.Regions()) > 0 {
						err = fmt.Errorf("occupancy %q", a.Occupancy())
					}
				}
			}
			if err != nil {
				t.Fatalf("op %d (%#x): %v", i, op, err)
			}
			if err := checkBFC(a); err != nil {
				t.Fatalf("op %d (%#x): %v", i, op, err)
			}
		}
	})
}

// The live-address table against a map: random puts, gets and removes on
// addresses that collide in the low bits, across growths.
func TestBFCAddrTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var tab bfcAddrTable
	ref := make(map[int64]int32)
	_, ok := tab.get(256)
	require.False(t, ok)
	_, ok = tab.remove(256)
	require.False(t, ok)
	for i := range 200000 {
		k := int64(1+rng.IntN(5000)) << 8
		switch rng.IntN(3) {
		case 0:
			if _, in := ref[k]; !in {
				tab.put(k, int32(i))
				ref[k] = int32(i)
			}
		case 1:
			v, ok := tab.remove(k)
			w, in := ref[k]
			require.Equal(t, in, ok, "remove %#x", k)
			require.Equal(t, w, v)
			delete(ref, k)
		default:
			v, ok := tab.get(k)
			w, in := ref[k]
			require.Equal(t, in, ok, "get %#x", k)
			require.Equal(t, w, v)
		}
		require.Equal(t, len(ref), tab.n)
	}
	for k, w := range ref {
		v, ok := tab.get(k)
		require.True(t, ok)
		require.Equal(t, w, v)
	}
	for _, k := range []int64{0, -256} {
		_, ok := tab.get(k)
		require.False(t, ok)
		_, ok = tab.remove(k)
		require.False(t, ok)
	}
}

// The allocator may be shared between goroutines (make test-race runs
// this under the race detector).
func TestBFCConcurrent(t *testing.T) {
	a := bfcNew(t, BFCOptions{Limit: 256 * bfcMiB, AllowGrowth: true})
	done := make(chan error)
	for g := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			var live []int64
			for range 2000 {
				if len(live) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(live))
					if err := a.Free(live[i]); err != nil {
						done <- err
						return
					}
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
					continue
				}
				addr, err := a.Allocate(int64(rng.IntN(1 << 20)))
				var oom *OOMError
				if err != nil && !errors.As(err, &oom) {
					done <- err
					return
				}
				if err == nil {
					live = append(live, addr)
				}
				_ = a.Stats()
			}
			for _, addr := range live {
				if err := a.Free(addr); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
	require.NoError(t, checkBFC(a))
	require.Zero(t, a.Stats().BytesInUse)
}
