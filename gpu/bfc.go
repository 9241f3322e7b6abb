package gpu

// The BFC allocator: XLA's best-fit-with-coalescing arena
// (xla/tsl/framework/bfc_allocator.{h,cc}), simulated. No bytes are
// stored; addresses are int64 device addresses in one modelled address
// space. The rules below are XLA's; the code is ours.
//
// Memory comes from the device in regions. A region is tiled, without gap
// or overlap, by chunks, kept as an address-ordered doubly linked list.
// Every size is a multiple of 256 bytes (RoundBytes). A free chunk sits in
// one of 21 bins: bin i holds the free chunks of size [256<<i, 256<<(i+1)),
// bin 20 everything of 256 MiB and up, each bin ordered by (size,
// address).
//
// Allocate rounds the request, then scans the bins upward from the
// request's bin and takes the first chunk in (size, address) order that is
// large enough: best fit, lowest address among equals. The chunk is split
// when it is at least twice the request or when handing it out whole
// would waste MaxInternalFragmentation (128 MiB) or more; the front part
// is the allocation, the tail a new free chunk. Otherwise the whole chunk
// is handed out and the difference is internal waste. When no chunk fits,
// Extend asks the device for one more region:
//
//   - available = memory limit − pool bytes, rounded down to 256; the
//     request fails at once when it is larger;
//   - curr_region_allocation_bytes_ (2 MiB at first with growth, the whole
//     limit when preallocating) is doubled until it holds the request;
//   - the region is min(curr, available); when the device refuses, the
//     size backs off to RoundBytes(0.9×size), as XLA computes it (a
//     float32 product, rounded up to 256), while it still holds the
//     request; where rounding up would not shrink it (under 2560 bytes,
//     where XLA would retry the same size forever) it steps down by 256;
//   - when curr did not have to grow for this request, it doubles for the
//     next region.
//
// Regions are never coalesced with each other (XLA's GPU sub-allocator
// does not support it) and never returned to the device (XLA's garbage
// collection of free regions is off for JAX). Without growth NewBFC
// reserves the whole limit as one region, so later Extends find nothing
// available and a request that no free chunk holds is an OOM.
//
// Free marks the chunk free, merges the next chunk into it when that is
// free, then merges it into the previous chunk when that is free (within
// the region) and puts the result into its bin.
//
// The implementation keeps every chunk in one slice and names it by an
// int32 handle; freed handles are reused. Each bin is a treap over the
// handles of its free chunks, ordered by (size, address) with the
// priorities in the chunks themselves, so finding the best fit, inserting
// and removing are O(log n) and allocate nothing. A bit mask of the
// non-empty bins skips the empty ones, and an open-addressing hash table
// from address to handle finds the chunk of a live allocation for Free
// (XLA indexes a table by (address-base)>>8 instead; for an 80 GiB arena
// that would be 320M entries).

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hlomem/hlomem/assign"
)

// The BFC constants, as XLA's.
const (
	// MinAllocationSize is the granule: every chunk's size and address is
	// a multiple of it.
	MinAllocationSize = 256
	// NumBins is the number of free-chunk bins.
	NumBins = 21
	// MaxInternalFragmentation is the most a chunk handed out whole may
	// waste: a chunk whose rest after the request is this large or larger
	// is split even when it is under twice the request.
	MaxInternalFragmentation = 128 << 20
)

const (
	bfcDefaultBase  = 0x7f0000000000
	bfcRegionAlign  = 2 << 20 // region bases in the address space
	bfcInitialGrow  = 2 << 20 // curr_region_allocation_bytes_ with growth
	bfcNone         = int32(-1)
	bfcMaxRoundable = math.MaxInt64 - (MinAllocationSize - 1)
	bfcDumpMaxLines = 1000 // chunk lines in one dump, and size lines in its summary
	bfcBackoff      = float32(0.9)
	bfcNoNextHandle = "18446744073709551615" // XLA's kInvalidChunkHandle, printed
)

// BFCOptions configures NewBFC.
type BFCOptions struct {
	// Name is the allocator's name; "" means "GPU_0_bfc".
	Name string
	// Limit is XLA's memory_limit in bytes (> 0); the caller rounds it
	// (XLA rounds it up to 2 MiB).
	Limit int64
	// AllowGrowth is XLA's allow_growth (JAX's XLA_PYTHON_CLIENT_PREALLOCATE
	// off). When false NewBFC reserves the whole Limit as one region, as
	// the first Extend of a preallocating XLA allocator does.
	AllowGrowth bool
	// DeviceMemory is what the device (driver) can give in total; 0 means
	// Limit. A region request beyond what the device has left fails, and
	// Extend backs off by 0.9× as XLA's does.
	DeviceMemory int64
	// Base is the address of the first region (a multiple of 256); 0
	// means 0x7f0000000000. Later regions follow, each aligned to 2 MiB.
	Base int64
	// DriverCost is the modelled cost of one driver call (one attempt to
	// allocate a region), counted in Stats.DriverTime.
	DriverCost time.Duration
}

// Region is one piece of memory the allocator holds from the device.
type Region struct{ Addr, Size int64 }

// Chunk is one chunk of a region. Requested is the size the client asked
// for (0 for a free chunk); Bin is the bin a free chunk is in, and -1 for
// a chunk in use (XLA's kInvalidBinNum).
type Chunk struct {
	Addr, Size, Requested int64
	InUse                 bool
	Bin                   int
}

// bfcChunk is a chunk with its region links and its treap links, named by
// its index in BFC.chunks.
type bfcChunk struct {
	addr, size, requested int64
	prev, next            int32 // neighbours in the region, bfcNone at its ends
	left, right           int32 // treap children in the chunk's bin
	prio                  uint32
	bin                   int8 // -1 when in use or unused
	inUse                 bool
}

type bfcRegion struct {
	addr, size int64
	first      int32 // the chunk at addr; it is never merged away
}

// BFC is a simulated XLA BFC allocator. It is safe for concurrent use.
type BFC struct {
	mu         sync.Mutex
	name       string
	limit      int64
	device     int64
	base       int64
	growth     bool
	driverCost time.Duration

	chunks   []bfcChunk
	unused   []int32 // handles free for reuse
	bins     [NumBins]int32
	nonEmpty uint32 // bit i: bin i has a free chunk
	regions  []bfcRegion
	live     bfcAddrTable // address of an allocation -> its chunk
	rng      uint64

	curr        int64 // curr_region_allocation_bytes_
	numAllocs   int64
	inUse       int64
	peakInUse   int64
	largest     int64
	pool        int64
	peakPool    int64
	driverCalls int64
}

var _ Allocator = (*BFC)(nil)

// NewBFC returns a BFC allocator. Without AllowGrowth it reserves the whole
// Limit (rounded down to 256) as one region at once.
func NewBFC(opts BFCOptions) (*BFC, error) {
	if opts.Limit <= 0 {
		return nil, fmt.Errorf("gpu: bfc memory limit %d must be positive", opts.Limit)
	}
	if opts.DeviceMemory < 0 {
		return nil, fmt.Errorf("gpu: bfc device memory %d must not be negative", opts.DeviceMemory)
	}
	if opts.Base < 0 || opts.Base%MinAllocationSize != 0 {
		return nil, fmt.Errorf("gpu: bfc base address %#x must be a positive multiple of %d", opts.Base, MinAllocationSize)
	}
	if opts.DriverCost < 0 {
		return nil, fmt.Errorf("gpu: bfc driver cost %v must not be negative", opts.DriverCost)
	}
	a := &BFC{
		name:       opts.Name,
		limit:      opts.Limit,
		device:     opts.DeviceMemory,
		base:       opts.Base,
		growth:     opts.AllowGrowth,
		driverCost: opts.DriverCost,
		rng:        0x9e3779b97f4a7c15,
	}
	if a.name == "" {
		a.name = "GPU_0_bfc"
	}
	if a.device == 0 {
		a.device = a.limit
	}
	if a.base == 0 {
		a.base = bfcDefaultBase
	}
	for i := range a.bins {
		a.bins[i] = bfcNone
	}
	if a.growth {
		a.curr = RoundBytes(min(a.limit, bfcInitialGrow))
	} else {
		a.curr = RoundBytes(a.limit)
		if a.curr < 0 { // a limit within 255 of MaxInt64
			a.curr = a.limit &^ (MinAllocationSize - 1)
		}
		if !a.extend(MinAllocationSize) {
			return nil, fmt.Errorf("gpu: bfc %s: cannot reserve its memory limit of %d bytes from a device with %d bytes", a.name, a.limit, a.device)
		}
	}
	return a, nil
}

// RoundBytes is XLA's RoundedBytes: n rounded up to a multiple of 256. A
// 0-byte request takes the minimum chunk, 256 (XLA returns nullptr for 0
// bytes; here every Allocate has an address). For n < 0 or n too large to
// round within int64 it returns -1.
func RoundBytes(n int64) int64 {
	switch {
	case n < 0 || n > bfcMaxRoundable:
		return -1
	case n == 0:
		return MinAllocationSize
	}
	return (n + MinAllocationSize - 1) &^ (MinAllocationSize - 1)
}

// BinForSize is XLA's BinNumForSize: min(20, floor(log2(max(n,256)>>8))).
func BinForSize(n int64) int {
	v := uint64(max(n, MinAllocationSize)) >> 8
	return min(NumBins-1, 63-bits.LeadingZeros64(v))
}

// BinSize is the smallest chunk size bin holds, 256<<bin; 0 for a bin
// outside 0..20.
func BinSize(bin int) int64 {
	if bin < 0 || bin >= NumBins {
		return 0
	}
	return MinAllocationSize << bin
}

// Name returns the allocator's name.
func (a *BFC) Name() string { return a.name }

// Allocate reserves RoundBytes(size) bytes, or a larger chunk when
// splitting is not worth it; a 0-byte request takes a 256-byte chunk of
// its own. The error is an *OOMError when no chunk fits and no region can
// be added, or for a request too large to round (Rounded is then
// math.MaxInt64); a negative size is a plain error.
func (a *BFC) Allocate(size int64) (int64, error) {
	if size < 0 {
		return 0, fmt.Errorf("gpu: %s: negative allocation size %d", a.name, size)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if size > bfcMaxRoundable {
		return 0, a.oom(size, math.MaxInt64)
	}
	if len(a.chunks) >= math.MaxInt32-1 && len(a.unused) < 2 {
		return 0, fmt.Errorf("gpu: %s: too many chunks", a.name)
	}
	rounded := RoundBytes(size)
	h := a.findChunk(rounded, size)
	if h == bfcNone && a.extend(rounded) {
		h = a.findChunk(rounded, size)
	}
	if h == bfcNone {
		return 0, a.oom(size, rounded)
	}
	return a.chunks[h].addr, nil
}

// findChunk is XLA's FindChunkPtr: the best fit, split if worth it, marked
// in use; bfcNone when no free chunk holds rounded.
func (a *BFC) findChunk(rounded, requested int64) int32 {
	b := BinForSize(rounded)
	h := a.lowerBound(a.bins[b], rounded)
	if h == bfcNone {
		rest := a.nonEmpty &^ (1<<(b+1) - 1)
		if rest == 0 {
			return bfcNone
		}
		b = bits.TrailingZeros32(rest)
		h = a.leftmost(a.bins[b])
	}
	a.removeFree(h)
	c := &a.chunks[h]
	if rest := c.size - rounded; rest >= rounded || rest >= MaxInternalFragmentation {
		t := a.newHandle()
		c = &a.chunks[h] // newHandle may have moved the slice
		n := c.next
		a.chunks[t] = bfcChunk{addr: c.addr + rounded, size: rest, prev: h, next: n, left: bfcNone, right: bfcNone, prio: a.nextPrio(), bin: -1}
		if n != bfcNone {
			a.chunks[n].prev = t
		}
		c.next = t
		c.size = rounded
		a.insertFree(t)
	}
	c.inUse = true
	c.requested = requested
	a.live.put(c.addr, h)
	a.numAllocs++
	a.inUse += c.size
	a.peakInUse = max(a.peakInUse, a.inUse)
	a.largest = max(a.largest, c.size)
	return h
}

// extend is XLA's Extend: add a region that holds rounded, if the limit
// and the device allow it.
func (a *BFC) extend(rounded int64) bool {
	available := (a.limit - a.pool) &^ (MinAllocationSize - 1)
	if rounded > available {
		return false
	}
	increased := false
	for rounded > a.curr {
		a.curr = bfcDouble(a.curr)
		increased = true
	}
	bytes := min(a.curr, available)
	addr, ok := a.deviceAlloc(bytes)
	for !ok {
		// XLA: bytes = RoundedBytes(bytes * kBackpedalFactor), a float
		// product; step down by a granule when that does not shrink it.
		next := RoundBytes(int64(float32(bytes) * bfcBackoff))
		if next >= bytes || next < 0 {
			next = bytes - MinAllocationSize
		}
		bytes = next
		if bytes < rounded {
			return false
		}
		addr, ok = a.deviceAlloc(bytes)
	}
	if !increased {
		a.curr = bfcDouble(a.curr)
	}
	h := a.newHandle()
	a.chunks[h] = bfcChunk{addr: addr, size: bytes, prev: bfcNone, next: bfcNone, left: bfcNone, right: bfcNone, prio: a.nextPrio(), bin: -1}
	a.regions = append(a.regions, bfcRegion{addr: addr, size: bytes, first: h})
	a.pool += bytes
	a.peakPool = max(a.peakPool, a.pool)
	a.insertFree(h)
	return true
}

func bfcDouble(n int64) int64 {
	if n > math.MaxInt64/2 {
		return math.MaxInt64 &^ (MinAllocationSize - 1)
	}
	return 2 * n
}

// deviceAlloc is one driver call for a region of bytes: it fails when the
// device has less left, or when the address space would overflow.
func (a *BFC) deviceAlloc(bytes int64) (int64, bool) {
	a.driverCalls++
	if bytes > a.device-a.pool {
		return 0, false
	}
	addr := a.base
	if n := len(a.regions); n > 0 {
		end := a.regions[n-1].addr + a.regions[n-1].size
		if end > math.MaxInt64-bfcRegionAlign {
			return 0, false
		}
		addr = (end + bfcRegionAlign - 1) &^ (bfcRegionAlign - 1)
	}
	if addr > math.MaxInt64-bytes {
		return 0, false
	}
	return addr, true
}

// Free releases the allocation at addr and coalesces it with its free
// neighbours in the region. An address that is not a live allocation is
// an error.
func (a *BFC) Free(addr int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.live.remove(addr)
	if !ok {
		return fmt.Errorf("gpu: %s: free of %#x, which is not a live allocation", a.name, addr)
	}
	c := &a.chunks[h]
	c.inUse = false
	c.requested = 0
	a.inUse -= c.size
	if n := c.next; n != bfcNone && !a.chunks[n].inUse {
		a.removeFree(n)
		a.merge(h, n)
	}
	if p := a.chunks[h].prev; p != bfcNone && !a.chunks[p].inUse {
		a.removeFree(p)
		a.merge(p, h)
		h = p
	}
	a.insertFree(h)
	return nil
}

// merge absorbs chunk n into its predecessor h and releases n's handle.
func (a *BFC) merge(h, n int32) {
	c, d := &a.chunks[h], &a.chunks[n]
	c.size += d.size
	c.next = d.next
	if d.next != bfcNone {
		a.chunks[d.next].prev = h
	}
	*d = bfcChunk{prev: bfcNone, next: bfcNone, left: bfcNone, right: bfcNone, bin: -1}
	a.unused = append(a.unused, n)
}

// newHandle returns an unused handle; the caller sets the whole chunk.
func (a *BFC) newHandle() int32 {
	if n := len(a.unused); n > 0 {
		h := a.unused[n-1]
		a.unused = a.unused[:n-1]
		return h
	}
	a.chunks = append(a.chunks, bfcChunk{})
	return int32(len(a.chunks) - 1)
}

func (a *BFC) nextPrio() uint32 {
	// xorshift64*: deterministic treap priorities.
	a.rng ^= a.rng >> 12
	a.rng ^= a.rng << 25
	a.rng ^= a.rng >> 27
	return uint32((a.rng * 2685821657736338717) >> 32)
}

// Size returns the size of the chunk of the allocation at addr.
func (a *BFC) Size(addr int64) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.live.get(addr)
	if !ok {
		return 0, false
	}
	return a.chunks[h].size, true
}

// bfcAddrTable maps the address of each live allocation to its chunk: an
// open-addressing hash table with linear probing, at most half full, that
// deletes by shifting back the entries after the removed one (no
// tombstones). Addresses are positive, so key 0 marks an empty slot.
type bfcAddrTable struct {
	keys  []int64
	vals  []int32
	n     int
	shift uint // 64 - log2(len(keys))
}

func (t *bfcAddrTable) slot(k int64) int {
	// Addresses are multiples of 256: drop the zero bits, then mix.
	return int((uint64(k) >> 8) * 0x9e3779b97f4a7c15 >> t.shift)
}

func (t *bfcAddrTable) get(k int64) (int32, bool) {
	if t.n == 0 || k <= 0 {
		return 0, false
	}
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put adds k, which is not in the table.
func (t *bfcAddrTable) put(k int64, v int32) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := len(t.keys) - 1
	i := t.slot(k)
	for t.keys[i] != 0 {
		i = (i + 1) & mask
	}
	t.keys[i], t.vals[i] = k, v
	t.n++
}

func (t *bfcAddrTable) grow() {
	keys, vals := t.keys, t.vals
	size := max(2*len(keys), 64)
	t.keys, t.vals = make([]int64, size), make([]int32, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for j, k := range keys {
		if k != 0 {
			i := t.slot(k)
			for t.keys[i] != 0 {
				i = (i + 1) & mask
			}
			t.keys[i], t.vals[i] = k, vals[j]
		}
	}
}

// remove deletes k and returns its value.
func (t *bfcAddrTable) remove(k int64) (int32, bool) {
	if t.n == 0 || k <= 0 {
		return 0, false
	}
	mask := len(t.keys) - 1
	i := t.slot(k)
	for t.keys[i] != k {
		if t.keys[i] == 0 {
			return 0, false
		}
		i = (i + 1) & mask
	}
	v := t.vals[i]
	// Shift back each later entry of the run whose home slot is not
	// cyclically within (i, j].
	for j := (i + 1) & mask; t.keys[j] != 0; j = (j + 1) & mask {
		h := t.slot(t.keys[j])
		if (j-h)&mask >= (j-i)&mask {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.keys[i] = 0
	t.n--
	return v, true
}

// The bins: one treap per bin over the handles of its free chunks, keyed
// by (size, address), max-heap ordered by prio.

func (a *BFC) keyLess(x, y int32) bool {
	cx, cy := &a.chunks[x], &a.chunks[y]
	return cx.size < cy.size || cx.size == cy.size && cx.addr < cy.addr
}

// insertFree puts the free chunk h into its bin.
func (a *BFC) insertFree(h int32) {
	c := &a.chunks[h]
	b := BinForSize(c.size)
	c.bin = int8(b)
	link := &a.bins[b]
	for *link != bfcNone && a.chunks[*link].prio > c.prio {
		if a.keyLess(h, *link) {
			link = &a.chunks[*link].left
		} else {
			link = &a.chunks[*link].right
		}
	}
	// Split the subtree at *link around h's key.
	t := *link
	l, r := &c.left, &c.right
	for t != bfcNone {
		if a.keyLess(t, h) {
			*l = t
			l = &a.chunks[t].right
			t = *l
		} else {
			*r = t
			r = &a.chunks[t].left
			t = *r
		}
	}
	*l, *r = bfcNone, bfcNone
	*link = h
	a.nonEmpty |= 1 << b
}

// removeFree takes the free chunk h out of its bin.
func (a *BFC) removeFree(h int32) {
	c := &a.chunks[h]
	b := int(c.bin)
	link := &a.bins[b]
	for *link != h {
		if a.keyLess(h, *link) {
			link = &a.chunks[*link].left
		} else {
			link = &a.chunks[*link].right
		}
	}
	// Replace h by the merge of its children.
	l, r := c.left, c.right
	for l != bfcNone && r != bfcNone {
		if a.chunks[l].prio > a.chunks[r].prio {
			*link = l
			link = &a.chunks[l].right
			l = *link
		} else {
			*link = r
			link = &a.chunks[r].left
			r = *link
		}
	}
	if l != bfcNone {
		*link = l
	} else {
		*link = r
	}
	c.left, c.right, c.bin = bfcNone, bfcNone, -1
	if a.bins[b] == bfcNone {
		a.nonEmpty &^= 1 << b
	}
}

// lowerBound is the first chunk of the treap t in (size, address) order
// whose size is at least n.
func (a *BFC) lowerBound(t int32, n int64) int32 {
	best := bfcNone
	for t != bfcNone {
		if a.chunks[t].size >= n {
			best = t
			t = a.chunks[t].left
		} else {
			t = a.chunks[t].right
		}
	}
	return best
}

func (a *BFC) leftmost(t int32) int32 {
	for t != bfcNone && a.chunks[t].left != bfcNone {
		t = a.chunks[t].left
	}
	return t
}

func (a *BFC) rightmost(t int32) int32 {
	for t != bfcNone && a.chunks[t].right != bfcNone {
		t = a.chunks[t].right
	}
	return t
}

// Regions returns the regions in address order.
func (a *BFC) Regions() []Region {
	a.mu.Lock()
	defer a.mu.Unlock()
	rs := make([]Region, len(a.regions))
	for i, r := range a.regions {
		rs[i] = Region{Addr: r.addr, Size: r.size}
	}
	return rs
}

// Chunks returns every chunk of every region in address order.
func (a *BFC) Chunks() []Chunk {
	a.mu.Lock()
	defer a.mu.Unlock()
	var cs []Chunk
	for _, r := range a.regions {
		for h := r.first; h != bfcNone; h = a.chunks[h].next {
			c := &a.chunks[h]
			cs = append(cs, Chunk{Addr: c.addr, Size: c.size, Requested: c.requested, InUse: c.inUse, Bin: int(c.bin)})
		}
	}
	return cs
}

// LargestFreeChunk is XLA's: the largest chunk of the highest non-empty
// bin, 0 when no chunk is free.
func (a *BFC) LargestFreeChunk() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.largestFree()
}

func (a *BFC) largestFree() int64 {
	if a.nonEmpty == 0 {
		return 0
	}
	b := 31 - bits.LeadingZeros32(a.nonEmpty)
	return a.chunks[a.rightmost(a.bins[b])].size
}

// CurrentRegionBytes is curr_region_allocation_bytes_: the size Extend
// will ask for next, unless the request needs more.
func (a *BFC) CurrentRegionBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.curr
}

// Stats returns the counters. BytesReserved is what the arena holds from
// the device, its regions, so it equals PoolBytes. DriverCalls counts
// every attempt to allocate a region, refused ones included.
func (a *BFC) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats()
}

func (a *BFC) stats() Stats {
	return Stats{
		NumAllocs:             a.numAllocs,
		BytesInUse:            a.inUse,
		PeakBytesInUse:        a.peakInUse,
		LargestAllocSize:      a.largest,
		BytesLimit:            a.limit,
		BytesReserved:         a.pool,
		PeakBytesReserved:     a.peakPool,
		LargestFreeBlockBytes: a.largestFree(),
		PoolBytes:             a.pool,
		PeakPoolBytes:         a.peakPool,
		DriverCalls:           a.driverCalls,
		DriverTime:            time.Duration(a.driverCalls) * a.driverCost,
	}
}

func (a *BFC) oom(size, rounded int64) *OOMError {
	var b strings.Builder
	_ = a.dump(&b, size) // a strings.Builder does not fail
	return &OOMError{
		Allocator: a.name,
		Requested: size,
		Rounded:   rounded,
		Stats:     a.stats(),
		Free:      a.limit - a.inUse,
		Dump:      b.String(),
		Occupancy: a.occupancy(),
	}
}

// Occupancy is XLA's RenderOccupancy over the regions laid end to end:
// '*' the requested bytes of a chunk in use, 'x' its rounding waste, '_'
// free; "<allocator contains no memory>" before the first region.
func (a *BFC) Occupancy() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.occupancy()
}

func (a *BFC) occupancy() string {
	const resolution = 100
	if a.pool == 0 {
		return "<allocator contains no memory>"
	}
	var out [resolution]byte
	for i := range out {
		out[i] = '_'
	}
	total := uint64(a.pool)
	cell := func(off uint64) int {
		hi, lo := bits.Mul64(off, resolution)
		q, _ := bits.Div64(hi, lo, total)
		return int(q)
	}
	paint := func(off, n uint64, ch byte) {
		for i := cell(off); i <= cell(off+n-1); i++ {
			out[i] = ch
		}
	}
	var regionOff uint64
	for _, r := range a.regions {
		for h := r.first; h != bfcNone; h = a.chunks[h].next {
			c := &a.chunks[h]
			if !c.inUse {
				continue
			}
			off := regionOff + uint64(c.addr-r.addr)
			if waste := c.size - c.requested; waste > 0 {
				paint(off+uint64(c.requested), uint64(waste), 'x')
			}
			if c.requested > 0 {
				paint(off, uint64(c.requested), '*')
			}
		}
		regionOff += uint64(r.size)
	}
	return string(out[:])
}

// Dump writes XLA's DumpMemoryLog for a failed request of request bytes:
// every bin's chunks, the free chunks of the request's bin, each region's
// chunks (at most 1000 chunk lines in all), the chunks in use by size (at
// most 1000 sizes), the totals and the stats.
func (a *BFC) Dump(w io.Writer, request int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dump(w, request)
}

func (a *BFC) dump(w io.Writer, request int64) error {
	rounded := RoundBytes(request)
	if rounded < 0 {
		rounded = max(request, MinAllocationSize)
	}
	var bins [NumBins]struct{ chunks, inUse, bytes, bytesInUse, requested int64 }
	var sizes []int64
	for _, r := range a.regions {
		for h := r.first; h != bfcNone; h = a.chunks[h].next {
			c := &a.chunks[h]
			bi := &bins[BinForSize(c.size)]
			bi.chunks++
			bi.bytes += c.size
			if c.inUse {
				bi.inUse++
				bi.bytesInUse += c.size
				bi.requested += c.requested
				sizes = append(sizes, c.size)
			}
		}
	}
	d := bfcDumper{a: a, lines: bfcDumpMaxLines}
	d.str("BFCAllocator dump for ")
	d.str(a.name)
	d.nl()
	for i, bi := range bins {
		d.str("Bin (")
		d.int(BinSize(i))
		d.str("): \tTotal Chunks: ")
		d.int(bi.chunks)
		d.str(", Chunks in use: ")
		d.int(bi.inUse)
		d.str(". ")
		d.str(assign.HumanBytes(bi.bytes))
		d.str(" allocated for chunks. ")
		d.str(assign.HumanBytes(bi.bytesInUse))
		d.str(" in use in bin. ")
		d.str(assign.HumanBytes(bi.requested))
		d.str(" client-requested in use in bin.")
		d.nl()
	}
	b := BinForSize(rounded)
	d.str("Bin for ")
	d.str(assign.HumanBytes(rounded))
	d.str(" was ")
	d.str(assign.HumanBytes(BinSize(b)))
	d.str(", Chunk State: ")
	d.nl()
	d.binState(a.bins[b])
	for _, r := range a.regions {
		d.str("Next region of size ")
		d.int(r.size)
		d.nl()
		for h := r.first; h != bfcNone; h = a.chunks[h].next {
			d.chunkLine(h)
		}
		d.flushSkipped()
	}
	d.str("     Summary of in-use Chunks by size: ")
	d.nl()
	slices.Sort(sizes)
	var total, shown, restBytes, restSizes int64
	for i := 0; i < len(sizes); {
		j := i
		for j < len(sizes) && sizes[j] == sizes[i] {
			j++
		}
		n, s := int64(j-i), sizes[i]
		total += n * s
		if shown < bfcDumpMaxLines {
			d.int(n)
			d.str(" Chunks of size ")
			d.int(s)
			d.str(" totalling ")
			d.str(assign.HumanBytes(n * s))
			d.nl()
			shown++
		} else {
			restSizes++
			restBytes += n * s
		}
		i = j
	}
	if restSizes > 0 {
		d.str("... ")
		d.int(restSizes)
		d.str(" more sizes totalling ")
		d.str(assign.HumanBytes(restBytes))
		d.nl()
	}
	d.str("Sum Total of in-use chunks: ")
	d.str(assign.HumanBytes(total))
	d.nl()
	d.str("Total bytes in pool: ")
	d.int(a.pool)
	d.str(" memory_limit_: ")
	d.int(a.limit)
	d.str(" available bytes: ")
	d.int(a.limit - a.pool)
	d.str(" curr_region_allocation_bytes_: ")
	d.int(a.curr)
	d.nl()
	d.str("Stats: ")
	d.nl()
	var sb strings.Builder
	_ = a.stats().WriteXLA(&sb)
	d.str(sb.String())
	_, err := w.Write(d.buf)
	return err
}

// bfcDumper builds a dump in one buffer, counting the chunk lines.
type bfcDumper struct {
	a       *BFC
	buf     []byte
	lines   int   // chunk lines still allowed
	skipped int64 // chunk lines left out since the last flush
}

func (d *bfcDumper) str(s string) { d.buf = append(d.buf, s...) }
func (d *bfcDumper) int(n int64)  { d.buf = strconv.AppendInt(d.buf, n, 10) }
func (d *bfcDumper) nl()          { d.buf = append(d.buf, '\n') }

func (d *bfcDumper) take() bool {
	if d.lines == 0 {
		d.skipped++
		return false
	}
	d.lines--
	return true
}

func (d *bfcDumper) flushSkipped() {
	if d.skipped > 0 {
		d.str("... ")
		d.int(d.skipped)
		d.str(" more chunks")
		d.nl()
		d.skipped = 0
	}
}

// binState writes the free chunks of a bin in order, as XLA's
// Chunk::DebugString with its neighbours.
func (d *bfcDumper) binState(t int32) {
	var walk func(int32)
	walk = func(t int32) {
		if t == bfcNone {
			return
		}
		c := &d.a.chunks[t]
		walk(c.left)
		if d.take() {
			d.debugString(t)
			if c.prev != bfcNone {
				d.str(", prev: ")
				d.debugString(c.prev)
			}
			if c.next != bfcNone {
				d.str(", next: ")
				d.debugString(c.next)
			}
			d.nl()
		}
		walk(c.right)
	}
	walk(t)
	d.flushSkipped()
}

func (d *bfcDumper) debugString(h int32) {
	c := &d.a.chunks[h]
	d.str("  Size: ")
	d.str(assign.HumanBytes(c.size))
	d.str(" | Requested Size: ")
	d.str(assign.HumanBytes(c.requested))
	d.str(" | in_use: ")
	if c.inUse {
		d.str("1")
	} else {
		d.str("0")
	}
	d.str(" | bin_num: ")
	d.int(int64(c.bin))
}

func (d *bfcDumper) chunkLine(h int32) {
	if !d.take() {
		return
	}
	c := &d.a.chunks[h]
	if c.inUse {
		d.str("InUse at ")
	} else {
		d.str("Free  at ")
	}
	d.buf = strconv.AppendUint(d.buf, uint64(c.addr), 16)
	d.str(" of size ")
	d.int(c.size)
	d.str(" next ")
	if c.next == bfcNone {
		d.str(bfcNoNextHandle)
	} else {
		d.int(int64(c.next))
	}
	d.nl()
}
