// Package gpu models the memory of a GPU as JAX and XLA use it, so that a
// user sees before touching a GPU what JAX's memory settings do to a
// program.
//
// What it owns:
//   - Devices and their capacities (Device, DeviceByName), and the client
//     settings JAX reads from the environment (ClientConfig,
//     ConfigFromEnv: XLA_PYTHON_CLIENT_PREALLOCATE, _MEM_FRACTION,
//     _ALLOCATOR).
//   - The client allocators that serve a compiled program's allocations
//     (the Allocator interface): BFC with XLA's rounding, bins and
//     region growth (NewBFC), the platform allocator (NewPlatform) and
//     the cuda_async pool (NewCudaAsync).
//   - A Client that puts arrays on the device, runs compiled programs (a
//     Program made from an assign.Assignment) as XLA:GPU allocates for
//     them, donates and defragments; Workloads that replay a session.
//   - Out-of-memory errors (OOMError) that read like XLA's, with the
//     cause (too little memory, or fragmentation) and the program's
//     largest buffers.
//   - Memory, the exec.Memory over an allocator: exec.Execute runs a plan
//     on the BFC model as it runs one on tpu.HBM, with bytes backed
//     sparsely and every access checked against the sizes asked for.
//
// Invariants: addresses are simulated (Client and the allocators store no
// bytes; Memory stores only the pages a run touches); an allocator never
// hands out overlapping live chunks; an allocation that does not fit is
// an *OOMError, never a panic. Plans come from package compile (or
// assign) and are taken as they are: this package models where they land,
// it does not re-plan them.
package gpu
