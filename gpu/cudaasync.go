package gpu

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hlomem/hlomem/assign"
)

// DefaultPoolCost is the modelled cost of one growth or trim of the
// cuda_async pool (mapping or unmapping physical pages). It is a
// modelling figure, not a measurement; set CudaAsyncOptions.DriverCost to
// model another device or driver.
const DefaultPoolCost = 20 * time.Microsecond

// vaPoolPage is the granularity in which the stream-ordered pool maps
// physical memory: 2 MiB pages.
const vaPoolPage int64 = 2 << 20

// CudaAsyncOptions configure a CudaAsyncAllocator.
type CudaAsyncOptions struct {
	// Name is the allocator's name; "" means "GPU_0_cuda_async".
	Name string
	// Limit is the most the pool may hold (> 0, at most 2^62): the memory
	// fraction times the device's memory. The pool holds whole 2 MiB
	// pages, so Limit is rounded up to 2 MiB, as XLA rounds the memory it
	// gives its allocators; Stats.BytesLimit reports the rounded figure.
	Limit int64
	// Preallocate fills the pool to Limit at the start, as XLA does by
	// allocating and freeing the whole pool once, and keeps it: the
	// release threshold is then Limit, whatever ReleaseThreshold says.
	Preallocate bool
	// ReleaseThreshold is the number of free bytes the pool keeps cached
	// when it is trimmed (cudaMemPoolAttrReleaseThreshold); 0 releases
	// all unused memory at each trim. It must not be negative.
	ReleaseThreshold int64
	// Base is the first virtual address handed out, a multiple of 512; 0
	// means DefaultVirtualBase.
	Base int64
	// DriverCost is the modelled cost of one pool growth or trim; 0 means
	// DefaultPoolCost.
	DriverCost time.Duration
}

// CudaAsyncAllocator models XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async: XLA's
// GpuCudaMallocAsyncAllocator over the stream-ordered memory pool of
// cudaMallocAsync and cudaFreeAsync.
//
// The model:
//
//   - The pool maps physical memory in 2 MiB pages behind virtual
//     addresses, so the pool does not fragment. What it holds from the
//     device (Stats.PoolBytes and Stats.BytesReserved) is a multiple of
//     2 MiB, at most Limit (itself rounded up to 2 MiB).
//   - An allocation holds its size rounded up to 512 bytes (0 bytes take
//     512, so that it has an address of its own). It fails, with an
//     *OOMError whose Free is Limit minus the bytes in use and whose
//     Fragmented() is false, only when the bytes in use plus its rounded
//     size exceed Limit.
//   - An allocation first uses the pool's cached free bytes (pool bytes
//     minus bytes in use). When they fall short, the pool grows by the
//     shortfall rounded up to 2 MiB: one driver call. A failed
//     allocation makes no driver call.
//   - A free returns the bytes to the pool, which is not a driver call.
//     The stream then synchronises and the pool is trimmed (as Trim): if
//     its cached free bytes exceed the release threshold, the excess,
//     rounded down to 2 MiB, goes back to the device in one driver call.
//   - With Preallocate the pool is filled to Limit at the start (one
//     driver call; the allocation and free XLA makes to do so are not
//     counted, as XLA clears the stats afterwards) and the release
//     threshold is Limit, so the pool never shrinks.
//   - Addresses come from a bump pointer over the virtual address space
//     starting at Base: 512-byte aligned, not reused, never overlapping a
//     live allocation (see PlatformAllocator for what happens once some
//     2^63 bytes have been handed out).
//
// Stats.LargestFreeBlockBytes is Limit minus the bytes in use: any such
// request succeeds, growing the pool if need be. A CudaAsyncAllocator is
// safe for concurrent use.
type CudaAsyncAllocator struct {
	vaCommon  // limit rounded up to a page
	threshold int64
	cost      time.Duration
}

var _ Allocator = (*CudaAsyncAllocator)(nil)

// NewCudaAsync returns a cuda_async allocator with nothing allocated; with
// Preallocate its pool already holds Limit (rounded up to 2 MiB).
func NewCudaAsync(opts CudaAsyncOptions) (*CudaAsyncAllocator, error) {
	name := opts.Name
	if name == "" {
		name = "GPU_0_cuda_async"
	}
	base, err := validVA(name, opts.Limit, opts.Base)
	if err != nil {
		return nil, err
	}
	if opts.ReleaseThreshold < 0 {
		return nil, fmt.Errorf("gpu: %s: release threshold %d must not be negative", name, opts.ReleaseThreshold)
	}
	if opts.DriverCost < 0 {
		return nil, fmt.Errorf("gpu: %s: driver call cost %v must not be negative", name, opts.DriverCost)
	}
	a := &CudaAsyncAllocator{
		vaCommon:  vaCommon{name: name, limit: vaRoundUp(opts.Limit, vaPoolPage), space: newVASpace(base)},
		threshold: opts.ReleaseThreshold,
		cost:      opts.DriverCost,
	}
	if a.cost == 0 {
		a.cost = DefaultPoolCost
	}
	a.stats.BytesLimit = a.limit
	if opts.Preallocate {
		a.threshold = a.limit
		a.setPoolLocked(a.limit)
	}
	a.syncLocked()
	return a, nil
}

// ReleaseThreshold is the number of free bytes the pool keeps at a trim.
func (a *CudaAsyncAllocator) ReleaseThreshold() int64 { return a.threshold }

// setPoolLocked changes the pool's size with one driver call.
func (a *CudaAsyncAllocator) setPoolLocked(pool int64) {
	s := &a.stats
	s.DriverCalls++
	s.DriverTime += a.cost
	s.PoolBytes = pool
	s.PeakPoolBytes = max(s.PeakPoolBytes, pool)
}

// syncLocked derives the stats that follow from the pool and the bytes in
// use.
func (a *CudaAsyncAllocator) syncLocked() {
	s := &a.stats
	s.BytesReserved = s.PoolBytes
	s.PeakBytesReserved = max(s.PeakBytesReserved, s.BytesReserved)
	s.PeakBytesInUse = max(s.PeakBytesInUse, s.BytesInUse)
	s.LargestFreeBlockBytes = a.limit - s.BytesInUse
}

// Allocate takes size bytes, rounded up to 512, from the pool, growing
// the pool when its cached free bytes are not enough.
func (a *CudaAsyncAllocator) Allocate(size int64) (int64, error) {
	if err := a.checkSize(size); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &a.stats
	rounded := vaRounded(size)
	if rounded > a.limit-s.BytesInUse {
		return 0, a.oomLocked(size, rounded, a.dumpLocked, a.occupancyLocked())
	}
	addr, ok := a.space.alloc(rounded)
	if !ok {
		return 0, a.oomLocked(size, rounded, a.dumpLocked, a.occupancyLocked())
	}
	if cached := s.PoolBytes - s.BytesInUse; rounded > cached {
		// The pool stays within the limit: it becomes the bytes in use
		// after this allocation rounded up to a page, and both they and
		// the limit are within a whole number of pages.
		a.setPoolLocked(s.PoolBytes + vaRoundUp(rounded-cached, vaPoolPage))
	}
	s.NumAllocs++
	s.BytesInUse += rounded
	s.LargestAllocSize = max(s.LargestAllocSize, rounded)
	a.syncLocked()
	return addr, nil
}

// Free returns the allocation at addr to the pool, then trims the pool as
// the stream synchronises. Freeing an address that is not a live
// allocation (never allocated, or already freed) is an error and changes
// nothing.
func (a *CudaAsyncAllocator) Free(addr int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.freeLocked(addr)
	if err != nil {
		return err
	}
	a.stats.BytesInUse -= n
	a.trimLocked()
	a.syncLocked()
	return nil
}

// Trim is a synchronisation point: the pool gives the device back its
// cached free bytes above the release threshold, rounded down to 2 MiB,
// in one driver call (none when there is nothing to give back).
func (a *CudaAsyncAllocator) Trim() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trimLocked()
	a.syncLocked()
}

func (a *CudaAsyncAllocator) trimLocked() {
	s := &a.stats
	cached := s.PoolBytes - s.BytesInUse
	if cached <= a.threshold {
		return
	}
	release := (cached - a.threshold) &^ (vaPoolPage - 1)
	if release > 0 {
		a.setPoolLocked(s.PoolBytes - release)
	}
}

// Dump writes the pool's state, the live allocations summarised by size,
// the driver calls and the stats block. The dump is the same whatever
// the request.
func (a *CudaAsyncAllocator) Dump(w io.Writer, request int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dumpLocked(w)
}

func (a *CudaAsyncAllocator) dumpLocked(w io.Writer) error {
	s := a.stats
	var b bytes.Buffer
	fmt.Fprintf(&b, "cuda_async pool %s: pool %s (limit %s, release threshold %s), in use %s in %d allocations\n",
		a.name, assign.HumanBytes(s.PoolBytes), assign.HumanBytes(a.limit), assign.HumanBytes(a.threshold),
		assign.HumanBytes(s.BytesInUse), len(a.space.live))
	a.writeDumpTail(&b)
	_, err := w.Write(b.Bytes())
	return err
}

// Occupancy maps Limit onto 100 characters, in proportion rather than by
// address since the pool's virtual addresses do not fragment: '*' for the
// bytes in use, '_' for the free bytes cached in the pool, '.' for what
// the pool does not hold from the device.
func (a *CudaAsyncAllocator) Occupancy() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.occupancyLocked()
}

func (a *CudaAsyncAllocator) occupancyLocked() string {
	used := vaCells(a.stats.BytesInUse, a.limit)
	pool := max(used, vaCells(min(a.stats.PoolBytes, a.limit), a.limit))
	return strings.Repeat("*", used) + strings.Repeat("_", pool-used) + strings.Repeat(".", 100-pool)
}
