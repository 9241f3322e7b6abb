package exec

// Host memory of a run. Everything Execute and Shadow compute lives in Go
// slices on the host, so a module whose arrays are large, or a plan whose
// arena is, can ask for more memory than the machine has, and a Go
// program that cannot get memory does not fail with an error: the runtime
// aborts the process (fatal error: out of memory). HostBytes is the guard:
// an upper bound of the memory a run will take, computed from the shapes
// and the plan alone, before anything is allocated, so that a caller can
// refuse a run the machine cannot hold.
//
// The bound follows what the code holds at once:
//
//   - the arguments: one literal per array leaf of the entry parameters,
//     held through every run (eval.RandomArgs, eval.ParseArgs), and the
//     making of the largest;
//   - the reference run (Options.Reference): eval's Evaluator walks each
//     computation keeping the value of every instruction until the
//     computation returns, so the entry costs the bytes of all its values
//     at once, with no reuse; on top, the instruction being computed
//     needs the intermediates of its operands and result (elements
//     decoded to 64-bit values, index tables, logical copies:
//     elementCost), and the computations it calls (a fusion's body, a
//     loop's condition and body, a reduction's scalar computation) cost
//     what they cost in turn;
//   - the planned run: the arena's bytes (HostArena and the tpu package's
//     memories back them by pages of PageSize made on first write, so only
//     the pages that some value's slot touches count, and never more than
//     the allocations packed end to end take), the tiled orders cached for
//     values with tiled layouts (8 bytes an element), and at each step the
//     operands loaded from the arena, the result, and its evaluation as
//     above; then the outputs read back;
//   - the outputs of the reference run, kept while the planned run runs to
//     be compared with its outputs;
//   - the shadow run's bookkeeping, a few hundred bytes per value, use,
//     step, buffer and allocation (never per byte of the plan).
//
// The most of these held at once is Live. Go's collector lets the heap grow
// to twice what it found live at the last collection (GOGC=100, the
// default) before it collects again, so the heap a run may reach is twice
// Live, plus a margin for the runtime itself and for what the collector
// lets through while it marks (hostHeapSlack). That is Total, the figure
// to compare with the memory the machine has. The bytes the module, its
// analysis and its plan hold already are not counted: they are allocated
// before the estimate is made. A GOGC above 100 (or off) lets the heap
// grow further than Total says.
//
// The bound is measured, not only derived: TestHostBytesBoundsMeasured
// runs corpus modules in processes of their own and holds Total to at
// least the growth of their peak resident set. On the 160 corpus modules
// the evaluator runs, Total was 1.8 to 12 times that growth on the 36
// that take over 32 MiB (median 5): the reference run's values without
// reuse and the per-element intermediates are counted at their worst.
//
// Every sum saturates at math.MaxInt64: a module whose estimate overflows
// gets one that no limit admits, not a wrapped, small one.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
)

// HostOptions says which parts of a run HostBytes counts.
type HostOptions struct {
	// Reference counts a plan-free run (Execute with
	// Options.Reference).
	Reference bool
	// Planned counts a run on the plan's bytes, in a HostArena (Execute
	// with a nil Memory) or a tpu.Chip. With Reference too, the
	// reference's outputs are held while it runs, to be compared.
	Planned bool
	// Shadow counts a shadow run (Shadow).
	Shadow bool
	// Print counts writing the planned run's outputs as text
	// (eval.Literal.WriteText), or the reference's without Planned.
	Print bool
	// ArgText is the bytes of argument text the arguments are parsed
	// from (eval.ParseArgs), 0 for random arguments: parsing holds the
	// text, a copy of it in pieces and a string header per word.
	ArgText int64
}

// HostEstimate is an upper bound of the host memory a run takes, in
// bytes, by part. Parts a HostOptions leaves out are 0.
type HostEstimate struct {
	// Args is the arguments' literals, held through every run.
	Args int64
	// Reference is the reference run at its largest: every value of the
	// entry computation and the largest instruction's intermediates and
	// called computations.
	Reference int64
	// Arena is the planned run's arena: the pages its values' slots touch.
	Arena int64
	// Planned is the planned run beside its arena: its largest step,
	// the tiled orders it caches, its outputs (and the reference's
	// outputs kept to compare them with), their text when printed.
	Planned int64
	// Shadow is the shadow run's bookkeeping.
	Shadow int64
	// Live is the most the parts hold at once: Args and the largest of
	// Reference, Arena+Planned and Shadow (the runs come one after the
	// other).
	Live int64
	// Total is what the Go heap may reach for Live: twice Live (the
	// collector's default pacing) and 128 MiB for the runtime and the
	// collector's overshoot. Compare it with the memory the machine has.
	Total int64
}

// String lists the parts of the estimate and the most they hold at once,
// in binary units: "arguments 4.00MiB, reference run 8.00MiB, planned run
// 6.00MiB (arena 2.00MiB), at most 12.00MiB at once".
func (e HostEstimate) String() string {
	h := func(n int64) string {
		if n == math.MaxInt64 {
			return "more than " + assign.HumanBytes(n)
		}
		return assign.HumanBytes(n)
	}
	var parts []string
	add := func(name string, n int64) {
		if n > 0 {
			parts = append(parts, name+" "+h(n))
		}
	}
	add("arguments", e.Args)
	add("reference run", e.Reference)
	if e.Arena > 0 || e.Planned > 0 {
		parts = append(parts, fmt.Sprintf("planned run %s (arena %s)", h(satAdd(e.Arena, e.Planned)), h(e.Arena)))
	}
	add("shadow run", e.Shadow)
	parts = append(parts, "at most "+h(e.Live)+" at once")
	return strings.Join(parts, ", ")
}

// HostMemoryError refuses a run whose estimate is more than the host
// memory it may take.
type HostMemoryError struct {
	Estimate HostEstimate
	// Limit is the bytes the run may take; LimitSource, when set, says
	// where that comes from ("half of this machine's memory, 16.00GiB").
	Limit       int64
	LimitSource string
}

func (e *HostMemoryError) Error() string {
	need := assign.HumanBytes(e.Estimate.Total)
	if e.Estimate.Total == math.MaxInt64 {
		need = "more than " + need
	}
	limit := assign.HumanBytes(e.Limit)
	if e.LimitSource != "" {
		limit += " (" + e.LimitSource + ")"
	}
	return fmt.Sprintf("the run needs an estimated %s of host memory, more than the limit of %s: %s, twice that and %s more for Go's garbage collector and runtime",
		need, limit, e.Estimate, assign.HumanBytes(hostHeapSlack))
}

// The constants of the bound, read off the code they bound and checked by
// TestHostBytesBoundsMeasured. The intermediates of an instruction per
// element are elementCost's.
const (
	// hostBytesPerInstruction bounds what an evaluation holds per
	// instruction besides its values: map entries, operand slices,
	// literal and shape headers.
	hostBytesPerInstruction = 512
	// hostBytesPerValue bounds the per-value tables of a planned run
	// (addresses, placements, tilings) and of a shadow run (slots,
	// ownership segments, live spans).
	hostBytesPerValue = 256
	// hostBytesPerStep bounds the per-step tables of a shadow run (the
	// reads and writes of each step, the timeline).
	hostBytesPerStep = 128
	// hostBytesPerPage is a page's bookkeeping in a Pages store.
	hostBytesPerPage = 128
	// hostHeapSlack is what the heap and the resident set may take
	// beyond twice the live bytes: the runtime's own structures, freed
	// pages not yet returned to the system, and the collector's
	// overshoot when the program allocates fast while it marks, most of
	// all on a loaded machine (measured: up to 63 MiB over a live heap of
	// 10 MiB, four runs at once on two cores).
	hostHeapSlack = 128 << 20
)

// HostBytes returns an upper bound of the host memory a run of as takes,
// counting the parts opts names (see HostEstimate). It allocates nothing
// in proportion to the arrays: call it before eval.RandomArgs, eval.ParseArgs,
// Execute or Shadow, and refuse the run when Total exceeds the memory
// there is.
func HostBytes(as *assign.Assignment, opts HostOptions) (HostEstimate, error) {
	if as == nil || as.Analysis == nil || as.Module == nil || as.Module.Entry == nil {
		return HostEstimate{}, errors.New("runtime: no assignment")
	}
	m := as.Module
	var e HostEstimate
	h := &hostModel{peaks: map[*hlo.Computation]int64{}, busy: map[*hlo.Computation]bool{}}
	evaluate := opts.Reference || opts.Planned
	if evaluate {
		for _, p := range m.Entry.Params {
			e.Args = satAdd(e.Args, leafBytes(p.Shape))
		}
		// Making an argument (eval.RandomLiteral, eval.ParseLiteral) takes its
		// intermediates on top of the arguments made before it, and a
		// parsed one a word per element (one value may fill an array).
		var gen int64
		for _, p := range m.Entry.Params {
			p.Shape.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
				if sub.IsArray() {
					gen = max(gen, satAdd(elementCost(sub, false), satMul(leafElems(sub), 16)))
				}
			})
		}
		e.Args = satAdd(e.Args, gen)
		e.Args = satAdd(e.Args, satMul(max(opts.ArgText, 0), 10))
	}
	outs := leafBytes(m.Entry.Root.Shape)
	var printing int64
	if opts.Print {
		// WriteText makes a logical copy of one output at a time (and a
		// table of its elements' places).
		m.Entry.Root.Shape.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
			if sub.IsArray() {
				printing = max(printing, satAdd(leafBytes(sub), satMul(leafElems(sub), 8)))
			}
		})
		printing = satAdd(printing, 64<<10)
	}
	if opts.Reference {
		e.Reference = h.peak(m.Entry)
		if !opts.Planned {
			e.Reference = satAdd(e.Reference, printing)
		}
	}
	if opts.Planned {
		e.Arena = arenaBytes(as)
		e.Planned = satAdd(h.plannedSteps(as), printing)
		e.Planned = satAdd(e.Planned, outs) // the outputs read back
		if opts.Reference {
			e.Planned = satAdd(e.Planned, outs) // the reference's, to compare
		}
	}
	if opts.Shadow {
		e.Shadow = shadowBytes(as)
	}
	e.Live = satAdd(e.Args, max(e.Reference, satAdd(e.Arena, e.Planned), e.Shadow))
	e.Total = satAdd(satMul(e.Live, 2), hostHeapSlack)
	return e, nil
}

// hostModel computes the costs of evaluating computations, memoized.
type hostModel struct {
	peaks map[*hlo.Computation]int64
	busy  map[*hlo.Computation]bool // on the call stack (a cycle costs nothing more)
}

// forwards reports whether op's result is its operands' literals (or
// nothing), not bytes of its own.
func forwards(op hlo.Opcode) bool {
	switch op {
	case hlo.OpParameter, hlo.OpTuple, hlo.OpGetTupleElement, hlo.OpOptBarrier,
		hlo.OpAddDependency, hlo.OpCopyDone, hlo.OpAfterAll:
		return true
	}
	return false
}

// peak bounds what eval's Evaluator holds while it evaluates c once: every
// value c makes (Computation keeps them all until it returns), and the
// largest of its instructions' intermediates and called computations.
// c's arguments belong to the caller.
func (h *hostModel) peak(c *hlo.Computation) int64 {
	if p, ok := h.peaks[c]; ok {
		return p
	}
	if c == nil || h.busy[c] {
		return 0
	}
	h.busy[c] = true
	var held, step int64
	for _, in := range c.Instructions {
		held = satAdd(held, hostBytesPerInstruction)
		if !forwards(in.Opcode) {
			held = satAdd(held, leafBytes(in.Shape))
		}
		step = max(step, h.instruction(in))
	}
	delete(h.busy, c)
	p := satAdd(held, step)
	h.peaks[c] = p
	return p
}

// instruction bounds what evaluating in takes besides its operands and its
// result: intermediates per element, and the computations it calls. An
// instruction that only forwards literals, or hands its operands to a
// computation (a fusion, a call, a loop, a conditional), has no
// intermediates of its own.
func (h *hostModel) instruction(in *hlo.Instruction) int64 {
	var n int64
	switch {
	case forwards(in.Opcode):
	case in.Opcode == hlo.OpFusion, in.Opcode == hlo.OpCall, in.Opcode == hlo.OpWhile, in.Opcode == hlo.OpConditional:
	default:
		moves := movesBytes(in.Opcode)
		n = elementCost(in.Shape, moves)
		for _, o := range in.Operands {
			n = satAdd(n, elementCost(o.Shape, moves))
		}
	}
	for _, c := range in.Callees() {
		n = satAdd(n, h.peak(c))
	}
	return n
}

// plannedSteps bounds what the planned run holds beside its arena and its
// outputs: its tables per value, the tiled orders it caches, and its
// largest step (the operands loaded from the arena, the tiled buffers
// they are gathered from, the result and its evaluation).
func (h *hostModel) plannedSteps(as *assign.Assignment) int64 {
	a := as.Analysis
	n := satMul(int64(len(a.Values)), hostBytesPerValue)
	for _, v := range a.Values {
		if v.Shape.IsArray() && v.Shape.Layout != nil && len(v.Shape.Layout.Tiles) > 0 {
			n = satAdd(n, satMul(leafElems(v.Shape), 8))
		}
	}
	// The computations the executor walks itself: the entry and, through
	// while, conditional and call, what they run. The rest (a fusion's
	// body, a reduction's computation) eval's Evaluator evaluates whole.
	var step int64
	seen := map[*hlo.Computation]bool{}
	var walk func(c *hlo.Computation)
	walk = func(c *hlo.Computation) {
		if c == nil || seen[c] {
			return
		}
		seen[c] = true
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpWhile, hlo.OpConditional, hlo.OpCall:
				for _, callee := range in.Callees() {
					walk(callee)
				}
				continue
			}
			s := leafBytes(in.Shape) // the result; an entry parameter's argument is stored
			for _, o := range in.Operands {
				s = satAdd(s, leafBytes(o.Shape))
			}
			// Tiled values are gathered from and scattered to buffers of
			// their padded size, at most the operands' and result's
			// slots: as many bytes again, bounded by the literals' own.
			s = satAdd(s, paddedBytes(in))
			s = satAdd(s, h.instruction(in))
			step = max(step, s)
		}
	}
	walk(as.Module.Entry)
	return satAdd(n, step)
}

// paddedBytes bounds the tiled buffers a step of in reads and writes: the
// padded sizes of its result's and operands' tiled leaves.
func paddedBytes(in *hlo.Instruction) int64 {
	var n int64
	add := func(s hlo.Shape) {
		s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
			if sub.IsArray() && sub.Layout != nil && len(sub.Layout.Tiles) > 0 {
				b, err := hlo.ByteSize(sub)
				if err != nil || b < 0 {
					b = math.MaxInt64
				}
				n = satAdd(n, max(b, leafBytes(sub)))
			}
		})
	}
	add(in.Shape)
	for _, o := range in.Operands {
		add(o.Shape)
	}
	return n
}

// arenaBytes bounds the pages a planned run touches: those under the slots
// of the array values it writes, and never more than the allocations
// packed end to end in each memory space (as HostArena and the tpu
// memories place them: in order, nothing freed, aligned to at most 512).
func arenaBytes(as *assign.Assignment) int64 {
	a := as.Analysis
	type slot struct {
		alloc    int
		off, end int64
	}
	byValue := make([]slot, len(a.Values))
	placed := make([]bool, len(a.Values))
	span := map[int64]int64{} // by color: the allocations end to end
	for i, al := range as.Allocations {
		size := max(al.Size, 1)
		span[al.Color] = satAdd(span[al.Color], satAdd(size, 511)&^511)
		for _, s := range al.Slots {
			if v := s.Value; v != nil && v.ID >= 0 && v.ID < len(a.Values) {
				byValue[v.ID], placed[v.ID] = slot{i, s.Offset, satAdd(s.Offset, v.Size)}, true
			}
		}
	}
	// A value without a slot (a phi) is read and written where its
	// buffer's first placed value is, as Execute places it.
	for _, b := range a.Buffers {
		from := -1
		for _, v := range b.Values {
			if placed[v.ID] {
				from = v.ID
				break
			}
		}
		if from < 0 {
			continue
		}
		for _, v := range b.Values {
			if !placed[v.ID] {
				s := byValue[from]
				byValue[v.ID], placed[v.ID] = slot{s.alloc, s.off, satAdd(s.off, v.Size)}, true
			}
		}
	}
	var slots []slot
	for _, v := range a.Values {
		if placed[v.ID] && v.Shape.IsArray() && v.Size > 0 {
			slots = append(slots, byValue[v.ID])
		}
	}
	slices.SortFunc(slots, func(x, y slot) int {
		return cmp.Or(cmp.Compare(x.alloc, y.alloc), cmp.Compare(x.off, y.off))
	})
	// Merge the slots of each allocation; a run of n bytes touches at
	// most ceil(n/PageSize)+1 pages wherever it lies.
	var touched int64
	for i := 0; i < len(slots); {
		cur := slots[i]
		for i++; i < len(slots) && slots[i].alloc == cur.alloc && slots[i].off <= cur.end; i++ {
			cur.end = max(cur.end, slots[i].end)
		}
		touched = satAdd(touched, satAdd(ceilDiv(cur.end-cur.off, PageSize), 1))
	}
	var packed int64
	for _, n := range span {
		packed = satAdd(packed, satAdd(ceilDiv(n, PageSize), 1))
	}
	pages := min(touched, packed)
	return satMul(pages, PageSize+hostBytesPerPage)
}

// shadowBytes bounds the shadow run's tables: per value, use, step,
// buffer and allocation.
func shadowBytes(as *assign.Assignment) int64 {
	a := as.Analysis
	var uses int64
	for _, v := range a.Values {
		uses += int64(len(v.Uses))
	}
	n := satMul(int64(len(a.Values))+int64(len(a.Buffers))+int64(len(as.Allocations)), hostBytesPerValue)
	n = satAdd(n, satMul(uses, 16))
	return satAdd(n, satMul(int64(len(a.Sequence))+1, hostBytesPerStep))
}

// leafElems is the number of elements of the array leaves of s
// (saturating; an uncomputable count is math.MaxInt64).
func leafElems(s hlo.Shape) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if !sub.IsArray() {
			return
		}
		k, ok := sub.Elements()
		if !ok {
			k = math.MaxInt64
		}
		n = satAdd(n, k)
	})
	return n
}

// movesBytes reports whether the evaluator computes op by moving element
// bytes, never decoding them (gather, relayout and the slicing functions
// of eval.go).
func movesBytes(op hlo.Opcode) bool {
	switch op {
	case hlo.OpBitcast, hlo.OpReshape, hlo.OpCopy, hlo.OpTranspose, hlo.OpBroadcast, hlo.OpSlice,
		hlo.OpDynamicSlice, hlo.OpDynamicUpdateSlice, hlo.OpConcatenate, hlo.OpPad, hlo.OpReverse:
		return true
	}
	return false
}

// elementCost bounds the intermediates of evaluating an instruction per
// operand or result of shape s, per element of each array leaf: 2·width
// + 8 bytes for an instruction that moves bytes (a logical copy, the
// result laid out, a table of physical places), and 2·decoded more for one
// that decodes its elements (decoded is 16 for a complex element type and
// 8 for others: the elements as 64-bit values, and one rearranged copy of
// those, a transposition or a sort's keys).
func elementCost(s hlo.Shape, moves bool) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if !sub.IsArray() {
			return
		}
		k, ok := sub.Elements()
		if !ok {
			k = math.MaxInt64
		}
		per := 2*int64(max(sub.Elem.ByteWidth(), 1)) + 8
		if !moves {
			decoded := int64(8)
			if sub.Elem.IsComplex() {
				decoded = 16
			}
			per += 2 * decoded
		}
		n = satAdd(n, satMul(k, per))
	})
	return n
}

// leafBytes is the bytes of the literals of the array leaves of s, as
// eval.NewLiteral and eval.RandomLiteral size them (saturating).
func leafBytes(s hlo.Shape) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if !sub.IsArray() {
			return
		}
		k, ok := sub.Elements()
		if !ok {
			k = math.MaxInt64
		}
		n = satAdd(n, satMul(k, int64(max(sub.Elem.ByteWidth(), 1))))
	})
	return n
}

// satAdd is a+b for a, b >= 0, math.MaxInt64 when that overflows.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satMul is a*b for a, b >= 0, math.MaxInt64 when that overflows.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 {
	return a/b + min(a%b, 1)
}
