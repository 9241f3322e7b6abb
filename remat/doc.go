// Package remat is XLA's rematerialization pass (HloRematerialization,
// xla/service/hlo_rematerialization.cc) on a scheduled hlomem module: a
// memory-usage tracker replays each computation's sequence, and wherever
// usage exceeds the limit the cheapest single instruction (the GPU
// settings block_size_limit=1, min_remat_size=0; cost memory_limit /
// memory_reduced, 0 when no user is placed yet) is recomputed right
// before its first unplaced use (strategy kRecompute, algorithm
// kAlwaysRemat), until usage fits or no candidate is left.
//
// Sizes are hlo.BufferSize, the sizes hlomem's liveness and buffer
// assignment use. The tracker's measure is XLA's: the peak over the
// entry sequence of the bytes of live values that are neither entry
// parameters nor module outputs (those are the caller's), plus the
// peaks of the computations a while, call or conditional runs, added at
// the call site, plus the module's output size once.
package remat
