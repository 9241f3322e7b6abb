// Package eval evaluates HLO on literals: the numbers a module computes,
// without a plan. It is the reference every planned run is compared with
// (package exec runs the same instructions on the bytes of a memory and
// calls Evaluator.Instruction for each), and an HLO interpreter for tests.
//
// # What it owns
//
//   - Literal: a value, an array or a tuple. An array's Data holds its
//     elements in the shape's physical layout (minor-to-major; row-major
//     when the shape has none), little-endian, as XLA's literals do, so a
//     literal's bytes are the bytes a device buffer holds. NewLiteral,
//     RandomLiteral and ParseLiteral make them; String and WriteText print
//     them in XLA's literal syntax; Checksum hashes them.
//   - Evaluator: an evaluation's state (the random state of rng, a
//     context, the count of instructions run against MaxSteps).
//     Computation walks a computation in order, keeping every value until
//     it returns; Instruction computes one instruction from its operands'
//     literals. The functions Instruction and Computation do the same with
//     a fresh Evaluator.
//   - The per-opcode semantics, following XLA's HloEvaluator and the
//     operation semantics: element-wise, shape and slicing ops, constants
//     and iota (eval.go); dot (dot.go); convolution and reduce-window
//     (conv.go); gather and scatter (gather.go); reduce (reduce.go); sort,
//     rng, map and variadic reduce (sort.go); complex elements
//     (complex.go, literal_complex.go); while, conditional, call and
//     fusion run their computations (evaluator.go).
//   - Entry arguments: EntryLeaves names them, RandomArgs draws them,
//     ParseArgs reads them from text.
//
// # Invariants
//
//   - eval imports only hlo: it knows nothing of liveness, plans or
//     memories.
//   - It never guesses: an opcode, element type or attribute it does not
//     support is an error naming the instruction, never a plausible
//     answer.
//   - Every array is sized from its shape and checked before anything is
//     allocated for it: a shape whose size does not compute or exceeds
//     MaxLiteralBytes is an error, not an out-of-memory crash.
//   - Evaluation is deterministic: rng draws from the Evaluator's seed
//     (DefaultSeed unless told), so two evaluations of a module compute
//     the same bytes.
//   - A loop that never ends is an error (ErrStepBudget), not a hang, and
//     a done context stops an evaluation at its next loop iteration or
//     within 1024 instructions.
package eval
