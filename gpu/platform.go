package gpu

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hlomem/hlomem/assign"
)

// Modelled costs of the driver calls behind the platform allocator. They
// are modelling figures of the right order for cuMemAlloc and cuMemFree
// on a recent GPU, not measurements; set PlatformOptions.AllocCost and
// FreeCost to model another device or driver.
const (
	DefaultAllocCost = 10 * time.Microsecond
	DefaultFreeCost  = 5 * time.Microsecond
)

// DefaultVirtualBase is the first device address the platform and
// cuda_async allocators hand out unless told otherwise.
const DefaultVirtualBase int64 = 0x7f0000000000

// vaAlign is the alignment and granularity of the driver's allocations
// (cudaMalloc hands out 512-byte aligned blocks), and so of every size and
// address the platform and cuda_async allocators hand out.
const vaAlign = 512

// vaMaxLimit is the largest limit the virtual-address allocators accept
// (4 EiB), so that sizes, rounding and addresses stay well inside int64.
const vaMaxLimit int64 = 1 << 62

// vaEnd is the end of the simulated virtual address space: the largest
// int64 rounded down to vaAlign.
const vaEnd int64 = math.MaxInt64 &^ (vaAlign - 1)

// vaRoundUp rounds n (>= 0) up to a multiple of unit (a power of two), or
// returns math.MaxInt64 when that does not fit in an int64: such a size
// can never be served, and the saturated value keeps comparisons right.
func vaRoundUp(n, unit int64) int64 {
	if n > math.MaxInt64-(unit-1) {
		return math.MaxInt64
	}
	return (n + unit - 1) &^ (unit - 1)
}

// vaRounded is the bytes an allocation of size (>= 0) holds: size rounded
// up to 512, and 512 for 0 bytes so that it has an address of its own.
func vaRounded(size int64) int64 {
	return vaRoundUp(max(size, 1), vaAlign)
}

// vaSpace hands out virtual addresses: a bump pointer over [base, end),
// each allocation a multiple of vaAlign, addresses never reused while the
// space lasts. When the pointer reaches the end of the space (which takes
// about 2^63 bytes of allocations) it carries on in the gaps between the
// live allocations, so an address is never handed out twice while live.
type vaSpace struct {
	base, end int64
	// next is the bump pointer; [next, ceiling) holds no live allocation.
	next, ceiling int64
	live          map[int64]int64 // address -> size
}

func newVASpace(base int64) *vaSpace {
	return &vaSpace{base: base, end: vaEnd, next: base, ceiling: vaEnd, live: map[int64]int64{}}
}

// alloc places size bytes (a positive multiple of vaAlign) and reports
// whether the space had room.
func (s *vaSpace) alloc(size int64) (int64, bool) {
	if size > s.ceiling-s.next {
		if !s.findGap(size) {
			return 0, false
		}
	}
	addr := s.next
	s.next += size
	s.live[addr] = size
	return addr, true
}

// findGap moves the bump pointer to the first gap of at least size bytes
// between live allocations, looking above the pointer first, then from
// the base.
func (s *vaSpace) findGap(size int64) bool {
	type block struct{ addr, size int64 }
	blocks := make([]block, 0, len(s.live))
	for a, n := range s.live {
		blocks = append(blocks, block{a, n})
	}
	slices.SortFunc(blocks, func(x, y block) int {
		switch {
		case x.addr < y.addr:
			return -1
		case x.addr > y.addr:
			return 1
		}
		return 0
	})
	for _, from := range []int64{s.next, s.base} {
		p := from
		for _, b := range blocks {
			if b.addr+b.size <= from {
				continue
			}
			if b.addr >= p && b.addr-p >= size {
				s.next, s.ceiling = p, b.addr
				return true
			}
			p = max(p, b.addr+b.size)
		}
		if s.end-p >= size {
			s.next, s.ceiling = p, s.end
			return true
		}
	}
	return false
}

// free removes the allocation at addr and returns its size.
func (s *vaSpace) free(addr int64) (int64, bool) {
	n, ok := s.live[addr]
	if ok {
		delete(s.live, addr)
	}
	return n, ok
}

// vaWriteSizes writes the live allocations grouped by size, smallest
// first, as BFC's "Summary of in-use Chunks by size", and their total.
func vaWriteSizes(b *bytes.Buffer, live map[int64]int64) {
	count := map[int64]int64{}
	var total int64
	for _, n := range live {
		count[n]++
		total += n
	}
	sizes := make([]int64, 0, len(count))
	for n := range count {
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	b.WriteString("Summary of in-use allocations by size:\n")
	for _, n := range sizes {
		fmt.Fprintf(b, "%d Chunks of size %d totalling %s\n", count[n], n, assign.HumanBytes(count[n]*n))
	}
	fmt.Fprintf(b, "Sum Total of in-use allocations: %s\n", assign.HumanBytes(total))
}

// vaCells is how many of 100 cells n bytes of limit take, rounded up so
// that any use shows, and at most 100 (0 <= n, 0 < limit).
func vaCells(n, limit int64) int {
	if n <= 0 {
		return 0
	}
	if n >= limit {
		return 100
	}
	hi, lo := bits.Mul64(uint64(n), 100)
	q, r := bits.Div64(hi, lo, uint64(limit))
	if r != 0 {
		q++
	}
	return int(min(q, 100))
}

// PlatformOptions configure a PlatformAllocator.
type PlatformOptions struct {
	// Name is the allocator's name; "" means "GPU_0_platform".
	Name string
	// Limit is the number of bytes the device can give (> 0, at most
	// 2^62).
	Limit int64
	// Base is the first virtual address handed out, a multiple of 512; 0
	// means DefaultVirtualBase.
	Base int64
	// AllocCost is the modelled cost of one cuMemAlloc, FreeCost of one
	// cuMemFree; 0 means DefaultAllocCost and DefaultFreeCost.
	AllocCost time.Duration
	FreeCost  time.Duration
}

// PlatformAllocator models XLA_PYTHON_CLIENT_ALLOCATOR=platform: every
// allocation and every free is a call into the driver (cuMemAlloc,
// cuMemFree), so memory is taken exactly when needed and given back as
// soon as it is freed, at the price of a driver call each time (JAX's
// documentation calls it "very slow"). Nothing is cached: the bytes
// reserved from the device are the bytes in use.
//
// An allocation holds its size rounded up to 512 bytes, the alignment
// cudaMalloc hands out (0 bytes take 512, so that the allocation has an
// address of its own). The device maps memory behind virtual addresses,
// so there is no fragmentation: an allocation fails only when the bytes
// in use plus its rounded size exceed Limit, and then with an *OOMError
// whose Fragmented() is false. Addresses come from a bump pointer over
// the virtual address space starting at Base: 512-byte aligned, not
// reused, never overlapping a live allocation. (Only after some 2^63
// bytes of allocations does the pointer run out of address space; it then
// carries on in the gaps between live allocations, and should none be
// large enough, which needs a limit near the size of the address space,
// the allocation fails with an OOMError that reports fragmentation.)
//
// Each Allocate (including one that fails for lack of memory) and each
// Free adds one to Stats.DriverCalls and its modelled cost to
// Stats.DriverTime. A negative size or an unknown address is rejected
// before any driver call. A PlatformAllocator is safe for concurrent use.
type PlatformAllocator struct {
	vaCommon
	allocCost, freeCost time.Duration
}

// vaCommon is what the virtual-address allocators (platform, cuda_async)
// share: a name, a limit, the address space and the counters, under one
// lock.
type vaCommon struct {
	name  string
	limit int64

	mu    sync.Mutex
	space *vaSpace
	stats Stats
}

// Name implements Allocator.
func (a *vaCommon) Name() string { return a.name }

// Size is the rounded size of the live allocation at addr.
func (a *vaCommon) Size(addr int64) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.space.live[addr]
	return n, ok
}

// Stats are the allocator's counters.
func (a *vaCommon) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// checkSize refuses a negative request before any driver call.
func (a *vaCommon) checkSize(size int64) error {
	if size < 0 {
		return fmt.Errorf("gpu: %s: cannot allocate a negative size (%d bytes)", a.name, size)
	}
	return nil
}

// freeLocked takes the live allocation at addr out of the address space
// and returns its size; an address that is not live is an error.
func (a *vaCommon) freeLocked(addr int64) (int64, error) {
	n, ok := a.space.free(addr)
	if !ok {
		return 0, fmt.Errorf("gpu: %s: free of %#x, which is not a live allocation (never allocated or already freed)", a.name, addr)
	}
	return n, nil
}

// oomLocked is the OOM of a request of size bytes (rounded up to
// rounded), with the allocator's dump and occupancy map.
func (a *vaCommon) oomLocked(size, rounded int64, dump func(io.Writer) error, occupancy string) *OOMError {
	var b bytes.Buffer
	_ = dump(&b)
	return &OOMError{
		Allocator: a.name,
		Requested: size,
		Rounded:   rounded,
		Stats:     a.stats,
		Free:      a.limit - a.stats.BytesInUse,
		Dump:      b.String(),
		Occupancy: occupancy,
	}
}

// writeDumpTail writes the end of a dump: the live allocations by size,
// the driver calls and the stats block.
func (a *vaCommon) writeDumpTail(b *bytes.Buffer) {
	vaWriteSizes(b, a.space.live)
	fmt.Fprintf(b, "Driver calls: %d costing %v\n", a.stats.DriverCalls, a.stats.DriverTime)
	_ = a.stats.WriteXLA(b)
}

var _ Allocator = (*PlatformAllocator)(nil)

// validVA checks the options shared by the virtual-address allocators
// and returns the base address to use.
func validVA(what string, limit, base int64) (int64, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("gpu: %s: limit %d must be positive", what, limit)
	}
	if limit > vaMaxLimit {
		return 0, fmt.Errorf("gpu: %s: limit %d is above the largest supported, %d", what, limit, vaMaxLimit)
	}
	if base == 0 {
		base = DefaultVirtualBase
	}
	if base < 0 || base%vaAlign != 0 {
		return 0, fmt.Errorf("gpu: %s: base address %#x must be positive and a multiple of %d", what, base, vaAlign)
	}
	if base > vaEnd-vaMaxLimit {
		return 0, fmt.Errorf("gpu: %s: base address %#x leaves too little address space (at most %#x)", what, base, vaEnd-vaMaxLimit)
	}
	return base, nil
}

// NewPlatform returns a platform allocator with nothing allocated.
func NewPlatform(opts PlatformOptions) (*PlatformAllocator, error) {
	name := opts.Name
	if name == "" {
		name = "GPU_0_platform"
	}
	base, err := validVA(name, opts.Limit, opts.Base)
	if err != nil {
		return nil, err
	}
	if opts.AllocCost < 0 || opts.FreeCost < 0 {
		return nil, fmt.Errorf("gpu: %s: driver call costs must not be negative (alloc %v, free %v)", name, opts.AllocCost, opts.FreeCost)
	}
	a := &PlatformAllocator{
		vaCommon:  vaCommon{name: name, limit: opts.Limit, space: newVASpace(base)},
		allocCost: opts.AllocCost,
		freeCost:  opts.FreeCost,
	}
	if a.allocCost == 0 {
		a.allocCost = DefaultAllocCost
	}
	if a.freeCost == 0 {
		a.freeCost = DefaultFreeCost
	}
	a.stats.BytesLimit = opts.Limit
	a.stats.LargestFreeBlockBytes = opts.Limit
	return a, nil
}

// Allocate asks the driver for size bytes rounded up to 512.
func (a *PlatformAllocator) Allocate(size int64) (int64, error) {
	if err := a.checkSize(size); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rounded := vaRounded(size)
	a.stats.DriverCalls++
	a.stats.DriverTime += a.allocCost
	free := a.limit - a.stats.BytesInUse
	if rounded > free {
		return 0, a.oomLocked(size, rounded, a.dumpLocked, a.occupancyLocked())
	}
	addr, ok := a.space.alloc(rounded)
	if !ok {
		return 0, a.oomLocked(size, rounded, a.dumpLocked, a.occupancyLocked())
	}
	s := &a.stats
	s.NumAllocs++
	s.BytesInUse += rounded
	s.PeakBytesInUse = max(s.PeakBytesInUse, s.BytesInUse)
	s.LargestAllocSize = max(s.LargestAllocSize, rounded)
	a.syncLocked()
	return addr, nil
}

// syncLocked derives the stats that follow from the bytes in use.
func (a *PlatformAllocator) syncLocked() {
	s := &a.stats
	s.BytesReserved = s.BytesInUse
	s.PoolBytes = s.BytesInUse
	s.PeakBytesReserved = max(s.PeakBytesReserved, s.BytesReserved)
	s.PeakPoolBytes = max(s.PeakPoolBytes, s.PoolBytes)
	s.LargestFreeBlockBytes = a.limit - s.BytesInUse
}

// Free gives the allocation at addr back to the driver. Freeing an
// address that is not a live allocation (never allocated, or already
// freed) is an error and changes nothing.
func (a *PlatformAllocator) Free(addr int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.freeLocked(addr)
	if err != nil {
		return err
	}
	a.stats.DriverCalls++
	a.stats.DriverTime += a.freeCost
	a.stats.BytesInUse -= n
	a.syncLocked()
	return nil
}

// Dump writes the live allocations summarised by size, the driver calls
// and the stats block. The dump is the same whatever the request.
func (a *PlatformAllocator) Dump(w io.Writer, request int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dumpLocked(w)
}

func (a *PlatformAllocator) dumpLocked(w io.Writer) error {
	s := a.stats
	var b bytes.Buffer
	fmt.Fprintf(&b, "Platform allocator %s: %d allocations live, %s in use of %s\n",
		a.name, len(a.space.live), assign.HumanBytes(s.BytesInUse), assign.HumanBytes(a.limit))
	a.writeDumpTail(&b)
	_, err := w.Write(b.Bytes())
	return err
}

// Occupancy maps the device's Limit onto 100 characters: '*' for the
// share in use, '_' for the rest. Virtual addresses do not fragment, so
// the map shows proportions, not address order.
func (a *PlatformAllocator) Occupancy() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.occupancyLocked()
}

func (a *PlatformAllocator) occupancyLocked() string {
	used := vaCells(a.stats.BytesInUse, a.limit)
	return strings.Repeat("*", used) + strings.Repeat("_", 100-used)
}
