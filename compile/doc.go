// Package compile is hlomem's pipeline: the one place where the passes
// that take an HLO module to a checked buffer assignment are put in
// order. Every caller (the hlomem commands, package report, the peak
// golden files, the TPU path, fusion's guard and memory-space
// assignment's re-planning) runs a module through Compile, so every plan
// that reaches a user has passed assign.Check, and no caller strings
// passes together by hand.
//
// The table (Passes), in order; a pass runs when its condition holds:
//
//	pass                when                        needs      makes
//	flatten-call-graph  always                      -          Flat (call graph flat, module verified)
//	target-layout       TPU target                  Flat       XLA:TPU's tiles on every array
//	simplify            Options.Fuse                Flat       algebraic simplifications
//	cse                 Options.Fuse                Flat       common subexpressions merged
//	dce                 Options.Fuse                Flat       dead code removed
//	fusion              Options.Fuse                Flat       loop/input/output fusions, guarded
//	fusion-layout       TPU target and Fuse         Flat       tiles for what the passes made
//	memory-spaces       TPU target and Spaces       Flat       VMEM/SMEM assignment, module rewritten
//	copy-insertion      always                      Flat       XLA's copies where values interfere
//	schedule            always                      Flat       Scheduled (the analysis, laid out)
//	assign              always                      Scheduled  Planned (the buffer assignment)
//	check               always                      Planned    Checked (assign.Check passed)
//
// Each pass reads and writes a typed unit (the module, its analysis, its
// plan), never closure state, and takes the context first: once it is
// done every pass stops and Compile returns its error. Options.Until
// stops after a named pass (the CLI's fuse stops after "fusion", the
// liveness command after "schedule"). Options.VerifyEach checks the
// module after every pass (hlo.Verify, a pass reporting no change must
// leave the text as it was, a changed module must print as a fixed point
// of parse and print); Result.Passes and Options.Trace give each pass's
// time and whether it changed the module (hlomem --passes prints them).
//
// Fusion's guard measures candidate modules with the prepare slice of the
// same table (flatten-call-graph, copy-insertion, schedule) under the
// pipeline's own scheduler, so a fusion is kept only when the plan the
// pipeline would make is no worse; FusionMeasure gives that measure to a
// caller running fusion.Run on its own. When that scheduler searches, the
// guard's bisection probes with the same slice under XLA's heuristic
// scheduler and confirms what it finds with the searched measure, which
// alone decides what is kept and gives every figure reported. Memory-space assignment prepares
// and re-plans with the same slice.
//
// Packages below compile (liveness, schedule, fusion, assign, tpu) hold the
// passes; they do not sequence them. Their own tests prepare modules with
// internal/preptest, which compile's tests hold to giving the same
// analysis.
package compile
