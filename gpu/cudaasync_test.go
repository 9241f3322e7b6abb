package gpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testPage = 2 << 20

func pageUp(n int64) int64 { return (n + testPage - 1) / testPage * testPage }

// cudaAsyncCheck is the cuda_async allocator's own invariant: the pool
// grows by whole pages only when its cached bytes fall short, and after a
// free keeps no more than the threshold plus less than a page cached.
func cudaAsyncCheck(threshold int64, cost time.Duration) func(*vaModel, string, Stats, Stats) {
	return func(m *vaModel, op string, before, after Stats) {
		t := m.t
		require.Zero(t, after.PoolBytes%testPage, "the pool is whole pages")
		require.LessOrEqual(t, after.PoolBytes, pageUp(m.limit))
		require.Equal(t, time.Duration(after.DriverCalls)*cost, after.DriverTime)
		switch op {
		case "oom":
			require.Equal(t, before, after, "a failed allocation changes nothing")
		case "alloc":
			rounded := after.BytesInUse - before.BytesInUse
			if before.PoolBytes-before.BytesInUse >= rounded {
				require.Equal(t, before.PoolBytes, after.PoolBytes, "served from the cached bytes")
				require.Equal(t, before.DriverCalls, after.DriverCalls)
			} else {
				require.Equal(t, pageUp(after.BytesInUse), after.PoolBytes, "grown by the shortfall in whole pages")
				require.Equal(t, before.DriverCalls+1, after.DriverCalls)
			}
		case "free":
			cached := before.PoolBytes - after.BytesInUse
			if release := (cached - threshold) / testPage * testPage; cached > threshold && release > 0 {
				require.Equal(t, before.PoolBytes-release, after.PoolBytes)
				require.Equal(t, before.DriverCalls+1, after.DriverCalls)
			} else {
				require.Equal(t, before.PoolBytes, after.PoolBytes)
				require.Equal(t, before.DriverCalls, after.DriverCalls)
			}
			left := after.PoolBytes - after.BytesInUse
			require.True(t, left <= threshold || left-threshold < testPage, "cached %d above threshold %d", left, threshold)
		}
	}
}

func newTestCudaAsync(t testing.TB, opts CudaAsyncOptions) *CudaAsyncAllocator {
	a, err := NewCudaAsync(opts)
	require.NoError(t, err)
	return a
}

func TestCudaAsyncOptions(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30})
	require.Equal(t, "GPU_0_cuda_async", a.Name())
	require.Equal(t, Stats{BytesLimit: 1 << 30, LargestFreeBlockBytes: 1 << 30}, a.Stats())
	addr, err := a.Allocate(1)
	require.NoError(t, err)
	require.Equal(t, DefaultVirtualBase, addr)
	require.Equal(t, DefaultPoolCost, a.Stats().DriverTime)

	b := newTestCudaAsync(t, CudaAsyncOptions{Name: "GPU_2_cuda_async", Limit: 1 << 30, Preallocate: true, ReleaseThreshold: 5, Base: 1 << 20})
	require.Equal(t, "GPU_2_cuda_async", b.Name())
	require.Equal(t, int64(1<<30), b.ReleaseThreshold(), "preallocation keeps the whole pool")
	addr, err = b.Allocate(1)
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), addr)

	for _, bad := range []CudaAsyncOptions{
		{},
		{Limit: -5},
		{Limit: 1<<62 + 1},
		{Limit: 1 << 30, Base: 513},
		{Limit: 1 << 30, Base: -1024},
		{Limit: 1 << 30, ReleaseThreshold: -1},
		{Limit: 1 << 30, DriverCost: -time.Nanosecond},
	} {
		_, err := NewCudaAsync(bad)
		require.Error(t, err, "%+v", bad)
	}
}

func TestCudaAsyncRounding(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30, ReleaseThreshold: 1 << 30})
	for _, c := range []struct{ size, want int64 }{
		{0, 512}, {1, 512}, {512, 512}, {513, 1024}, {3 << 20, 3 << 20}, {3<<20 + 1, 3<<20 + 512},
	} {
		addr, err := a.Allocate(c.size)
		require.NoError(t, err)
		got, ok := a.Size(addr)
		require.True(t, ok)
		require.Equal(t, c.want, got, "size %d", c.size)
		require.Zero(t, addr%512)
	}
	require.Equal(t, int64(512+512+512+1024+3<<20+3<<20+512), a.Stats().BytesInUse)
}

func TestCudaAsyncGrowth(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30, DriverCost: time.Millisecond})
	_, err := a.Allocate(1)
	require.NoError(t, err)
	s := a.Stats()
	require.Equal(t, int64(testPage), s.PoolBytes, "512 bytes take a whole page")
	require.Equal(t, int64(1), s.DriverCalls)

	_, err = a.Allocate(1 << 20) // fits in the cached 2 MiB - 512
	require.NoError(t, err)
	s = a.Stats()
	require.Equal(t, int64(testPage), s.PoolBytes)
	require.Equal(t, int64(1), s.DriverCalls)

	// Cached: 1 MiB - 512; shortfall 2 MiB + 512, rounded up to 4 MiB.
	_, err = a.Allocate(3 << 20)
	require.NoError(t, err)
	s = a.Stats()
	require.Equal(t, int64(6<<20), s.PoolBytes)
	require.Equal(t, int64(6<<20), s.BytesReserved)
	require.Equal(t, int64(2), s.DriverCalls)
	require.Equal(t, 2*time.Millisecond, s.DriverTime)
	require.Equal(t, int64(512+1<<20+3<<20), s.BytesInUse)
}

func TestCudaAsyncShrinksWithoutThreshold(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30})
	var addrs []int64
	for range 10 {
		addr, err := a.Allocate(5 << 20)
		require.NoError(t, err)
		addrs = append(addrs, addr)
	}
	require.Equal(t, int64(50<<20), a.Stats().PoolBytes)
	calls := a.Stats().DriverCalls
	for i, addr := range addrs[:9] {
		require.NoError(t, a.Free(addr))
		s := a.Stats()
		require.Equal(t, pageUp(s.BytesInUse), s.PoolBytes, "after free %d", i)
	}
	require.Equal(t, int64(6<<20), a.Stats().PoolBytes, "5 MiB in use hold three pages")
	require.Equal(t, calls+9, a.Stats().DriverCalls, "each free released 5 MiB (2 or 3 pages)")
	require.NoError(t, a.Free(addrs[9]))
	s := a.Stats()
	require.Zero(t, s.PoolBytes)
	require.Zero(t, s.BytesReserved)
	require.Equal(t, int64(50<<20), s.PeakPoolBytes)
	require.Equal(t, int64(50<<20), s.PeakBytesReserved)
	require.Equal(t, int64(50<<20), s.PeakBytesInUse)

	// Trim has nothing left to do.
	a.Trim()
	require.Equal(t, s, a.Stats())
}

func TestCudaAsyncThresholdKeeps64MiB(t *testing.T) {
	const threshold = 64 << 20
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30, ReleaseThreshold: threshold})
	var addrs []int64
	for range 20 {
		addr, err := a.Allocate(10 << 20)
		require.NoError(t, err)
		addrs = append(addrs, addr)
	}
	require.Equal(t, int64(200<<20), a.Stats().PoolBytes)
	for _, addr := range addrs {
		require.NoError(t, a.Free(addr))
	}
	s := a.Stats()
	require.Zero(t, s.BytesInUse)
	require.Equal(t, int64(threshold), s.PoolBytes, "the pool keeps the threshold cached")
	require.Equal(t, int64(threshold), s.BytesReserved)
	a.Trim()
	require.Equal(t, s, a.Stats())

	// 60 MiB come from the cache without a driver call.
	calls := s.DriverCalls
	for range 6 {
		_, err := a.Allocate(10 << 20)
		require.NoError(t, err)
	}
	require.Equal(t, calls, a.Stats().DriverCalls)
	require.Equal(t, int64(threshold), a.Stats().PoolBytes)
}

func TestCudaAsyncPreallocate(t *testing.T) {
	const limit = 1000<<20 + 1 // not a whole number of pages
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: limit, Preallocate: true, DriverCost: time.Millisecond})
	s := a.Stats()
	require.Equal(t, Stats{
		BytesLimit:            1002 << 20,
		BytesReserved:         1002 << 20,
		PeakBytesReserved:     1002 << 20,
		LargestFreeBlockBytes: 1002 << 20,
		PoolBytes:             1002 << 20,
		PeakPoolBytes:         1002 << 20,
		DriverCalls:           1,
		DriverTime:            time.Millisecond,
	}, s)
	require.Equal(t, strings.Repeat("_", 100), a.Occupancy())

	r := rand.New(rand.NewPCG(5, 6))
	live := map[int64]bool{}
	for range 2000 {
		if len(live) > 0 && r.IntN(2) == 0 {
			for addr := range live {
				require.NoError(t, a.Free(addr))
				delete(live, addr)
				break
			}
		} else if addr, err := a.Allocate(r.Int64N(100 << 20)); err == nil {
			live[addr] = true
		}
		require.Equal(t, int64(1002<<20), a.Stats().PoolBytes, "the pool never shrinks or grows")
	}
	for addr := range live {
		require.NoError(t, a.Free(addr))
	}
	a.Trim()
	s = a.Stats()
	require.Equal(t, int64(1002<<20), s.PoolBytes)
	require.Equal(t, int64(1), s.DriverCalls, "a preallocated pool makes no further driver calls")

	// The whole (rounded) limit can be had, and no more.
	addr, err := a.Allocate(1002 << 20)
	require.NoError(t, err)
	_, err = a.Allocate(0)
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.Zero(t, oom.Free)
	require.False(t, oom.Fragmented())
	require.NoError(t, a.Free(addr))
}

func TestCudaAsyncOOM(t *testing.T) {
	const limit = 10<<20 + 1000 // rounded up to 12 MiB, whole pages
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: limit, DriverCost: time.Millisecond})
	require.Equal(t, int64(12<<20), a.Stats().BytesLimit)
	x, err := a.Allocate(6 << 20)
	require.NoError(t, err)
	_, err = a.Allocate(3 << 20)
	require.NoError(t, err)
	require.Equal(t, int64(10<<20), a.Stats().PoolBytes)
	calls := a.Stats().DriverCalls

	_, err = a.Allocate(3<<20 + 1)
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.Equal(t, "GPU_0_cuda_async", oom.Allocator)
	require.Equal(t, int64(3<<20+1), oom.Requested)
	require.Equal(t, int64(3<<20+512), oom.Rounded)
	require.Equal(t, int64(3<<20), oom.Free)
	require.False(t, oom.Fragmented())
	require.Empty(t, oom.Op)
	require.Nil(t, oom.Peak)
	require.Equal(t, int64(9<<20), oom.Stats.BytesInUse)
	require.Equal(t, calls, oom.Stats.DriverCalls, "a failed allocation is no driver call")
	require.Contains(t, oom.Dump, "cuda_async pool GPU_0_cuda_async: pool 10.00MiB (limit 12.00MiB, release threshold 0B), in use 9.00MiB in 2 allocations\n")
	// 9 of 12 MiB in use: 75 cells; 10 of 12 MiB held: 84 cells.
	require.Equal(t, strings.Repeat("*", 75)+strings.Repeat("_", 9)+strings.Repeat(".", 16), oom.Occupancy)
	require.Contains(t, err.Error(), "GPU_0_cuda_async")

	// The rest of the limit can be had, to the last byte.
	_, err = a.Allocate(3 << 20)
	require.NoError(t, err)
	require.Equal(t, int64(12<<20), a.Stats().PoolBytes)
	_, err = a.Allocate(0)
	require.ErrorAs(t, err, &oom)
	require.Zero(t, oom.Free)
	require.Equal(t, strings.Repeat("*", 100), oom.Occupancy)
	require.NoError(t, a.Free(x))

	for _, size := range []int64{limit + 1, 1 << 40, 1 << 62, math.MaxInt64 - 511, math.MaxInt64} {
		_, err = a.Allocate(size)
		require.ErrorAs(t, err, &oom, "size %d", size)
		require.Equal(t, vaWantRounded(size), oom.Rounded)
		require.False(t, oom.Fragmented())
	}
	_, err = a.Allocate(-1 << 40)
	require.Error(t, err)
	require.False(t, errors.As(err, &oom))
}

func TestCudaAsyncDriverCalls(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30, DriverCost: 7 * time.Millisecond})
	x, err := a.Allocate(3 << 20) // grow: 1 call
	require.NoError(t, err)
	y, err := a.Allocate(512 << 10) // cached: no call
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Stats().DriverCalls)
	require.NoError(t, a.Free(y)) // 512 KiB + 512 KiB cached: less than a page, no call
	require.Equal(t, int64(1), a.Stats().DriverCalls)
	require.NoError(t, a.Free(x)) // 4 MiB cached: trimmed, 1 call
	s := a.Stats()
	require.Equal(t, int64(2), s.DriverCalls)
	require.Equal(t, 14*time.Millisecond, s.DriverTime)
	require.Zero(t, s.PoolBytes)
}

func TestCudaAsyncBadFree(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 1 << 30})
	addr, err := a.Allocate(1024)
	require.NoError(t, err)
	before := a.Stats()
	for _, bad := range []int64{0, -1, addr + 512, addr + 1, math.MaxInt64, math.MinInt64} {
		require.Error(t, a.Free(bad), "%#x", bad)
	}
	require.Equal(t, before, a.Stats())
	require.NoError(t, a.Free(addr))
	before = a.Stats()
	require.ErrorContains(t, a.Free(addr), "not a live allocation")
	require.Equal(t, before, a.Stats())
}

func TestCudaAsyncRandomNoOverlap(t *testing.T) {
	const limit = 64<<20 + 12345
	for i, opts := range []CudaAsyncOptions{
		{Limit: limit, DriverCost: time.Microsecond},
		{Limit: limit, ReleaseThreshold: 8 << 20, DriverCost: time.Microsecond},
		{Limit: limit, ReleaseThreshold: 3<<20 + 512, DriverCost: time.Microsecond},
		{Limit: limit, Preallocate: true, DriverCost: time.Microsecond},
	} {
		a := newTestCudaAsync(t, opts)
		m := newVAModel(t, a, pageUp(limit), DefaultVirtualBase, cudaAsyncCheck(a.ReleaseThreshold(), time.Microsecond))
		m.peakPool, m.peakR = a.Stats().PeakPoolBytes, a.Stats().PeakBytesReserved
		m.run(rand.New(rand.NewPCG(uint64(i), 7)), 10000)
		require.Positive(t, m.frees)
		require.Greater(t, m.attempts, m.allocs, "the sequence should hit the limit")
	}
}

func TestCudaAsyncDumpAndOccupancy(t *testing.T) {
	a := newTestCudaAsync(t, CudaAsyncOptions{Limit: 100 << 20, ReleaseThreshold: 64 << 20, DriverCost: time.Millisecond})
	require.Equal(t, strings.Repeat(".", 100), a.Occupancy())
	x, err := a.Allocate(30 << 20)
	require.NoError(t, err)
	y, err := a.Allocate(20 << 20)
	require.NoError(t, err)
	_, err = a.Allocate(1000)
	require.NoError(t, err)
	require.NoError(t, a.Free(y))

	var b strings.Builder
	require.NoError(t, a.Dump(&b, 1<<30))
	d := b.String()
	for _, want := range []string{
		"cuda_async pool GPU_0_cuda_async: pool 52.00MiB (limit 100.00MiB, release threshold 64.00MiB), in use 30.00MiB in 2 allocations\n",
		"1 Chunks of size 1024 totalling 1.0KiB\n1 Chunks of size 31457280 totalling 30.00MiB\n",
		"Driver calls: 3 costing 3ms\n",
		"Limit:                       104857600\n",
		"Reserved:                     54525952\n",
		"NumAllocs:                           3\n",
	} {
		require.Contains(t, d, want)
	}
	require.True(t, strings.HasPrefix(d, "cuda_async pool "))

	// 30 MiB + 1 KiB in use (31 cells), 52 MiB held (52 cells).
	require.Equal(t, strings.Repeat("*", 31)+strings.Repeat("_", 21)+strings.Repeat(".", 48), a.Occupancy())
	require.NoError(t, a.Free(x))
	require.Equal(t, "*"+strings.Repeat("_", 51)+strings.Repeat(".", 48), a.Occupancy())
}

func FuzzCudaAsync(f *testing.F) {
	f.Add(uint32(8<<20), uint32(0), false, []byte{0, 1, 2, 3, 0, 10, 4, 0, 0, 7, 0, 2, 6, 0, 0})
	f.Add(uint32(3<<20+7), uint32(1<<20), false, []byte{3, 0, 255, 3, 1, 0, 4, 0, 0, 7, 0, 1, 7, 0, 2, 5, 0, 0, 7, 0, 3})
	f.Add(uint32(1<<30), uint32(0), true, []byte{3, 255, 255, 3, 255, 255, 5, 0, 0, 3, 1, 0, 2, 0, 9, 7, 0, 2})
	f.Fuzz(func(t *testing.T, limit, threshold uint32, prealloc bool, data []byte) {
		if limit == 0 {
			limit = 1
		}
		cost := 3 * time.Microsecond
		a := newTestCudaAsync(t, CudaAsyncOptions{Limit: int64(limit), ReleaseThreshold: int64(threshold), Preallocate: prealloc, DriverCost: cost})
		if prealloc {
			require.Equal(t, pageUp(int64(limit)), a.Stats().PoolBytes)
		}
		m := newVAModel(t, a, pageUp(int64(limit)), DefaultVirtualBase, cudaAsyncCheck(a.ReleaseThreshold(), cost))
		m.peakPool, m.peakR = a.Stats().PeakPoolBytes, a.Stats().PeakBytesReserved
		vaFuzzOps(m, data)
		a.Trim()
		s := a.Stats()
		left := s.PoolBytes - s.BytesInUse
		require.True(t, left <= a.ReleaseThreshold() || left-a.ReleaseThreshold() < testPage)
		require.Len(t, a.Occupancy(), 100)
		var b strings.Builder
		require.NoError(t, a.Dump(&b, 0))
	})
}
