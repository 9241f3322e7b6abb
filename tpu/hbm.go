package tpu

// The HBM allocator of a running program: first fit over one address
// space, and compaction when a request fails for fragmentation alone.
//
// A TPU's runtime hands out HBM to the buffers of the programs it runs and
// to the arrays the user keeps on the device. Unlike XLA's BFC allocator on
// a GPU (package gpu), whose regions never move, it may move live arrays:
// when a request fails although the free bytes would hold it, the runtime
// defragments HBM and retries (the operation PJRT exposes as
// PjRtClient::Defragment). HBM models that.
//
// Placement is first fit by lowest address: Allocate walks the live
// regions in address order and takes the first gap that holds the request
// at an aligned address. Every region starts on a multiple of Granule
// (512 bytes, the TPU's HBM granule) or of the requested alignment when
// that is larger; a region is exactly the size asked for (a 0-byte request
// reserves one byte, so that every live region has an address of its
// own). The live regions sit in a slice sorted by address, so Allocate is
// linear in the live regions and Free logarithmic plus a slice shift:
// cheap for the thousands of buffers a program holds.
//
// Compaction is a sliding compaction (Jones, Hosking and Moss, The
// Garbage Collection Handbook, 2nd ed., ch. 3): the live regions move down
// in address order, each to the lowest address after the previous one
// that its alignment allows, so their order never changes and a region
// only ever moves down, onto bytes that are free or that it held itself.
// Afterwards the free memory is one gap at the top, less alignment padding.
// Allocate compacts only when that is enough: it lays the regions out
// first without moving anything, and when the request would not fit even
// then, it fails with an *OOMError and leaves the memory as it was. The
// owner of the moved addresses learns of every move through the OnMove
// callback, before the Allocate that compacted returns.
//
// Bytes are backed sparsely by exec.Pages, as exec.HostArena's
// are, so an HBM of 16 GiB costs what a run touches.
// A byte outside every live region reads as Fill whenever it next becomes
// part of a region: Free and compaction reset the bytes they release that
// sit on a page that stays (a page shared with a live region), and drop
// pages that no live region touches any more.

import (
	"fmt"
	"math"
	"slices"

	"github.com/hlomem/hlomem/exec"
)

// Granule is the HBM allocation granule: every region starts on a
// multiple of it, and an Allocate with a smaller alignment (0 included)
// gets it.
const Granule = 512

// Region is one live region of an HBM: Size bytes at Addr.
type Region struct{ Addr, Size int64 }

// hbmRegion is a live region and the alignment it was asked with.
type hbmRegion struct {
	addr, size, align int64
}

func (r hbmRegion) end() int64 { return r.addr + r.size }

// Bounds implements exec.Region.
func (r hbmRegion) Bounds() (addr, size int64) { return r.addr, r.size }

// HBM is a compacting HBM allocator that implements exec.Memory and
// exec.Mover. It is not safe for concurrent use.
type HBM struct {
	// Fill is what bytes never written read as (0 unless set); set it
	// before the first Allocate.
	Fill byte

	capacity int64
	space    string      // the memory's name in errors ("" is hbm)
	regions  []hbmRegion // live regions, sorted by address
	pages    exec.Pages
	onMove   func(from, to, size int64)

	inUse, peak, numAllocs  int64
	bytesMoved, compactions int64
}

var (
	_ exec.Memory = (*HBM)(nil)
	_ exec.Mover  = (*HBM)(nil)
)

// NewHBM returns an empty HBM of capacity bytes, addresses [0, capacity).
func NewHBM(capacity int64) (*HBM, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("tpu: hbm capacity %d must be positive", capacity)
	}
	return &HBM{capacity: capacity}, nil
}

// HBMStats are an HBM's counters.
type HBMStats struct {
	// Capacity is the size of the address space, in bytes.
	Capacity int64
	// InUse is the bytes of the live regions, Peak the most InUse has
	// been.
	InUse, Peak int64
	// NumAllocs counts the Allocate calls that succeeded.
	NumAllocs int64
	// Live is the number of live regions.
	Live int
	// LargestFree is the largest gap between live regions (or between one
	// and an end of the address space), alignment not considered.
	LargestFree int64
	// Compactions counts the compactions run, BytesMoved the bytes of the
	// regions they moved (a region that stayed in place counts nothing).
	Compactions, BytesMoved int64
}

// Stats returns the counters.
func (h *HBM) Stats() HBMStats {
	largest, prev := int64(0), int64(0)
	for _, r := range h.regions {
		largest = max(largest, r.addr-prev)
		prev = r.end()
	}
	largest = max(largest, h.capacity-prev)
	return HBMStats{
		Capacity:    h.capacity,
		InUse:       h.inUse,
		Peak:        h.peak,
		NumAllocs:   h.numAllocs,
		Live:        len(h.regions),
		LargestFree: largest,
		Compactions: h.compactions,
		BytesMoved:  h.bytesMoved,
	}
}

// Regions returns the live regions in address order.
func (h *HBM) Regions() []Region {
	rs := make([]Region, len(h.regions))
	for i, r := range h.regions {
		rs[i] = Region{Addr: r.addr, Size: r.size}
	}
	return rs
}

// OnMove implements exec.Mover: f is called once per region a
// compaction moves, with its old and new base and its size, in address
// order, after every move of that compaction is done and before the
// Allocate that compacted returns. f replaces any callback set before; nil
// removes it. f must not call back into h.
func (h *HBM) OnMove(f func(from, to, size int64)) { h.onMove = f }

// OOMError is a run-time out-of-memory: an Allocate that no placement of
// the live regions could satisfy. (A program whose plan does not fit is a
// compile-time error, reported before anything runs.)
type OOMError struct {
	// Requested is the size asked for.
	Requested int64
	// Free is the capacity less the bytes in use when the request failed.
	// It is at least Requested only when alignment padding between the
	// compacted regions leaves too little room.
	Free int64
	// Capacity is the HBM's size.
	Capacity int64
	// Space names the memory: hbm, or vmem or smem for the allocators
	// of a Chip's other spaces.
	Space string
}

func (e *OOMError) Error() string {
	space := e.Space
	if space == "" {
		space = "hbm"
	}
	s := fmt.Sprintf("Ran out of memory in memory space %s: allocating %d bytes, %d free of %d", space, e.Requested, e.Free, e.Capacity)
	if e.Free >= e.Requested {
		s += " (too little left once the regions are compacted with their alignment)"
	}
	return s
}

// Allocate implements exec.Memory: it reserves size bytes at the lowest
// address aligned to max(align, Granule) that holds them, compacting when
// only that makes room. align must be 0 or a power of two. The error is an
// *OOMError when the request does not fit even after a compaction.
func (h *HBM) Allocate(size, align int64) (int64, error) {
	switch {
	case size < 0:
		return 0, fmt.Errorf("tpu: hbm: allocate %d bytes", size)
	case align < 0 || align&(align-1) != 0:
		return 0, fmt.Errorf("tpu: hbm: alignment %d is not a power of two", align)
	}
	size = max(size, 1)
	align = max(align, Granule)
	at, i, ok := h.firstFit(size, align)
	if !ok {
		if size > h.capacity-h.inUse || !h.fitsCompacted(size, align) {
			return 0, &OOMError{Requested: size, Free: h.capacity - h.inUse, Capacity: h.capacity, Space: h.space}
		}
		moves := h.compact()
		at, i, ok = h.firstFit(size, align)
		if !ok { // fitsCompacted said it would
			return 0, fmt.Errorf("tpu: hbm: internal error: %d bytes do not fit after compaction", size)
		}
		defer h.notify(moves)
	}
	h.regions = slices.Insert(h.regions, i, hbmRegion{addr: at, size: size, align: align})
	h.inUse += size
	h.peak = max(h.peak, h.inUse)
	h.numAllocs++
	return at, nil
}

// hbmAlignUp rounds x (>= 0) up to a multiple of align (a power of two);
// ok is false when that overflows.
func hbmAlignUp(x, align int64) (int64, bool) {
	if x > math.MaxInt64-(align-1) {
		return 0, false
	}
	return (x + align - 1) &^ (align - 1), true
}

// firstFit finds the lowest aligned address where size bytes fit between
// the live regions, and the index in h.regions where the new region goes.
func (h *HBM) firstFit(size, align int64) (addr int64, at int, ok bool) {
	prev := int64(0)
	for i, r := range h.regions {
		if a, ok := hbmAlignUp(prev, align); ok && a <= r.addr && size <= r.addr-a {
			return a, i, true
		}
		prev = r.end()
	}
	if a, ok := hbmAlignUp(prev, align); ok && a <= h.capacity && size <= h.capacity-a {
		return a, len(h.regions), true
	}
	return 0, 0, false
}

// fitsCompacted reports whether size bytes aligned to align would fit
// once the live regions are compacted: in the gap at the top, or in the
// padding a strongly aligned region leaves below itself.
func (h *HBM) fitsCompacted(size, align int64) bool {
	fits := func(lo, hi int64) bool {
		a, ok := hbmAlignUp(lo, align)
		return ok && a <= hi && size <= hi-a
	}
	end := int64(0)
	for _, r := range h.regions {
		to, _ := hbmAlignUp(end, r.align) // <= r.addr: r.addr is aligned and >= end
		if fits(end, to) {
			return true
		}
		end = to + r.size
	}
	return fits(end, h.capacity)
}

// hbmMove is one region a compaction moved.
type hbmMove struct{ from, to, size int64 }

// compact slides every live region down, in address order, to the lowest
// address its alignment allows after the previous one, with its bytes.
func (h *HBM) compact() []hbmMove {
	var moves []hbmMove
	end := int64(0)
	for i := range h.regions {
		r := &h.regions[i]
		to, _ := hbmAlignUp(end, r.align)
		if to < r.addr {
			h.moveBytes(r.addr, to, r.size)
			moves = append(moves, hbmMove{r.addr, to, r.size})
			h.bytesMoved += r.size
			r.addr = to
		}
		end = r.end()
	}
	h.pages.DropAll(h.touchesLive)
	h.compactions++
	return moves
}

func (h *HBM) notify(moves []hbmMove) {
	if h.onMove == nil {
		return
	}
	for _, m := range moves {
		h.onMove(m.from, m.to, m.size)
	}
}

// moveBytes copies size bytes from from down to to (to < from) and resets
// the bytes of the source that the copy did not cover.
func (h *HBM) moveBytes(from, to, size int64) {
	h.pages.MoveDown(from, to, size, h.Fill)
	h.pages.Reset(max(from, to+size), from+size, h.Fill)
}

// touchesLive reports whether page p holds a byte of a live region.
func (h *HBM) touchesLive(p int64) bool {
	lo, hi := p*exec.PageSize, (p+1)*exec.PageSize
	// The first region ending above lo is the only candidate.
	i, _ := slices.BinarySearchFunc(h.regions, lo, func(r hbmRegion, lo int64) int {
		if r.end() <= lo {
			return -1
		}
		return 1
	})
	return i < len(h.regions) && h.regions[i].addr < hi
}

// Free implements exec.Memory: it releases the live region at addr.
func (h *HBM) Free(addr int64) error {
	i, ok := h.find(addr)
	if !ok {
		return fmt.Errorf("tpu: hbm: free of %d, which is not the base of a live region", addr)
	}
	r := h.regions[i]
	h.regions = slices.Delete(h.regions, i, i+1)
	h.inUse -= r.size
	h.pages.Reset(r.addr, r.end(), h.Fill)
	h.pages.Drop(r.addr, r.end(), h.touchesLive)
	return nil
}

// find returns the index of the live region based at addr.
func (h *HBM) find(addr int64) (int, bool) { return exec.FindRegion(h.regions, addr) }

// check reports an access of n bytes at addr outside every live region.
func (h *HBM) check(what string, n int, addr int64) error {
	if !exec.InRegion(h.regions, addr, n) {
		return fmt.Errorf("%w: tpu: hbm %s of %d bytes at %d", exec.ErrOutOfBounds, what, n, addr)
	}
	return nil
}

// ReadAt implements exec.Memory.
func (h *HBM) ReadAt(p []byte, addr int64) error {
	if err := h.check("read", len(p), addr); err != nil {
		return err
	}
	h.pages.Read(p, addr, h.Fill)
	return nil
}

// WriteAt implements exec.Memory.
func (h *HBM) WriteAt(p []byte, addr int64) error {
	if err := h.check("write", len(p), addr); err != nil {
		return err
	}
	h.pages.Write(p, addr, h.Fill)
	return nil
}
