// Package hlo is an in-memory form of XLA's HLO modules with a parser for
// the text XLA dumps, a printer, a verifier and byte sizes as XLA computes
// them.
//
// # Model
//
// A Module holds Computations; one is the entry. A Computation is an
// ordered list of Instructions with one root; in a scheduled module
// (is_scheduled=true) the order of a sequentially executed computation is
// its schedule. An Instruction has an Opcode (from the single opcode table
// in opcode.go, which gives every opcode's name, operand count and
// properties), a Shape, operands and users. Called computations (fusion
// bodies, while condition and body, reduction functions, conditional
// branches) are referenced from the calling instruction.
//
// Shapes are values: an array shape has an element type, dimensions (with
// bounded dynamic ones) and an optional Layout (minor-to-major order, tiles,
// element size in bits, memory space); a tuple shape has element shapes;
// token and opaque shapes have neither. ByteSize gives the bytes XLA
// reserves for a shape: tuples hold an 8-byte index table, tiled layouts are
// padded to their first tile.
//
// Instructions and subshape positions have dense integer IDs (ID and
// FirstValue, set by Module.Renumber, which the parser calls), so analyses
// can keep side tables in slices. An instruction gets its ID when it is
// made (by the parser, the Builder, Computation.Clone or
// Module.NewInstruction), unique in its module and below Module.NumIDs;
// Renumber makes them dense again after edits.
//
// # Building
//
// A compiler with an IR of its own builds a module with a Builder: each
// ComputationBuilder method adds one instruction with its shape inferred
// from its operands (element-wise ops, compare, select, convert,
// broadcast, reshape, transpose, dot, reduce, tuple, get-tuple-element,
// slice, concatenate, call, fusion, while, conditional), its users, ID and
// a unique name; ComputationBuilder.Add takes any other instruction. Build
// returns the module verified, or every mistake the calls made.
//
// # Text
//
// Parse accepts every form of HLO text found in real dumps and XLA's own
// tests; see the comment at the top of parser.go. Attributes the rest of
// the pipeline needs are parsed into typed fields (Instruction fields and
// Ext); all others are kept verbatim in Attrs, so String prints a module
// without losing anything. Printing is canonical: parsing printed text and
// printing it again yields the same text.
//
// # Errors
//
// Input errors carry their position: an Error prints as FILE:LINE:COL:
// message, and an ErrorList holds several, sorted by position. Verify
// checks the invariants later passes rely on and reports violations the
// same way.
//
// # Unverified input
//
// What every entry point asks of its input:
//
//   - Parse, ParseString, ParseFile and ParseModule take any bytes and never
//     panic; they return well-formed text as modules, not verified ones.
//   - Verify takes any module, parsed or built by code, and never panics.
//     So do FindCallCycle, NewGraph and ByteSize, on any module, computation
//     or shape.
//   - The Builder takes any arguments and never panics: ill-fitting
//     operands are errors that Build returns, and a module it returns has
//     passed Verify.
//   - FlattenCallGraph verifies the module itself and refuses an invalid one
//     with Verify's errors, unchanged.
//   - Printing (Module.String) takes any parsed module; an opcode this
//     package does not know prints as it was read.
//   - The editing helpers (Computation.Clone, InsertBefore,
//     Instruction.ReplaceOperand, Module.Renumber) expect a verified module
//     and keep it valid; a pass built on them runs Verify after each step
//     in its tests.
//
// Verify accepts unknown opcodes and unbounded dimensions, which are valid
// text; the analyses that need their semantics or sizes (liveness, assign)
// refuse them with positions.
package hlo
