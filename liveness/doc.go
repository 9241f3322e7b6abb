// Package liveness computes when every buffer of an HLO module is live, the
// way XLA's buffer assignment sees it, and chooses memory-minimising
// schedules for modules that have none.
//
// # Model
//
// Analyze follows three XLA analyses in turn:
//
//   - values (HloDataflowAnalysis, SSA form): every position (instruction,
//     shape index) outside fusion bodies holds one Value; see values.go for
//     which instructions define values and which forward them, and for the
//     phi values of loops and conditionals;
//   - buffers (HloAliasAnalysis): values that must share an address, joined
//     through donation (input_output_alias), while and conditional plumbing
//     and in-place operations; see buffers.go;
//   - live ranges (HloLiveRange, module scoped): the schedule is flattened
//     across called computations (callees of call and conditional before
//     the call, a while's condition and body before the while), time is the
//     position in that sequence, and each value lives from its definition
//     to its last use or position; see analysis.go.
//
// Ranges are inclusive at both ends, as XLA prints them; Range.HalfOpen
// gives the [start, end) intervals the packers use. Values and buffers are
// numbered densely; IDs follow XLA's creation order as closely as the text
// allows.
//
// # Invariants
//
// Within one buffer, value ranges are chained and disjoint after
// normalisation. Every sequence in a Schedule is a topological order of its
// computation that respects control predecessors. LowerBound is the largest
// total size of buffers live at one time step: no packing of those buffers
// can be smaller.
//
// The analysis matches XLA's own HloLiveRange dump (sequence, ranges and
// peak) on every paired XLA:GPU module of the corpus; see parity_test.go.
package liveness
