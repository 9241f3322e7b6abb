package gpu

// The device memory a running program reads and writes: the regions a
// client allocator hands out, with bytes behind them.
//
// The allocators of this package (BFC, the platform allocator, the
// cuda_async pool) model where allocations go and store no bytes. Memory
// adds the bytes, so that exec.Execute runs a plan on the modelled
// allocator as it runs one on the tpu package's HBM: each allocation of the
// plan is asked of the allocator, in the plan's order, at the address the
// allocator picks (best fit with coalescing for BFC), and each value is
// read from and written to its slot there. A plan that does not fit fails
// as on the device, with the allocator's *OOMError.
//
// Bytes are backed sparsely by exec.Pages, as exec.HostArena's are, so an
// 80 GiB arena costs what a run touches. Accesses are checked against the
// live regions at the sizes asked for (not the allocator's rounding: bytes
// past a request belong to no value). Unlike HostArena, whose addresses
// only grow, an allocator hands freed bytes out again; Free resets the
// bytes it releases to Fill, so a region read before it is written reads
// Fill wherever it lies, as a fresh one does.

import (
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/exec"
)

// memRegion is a live region of a Memory: size bytes at addr, inside the
// allocation the allocator made at base (below addr when an alignment
// above the allocator's own was asked for).
type memRegion struct{ addr, size, base int64 }

func (r memRegion) end() int64 { return r.addr + r.size }

// Bounds implements exec.Region.
func (r memRegion) Bounds() (addr, size int64) { return r.addr, r.size }

// Memory is a GPU's memory as a running program sees it: an Allocator's
// allocations with their bytes. It implements exec.Memory. It is not safe
// for concurrent use.
type Memory struct {
	// Fill is what bytes never written read as (0 unless set); set it
	// before the first Allocate.
	Fill byte

	alloc   Allocator
	regions []memRegion // live regions, sorted by address
	pages   exec.Pages
}

var _ exec.Memory = (*Memory)(nil)

// NewMemory returns a Memory whose regions the allocator a hands out, a
// BFC arena (NewBFC, or a Client's Alloc) as much as the platform or the
// cuda_async allocator; bytes never written read as fill. The memory
// shares a with whatever else allocates from it: a Client's arrays and a
// run's allocations then compete for the same arena, as on the device.
func NewMemory(a Allocator, fill byte) *Memory {
	return &Memory{Fill: fill, alloc: a}
}

// Allocator returns the allocator the memory's regions come from.
func (m *Memory) Allocator() Allocator { return m.alloc }

// allocAlign is the alignment Memory expects of its allocator's
// addresses: BFC's 256-byte granule, which every allocator of this package
// gives (the platform and cuda_async allocators align to 512).
const allocAlign = MinAllocationSize

// Allocate implements exec.Memory: it asks the allocator for size bytes
// aligned to align (0 or a power of two). The allocators align to 256
// bytes, so an alignment up to 256 (exec.Execute asks for 256) costs
// nothing; for a larger one Allocate asks for align-256 bytes more and
// places the region at the first aligned address inside. When the
// allocator cannot serve the request the error is its own (an *OOMError).
func (m *Memory) Allocate(size, align int64) (int64, error) {
	switch {
	case size < 0:
		return 0, fmt.Errorf("gpu: %s: allocate %d bytes", m.alloc.Name(), size)
	case align < 0 || align&(align-1) != 0:
		return 0, fmt.Errorf("gpu: %s: alignment %d is not a power of two", m.alloc.Name(), align)
	}
	pad := max(align-allocAlign, 0)
	if size > bfcMaxRoundable-pad {
		return 0, fmt.Errorf("gpu: %s: allocate %d bytes aligned to %d: too large", m.alloc.Name(), size, align)
	}
	base, err := m.alloc.Allocate(size + pad)
	if err != nil {
		return 0, err
	}
	addr := base
	if align > 1 {
		addr = (base + align - 1) &^ (align - 1)
	}
	if addr-base > pad {
		// An Allocator of another package, with a smaller alignment.
		m.alloc.Free(base)
		return 0, fmt.Errorf("gpu: %s: allocation at %#x is not aligned to %d bytes", m.alloc.Name(), base, allocAlign)
	}
	i, found := m.find(addr)
	if found || i < len(m.regions) && m.regions[i].addr < addr+size || i > 0 && m.regions[i-1].end() > addr {
		// Two live allocations of one allocator never overlap.
		return 0, fmt.Errorf("gpu: %s: internal error: allocation of %d bytes at %#x overlaps a live region", m.alloc.Name(), size, addr)
	}
	m.regions = slices.Insert(m.regions, i, memRegion{addr: addr, size: size, base: base})
	return addr, nil
}

// Free implements exec.Memory: it gives the region based at addr back to
// the allocator and resets its bytes to Fill.
func (m *Memory) Free(addr int64) error {
	i, ok := m.find(addr)
	if !ok {
		return fmt.Errorf("gpu: %s: free of %#x, which is not the base of a live region", m.alloc.Name(), addr)
	}
	r := m.regions[i]
	if err := m.alloc.Free(r.base); err != nil {
		return err
	}
	m.regions = slices.Delete(m.regions, i, i+1)
	m.pages.Reset(r.addr, r.end(), m.Fill)
	m.pages.Drop(r.addr, r.end(), m.touchesLive)
	return nil
}

// find returns the index of the live region based at addr, or where one
// based there would go.
func (m *Memory) find(addr int64) (int, bool) { return exec.FindRegion(m.regions, addr) }

// touchesLive reports whether page p holds a byte of a live region.
func (m *Memory) touchesLive(p int64) bool {
	lo, hi := p*exec.PageSize, (p+1)*exec.PageSize
	// The first region ending above lo is the only candidate.
	i, _ := slices.BinarySearchFunc(m.regions, lo, func(r memRegion, lo int64) int {
		if r.end() <= lo {
			return -1
		}
		return 1
	})
	return i < len(m.regions) && m.regions[i].addr < hi
}

// check reports an access of n bytes at addr outside every live region.
func (m *Memory) check(what string, n int, addr int64) error {
	if !exec.InRegion(m.regions, addr, n) {
		return fmt.Errorf("%w: gpu: %s: %s of %d bytes at %#x", exec.ErrOutOfBounds, m.alloc.Name(), what, n, addr)
	}
	return nil
}

// ReadAt implements exec.Memory.
func (m *Memory) ReadAt(p []byte, addr int64) error {
	if err := m.check("read", len(p), addr); err != nil {
		return err
	}
	m.pages.Read(p, addr, m.Fill)
	return nil
}

// WriteAt implements exec.Memory.
func (m *Memory) WriteAt(p []byte, addr int64) error {
	if err := m.check("write", len(p), addr); err != nil {
		return err
	}
	m.pages.Write(p, addr, m.Fill)
	return nil
}
