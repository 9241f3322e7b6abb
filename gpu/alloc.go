package gpu

import (
	"fmt"
	"io"
	"time"
)

// Allocator is a device memory allocator as the client uses it: the BFC
// arena, the platform allocator (the driver, call by call) or the
// stream-ordered cuda_async pool. Addresses are device addresses in one
// simulated address space; no bytes are stored.
type Allocator interface {
	// Name is the allocator's name as XLA logs it ("GPU_0_bfc").
	Name() string
	// Allocate reserves at least size bytes (size >= 0) and returns the
	// address. When the memory cannot be found the error is an *OOMError.
	Allocate(size int64) (addr int64, err error)
	// Free releases the allocation at addr.
	Free(addr int64) error
	// Size is the number of bytes the allocation at addr holds (the
	// request after the allocator's rounding), and whether addr is a live
	// allocation.
	Size(addr int64) (int64, bool)
	// Stats are the allocator's counters, as JAX's memory_stats().
	Stats() Stats
	// Dump writes the allocator's state as XLA logs it when an
	// allocation of request bytes fails (for BFC: the bins, the chunks of
	// each region, the in-use chunks by size, the totals and the stats).
	Dump(w io.Writer, request int64) error
	// Occupancy is a 100-character map of the memory the allocator holds
	// from the device, lowest address first: '*' bytes in use, 'x' bytes
	// lost to rounding, '_' free.
	Occupancy() string
}

// Stats are an allocator's counters, named as JAX's memory_stats() keys.
type Stats struct {
	NumAllocs        int64 `json:"num_allocs"`
	BytesInUse       int64 `json:"bytes_in_use"`
	PeakBytesInUse   int64 `json:"peak_bytes_in_use"`
	LargestAllocSize int64 `json:"largest_alloc_size"`
	// BytesLimit is the most the allocator may hold from the device.
	BytesLimit int64 `json:"bytes_limit"`
	// BytesReserved is what the allocator holds from the device now (for
	// BFC its regions; for the platform allocator what is in use; for
	// cuda_async the pool), PeakBytesReserved its peak.
	BytesReserved     int64 `json:"bytes_reserved"`
	PeakBytesReserved int64 `json:"peak_bytes_reserved"`
	// LargestFreeBlockBytes is the largest request that would succeed
	// without asking the device for more memory.
	LargestFreeBlockBytes int64 `json:"largest_free_block_bytes"`
	// PoolBytes is what the allocator's pool holds (BFC regions,
	// cuda_async pool; for the platform allocator the bytes in use),
	// PeakPoolBytes its peak.
	PoolBytes     int64 `json:"pool_bytes"`
	PeakPoolBytes int64 `json:"peak_pool_bytes"`
	// DriverCalls counts the calls into the device driver (cuMemAlloc,
	// cuMemFree, pool trims), DriverTime what they cost at the modelled
	// cost per call.
	DriverCalls int64         `json:"driver_calls"`
	DriverTime  time.Duration `json:"driver_time_ns"`
}

// Fragmentation is BFC's measure: the share of the free bytes in the pool
// that lie outside its largest free block,
// (pool − in use − largest free block) / (pool − in use); 0 when the pool
// has no free bytes.
func (s Stats) Fragmentation() float64 {
	free := s.PoolBytes - s.BytesInUse
	if free <= 0 {
		return 0
	}
	f := float64(free-s.LargestFreeBlockBytes) / float64(free)
	return max(f, 0)
}

// WriteXLA writes the stats block XLA logs after an allocator dump.
func (s Stats) WriteXLA(w io.Writer) error {
	_, err := fmt.Fprintf(w, "Limit:            %20d\nInUse:            %20d\nMaxInUse:         %20d\nNumAllocs:        %20d\nMaxAllocSize:     %20d\nReserved:         %20d\nPeakReserved:     %20d\nLargestFreeBlock: %20d\n",
		s.BytesLimit, s.BytesInUse, s.PeakBytesInUse, s.NumAllocs, s.LargestAllocSize, s.BytesReserved, s.PeakBytesReserved, s.LargestFreeBlockBytes)
	return err
}

// OOMError is an allocation the allocator could not serve, with what the
// user needs to act on it.
type OOMError struct {
	Allocator string
	// Requested is the size asked for, Rounded what the allocator would
	// have reserved for it.
	Requested, Rounded int64
	// Stats are the allocator's counters when the allocation failed.
	Stats Stats
	// Free is the memory the allocator could still have handed out in
	// total: its free bytes plus what it may still take from the device.
	// When it is at least Rounded, the request failed from fragmentation.
	Free int64
	// Dump is the allocator's state (Allocator.Dump) and Occupancy its map.
	Dump      string
	Occupancy string

	// Op names what asked (a program's temp allocation, an output, an
	// array put on the device); the client sets it.
	Op string
	// Program names the program whose allocation failed, Peak lists the
	// largest of what occupies memory at its peak (step PeakStep of
	// Steps, PeakBytes in all); the client sets them.
	Program         string
	Peak            []PeakBuffer
	PeakStep, Steps int
	PeakBytes       int64
}

// Fragmented reports whether the total free memory would have been
// enough: the allocation failed because no free block was large enough.
func (e *OOMError) Fragmented() bool { return e.Free >= e.Rounded }

// PeakBuffer is one of what occupies memory at a program's peak
// (assign.Occupant): an allocation, or a buffer's chunk of the temp
// allocation, named after its largest buffer.
type PeakBuffer struct {
	Name   string // the HLO value, with "(+N)" when N more share the bytes
	Shape  string
	Kind   string // the allocation's kind (assign.Allocation.Kind)
	Bytes  int64
	OpName string // metadata op_name
	Source string // file:line, from metadata or the stack-frame tables
}
