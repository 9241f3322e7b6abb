// Package peakgolden is the peak-memory regression check behind hlomem peak
// and package assign/assigntest: it finds the modules of HLO files and XLA
// dump directories, assigns each, sums it up in one line of figures (a
// Line), writes and reads those lines as a golden file, and compares a run
// with a golden file module by module, in sentences a user can act on.
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
// paths as given, files in lexical order, modules in file order.
//
// # Lines
//
// A module's Line is keyed by its name (HloModule NAME); when several
// inputs hold modules of one name (the same jit function compiled for two
// shapes), each is NAME#K, K counting them in input order. The figures are
// those of assign.Stats under the options (lower bound, temp and total
// bytes), the schedule that ran, the step of the peak (the lower bound's
// step, Assignment.Peak) and the five largest buffers live there.
//
// Only deterministic packers may feed a golden file: "xla" (the default,
// XLA's own heap algorithm, so the temp figure is what XLA allocates) or any
// greedy packer; "auto" and "exact" search within a time budget, so their
// result may depend on the machine's load, and are refused.
//
// # The file
//
// A golden file is text, one module per line, sorted by module:
//
//	# hlomem peak v1 target=gpu algorithm=xla schedule=default
//	# module schedule lower_bound temp total peak_step | largest buffers live at the peak: name shape bytes
//	jit_step keep 1061683200 536870912 1073741824 17 | fusion.42 f32[8,4096,4096] 536870912 | ...
//
// The first line names the format and the options the figures depend on;
// other lines starting with # are comments. Shapes are written without
// layout or spaces, sizes in bytes. Parse reports a malformed file as
// FILE:LINE: message.
//
// # Verdicts
//
// Compare decides on the byte figures (Fields): a module fails when one
// moved beyond its tolerance (relative; 0, exact, by default), in either
// direction, since a gain should be recorded too; it also fails when it is
// new or gone. The schedule, the peak step and the buffers at the peak
// explain a verdict and do not decide it.
package peakgolden
