package exec

import (
	"errors"
	"fmt"
)

// Memory is where a planned run keeps its bytes: the seam the gpu and tpu
// packages plug their allocators into. Addresses are plain byte offsets in
// one address space; a region is what Allocate hands out.
type Memory interface {
	// Allocate reserves size bytes aligned to align (a power of two, or 0
	// for no constraint) and returns the region's base address.
	Allocate(size, align int64) (addr int64, err error)
	// Free releases the region that starts at addr.
	Free(addr int64) error
	// ReadAt fills p from the bytes at addr.
	ReadAt(p []byte, addr int64) error
	// WriteAt copies p to the bytes at addr.
	WriteAt(p []byte, addr int64) error
}

// SpacedMemory is a Memory with several memory spaces (HLO's S(n), the
// plan's colors), as a TPU has HBM, VMEM and SMEM: Execute puts each
// allocation of a color other than 0 in that space with AllocateIn (color 0
// with Allocate). Addresses of every space are one address space: Free,
// ReadAt and WriteAt take any of them.
type SpacedMemory interface {
	Memory
	// AllocateIn is Allocate in memory space color.
	AllocateIn(color, size, align int64) (addr int64, err error)
}

// ErrOutOfBounds is returned for an access outside every allocated region.
var ErrOutOfBounds = errors.New("runtime: access outside any allocated region")

// HostArena is the default Memory: a bump allocator over one address
// space whose bytes are backed by pages made on first write (Pages), so
// an arena of 16 GB that a run touches sparsely costs what it touches.
// Reads of bytes never written give Fill. Accesses must fall inside a
// live region.
type HostArena struct {
	// Fill is what bytes never written read as (0 unless set). Device
	// memory holds whatever was there before; a fill other than zero
	// (Execute's default arena uses PoisonByte) makes a read of bytes no
	// value wrote show in the numbers instead of passing for a zero.
	Fill byte

	next    int64
	regions map[int64]int64 // base -> size, live regions
	pages   Pages
	bases   []int64 // sorted bases of live and freed regions, for lookups
}

// NewHostArena returns an empty arena.
func NewHostArena() *HostArena {
	return &HostArena{regions: map[int64]int64{}}
}

// Allocate implements Memory.
func (h *HostArena) Allocate(size, align int64) (int64, error) {
	if size < 0 {
		return 0, fmt.Errorf("runtime: allocate %d bytes", size)
	}
	if align < 0 || align&(align-1) != 0 {
		return 0, fmt.Errorf("runtime: alignment %d is not a power of two", align)
	}
	if align == 0 {
		align = 1
	}
	base := (h.next + align - 1) &^ (align - 1)
	if base+size < base {
		return 0, fmt.Errorf("runtime: allocate %d bytes: address space exhausted", size)
	}
	h.next = base + size
	h.regions[base] = size
	h.bases = append(h.bases, base)
	return base, nil
}

// Free implements Memory.
func (h *HostArena) Free(addr int64) error {
	size, ok := h.regions[addr]
	if !ok {
		return fmt.Errorf("runtime: free of %d, which is not a live region", addr)
	}
	delete(h.regions, addr)
	// Pages never written have nothing to drop; pages shared with a live
	// neighbour stay.
	h.pages.Drop(addr, addr+size, func(p int64) bool { return h.pageShared(p, addr, size) })
	return nil
}

func (h *HostArena) pageShared(p, base, size int64) bool {
	lo, hi := p*PageSize, (p+1)*PageSize
	for b, s := range h.regions {
		if b < hi && b+s > lo && !(b == base && s == size) {
			return true
		}
	}
	return false
}

// inside reports whether [addr, addr+n) lies inside one live region.
func (h *HostArena) inside(addr, n int64) bool {
	// Regions are handed out in increasing address order, so the
	// candidate is the last base at or below addr.
	lo, hi := 0, len(h.bases)
	for lo < hi {
		m := (lo + hi) / 2
		if h.bases[m] <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return false
	}
	base := h.bases[lo-1]
	size, ok := h.regions[base]
	return ok && addr >= base && addr+n <= base+size
}

// check reports an access of n bytes at addr outside every live region.
func (h *HostArena) check(what string, n int, addr int64) error {
	if n != 0 && !h.inside(addr, int64(n)) {
		return fmt.Errorf("%w: %s of %d bytes at %d", ErrOutOfBounds, what, n, addr)
	}
	return nil
}

// ReadAt implements Memory.
func (h *HostArena) ReadAt(p []byte, addr int64) error {
	if err := h.check("read", len(p), addr); err != nil {
		return err
	}
	h.pages.Read(p, addr, h.Fill)
	return nil
}

// WriteAt implements Memory.
func (h *HostArena) WriteAt(p []byte, addr int64) error {
	if err := h.check("write", len(p), addr); err != nil {
		return err
	}
	h.pages.Write(p, addr, h.Fill)
	return nil
}

// PoisonByte fills the bytes of Execute's default arena before any value
// is written: 0xA5 repeated is a large negative number in every integer
// type and a finite, unlikely value in every float type, so a read of
// bytes no value wrote gives a wrong output rather than a plausible zero.
const PoisonByte = 0xA5
