// Package exec runs a buffer assignment (an *assign.Assignment) against a
// memory, to prove that the plan works: two values the plan puts on the
// same bytes must never both be needed at once.
//
// # What it owns
//
//   - Execute: the module evaluated for real on the bytes of a Memory.
//     Every allocation of the plan is allocated in the memory, and every
//     value is read from and written to the address its slot names
//     (allocation base + offset), so a plan that puts two live values on
//     the same bytes computes wrong numbers. The executor walks the
//     entry's schedule itself, and the computations a while, a
//     conditional or a call runs, on the slots the plan gives their
//     values; every other instruction (a fusion, a reduce, a sort
//     included) it hands to package eval with its operands read from the
//     memory, and writes the result back. Options.Reference runs the same
//     module without a plan, each value a fresh Go slice: the run a
//     planned run is compared with, bit for bit.
//   - Shadow: the plan run on ownership alone. Every byte of every
//     allocation records which value wrote it last; each step's operands
//     must still own their bytes, and its outputs may only be written over
//     values not needed after the step; storage the IR makes one (a loop's
//     state, a conditional's result, an in-place update) must be one in
//     the plan. It covers every opcode, evaluates nothing, and costs
//     memory in proportion to the values, not to the plan's bytes. It
//     reports the first Violation, and a Timeline of the bytes held at
//     every step.
//   - The Memory seam: Memory (allocate, free, read, write in one address
//     space), SpacedMemory (HLO's memory spaces, the plan's colors) and
//     Mover (a memory that moves live regions, as a compacting allocator
//     does). HostArena is the default, a bump allocator; the tpu package's
//     HBM and Chip and the gpu package's Memory (over the BFC arena, the
//     platform allocator or the cuda_async pool) implement it too, so one
//     executor runs a plan on every modelled device. Pages is the sparse
//     byte store they share: a 16 GiB arena costs what a run touches.
//   - Tiled storage (tiled.go): a value whose layout has tiles is kept in
//     tile order in its padded buffer, as XLA:TPU lays it out.
//   - HostBytes: an upper bound of the host memory a run takes, computed
//     from the shapes and the plan before anything is allocated, so that a
//     caller can refuse a run the machine cannot hold.
//
// # Invariants
//
//   - exec imports eval, hlo, liveness and assign; eval never imports exec,
//     and exec imports no device package: gpu and tpu import exec to
//     implement Memory.
//   - The shadow check shares no code with what it checks, and no
//     conclusion of it: what each step reads and writes, what is needed
//     when, and which positions must share bytes it works out from the IR
//     and XLA's dataflow rules (access.go); of the analysis it takes only
//     the flattened schedule (Sequence, Spans), which value is defined at
//     which position (to find the plan's slot), and the rule of which ops
//     may write over an operand (liveness.CanShareOperandBufferWithUser,
//     or the target's for fusions); never uses, live ranges, buffers,
//     interference or assign's packers. Only its Timeline report is drawn
//     from the live ranges.
//   - A Memory checks every access: a read or write outside every live
//     region is an error wrapping ErrOutOfBounds, never a silent success.
//     Bytes never written read as the memory's fill byte; Execute's
//     default arena uses PoisonByte, so that a read of bytes no value
//     wrote shows in the numbers rather than passing for a zero.
//   - Runs are deterministic: the same plan, arguments and seed compute
//     the same bytes. A run stops with an error, never a hang, when its
//     context is done or when it runs more instructions than
//     Options.MaxSteps (eval.ErrStepBudget).
//
// Error messages start with "runtime:", the package's name before it was
// renamed exec; the command line prints them, so they kept their text.
package exec
