// Package liveness computes when every buffer of an HLO module is live, the
// way XLA's buffer assignment sees it, under a schedule of its
// computations (package schedule chooses memory-minimising ones for
// modules that have none).
//
// # Model
//
// Analyze follows three XLA analyses in turn:
//
//   - values (HloDataflowAnalysis, SSA form): every position (instruction,
//     shape index) outside fusion bodies holds at most one Value; values.go
//     says which instructions define values and which forward them, and
//     dataflow.go how XLA's worklist propagates them and makes phi values
//     where loop state and conditional results merge (phigraph.go removes
//     the phis that stand for a single value);
//   - buffers (HloAliasAnalysis): values that must share an address, joined
//     through donation (input_output_alias), while and conditional plumbing
//     and in-place operations; see buffers.go;
//   - live ranges (HloLiveRange, module scoped): the schedule is flattened
//     across called computations (callees of call and conditional before
//     the call, a while's condition and body before the while, an async
//     computation before its start), time is the position in that
//     sequence, and each value lives from its definition to its last use
//     or position, a value of an async computation at least until the
//     async-done; see analysis.go. AsyncPairs (async.go) exposes each
//     start/done pair and the buffers it keeps in flight.
//
// Ranges are inclusive at both ends, as XLA prints them; Range.HalfOpen
// gives the [start, end) intervals the packers use. Values and buffers are
// numbered densely (ID). XLAID is the number XLA prints: phis get exactly
// XLA's numbers; other values are numbered computation by computation in
// XLA's order within each computation, the order of the computations
// themselves approximated (valueOrder: XLA uses its in-memory order, which
// no dump records).
//
// # Invariants
//
// Within one buffer, value ranges are chained and disjoint after
// normalisation. Every sequence in a Schedule is a topological order of its
// computation that respects control predecessors. LowerBound is below the
// total of every plan of the analysed buffers under the schedule, whatever
// in-place reuse the plan makes (LowerBoundWith, for one target's reuse
// rule); XLAPeak is XLA's report of the peak moment, not a bound (see
// lowerbound.go and README, "Peaks and bounds").
//
// The analysis matches XLA's own HloLiveRange dump (sequence, ranges and
// peak) on every paired module of the corpus, torch-xla and JAX, XLA:GPU
// and XLA:CPU, loops, conditionals and async collectives included; see
// parity_test.go.
//
// # Unverified input
//
// Analyze verifies its module (hlo.Verify) and refuses, as an hlo.ErrorList
// of positioned errors, an invalid module, an opcode this package does not
// know (how it uses and aliases buffers is unknown with it) and a shape
// whose byte size cannot be computed (an unbounded dimension, unless the
// caller asks for AllowUnbounded: XLA's HloLiveRange computes live ranges
// for f32[?] and only gives up on the peak, and so does WriteXLA); it also
// requires a flat call graph (hlo.FlattenCallGraph) and says so when it is
// not. AnalyzeInsertingCopies and InsertCopies make the same checks on the
// module they are given (later rounds analyse only what their own copies
// changed); AnalyzeUnscheduled and InsertCopiesUnscheduled make those the
// Check they are given asks for. ModuleOrder, PostOrder,
// InstructionPostOrder (and hlo's ComputationPostOrder) take any module without
// panicking, but on an invalid one their result may not be a schedule:
// Schedule.Validate, which takes any module, says whether it is. What
// takes an *Analysis (Reschedule, Layout, Install, Events, LowerBound,
// the writers, and the schedulers of package schedule) relies on Analyze
// having checked the module, which must not change afterwards other than
// through this package (copy insertion, RepairInterference).
//
// # Schedules
//
// The analysis lays a module out under a Schedule: its own order
// (ModuleOrder, LayoutModuleOrder), XLA's post-order when the text is not
// an order (PostOrder), or any schedule a caller gives Reschedule. The
// memory-minimising schedulers (XLA's list, DFS and post-order heuristics,
// the search below them and the exact search) are package schedule's,
// which imports this one and never the reverse. What they read of the
// analysis is exported for them: Layout lays a schedule out as a Timeline
// without touching the analysis, and Install makes one its own; Events
// gives every value's range as the schedule-independent moments that
// decide it (events.go), so that a search can re-resolve the few values a
// reordering touches; LowerBoundCurve, LivePeak and Interference score
// an order. Analysis.Search carries what a searching scheduler found
// (SearchReport), which WriteJSON prints.
//
// # Errors
//
// The passes of the pipeline (package compile, which alone sequences
// them) are plain functions here (prepare.go). The errors this package
// returns match sentinels under errors.Is (ErrNotFlat, ErrUnknownOpcode,
// ErrTooManyValues, ErrInvalidSchedule, ...); those not tied to a source
// position are *Error values carrying the module and, through the
// pipeline, the pass.
//
// # Dense IDs
//
// Per-computation results (Analysis.Kinds, Analysis.Spans) are slices
// indexed by hlo.Computation.ID, and the side tables of the analysis and
// the timelines are slices by instruction, value or buffer ID. The IDs
// are those Module.Renumber gave when the module was analysed.
package liveness
