// Package assign gives the buffers of an HLO module their offsets in
// memory, as XLA's buffer assignment does. It has two layers:
//
//   - this package, the XLA layer: it takes a liveness analysis and makes
//     allocations the way XLA's BufferAssigner does (entry parameters,
//     constants, maybe-live-out buffers, tuple index tables, operand-buffer
//     reuse, thread-local computations), replays the remaining temporaries
//     of each color as XLA's HeapSimulator does (heap_replay.go), packs
//     them into one preallocated-temp heap per color and combines the temp
//     allocations (hlo_assign.go); it writes XLA's buffer-assignment dump,
//     its memory-usage report, JSON and the heaps as CSV;
//   - package assign/pack, the packing layer: the packers over plain
//     intervals ([Start, End) time, size, alignment, must-share groups),
//     which never see the IR. This package turns each temp heap into a
//     pack.Problem and packs it with pack.Pack, or with XLA's own heap
//     algorithm (pack.XLAHeap) for the "xla" algorithm.
//
// # Targets
//
// What depends on the backend is in a Target, plain data that a backend
// package can supply: the temp alignment, the byte size of a shape, and
// the backend's rule for a fusion output taking over an operand's buffer
// (share.go). GPU, CPU and TPU are predefined; TargetByName looks them up
// as hlomem assign --target does.
//
// # Checks
//
// Check verifies an Assignment without the code that made it (check.go):
// every value has one slot inside its allocation, the values of a buffer
// share it, temp offsets are aligned, and overlapping slots hold values
// that are not live at once. Each temp heap's packing also passes
// pack.Check, which shares no code with the packers.
//
// # Reading XLA's dump
//
// ReadXLA reads XLA's own buffer-assignment dump (xla_read.go), the text
// WriteXLA writes, into plain data: allocations with their values and
// offsets, the total, and the HloLiveRange block. It is strict, with
// positioned errors, and never panics. XLAAssignment.Locate matches the
// dump's values with an analysis of the module by instruction name and
// shape index, so that a plan can be compared with XLA's value by value.
//
// # Unverified input
//
// Assign takes an analysis made by liveness.Analyze (which verified the
// module and refused what it cannot plan) of the module as it still is. It
// refuses a nil analysis, and checks again, with positioned errors, for an
// opcode it does not know and a value whose byte size cannot be computed,
// which would otherwise be planned in 0 bytes without Check noticing
// (validate.go). Check takes an Assignment made by Assign.
package assign
