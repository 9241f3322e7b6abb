package tpu

import (
	"fmt"

	"github.com/hlomem/hlomem/exec"
)

// Chip is the memory of one TPU TensorCore as a running program sees it:
// HBM, VMEM and SMEM, each a compacting allocator of its own capacity
// (HBM), in one address space where VMEM starts at VMEMBase and SMEM at
// SMEMBase. It implements exec.SpacedMemory, so exec.Execute puts
// the plan's allocations of color 1 in VMEM and of color 2 in SMEM (and
// fails, as the chip would, when they do not fit there), and
// exec.Mover, forwarding the moves of every space's compactions.
type Chip struct {
	hbm, vmem, smem *HBM
}

// The bases of VMEM and SMEM in a Chip's address space; HBM is
// [0, capacity), below VMEMBase.
const (
	VMEMBase = int64(1) << 61
	SMEMBase = VMEMBase + int64(1)<<60
)

var (
	_ exec.SpacedMemory = (*Chip)(nil)
	_ exec.Mover        = (*Chip)(nil)
)

// NewChip returns the empty memories of gen: HBM, VMEM and SMEM of its
// sizes (a space of size 0 takes no allocation); bytes never written read
// as fill.
func NewChip(gen Generation, fill byte) (*Chip, error) {
	switch {
	case gen.HBM <= 0 || gen.HBM >= VMEMBase:
		return nil, fmt.Errorf("tpu: chip: HBM of %d bytes, want 1 to %d", gen.HBM, VMEMBase-1)
	case gen.VMEM < 0 || gen.VMEM >= SMEMBase-VMEMBase:
		return nil, fmt.Errorf("tpu: chip: VMEM of %d bytes, want 0 to %d", gen.VMEM, SMEMBase-VMEMBase-1)
	case gen.SMEM < 0 || gen.SMEM > VMEMBase/2:
		return nil, fmt.Errorf("tpu: chip: SMEM of %d bytes, want 0 to %d", gen.SMEM, VMEMBase/2)
	}
	c := &Chip{}
	for _, sp := range []struct {
		m    **HBM
		size int64
		name string
	}{{&c.hbm, gen.HBM, "hbm"}, {&c.vmem, gen.VMEM, "vmem"}, {&c.smem, gen.SMEM, "smem"}} {
		h := &HBM{capacity: sp.size, space: sp.name, Fill: fill}
		*sp.m = h
	}
	return c, nil
}

// HBM, VMEM and SMEM return the chip's allocators (addresses local to
// each).
func (c *Chip) HBM() *HBM  { return c.hbm }
func (c *Chip) VMEM() *HBM { return c.vmem }
func (c *Chip) SMEM() *HBM { return c.smem }

// space returns the allocator holding addr and its base.
func (c *Chip) space(addr int64) (*HBM, int64) {
	switch {
	case addr >= SMEMBase:
		return c.smem, SMEMBase
	case addr >= VMEMBase:
		return c.vmem, VMEMBase
	}
	return c.hbm, 0
}

// Allocate implements exec.Memory: an allocation in HBM.
func (c *Chip) Allocate(size, align int64) (int64, error) { return c.hbm.Allocate(size, align) }

// AllocateIn implements exec.SpacedMemory: color 0 is HBM, 1 VMEM and
// 2 SMEM; any other memory space is an error.
func (c *Chip) AllocateIn(color, size, align int64) (int64, error) {
	var h *HBM
	var base int64
	switch color {
	case HBMSpace:
		return c.hbm.Allocate(size, align)
	case VMEMSpace:
		h, base = c.vmem, VMEMBase
	case SMEMSpace:
		h, base = c.smem, SMEMBase
	default:
		return 0, fmt.Errorf("tpu: chip: no memory space %d (0 hbm, 1 vmem, 2 smem)", color)
	}
	if h.capacity <= 0 {
		return 0, &OOMError{Requested: size, Capacity: 0, Space: h.space}
	}
	addr, err := h.Allocate(size, align)
	if err != nil {
		return 0, err
	}
	return base + addr, nil
}

// Free implements exec.Memory.
func (c *Chip) Free(addr int64) error {
	h, base := c.space(addr)
	return h.Free(addr - base)
}

// ReadAt implements exec.Memory.
func (c *Chip) ReadAt(p []byte, addr int64) error {
	h, base := c.space(addr)
	return h.ReadAt(p, addr-base)
}

// WriteAt implements exec.Memory.
func (c *Chip) WriteAt(p []byte, addr int64) error {
	h, base := c.space(addr)
	return h.WriteAt(p, addr-base)
}

// OnMove implements exec.Mover: the moves of every space's
// compactions, in the chip's addresses.
func (c *Chip) OnMove(f func(from, to, size int64)) {
	for _, sp := range []struct {
		h    *HBM
		base int64
	}{{c.hbm, 0}, {c.vmem, VMEMBase}, {c.smem, SMEMBase}} {
		if f == nil {
			sp.h.OnMove(nil)
			continue
		}
		base := sp.base
		sp.h.OnMove(func(from, to, size int64) { f(base+from, base+to, size) })
	}
}
