// Package cost is a compute and memory-traffic cost model for HLO
// instructions, computations and modules, following XLA's HloCostAnalysis
// (xla/service/hlo_cost_analysis.cc at commit 001918b7, and the newer
// absl::Status version of the same file): it reports
// what recomputing an instruction costs, and a module's own compute, so a
// rematerialisation plan can state its added compute as a fraction.
//
// # Rules followed as XLA states them
//
//   - Element-wise ops (HandleElementwiseOp): one operation per output
//     element; exp, log, logistic, power, sqrt, cbrt, rsqrt, tanh, sine,
//     cosine, exponential-minus-one, log-plus-one, atan2, erf and tan (the
//     newer file's list) count as
//     transcendentals, every other element-wise op (compare, select, clamp,
//     convert, reduce-precision included) as FLOPs.
//
//   - dot (HandleDot, GetDotFlops): 2 (an FMA) × output elements × the
//     product of the lhs contracting dimensions.
//
//   - convolution (GetConvolutionFlops): 2 × input features / feature groups
//     × output features × batch / batch groups × the product over spatial
//     dimensions of the valid (kernel, output) position pairs, counted
//     through stride, padding and both dilations, with XLA's two shortcut
//     patterns.
//
//   - reduce (HandleReduce): the reducer's cost × (input elements − output
//     elements); reduce-window (HandleReduceWindow): the reducer's cost ×
//     (window elements − 1) × output elements, with XLA's reduce-then-
//     broadcast special case; select-and-scatter: select × source elements ×
//     (window − 1) plus scatter × source elements; map: the mapped function
//     × output elements; scatter: its combiner × update elements.
//
//   - sort (HandleSort): elements × ⌈log2 elements⌉ FLOPs; fft: 8 × the
//     product of ⌊log2⌋ of fft_length × elements; triangular-solve and
//     cholesky, all-reduce (one op per output element), rng (one
//     transcendental per element) as XLA's handlers state them.
//
//   - fusion (HandleFusion): FLOPs and transcendentals of its fused
//     computation; bytes only at its boundary: each fused parameter read as
//     FusionParameterReadBytes does (a slice or dynamic-slice user reads its
//     output's size, broadcast and reshape users read the parameter each,
//     other users share one read, the aliased operand of a
//     dynamic-update-slice is not read), outputs written whole except a
//     dynamic-update-slice root (or tuple element), which writes its update.
//
//   - call and async-start: their computation's cost; conditional: the
//     maximum over its branches, figure by figure; while: body + condition
//     once (HandleWhile), unless its trip count is known, in which case
//     body + condition are counted that many times: XLA's own annotation
//     (backend_config known_trip_count, written by
//     WhileLoopTripCountAnnotator), else the counted loop of
//     MatchTrivialLoopTripCount (while_loop_analysis.cc): a constant-
//     initialised tuple element i, a condition i < N or i <= N (or N > i,
//     N >= i) against a constant, and a body setting i to i + constant
//     step. (HloCostAnalysis itself always counts one iteration; the trip
//     count is applied here so a loop's compute is not understated.) A
//     while counted once sets Cost.Loop.
//
//   - Bytes (Preprocess): an instruction reads its operands' and writes its
//     output's hlo.ByteSize (a tuple's is its pointer table); parameter,
//     constant, get-tuple-element, bitcast, domain, after-all and
//     add-dependency move nothing; tuple writes its pointer table only;
//     slice, dynamic-slice and gather read what they write (plus the first
//     index operand, as XLA reads operand(1)); dynamic-update-slice reads
//     and writes its update (plus operand(2), its first index);
//     scatter reads its updates twice and indices, writes its updates.
//     Data movement ops (copy, broadcast, transpose, reshape, pad,
//     concatenate, reverse, ...) have no FLOPs.
//
//   - cuBLAS gemm and cuDNN convolution custom-calls, as XLA:GPU's
//     GpuHloCostAnalysis::HandleCustomCall counts them: the dot of the
//     gemm's backend_config dot_dimension_numbers, the convolution of the
//     call's window and dim_labels, on the result (tuple element 0).
//
// # Approximations
//
//   - Any other custom-call: XLA records -1 ("unknown"); here it is 0
//     FLOPs with its operand and output bytes, and Cost.Unknown is set.
//   - A gemm or cuDNN custom-call writes its result only (XLA's gemm
//     handler keeps Preprocess's figure, the tuple's pointer table).
//   - A transpose that is an effective bitcast (XLA checks layouts) still
//     counts its bytes here.
//   - Large constants read inside a fusion, XLA's utilisation figures and
//     count_multiple_input_accesses are not modelled.
//   - A convolution spatial dimension whose kernel × output positions
//     exceed 2^22 is not enumerated: its valid positions are estimated as
//     output × min(kernel, input), an upper bound.
//   - batch-norm ops and top-k are 0 FLOPs, as in XLA (its TODOs);
//     ragged-dot and scaled-dot are 0 FLOPs here (XLA counts a ragged-dot
//     as its dot without the group dimensions).
//   - Every figure saturates at math.MaxInt64 instead of overflowing; a
//     malformed instruction (missing operands, computations, attributes)
//     counts what can be read from it and never panics; a computation
//     reached again while it is being counted (a call cycle, which only a
//     malformed module has) counts 0 there.
//   - A nested fusion's parameter is read as the inner fused parameter is
//     (the 2023 FusionParameterReadBytes); the newer file's special case
//     for slices of a "simple" nested fusion is not modelled.
//   - Trip counts: XLA's ComputeWhileLoopTripCount also evaluates
//     non-constant inits and, failing the pattern, simulates up to a bound;
//     neither is done here, so such a loop is counted once and flagged.
package cost
