// Package pack gives buffers over time intervals their offsets in memory:
// the packing layer of buffer assignment, which sees plain intervals and
// never the IR. It imports no other package of the project, so the same
// packers run on MiniMalloc CSVs (hlomem pack) and, through package assign,
// on the temp heaps of HLO modules.
//
// # The packing model
//
// A Problem is a list of buffers, each Size bytes live over the half-open
// time interval [Start, End): a buffer that ends at t and one that starts at
// t may share bytes. Times are positions in a schedule and only their order
// matters. A packing (Packing) gives every buffer an offset. It is valid when
//
//   - two buffers of one color that are live at the same time share no byte;
//   - every offset is a multiple of its buffer's Align;
//   - every Fixed buffer is at its Offset;
//   - the members of each must-share group (Problem.Groups, XLA's
//     colocations) are at one offset. Members of a group alias each other,
//     so they may be live at once; the group then occupies as many bytes as
//     its largest live member.
//
// Each color is a separate heap, packed on its own. Its height is the
// largest offset+size among its buffers, and its lower bound (LowerBound)
// is the largest total size live at one moment, counting a group once.
// Buffers that are never live (Start == End) or empty occupy nothing.
//
// Check verifies a packing; it shares no code with the packers, and every
// packer test, fuzz target and the hlomem pack command run it.
//
// # Packers
//
// Pack splits a problem into one instance per color (instance.go) and runs
// on each the Packer that Options.Algorithm names (see Algorithms and
// PackerNamed):
//
//   - bestfit-ORDER and firstfit-ORDER lay buffers one at a time in a fixed
//     ORDER (size, lifetime, area, start), each into the best-fitting or
//     lowest free gap among the buffers already laid over its lifetime;
//     bestfit-size and bestfit-lifetime are XLA's spatial and temporal
//     GlobalDecreasingSizeBestFitHeap (bestfit.go, intervaltree.go).
//   - xla keeps the better of those two, as XLA's buffer assignment does.
//     XLAHeap goes further: it packs a heap simulation's intervals with
//     XLA's GlobalDecreasingSizeBestFitHeap itself (xla_heap.go),
//     colocations and value-ID ties included, and so reproduces XLA's
//     offsets; package assign uses it for its "xla" algorithm.
//   - portfolio runs every best-fit and first-fit order, in parallel, and
//     keeps the lowest (portfolio.go). From 131,072 items of one color it
//     runs the large packers instead.
//   - large is what the portfolio runs on large instances, at any size
//     (layered.go): the long-lived items (the layer) packed by the greedy
//     packers when few enough, else swept in wide batches largest first,
//     and the rest swept through time around them, each at the lowest
//     offset free over its lifetime in a treap of free ranges (gaps.go).
//     Each costs O(n log n) beyond its layer, where a best-fit placement
//     merges every range taken over its lifetime.
//   - skyline-wat, skyline-taw, skyline-twa lay the buffer that can go
//     lowest first, on top of everything below it (skyline.go).
//   - exact is a branch-and-bound over canonical packings after MiniMalloc,
//     warm-started from the portfolio: it decides whether everything fits in
//     Options.Capacity, or without a capacity minimises the height, within
//     Options.Budget and the context, and says when it proved a height
//     optimal (exact.go).
//   - auto, the default, escalates: portfolio; then, while the height is
//     above the capacity (or, without one, above the lower bound), the
//     skyline packers and the exact search.
//
// Every packer is deterministic: ties break on input order and parallel
// runs are combined in a fixed order. Only a search cut short by its budget
// or the context depends on timing.
//
// # Input and output
//
// ReadCSV and WriteCSV read problems and write packings in MiniMalloc's CSV
// form (id,lower,upper,size[,alignment][,offset]), half-open like this
// package; input errors are reported as FILE:LINE:COL: message.
//
// # Unverified input
//
// Pack validates its Problem (Problem.Validate) and refuses a malformed
// one; Check and ReadCSV take any input. Its error messages start with
// "pack:".
package pack
