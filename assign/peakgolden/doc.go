// Package peakgolden is the peak-memory regression check behind hlomem peak
// and package assign/assigntest: it finds the modules of HLO files and XLA
// dump directories, assigns each, sums it up in one line of figures (a
// Line), writes and reads those lines as a golden file, and compares a run
// with a golden file module by module, in sentences a user can act on.
//
// It owns the golden file of peak memory: its format (Write, Bytes,
// Parse), what a line measures (Measure) and how a run is judged against
// it (Compare, Check). It does not plan: every module is prepared and
// assigned through the one pipeline, package compile, so a line holds the
// figures hlomem assign prints for the same options. It sits on the top
// floor beside report: it imports compile (and so every pass and target
// below it), and nothing below it imports it; hlomem peak and
// assign/assigntest are its callers.
//
// # Entry points
//
//   - Collect finds the HLO files of paths (files and XLA dump directories).
//   - Measure plans each module of the files and returns one Line per module.
//   - Write and Bytes write lines as a golden file; Parse reads one.
//   - Compare judges a run's lines against a parsed file; Check reads the
//     golden file at a path, measures and compares (or rewrites the file
//     when updating), the whole of hlomem peak --golden.
//
// # Invariants
//
// The output is deterministic: the same inputs and Options give the same
// bytes whatever the machine's load (only deterministic packers are
// accepted), Measure returns the lines sorted by key, and a golden file is replaced only
// whole, through a temporary file renamed into place (WriteFile).
//
// # Inputs
//
// A path is an HLO file (every module in it counts) or a directory, which
// is walked recursively as an XLA dump (--xla_dump_to): XLA names every file
// of a module module_NNNN.NAME.SUFFIX, and of the files of one module the
// check takes the *after_optimizations.txt (the program XLA ran), else the
// *before_optimizations.txt, else any other HLO text of it (*.hlo, or *.txt
// that starts as HLO does). XLA's other dumps (-buffer-assignment.txt,
// -memory-usage-report.txt, .dot, .pb, ...) are skipped and counted
// (DirInputs). Collect does this; the modules come out in a fixed order:
// paths as given, files in lexical order, modules in file order. Each file
// is read once however many paths lead to it (the same directory twice, a
// directory inside another, a link): by cleaned absolute path and by file
// identity.
//
// # Keys
//
// A golden file finds a module again by its key, NAME@SIGNATURE:
//
//	jit_scan@3f2a91c0
//
// NAME is the module's name (HloModule NAME), SIGNATURE the first 8 hex
// digits of the SHA-256 of its entry computation's signature, the
// parameter and result shapes without layouts,
// "(c128[480,480],s32[])->c128[480,480]". XLA's running number
// (module_NNNN) is no part of it: it changes whenever the program compiles
// one function more, so a key holds across dumps; and the same function
// compiled for two shapes gives two keys, one line each. Modules of one
// name and signature (compiled twice for the same shapes) are
// NAME@SIGNATURE#1, #2, ... in input order.
//
// Format v1 keyed modules by NAME alone, NAME#K when a name repeated: a
// second compile of jit_scan renamed the first one's line. A v1 file is
// still read; a run is compared with it by the keys v1 would have given,
// the summary says to update it, and an update writes it as v2.
//
// # Lines
//
// A module's Line holds its key and the figures of assign.Stats under the
// options (lower bound, temp and total bytes), the schedule that ran, the
// step of the peak (the lower bound's step, Assignment.Peak) and the five
// largest buffers live there.
//
// Only deterministic packers may feed a golden file: "xla" (the default,
// XLA's own heap algorithm, so the temp figure is what XLA allocates) or any
// greedy packer; "auto" and "exact" search within a time budget, so their
// result may depend on the machine's load, and are refused.
//
// # The file
//
// A golden file is text, one module per line, sorted by key:
//
//	# hlomem peak v2 target=gpu algorithm=xla schedule=default
//	# module@signature schedule lower_bound temp total peak_step | largest occupants of the peak: name shape bytes occupied
//	jit_step@8c1f0e52 keep 1061683200 536870912 1073741824 17 | fusion.42 f32[8,4096,4096] 536870912 | ...
//
// The first line names the format and the options the figures depend on;
// other lines starting with # are comments. Shapes are written without
// layout or spaces, sizes in bytes. Parse reports a malformed file as
// FILE:LINE: message.
//
// # Verdicts
//
// Compare matches the run's modules with the file's by key (and, for a
// function compiled once on each side whose signature changed, by name)
// and gives each a verdict: same, changed within tolerance, grew, shrank,
// added or removed; the summary counts each. It decides on the byte
// figures (Fields): a module fails when one moved beyond its tolerance
// (relative; 0, exact, by default), in either direction, since a gain
// should be recorded too. A module added or removed fails as well, until
// an update records it: a new compile is new memory that CI should see.
// The schedule, the peak step and the buffers at the peak explain a
// verdict and do not decide it.
package peakgolden
