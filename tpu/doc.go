// Package tpu models TPU-like memory: the tiled layouts XLA:TPU gives
// arrays (shapes padded to tiles of 8×128 and friends), chip generations
// with their HBM and VMEM sizes, memory-space assignment of values to the
// small fast VMEM (S(1)) with prefetches, compile-time out-of-memory
// reports that read like XLA:TPU's, and an HBM allocator for running
// programs that compacts live buffers when a request fails from
// fragmentation.
//
// # What it owns
//
//   - Layouts (layout.go): DefaultLayout chooses the tiles XLA:TPU gives an
//     array that has none, by element width and rank and by generation
//     (Tiles); ApplyLayouts gives them to every shape of a module, the
//     pipeline's target-layout pass for the TPU.
//   - Generations (device.go): the presets (V4, V5e, V5p, V6e, V7x) with the
//     HBM one JAX device holds, a TensorCore's VMEM and SMEM, and the
//     16-bit tiling; GenerationByName also reads tpu-custom:HBM[:VMEM[:SMEM]].
//   - Memory spaces (spaces.go): AssignSpaces, a memory-space assignment in
//     the manner of XLA's MSA, smaller and safe: scalars to SMEM (S(2)),
//     values of the entry to VMEM (S(1)), produced there or brought in and
//     out by copy-start/copy-done pairs, each decision reported
//     (SpaceReport).
//   - Compile-time reports (padding.go): CompileOOM, XLA:TPU's "Ran out of
//     memory in memory space hbm" with its breakdown; LiveBytes, the
//     unpadded and padded bytes live at each step.
//   - Run-time memory (hbm.go, chip.go): HBM, a first-fit allocator that
//     compacts (slides live regions down) when a request fails for
//     fragmentation alone, and tells the owner of every move; Chip, the HBM,
//     VMEM and SMEM of one TensorCore as one address space. Both implement
//     exec.Memory (Chip exec.SpacedMemory, both exec.Mover), so exec.Execute
//     runs a plan on them as on the host.
//
// # Invariants
//
//   - Padded sizes are hlo.ByteSize's (XLA's ShapeUtil::ArraySize, which
//     honours the first tile and L(n)): this package only chooses the
//     tiles. A layout that has tiles already is kept.
//   - tpu imports hlo, liveness, assign and exec, never the pipeline:
//     AssignSpaces works on a clone of the module and prepares and
//     replans it through the functions SpaceOptions gives (package compile
//     supplies them), so the caller's module is left as it was.
//   - The plan colors are the memory spaces: 0 HBM, 1 VMEM, 2 SMEM
//     (HBMSpace, VMEMSpace, SMEMSpace), as XLA names them.
//   - An HBM allocation that no placement could hold, even after
//     compaction, fails with an *OOMError and leaves the memory as it was;
//     bytes outside every live region read as the fill byte.
//
// # Entry points
//
// DefaultLayout and ApplyLayouts; GenerationByName; AssignSpaces;
// CompileOOM and LiveBytes; NewHBM and NewChip.
package tpu
