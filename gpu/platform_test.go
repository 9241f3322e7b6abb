package gpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vaWantRounded is the rounding both virtual-address allocators apply,
// written independently of the code under test.
func vaWantRounded(size int64) int64 {
	if size == 0 {
		return 512
	}
	if size > math.MaxInt64-511 {
		return math.MaxInt64
	}
	return (size + 511) / 512 * 512
}

// vaModel drives an allocator and checks it against a model of its live
// allocations after each operation.
type vaModel struct {
	t     testing.TB
	a     Allocator
	limit int64
	base  int64

	live            map[int64]int64
	sorted          []int64 // the live addresses in order
	inUse           int64
	allocs          int64 // successful allocations
	attempts        int64 // Allocate calls with size >= 0
	frees           int64 // successful frees
	peak, largest   int64
	ops             int
	peakPool, peakR int64

	// check runs the allocator's own invariants after an operation, with
	// the stats before and after it; op is "alloc", "oom" or "free".
	check func(m *vaModel, op string, before, after Stats)
}

func newVAModel(t testing.TB, a Allocator, limit, base int64, check func(*vaModel, string, Stats, Stats)) *vaModel {
	return &vaModel{t: t, a: a, limit: limit, base: base, live: map[int64]int64{}, check: check}
}

func (m *vaModel) alloc(size int64) (int64, error) {
	t := m.t
	before := m.a.Stats()
	addr, err := m.a.Allocate(size)
	if size < 0 {
		require.Error(t, err)
		var oom *OOMError
		require.False(t, errors.As(err, &oom), "a negative size is a plain error")
		require.Equal(t, before, m.a.Stats(), "a negative size changes nothing")
		return 0, err
	}
	m.attempts++
	rounded := vaWantRounded(size)
	if err != nil {
		var oom *OOMError
		require.ErrorAs(t, err, &oom)
		require.Equal(t, m.a.Name(), oom.Allocator)
		require.Equal(t, size, oom.Requested)
		require.Equal(t, rounded, oom.Rounded)
		require.Equal(t, m.limit-m.inUse, oom.Free)
		require.Greater(t, rounded, oom.Free, "an allocation fails only when it does not fit in the limit")
		require.False(t, oom.Fragmented())
		require.Empty(t, oom.Op)
		require.Nil(t, oom.Peak)
		require.Contains(t, oom.Dump, "Driver calls: ")
		require.Len(t, oom.Occupancy, 100)
		require.Equal(t, m.inUse, oom.Stats.BytesInUse)
		m.verify("oom", before)
		return 0, err
	}
	require.LessOrEqual(t, rounded, m.limit-m.inUse, "should have been an OOM")
	require.Zero(t, addr%512, "address %#x not aligned", addr)
	require.GreaterOrEqual(t, addr, m.base)
	// The new allocation must lie between its live neighbours.
	i, found := slices.BinarySearch(m.sorted, addr)
	require.False(t, found, "%#x is live already", addr)
	if i > 0 {
		prev := m.sorted[i-1]
		require.LessOrEqual(t, prev+m.live[prev], addr, "overlaps the live allocation at %#x", prev)
	}
	if i < len(m.sorted) {
		require.LessOrEqual(t, addr+rounded, m.sorted[i], "overlaps the live allocation at %#x", m.sorted[i])
	}
	m.sorted = slices.Insert(m.sorted, i, addr)
	m.live[addr] = rounded
	m.inUse += rounded
	m.allocs++
	m.peak = max(m.peak, m.inUse)
	m.largest = max(m.largest, rounded)
	m.verify("alloc", before)
	return addr, nil
}

func (m *vaModel) free(addr int64) error {
	t := m.t
	before := m.a.Stats()
	err := m.a.Free(addr)
	n, live := m.live[addr]
	if !live {
		require.Error(t, err, "free of %#x, not live", addr)
		require.Equal(t, before, m.a.Stats(), "a bad free changes nothing")
		return err
	}
	require.NoError(t, err)
	delete(m.live, addr)
	i, _ := slices.BinarySearch(m.sorted, addr)
	m.sorted = slices.Delete(m.sorted, i, i+1)
	m.inUse -= n
	m.frees++
	_, ok := m.a.Size(addr)
	require.False(t, ok)
	m.verify("free", before)
	return nil
}

// verify checks the stats every allocator shares, and every 256
// operations the whole set of live allocations.
func (m *vaModel) verify(op string, before Stats) {
	t := m.t
	s := m.a.Stats()
	require.Equal(t, m.inUse, s.BytesInUse)
	require.Equal(t, m.allocs, s.NumAllocs)
	require.Equal(t, m.peak, s.PeakBytesInUse)
	require.Equal(t, m.largest, s.LargestAllocSize)
	require.Equal(t, m.limit, s.BytesLimit)
	require.Equal(t, m.limit-m.inUse, s.LargestFreeBlockBytes)
	require.Equal(t, s.PoolBytes, s.BytesReserved)
	m.peakPool = max(m.peakPool, s.PoolBytes)
	m.peakR = max(m.peakR, s.BytesReserved)
	require.Equal(t, m.peakPool, s.PeakPoolBytes)
	require.Equal(t, m.peakR, s.PeakBytesReserved)
	require.GreaterOrEqual(t, s.PoolBytes, s.BytesInUse)
	require.Zero(t, s.Fragmentation())
	if m.check != nil {
		m.check(m, op, before, s)
	}
	m.ops++
	if m.ops%256 == 0 {
		m.verifyAll()
	}
}

// verifyAll checks every live allocation's size and that none overlap.
func (m *vaModel) verifyAll() {
	t := m.t
	require.Len(t, m.sorted, len(m.live))
	for i, a := range m.sorted {
		got, ok := m.a.Size(a)
		if !ok || got != m.live[a] {
			require.Failf(t, "wrong size", "%#x: Size gives %d, %v; want %d", a, got, ok, m.live[a])
		}
		if i > 0 && m.sorted[i-1]+m.live[m.sorted[i-1]] > a {
			require.Failf(t, "overlap", "%#x overlaps %#x", m.sorted[i-1], a)
		}
	}
}

// randomLive picks a live address, or one that is not live.
func (m *vaModel) randomLive(r *rand.Rand) int64 {
	if len(m.sorted) == 0 || r.IntN(20) == 0 {
		return m.base + r.Int64N(1<<30)
	}
	return m.sorted[r.IntN(len(m.sorted))]
}

// vaRandomSize draws a size: mostly small, some medium, a few large, and
// now and then an odd one (0, negative, huge).
func vaRandomSize(r *rand.Rand, limit int64) int64 {
	switch p := r.IntN(100); {
	case p < 50:
		return r.Int64N(4097)
	case p < 85:
		return r.Int64N(1 << 20)
	case p < 97:
		return r.Int64N(limit/4 + 1)
	case p < 98:
		return -1 - r.Int64N(1000)
	case p < 99:
		return math.MaxInt64 - r.Int64N(1000)
	default:
		return 0
	}
}

// vaRun runs n random operations.
func (m *vaModel) run(r *rand.Rand, n int) {
	for range n {
		if r.IntN(100) < 45 {
			_ = m.free(m.randomLive(r))
		} else {
			_, _ = m.alloc(vaRandomSize(r, m.limit))
		}
	}
	m.verifyAll()
}

// platformCheck is the platform allocator's own invariant: nothing is
// cached and every call is a driver call.
func platformCheck(alloc, free time.Duration) func(*vaModel, string, Stats, Stats) {
	return func(m *vaModel, op string, before, after Stats) {
		t := m.t
		require.Equal(t, after.BytesInUse, after.PoolBytes)
		require.Equal(t, after.BytesInUse, after.BytesReserved)
		require.Equal(t, m.attempts+m.frees, after.DriverCalls)
		require.Equal(t, time.Duration(m.attempts)*alloc+time.Duration(m.frees)*free, after.DriverTime)
		require.Equal(t, before.DriverCalls+1, after.DriverCalls, "%s is one driver call", op)
	}
}

func newTestPlatform(t testing.TB, limit int64) *PlatformAllocator {
	a, err := NewPlatform(PlatformOptions{Limit: limit})
	require.NoError(t, err)
	return a
}

func TestPlatformOptions(t *testing.T) {
	a := newTestPlatform(t, 1<<20)
	require.Equal(t, "GPU_0_platform", a.Name())
	s := a.Stats()
	require.Equal(t, Stats{BytesLimit: 1 << 20, LargestFreeBlockBytes: 1 << 20}, s)
	addr, err := a.Allocate(1)
	require.NoError(t, err)
	require.Equal(t, DefaultVirtualBase, addr)
	require.Equal(t, DefaultAllocCost, a.Stats().DriverTime)

	b, err := NewPlatform(PlatformOptions{Name: "GPU_3_platform", Limit: 1 << 20, Base: 0x1000})
	require.NoError(t, err)
	require.Equal(t, "GPU_3_platform", b.Name())
	addr, err = b.Allocate(1)
	require.NoError(t, err)
	require.Equal(t, int64(0x1000), addr)

	for _, bad := range []PlatformOptions{
		{},
		{Limit: -1},
		{Limit: 1<<62 + 1},
		{Limit: 1 << 20, Base: -512},
		{Limit: 1 << 20, Base: 100},
		{Limit: 1 << 20, Base: math.MaxInt64 &^ 511},
		{Limit: 1 << 20, AllocCost: -1},
		{Limit: 1 << 20, FreeCost: -time.Second},
	} {
		_, err := NewPlatform(bad)
		require.Error(t, err, "%+v", bad)
	}
}

func TestPlatformRounding(t *testing.T) {
	a := newTestPlatform(t, 1<<30)
	for _, c := range []struct{ size, want int64 }{
		{0, 512}, {1, 512}, {511, 512}, {512, 512}, {513, 1024}, {1000, 1024},
		{4096, 4096}, {1<<20 + 1, 1<<20 + 512}, {123456789, 123457024},
	} {
		addr, err := a.Allocate(c.size)
		require.NoError(t, err)
		got, ok := a.Size(addr)
		require.True(t, ok)
		require.Equal(t, c.want, got, "size %d", c.size)
		require.Zero(t, addr%512)
	}
	_, ok := a.Size(12345)
	require.False(t, ok)
}

func TestPlatformStatsSequence(t *testing.T) {
	a := newTestPlatform(t, 1<<20)
	x, err := a.Allocate(1000) // 1024
	require.NoError(t, err)
	y, err := a.Allocate(100000) // 100352
	require.NoError(t, err)
	z, err := a.Allocate(0) // 512
	require.NoError(t, err)
	require.NoError(t, a.Free(y))
	w, err := a.Allocate(2048)
	require.NoError(t, err)
	require.NoError(t, a.Free(x))

	require.Equal(t, Stats{
		NumAllocs:             4,
		BytesInUse:            512 + 2048,
		PeakBytesInUse:        1024 + 100352 + 512,
		LargestAllocSize:      100352,
		BytesLimit:            1 << 20,
		BytesReserved:         512 + 2048,
		PeakBytesReserved:     1024 + 100352 + 512,
		LargestFreeBlockBytes: 1<<20 - 512 - 2048,
		PoolBytes:             512 + 2048,
		PeakPoolBytes:         1024 + 100352 + 512,
		DriverCalls:           6,
		DriverTime:            4*DefaultAllocCost + 2*DefaultFreeCost,
	}, a.Stats())
	// Addresses are not reused: w lies above everything handed out before.
	require.Greater(t, w, z)
	require.Greater(t, w, y)
}

func TestPlatformOOM(t *testing.T) {
	const limit = 1 << 20
	a := newTestPlatform(t, limit)
	_, err := a.Allocate(600 << 10)
	require.NoError(t, err)
	_, err = a.Allocate(300<<10 + 1)
	require.NoError(t, err)
	used := int64(600<<10 + 300<<10 + 512)

	_, err = a.Allocate(200 << 10)
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.Equal(t, "GPU_0_platform", oom.Allocator)
	require.Equal(t, int64(200<<10), oom.Requested)
	require.Equal(t, int64(200<<10), oom.Rounded)
	require.Equal(t, limit-used, oom.Free)
	require.False(t, oom.Fragmented())
	require.Empty(t, oom.Op)
	require.Nil(t, oom.Peak)
	require.Equal(t, used, oom.Stats.BytesInUse)
	require.Equal(t, int64(3), oom.Stats.DriverCalls, "the failed cuMemAlloc is a driver call")
	require.Equal(t, int64(2), oom.Stats.NumAllocs)
	require.Contains(t, oom.Dump, "Platform allocator GPU_0_platform: 2 allocations live")
	require.Equal(t, strings.Repeat("*", 88)+strings.Repeat("_", 12), oom.Occupancy)
	require.Contains(t, err.Error(), "GPU_0_platform")

	// What is left can still be had, to the last byte.
	addr, err := a.Allocate(limit - used)
	require.NoError(t, err)
	_, err = a.Allocate(0)
	require.ErrorAs(t, err, &oom)
	require.Equal(t, int64(512), oom.Rounded)
	require.Zero(t, oom.Free)
	require.Equal(t, strings.Repeat("*", 100), oom.Occupancy)
	require.NoError(t, a.Free(addr))

	// Huge requests are OOMs, not overflows.
	for _, size := range []int64{limit + 1, 1 << 62, math.MaxInt64 - 511, math.MaxInt64 - 510, math.MaxInt64} {
		_, err = a.Allocate(size)
		require.ErrorAs(t, err, &oom, "size %d", size)
		require.Equal(t, vaWantRounded(size), oom.Rounded)
		require.False(t, oom.Fragmented())
	}

	// A negative size is a plain error, and not a driver call.
	calls := a.Stats().DriverCalls
	_, err = a.Allocate(-1)
	require.Error(t, err)
	require.False(t, errors.As(err, &oom))
	require.Equal(t, calls, a.Stats().DriverCalls)
}

func TestPlatformDriverCalls(t *testing.T) {
	a, err := NewPlatform(PlatformOptions{Limit: 1 << 20, AllocCost: 3 * time.Millisecond, FreeCost: time.Millisecond})
	require.NoError(t, err)
	var addrs []int64
	for i := range 5 {
		addr, err := a.Allocate(int64(i) * 1000)
		require.NoError(t, err)
		addrs = append(addrs, addr)
		s := a.Stats()
		require.Equal(t, int64(i+1), s.DriverCalls)
		require.Equal(t, time.Duration(i+1)*3*time.Millisecond, s.DriverTime)
	}
	_, err = a.Allocate(2 << 20) // fails, but the driver was asked
	require.Error(t, err)
	require.Equal(t, int64(6), a.Stats().DriverCalls)
	require.Equal(t, 18*time.Millisecond, a.Stats().DriverTime)
	for i, addr := range addrs {
		require.NoError(t, a.Free(addr))
		s := a.Stats()
		require.Equal(t, int64(7+i), s.DriverCalls)
		require.Equal(t, 18*time.Millisecond+time.Duration(i+1)*time.Millisecond, s.DriverTime)
	}
	require.Zero(t, a.Stats().BytesInUse)
	require.Zero(t, a.Stats().BytesReserved)
}

func TestPlatformBadFree(t *testing.T) {
	a := newTestPlatform(t, 1<<20)
	addr, err := a.Allocate(1024)
	require.NoError(t, err)
	before := a.Stats()
	for _, bad := range []int64{0, -1, addr + 512, addr - 512, math.MaxInt64, math.MinInt64} {
		require.Error(t, a.Free(bad), "%#x", bad)
	}
	require.Equal(t, before, a.Stats())
	require.NoError(t, a.Free(addr))
	before = a.Stats()
	err = a.Free(addr)
	require.ErrorContains(t, err, "not a live allocation")
	require.Equal(t, before, a.Stats())
}

func TestPlatformRandomNoOverlap(t *testing.T) {
	const limit = 64 << 20
	alloc, free := 7*time.Microsecond, 3*time.Microsecond
	a, err := NewPlatform(PlatformOptions{Limit: limit, AllocCost: alloc, FreeCost: free})
	require.NoError(t, err)
	m := newVAModel(t, a, limit, DefaultVirtualBase, platformCheck(alloc, free))
	m.run(rand.New(rand.NewPCG(1, 2)), 10000)
	require.Positive(t, m.allocs)
	require.Positive(t, m.frees)
	require.Greater(t, m.attempts, m.allocs, "the sequence should hit the limit")
}

func TestPlatformDumpAndOccupancy(t *testing.T) {
	a, err := NewPlatform(PlatformOptions{Name: "GPU_1_platform", Limit: 100 << 20, AllocCost: time.Millisecond, FreeCost: time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("_", 100), a.Occupancy())
	for range 3 {
		_, err := a.Allocate(1 << 20)
		require.NoError(t, err)
	}
	x, err := a.Allocate(10<<20 - 100) // 10 MiB
	require.NoError(t, err)
	y, err := a.Allocate(1)
	require.NoError(t, err)
	require.NoError(t, a.Free(y))
	_, err = a.Allocate(1000)
	require.NoError(t, err)

	var b strings.Builder
	require.NoError(t, a.Dump(&b, 1<<30))
	d := b.String()
	for _, want := range []string{
		"Platform allocator GPU_1_platform: 5 allocations live, 13.00MiB in use of 100.00MiB\n",
		"1 Chunks of size 1024 totalling 1.0KiB\n3 Chunks of size 1048576 totalling 3.00MiB\n1 Chunks of size 10485760 totalling 10.00MiB\n",
		"Driver calls: 7 costing 7ms\n",
		"Limit:                       104857600\n",
		"NumAllocs:                           6\n",
		"LargestFreeBlock:             91225088\n",
	} {
		require.Contains(t, d, want)
	}
	require.True(t, strings.HasPrefix(d, "Platform allocator GPU_1_platform"))
	require.True(t, strings.HasSuffix(d, "LargestFreeBlock:             91225088\n"))

	// 13 MiB + 1 KiB of 100 MiB: 14 cells, rounded up so that use shows.
	require.Equal(t, strings.Repeat("*", 14)+strings.Repeat("_", 86), a.Occupancy())
	require.NoError(t, a.Free(x))
	require.Equal(t, strings.Repeat("*", 4)+strings.Repeat("_", 96), a.Occupancy())
}

// TestPlatformAddressSpaceWraps runs the address space out: the bump pointer carries on
// in the gaps between live allocations and never overlaps one.
func TestPlatformAddressSpaceWraps(t *testing.T) {
	s := newVASpace(0x10000)
	s.end, s.ceiling = s.base+8*512, s.base+8*512
	var addrs []int64
	for range 4 {
		a, ok := s.alloc(1024)
		require.True(t, ok)
		addrs = append(addrs, a)
	}
	_, ok := s.alloc(512)
	require.False(t, ok, "the space is full")
	_, ok = s.free(addrs[1])
	require.True(t, ok)
	_, ok = s.free(addrs[3])
	require.True(t, ok)
	a, ok := s.alloc(512)
	require.True(t, ok)
	require.Equal(t, addrs[1], a, "first gap from the base once the end is reached")
	a, ok = s.alloc(1024)
	require.True(t, ok)
	require.Equal(t, addrs[3], a, "the gap after the pointer is too small; the next one fits")
	a, ok = s.alloc(512)
	require.True(t, ok)
	require.Equal(t, addrs[1]+512, a)
	_, ok = s.alloc(512)
	require.False(t, ok)

	// A platform allocator over a tiny address space still never
	// overlaps; an allocation the space cannot place is an OOM that
	// reports fragmentation.
	p := newTestPlatform(t, 1<<20)
	p.space.end, p.space.ceiling = p.space.base+64*512, p.space.base+64*512
	live := map[int64]int64{}
	r := rand.New(rand.NewPCG(3, 4))
	var fragmented int
	for range 5000 {
		if len(live) > 0 && r.IntN(2) == 0 {
			for addr := range live {
				require.NoError(t, p.Free(addr))
				delete(live, addr)
				break
			}
			continue
		}
		n := int64(1+r.IntN(4)) * 512
		addr, err := p.Allocate(n)
		if err != nil {
			var oom *OOMError
			require.ErrorAs(t, err, &oom)
			require.True(t, oom.Fragmented())
			fragmented++
			continue
		}
		require.GreaterOrEqual(t, addr, p.space.base)
		require.LessOrEqual(t, addr+n, p.space.end)
		for a, m := range live {
			require.True(t, addr+n <= a || a+m <= addr)
		}
		live[addr] = n
	}
	require.Positive(t, fragmented)
}

// vaFuzzOps decodes fuzz input into operations: 3 bytes each, the first
// choosing the operation, the other two its argument.
func vaFuzzOps(m *vaModel, data []byte) {
	data = data[:min(len(data), 3*4096)] // at most 4096 operations
	// The live addresses in allocation order, for frees.
	var order []int64
	for len(data) >= 3 {
		op, arg := data[0], int64(data[1])<<8|int64(data[2])
		data = data[3:]
		switch op % 8 {
		case 0, 1, 2:
			addr, err := m.alloc(arg * 97)
			if err == nil {
				order = append(order, addr)
			}
		case 3:
			addr, err := m.alloc(arg << 12)
			if err == nil {
				order = append(order, addr)
			}
		case 4, 5:
			if len(order) > 0 {
				i := int(arg) % len(order)
				_ = m.free(order[i])
				order = slices.Delete(order, i, i+1)
			}
		case 6:
			// Frees of addresses that may or may not be live.
			_ = m.free(m.base + arg*512)
		default:
			switch arg % 4 {
			case 0:
				_, _ = m.alloc(-arg - 1)
			case 1:
				_, _ = m.alloc(math.MaxInt64 - arg)
			case 2:
				_, _ = m.alloc(m.limit - m.inUse + arg%3 - 1)
			default:
				if len(order) > 0 {
					_ = m.free(order[0]) // may be a double free
				}
			}
		}
	}
	m.verifyAll()
}

func FuzzPlatform(f *testing.F) {
	f.Add(uint32(1<<20), []byte{0, 1, 2, 3, 0, 10, 4, 0, 0, 7, 0, 2, 6, 0, 0})
	f.Add(uint32(4096), []byte{0, 0, 0, 0, 0, 5, 7, 0, 0, 7, 0, 1, 7, 0, 2, 4, 0, 1, 7, 0, 3, 7, 0, 3})
	f.Add(uint32(1<<30), []byte{3, 255, 255, 3, 255, 255, 5, 0, 0, 3, 1, 0, 2, 0, 9})
	f.Fuzz(func(t *testing.T, limit uint32, data []byte) {
		if limit == 0 {
			limit = 1
		}
		alloc, free := 2*time.Microsecond, time.Microsecond
		a, err := NewPlatform(PlatformOptions{Limit: int64(limit), AllocCost: alloc, FreeCost: free})
		require.NoError(t, err)
		m := newVAModel(t, a, int64(limit), DefaultVirtualBase, platformCheck(alloc, free))
		vaFuzzOps(m, data)
		require.Len(t, a.Occupancy(), 100)
		var b strings.Builder
		require.NoError(t, a.Dump(&b, 0))
	})
}
