// Package report is what a user looks at to see why a program needs its
// memory: the totals of a module's buffer assignment, its peak (the
// plan's occupancy, assign.Assignment.Occupancy) and what occupies memory
// there, by allocation, with the source lines that made it, what a
// different schedule, fusion or packer would save, and, given XLA's own
// buffer assignment of the same module (refused when it is another
// module's), where XLA put every buffer beside where hlomem puts it.
//
// Build plans a module (through the pipeline, package compile, as hlomem
// assign does) and gathers a Report. The report writes itself as text
// (WriteText), as JSON (WriteJSON), as one SVG of its charts (WriteSVG),
// as a self-contained HTML memory viewer in the spirit of XProf's
// (WriteHTML: the bytes occupied over program order with the peak marked,
// the buffer chart with one rectangle per buffer at its offset over its
// live range, details on hover, and a sortable table of what occupies
// memory at the peak), and as a pprof profile of what occupies memory at
// the peak (WritePprof), which go tool pprof reads. Every output reads the peak from the one
// curve, Report.Live.
//
// # What it owns
//
//   - The Report of one module: totals by allocation kind, the lower bound
//     and why the plan is above it (Above), the curve of bytes occupied at
//     every step (Live), the peak and what occupies memory there
//     (AtPeak), every buffer at its address (Buffers).
//   - What-ifs: the module replanned under each Lever (WhatIfs gives the
//     usual set: each scheduler, fusion on and off, each packer), each with
//     the hlomem command line that reproduces its figures (Command).
//   - XLA beside hlomem: XLA's own buffer assignment of the module, checked
//     to be of this module (CheckXLAModule, *XLAMismatchError), laid out
//     beside hlomem's plan (XLAPlan).
//   - The writers: WriteText, WriteJSON, WriteSVG, WriteHTML (one page for
//     several reports), WritePprof.
//
// # Invariants
//
//   - Build plans a clone: the caller's module is left as it was. Every
//     plan, the report's and each what-if's, goes through compile.Compile
//     and is checked there; report strings no passes together.
//   - Every output reads the peak from Live, so text, JSON, SVG, HTML and
//     pprof agree on it, and the bytes of AtPeak add up to PeakBytes.
//   - No map order reaches the output: one plan gives the same bytes in
//     every format. (The auto and exact packers search within a time
//     budget, so their plan, and so the report, may vary with the
//     machine's load; the xla and greedy packers do not.)
//
// # Entry points
//
// Build, then the Report's writers; WhatIfs for the usual alternatives;
// CheckXLAModule before giving Options.XLA.
//
// Geometry. The buffer chart lays the plan's allocations one after the
// other in index order, each at the sum of the sizes before it; a buffer
// (liveness.Buffer: the values that share an address) sits at its
// allocation's base plus its slot's offset, from the first step one of its
// values is live to the last. Steps are positions in the flattened
// schedule (liveness.Analysis.Sequence).
package report
