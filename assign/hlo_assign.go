package assign

// Buffer assignment for HLO modules, the way XLA's BufferAssigner
// (buffer_assignment.cc) does it, with the packers of assign/pack
// for the temporaries.
//
// The buffers of the analysed module are sorted as XLA sorts them
// (kBiggestFirst: size, live-out first, earliest post-order position, id;
// the positions number the instructions computation by computation in the
// reverse of the call graph's post-order) and handled one by one:
//
//   - a constant gets an allocation of its own ("constant");
//   - a tuple's index table never shares an allocation: the entry
//     result's gets its own; with the "xla" algorithm so does every other
//     one (as XLA does), while the other packers put them in the temp heap;
//   - an entry parameter leaf gets one ("parameter N ... at ShapeIndex");
//     a donated one (input_output_alias) may later hold other buffers, an
//     undonated one is read-only;
//   - any other buffer first tries the allocations of its instruction's
//     operands, then every reusable allocation from the smallest up: it may
//     join one when its size fits (a live-out buffer needs exactly the
//     allocation's size) and no value of it is live at the same time as a
//     value already there (touching ranges are allowed where the later value
//     may overwrite the earlier, dying operand);
//   - otherwise a temporary is deferred to the temp heap, and a live-out
//     buffer gets a new, reusable allocation ("maybe-live-out").
//
// The deferred temporaries of each color are replayed in schedule order as
// XLA's HeapSimulator does (allocations before frees at each step; a value
// may take over a dying operand's slot, as the target's
// CanShareOperandBufferWithUser allows (share.go); values of one buffer are
// colocated), which yields intervals in event time. Those are packed, chunk
// starts aligned to the target's alignment, into one heap per color: by
// the chosen packer, or with "xla" by XLA's own heap algorithm
// (pack.XLAHeap). Then the buffers of thread-local computations (reduction
// functions and the like) are sorted the same way, over the thread-local
// computations, and get an allocation each.
//
// Finally, as XLA's CombineTempAllocations: the temp allocations (heaps and
// index tables that are not live out) are moved behind the others with
// std::partition, which is not stable and whose exact permutation this
// file reproduces, and the temp allocations of each color are concatenated
// in that order, each starting at the next multiple of the alignment, into
// one "preallocated-temp" allocation per color.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hlomem/hlomem/internal/poll"

	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// DefaultBudget is the search time per temp heap when
// Options.Budget is 0.
const DefaultBudget = 500 * time.Millisecond

// DefaultGap is the relative gap above a large temp heap's lower
// bound within which the search stops when Options.Gap is 0: within
// 1e-5 (ten bytes per megabyte) the descents on a heap of tens of thousands
// of values would spend the whole budget for at most that.
const DefaultGap = 1e-5

// Options configures Assign. The zero value assigns for the GPU with
// the "auto" packer.
type Options struct {
	// Target is the backend; the zero Target means GPU (see TargetByName).
	Target Target
	// Align overrides the target's alignment of temp chunks when positive.
	Align int64
	// Algorithm names the packer for the temp heaps ("" means auto); "xla"
	// reproduces XLA's best-of-spatial-and-temporal heap.
	Algorithm string
	// Budget bounds the search of "auto" and "exact" per heap; 0 means
	// DefaultBudget (shorter than pack.DefaultBudget: assignment is one
	// step of a compile, and the heaps of real modules are easy).
	Budget time.Duration
	// Gap is the relative distance from a heap's lower bound within which
	// the search of a heap of over 5,000 items stops (pack.Options.Gap); 0
	// means DefaultGap, a negative value searches on until the
	// budget is spent.
	Gap float64
	// NoOperandReuse disables letting a value take a dying operand's slot.
	NoOperandReuse bool
}

// Slot places one value in an allocation.
type Slot struct {
	Value  *liveness.Value
	Offset int64
	Size   int64
}

// Allocation is one contiguous block of memory, as XLA's BufferAllocation.
type Allocation struct {
	Index int
	Size  int64
	Color int64
	// Parameter is the entry parameter number, or -1.
	Parameter      int64
	ParameterIndex hlo.ShapeIndex
	// ParameterAliased is true for a donated parameter (input_output_alias).
	ParameterAliased bool
	Constant         bool
	ThreadLocal      bool
	MaybeLiveOut     bool
	// Temp marks a preallocated-temp allocation (the packed heap).
	Temp bool
	// Tuple marks an allocation made for a tuple's index table, which
	// nothing else may share.
	Tuple bool
	// Output is set when the allocation holds the entry result's top level.
	Output *hlo.Shape
	// Slots in value ID order.
	Slots []Slot

	buffers  []*liveness.Buffer
	held     heldIndex // the values of buffers, by live range
	order    int       // creation order
	reusePos int       // 1 + position among the reusable allocations, or 0
}

// isTemp is XLA's IsPreallocatedTempBuffer: not a parameter, not live
// out, not thread-local, not a constant.
func (al *Allocation) isTemp() bool {
	return !al.IsParameter() && !al.MaybeLiveOut && !al.ThreadLocal && !al.Constant
}

// IsParameter reports whether the allocation backs an entry parameter.
func (al *Allocation) IsParameter() bool { return al.Parameter >= 0 }

// Kind names the allocation's class: parameter, constant, thread-local,
// maybe-live-out or preallocated-temp.
func (al *Allocation) Kind() string {
	switch {
	case al.IsParameter():
		return "parameter"
	case al.Constant:
		return "constant"
	case al.ThreadLocal:
		return "thread-local"
	case al.MaybeLiveOut:
		return "maybe-live-out"
	}
	return "preallocated-temp"
}

// readonly: undonated parameters and constants may hold nothing else.
func (al *Allocation) readonly() bool {
	return al.IsParameter() && !al.ParameterAliased || al.Constant
}

// TempHeap is the packing of one color's temporaries.
type TempHeap struct {
	Color int64
	// Problem holds the heap's intervals in event time (XLA's HeapSimulator
	// counter), Values[i] being Problem.Buffers[i]'s value.
	Problem  *pack.Problem
	Values   []*liveness.Value
	Solution *pack.Solution
	// Allocation is the preallocated-temp allocation holding the heap, at
	// offset Base (other temp allocations may come before it).
	Allocation *Allocation
	Base       int64
	// LowerBound is the largest total size of these values live at once
	// in the heap replay, after its operand reuse, a group of values
	// sharing an address counted once: no packing of the heap is lower.
	// PeakTime is the schedule step where it is reached and PeakValues the
	// values live there.
	LowerBound int64
	PeakTime   int
	PeakValues []*liveness.Value
}

// Stats summarises an assignment as XLA's BufferAssignment stats do, with
// the bounds hlomem adds. README ("Peaks and bounds") sets the figures side
// by side.
type Stats struct {
	ParameterBytes    int64
	ConstantBytes     int64
	MaybeLiveOutBytes int64
	TempBytes         int64
	TotalBytes        int64
	// LowerBound is liveness' bound over every buffer of the module with
	// the target's in-place reuse rule (Analysis.LowerBoundWith):
	// parameters, constants, outputs and temps, after copy insertion,
	// before any decision of which operand to reuse. No plan of the module
	// for this target under this schedule takes fewer bytes in total, so
	// TotalBytes - LowerBound is the most a better plan could save.
	LowerBound int64
	// TempLowerBound is the sum of the temp heaps' lower bounds
	// (TempHeap.LowerBound): temps only, after this assignment's operand
	// reuse. TempFragmentation is the heaps' size above it, XLA's
	// "preallocated temp fragmentation".
	TempLowerBound    int64
	TempFragmentation int64
	// XLAMinimumBytes is XLA's HeapSimulator::MinimumMemoryForModule for
	// this schedule: the peak of its NoFragmentationStatsHeap over every
	// value but constants, with XLA's operand reuse (only into a buffer
	// of one value) and its count (a colocated value counted again while
	// its partner lives). It is XLA's reference, not a bound: a plan can
	// be smaller. TotalFragmentation = TotalBytes - XLAMinimumBytes is
	// XLA's "total fragmentation", negative when the plan beats it.
	XLAMinimumBytes    int64
	TotalFragmentation int64
	// HostBytes is the part of TotalBytes in allocations of color
	// HostMemorySpace (layouts' S(5), XLA's Layout::kHostMemorySpace):
	// XLA's buffer assignment plans them as it plans any color, so
	// TotalBytes keeps them for parity, but they live in the host's
	// memory, not the device's. DeviceBytes = TotalBytes - HostBytes is
	// what the device must hold.
	HostBytes   int64
	DeviceBytes int64
}

// HostMemorySpace is XLA's host memory space (Layout::kHostMemorySpace in
// xla/layout.h): an array whose layout says S(5) lives in host memory,
// where JAX's memory_kind="pinned_host" and XLA's host offloading put it.
const HostMemorySpace = 5

// Assignment is the result of Assign.
type Assignment struct {
	Module      *hlo.Module
	Analysis    *liveness.Analysis
	Options     Options // with Target, Align and Algorithm resolved
	Allocations []*Allocation
	Heaps       []*TempHeap
	Stats       Stats

	allocOf  []*Allocation  // by buffer ID
	bound    liveness.Bound // Stats.LowerBound with its proof
	reusable *reusableSet   // the global assignment's reusable allocations

	occOnce sync.Once
	occ     *Occupancy // Occupancy's result
}

// AllocationOf returns the allocation holding v and v's slot in it.
func (as *Assignment) AllocationOf(v *liveness.Value) (*Allocation, Slot, bool) {
	if v.Buffer == nil || v.Buffer.ID >= len(as.allocOf) || as.allocOf[v.Buffer.ID] == nil {
		return nil, Slot{}, false
	}
	al := as.allocOf[v.Buffer.ID]
	for _, s := range al.Slots {
		if s.Value == v {
			return al, s, true
		}
	}
	return al, Slot{}, false
}

// TotalCost returns a function that assigns an analysis with opts and
// returns the plan's total bytes (Stats.TotalBytes): the cost under which
// fusion.Options.Cost keeps fusion from making the assigned total rise,
// which the lower bound alone does not promise (alignment, the packer's
// choices and the target's reuse rules move the total on their own).
func TotalCost(ctx context.Context, opts Options) func(*liveness.Analysis) (int64, error) {
	return func(a *liveness.Analysis) (int64, error) {
		as, err := Assign(ctx, a, opts)
		if err != nil {
			return 0, err
		}
		return as.Stats.TotalBytes, nil
	}
}

// Assign assigns every buffer of the analysed module to an allocation.
// The analysis must be liveness.Analyze's of the module as it still is
// (Analyze verified it then); Assign checks again what would make a plan
// silently wrong and refuses, with the instruction's position, a value
// whose size cannot be computed or an opcode it does not know (validate.go).
func Assign(ctx context.Context, a *liveness.Analysis, opts Options) (*Assignment, error) {
	if opts.Target.isZero() {
		opts.Target = GPU
	}
	align := opts.Target.Alignment
	if opts.Align > 0 {
		align = opts.Align
	}
	if align <= 0 {
		return nil, fmt.Errorf("assign: target %q has no alignment (Target.Alignment or Options.Align must be positive)", opts.Target.Name)
	}
	opts.Align = align
	if opts.Algorithm == "" {
		opts.Algorithm = "auto"
	}
	if err := pack.CheckAlgorithm(opts.Algorithm); err != nil {
		return nil, fmt.Errorf("assign: %w", err)
	}
	if opts.Budget == 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Gap == 0 {
		opts.Gap = DefaultGap
	}
	if err := validate(a, opts.Target.Size); err != nil {
		return nil, err
	}
	as := &Assignment{Module: a.Module, Analysis: a, Options: opts, allocOf: make([]*Allocation, len(a.Buffers))}
	// The bounds of the stats depend on the analysis alone: compute them
	// while the plan is made, on a core the packers leave idle. On a large
	// analysis they wait for the temp heaps instead: their tables (about
	// 150 bytes per value) would otherwise be live beside the packers', at
	// the peak of the process' memory.
	bounds := make(chan struct{})
	computeBounds := func() {
		defer close(bounds)
		as.bound = as.Analysis.LowerBoundWith(nil, as.canShare)
		xla := replay(as.Analysis, func(v *liveness.Value) bool { return v.Inst.Opcode != hlo.OpConstant }, as.shareFunc())
		as.Stats.XLAMinimumBytes = xla.xlaPeak
	}
	sequential := len(a.Values) >= sequentialBounds
	if !sequential {
		go computeBounds()
	}
	// Once ctx is done Assign returns at once, leaving the bounds to
	// finish on their own (they only read the analysis, and write to as,
	// which is dropped).
	if err := as.assignGlobal(ctx); err != nil {
		return nil, err
	}
	deferred := as.deferred()
	if err := as.packTemps(ctx, deferred); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !sequential {
			<-bounds
		}
		return nil, err
	}
	// An interrupted search of the temp heaps keeps the best packing found;
	// an interrupted Assign returns nothing.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sequential {
		computeBounds()
	}
	as.assignThreadLocal()
	select {
	case <-bounds:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	as.finish()
	return as, nil
}

// sequentialBounds is the number of values from which Assign computes
// the stats' bounds after packing rather than beside it (see Assign):
// memory before parallelism on the largest modules.
const sequentialBounds = 250_000

// sortBuffers orders buffers as XLA's kBiggestFirst: size descending, live
// out first, earliest post-order position of any value, then ID. The
// positions number the instructions of the computations of kind k.
func (as *Assignment) sortBuffers(bufs []*liveness.Buffer, k liveness.CompKind) {
	pos := postOrderPositions(as.Analysis, k)
	// Per buffer (by ID): the earliest position of its values' instructions
	// and whether it is live out, computed once for the sort.
	minPos := make([]int, len(as.Analysis.Buffers))
	liveOut := make([]bool, len(as.Analysis.Buffers))
	for _, b := range bufs {
		m := int(^uint(0) >> 1)
		for _, v := range b.Values {
			if id := v.Inst.ID; id >= 0 && id < len(pos) && pos[id] >= 0 && int(pos[id]) < m {
				m = int(pos[id])
			}
		}
		minPos[b.ID] = m
		liveOut[b.ID] = b.LiveOut()
	}
	slices.SortStableFunc(bufs, func(x, y *liveness.Buffer) int {
		if x.Size != y.Size {
			return cmp.Compare(y.Size, x.Size)
		}
		if lx, ly := liveOut[x.ID], liveOut[y.ID]; lx != ly {
			if lx {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(minPos[x.ID], minPos[y.ID]); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
}

// postOrderPositions numbers the instructions of the computations of kind
// k as XLA's AssignBuffersForComputations does: the computations in the
// reverse of the call graph's post-order (CallGraph::VisitNodes), callers
// before callees, each computation's instructions in
// MakeInstructionPostOrder order. The result is indexed by instruction ID
// (the analysis numbered the module); -1 for the other instructions.
func postOrderPositions(a *liveness.Analysis, k liveness.CompKind) []int32 {
	var comps []*hlo.Computation
	for _, c := range callGraphPostOrder(a) {
		if a.Kinds[c.ID] == k {
			comps = append(comps, c)
		}
	}
	size := 0
	for _, c := range a.Module.Computations {
		for _, in := range c.Instructions {
			size = max(size, in.ID+1)
		}
	}
	pos := make([]int32, size)
	for i := range pos {
		pos[i] = -1
	}
	n := int32(0)
	for i := len(comps) - 1; i >= 0; i-- {
		for _, in := range liveness.InstructionPostOrder(comps[i]) {
			if in.ID >= 0 && in.ID < size {
				pos[in.ID] = n
			}
			n++
		}
	}
	return pos
}

// callGraphPostOrder is CallGraph::VisitNodes: a depth-first walk from the
// computations nothing calls (in module order), each computation's callees
// in the order of their call sites, callees before callers, a while's body
// before its condition.
//
// The call graph lists call sites in the in-memory order of the
// instructions, which the text (printed in schedule order) does not
// record. XLA's dataflow analysis numbers values computation by computation
// in a depth-first walk too, so the value IDs stand in for the missing
// order: sites calling computations that hold values come first, by the
// lowest value ID of those callees; then sites that reach such computations
// only through computations without values of their own here (fusions
// calling reducers), by the lowest ID among the computations they reach
// that the walk has not visited yet; then the rest, in text order (they
// reach nothing that gets a position). On the 93 paired modules of the
// corpus this reproduces every order XLA's dumps show, where the text order
// of call sites, or its reverse, or plain value-ID order of the
// computations, each miss some (command-buffer calls, created late, sit
// after the while loops in memory though the schedule runs them first).
func callGraphPostOrder(a *liveness.Analysis) []*hlo.Computation {
	m := a.Module
	const none = int(^uint(0) >> 1)
	// By computation ID (the analysis keeps them dense): the lowest value
	// ID of each (none without values), whether something calls it,
	// whether the walk visited it.
	nc := len(m.Computations)
	first := make([]int, nc)
	for i := range first {
		first[i] = none
	}
	for _, v := range a.Values {
		if p := v.Inst.Parent.ID; !v.IsPhi && v.XLAID < first[p] {
			first[p] = v.XLAID
		}
	}
	called := make([]bool, nc)
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				if callee != nil {
					called[callee.ID] = true
				}
			}
		}
	}
	seen := make([]bool, nc)
	// newMin is the lowest value ID among the computations reachable from
	// cs through computations not yet walked. A computation that holds
	// values is sequential and, in a flattened module, has one call site,
	// so it is reached only through its caller: the walk has visited it
	// only if it visited that caller, and so on up to cs, which it has
	// not. So below cs, "not yet walked" never excludes a computation with
	// values, and the lowest ID reachable from each computation is
	// remembered (a walk per site was quadratic on a chain of calls).
	reachMin := make([]int, nc)
	reached := make([]bool, nc)
	var lowest func(c *hlo.Computation) int
	lowest = func(c *hlo.Computation) int {
		if reached[c.ID] {
			return reachMin[c.ID]
		}
		reached[c.ID], reachMin[c.ID] = true, none // the call graph is acyclic (Verify)
		best := first[c.ID]
		for _, in := range c.Instructions {
			for _, cc := range in.Callees() {
				if cc != nil {
					best = min(best, lowest(cc))
				}
			}
		}
		reachMin[c.ID] = best
		return best
	}
	newMin := func(cs []*hlo.Computation) int {
		best := none
		for _, c := range cs {
			if c != nil && !seen[c.ID] {
				best = min(best, lowest(c))
			}
		}
		return best
	}
	var out []*hlo.Computation
	var visit func(c *hlo.Computation)
	visit = func(c *hlo.Computation) {
		if c == nil || seen[c.ID] {
			return
		}
		seen[c.ID] = true
		var sites []*hlo.Instruction
		for _, in := range c.Instructions {
			if len(in.Callees()) > 0 {
				sites = append(sites, in)
			}
		}
		type keyed struct {
			in         *hlo.Instruction
			class, key int
		}
		ks := make([]keyed, len(sites))
		for i, in := range sites {
			ks[i] = keyed{in, 2, none}
			for _, cc := range in.Callees() {
				if cc == nil {
					continue
				}
				if f := first[cc.ID]; f < ks[i].key {
					ks[i].class, ks[i].key = 0, f
				}
			}
			if ks[i].class == 2 {
				if k := newMin(in.Callees()); k != none {
					ks[i].class, ks[i].key = 1, k
				}
			}
		}
		sort.SliceStable(ks, func(i, j int) bool {
			if ks[i].class != ks[j].class {
				return ks[i].class < ks[j].class
			}
			return ks[i].key < ks[j].key
		})
		for _, k := range ks {
			callees := k.in.Callees()
			if k.in.Opcode == hlo.OpWhile {
				callees = []*hlo.Computation{k.in.Body(), k.in.Condition()}
			}
			for _, callee := range callees {
				visit(callee)
			}
		}
		out = append(out, c)
	}
	for _, c := range m.Computations {
		if !called[c.ID] {
			visit(c)
		}
	}
	return out
}

func (as *Assignment) newAllocation(b *liveness.Buffer, size int64) *Allocation {
	al := &Allocation{Size: size, Color: b.Color, Parameter: -1, order: len(as.Allocations)}
	as.Allocations = append(as.Allocations, al)
	return al
}

// addBuffer places every value of b at offset 0 of al.
func (as *Assignment) addBuffer(al *Allocation, b *liveness.Buffer) {
	al.buffers = append(al.buffers, b)
	for _, v := range b.Values {
		al.Slots = append(al.Slots, Slot{Value: v, Offset: 0, Size: b.Size})
		al.held.add(v)
	}
	as.allocOf[b.ID] = al
	if al.reusePos > 0 {
		as.reusable.added(al, b)
	}
}

func (as *Assignment) kindOf(b *liveness.Buffer) liveness.CompKind {
	return as.Analysis.Kinds[b.Values[0].Inst.Parent.ID]
}

// sortedBuffersOf returns the buffers of computations of kind k in XLA's
// assignment order.
func (as *Assignment) sortedBuffersOf(k liveness.CompKind) []*liveness.Buffer {
	var bufs []*liveness.Buffer
	for _, b := range as.Analysis.Buffers {
		if as.kindOf(b) == k {
			bufs = append(bufs, b)
		}
	}
	as.sortBuffers(bufs, k)
	return bufs
}

// assignGlobal handles the buffers of sequential computations: special
// allocations, reuse, and deferral of temporaries.
func (as *Assignment) assignGlobal(ctx context.Context) error {
	bufs := as.sortedBuffersOf(liveness.Sequential)
	if err := ctx.Err(); err != nil {
		return err
	}
	// At most the live-out buffers and the entry parameters become
	// reusable allocations.
	most := 0
	for _, b := range bufs {
		if b.LiveOut() || hasEntryParameter(b, as.Module.Entry) {
			most++
		}
	}
	end := as.Analysis.EndTime()
	reusable := &reusableSet{end: end}
	if !reuseScan && !reuseNoBits {
		reusable.bits = newBusyBits(end+1, most)
	}
	as.reusable = reusable
	entry := as.Module.Entry
	for i, b := range bufs {
		if poll.Due(i) {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if as.special(b, entry, reusable) {
			continue
		}
		if isTupleBuffer(b) {
			// XLA gives an index table an allocation of its own that
			// nothing shares; unless it is live out, it is a temp allocation
			// later concatenated with the temp heap. The other packers put
			// the temporary ones into the heap, where they can share space
			// over time.
			if b.LiveOut() || as.Options.Algorithm == "xla" {
				al := as.newAllocation(b, b.Size)
				al.Tuple = true
				as.addBuffer(al, b)
			}
			continue
		}
		if as.reuse(b, reusable) {
			continue
		}
		if !b.LiveOut() {
			continue // deferred to the temp heap
		}
		al := as.newAllocation(b, b.Size)
		as.addBuffer(al, b)
		reusable.add(al)
	}
	return nil
}

// special gives constants and entry parameters their own allocation.
func (as *Assignment) special(b *liveness.Buffer, entry *hlo.Computation, reusable *reusableSet) bool {
	for _, v := range b.Values {
		if v.Inst.Opcode == hlo.OpConstant {
			al := as.newAllocation(b, b.Size)
			al.Constant = true
			as.addBuffer(al, b)
			return true
		}
	}
	for _, v := range b.Values {
		in := v.Inst
		if in.Opcode != hlo.OpParameter || in.Parent != entry {
			continue
		}
		al := as.newAllocation(b, b.Size)
		al.Parameter = in.ParameterNumber
		al.ParameterIndex = v.Index[:len(v.Index):len(v.Index)] // shared: an append copies
		for _, io := range as.Module.InputOutputAlias {
			if io.Param == in.ParameterNumber && io.ParamIndex.Equal(v.Index) {
				al.ParameterAliased = true
			}
		}
		as.addBuffer(al, b)
		if al.ParameterAliased {
			reusable.add(al)
		}
		return true
	}
	return false
}

// reuse tries the allocations of the defining instructions' operands, then
// every reusable allocation from the most recent (smallest) back.
func (as *Assignment) reuse(b *liveness.Buffer, reusable *reusableSet) bool {
	for _, v := range b.Values {
		if len(v.Index) != 0 || v.Shape.IsTuple() {
			continue
		}
		for _, op := range v.Inst.Operands {
			ov := as.Analysis.ValueAt(op, hlo.ShapeIndex{})
			if ov == nil || ov.Buffer == nil {
				continue
			}
			if al := as.allocOf[ov.Buffer.ID]; al != nil && as.maybeAssign(al, b) {
				return true
			}
		}
	}
	if reuseScan {
		for i := len(reusable.als) - 1; i >= 0; i-- {
			if as.maybeAssign(reusable.als[i], b) {
				return true
			}
		}
		return false
	}
	// The index skips only allocations maybeAssign would refuse (see
	// reusable.go), so the first to accept is XLA's.
	return reusable.candidates(b, func(al *Allocation) bool { return as.maybeAssign(al, b) })
}

// hasEntryParameter reports whether b holds a parameter of entry.
func hasEntryParameter(b *liveness.Buffer, entry *hlo.Computation) bool {
	for _, v := range b.Values {
		if v.Inst.Opcode == hlo.OpParameter && v.Inst.Parent == entry {
			return true
		}
	}
	return false
}

// reuseScan makes reuse try every reusable allocation, as XLA does,
// without the index, and reuseNoBits leaves out the bit index (as when it
// would be too large): tests compare the three ways.
var reuseScan, reuseNoBits = false, false

// maybeAssign puts b at offset 0 of al when XLA's MaybeAssignBuffer would.
func (as *Assignment) maybeAssign(al *Allocation, b *liveness.Buffer) bool {
	if b.Color != al.Color || b.Size > al.Size || al.readonly() || al.ThreadLocal || al.Temp || al.Tuple {
		return false
	}
	if len(al.buffers) > 0 {
		for _, y := range b.Values {
			if !y.Scheduled || al.held.unscheduled > 0 {
				return false // a value outside the schedule interferes with all
			}
			if al.held.candidates(y.Range.Start, y.Range.End, func(x *liveness.Value) bool { return as.interferes(x, y) }) {
				return false
			}
			if y.Inst.Opcode == hlo.OpCopy && as.copiesFromHeld(y.Inst, al) {
				return false
			}
		}
	}
	if b.LiveOut() && al.Size != b.Size {
		return false
	}
	as.addBuffer(al, b)
	return true
}

func isTupleBuffer(b *liveness.Buffer) bool {
	for _, v := range b.Values {
		if v.Shape.IsTuple() {
			return true
		}
	}
	return false
}

// copiesFromHeld reports whether the copy reads a value held in al, at any
// position of its operand: a copy never shares its operand's buffer.
func (as *Assignment) copiesFromHeld(cp *hlo.Instruction, al *Allocation) bool {
	for _, op := range cp.Operands {
		held := false
		op.Shape.ForEachSubshape(func(_ hlo.Shape, ix hlo.ShapeIndex) {
			if v := as.Analysis.ValueAt(op, ix); v != nil && v.Buffer != nil && as.allocOf[v.Buffer.ID] == al {
				held = true
			}
		})
		if held {
			return true
		}
	}
	return false
}

func isOperand(user, op *hlo.Instruction) bool {
	for _, o := range user.Operands {
		if o == op {
			return true
		}
	}
	return false
}

// interferes is XLA's LiveRangeInterferes on inclusive live ranges: ranges
// that overlap interfere, except where one ends exactly as the other
// starts and the later value's instruction may overwrite the earlier
// value's last position (a dying operand).
func (as *Assignment) interferes(x, y *liveness.Value) bool {
	if !x.Scheduled || !y.Scheduled {
		return true
	}
	rx, ry := x.Range, y.Range
	if rx.Start > ry.End || ry.Start > rx.End {
		return false
	}
	canShare := func(user, operand *liveness.Value) bool {
		end := operand.EndPosition
		return user.Inst.Opcode != hlo.OpCopy && isOperand(user.Inst, end.Inst) &&
			as.canShare(end.Inst, end.Index, user.Inst, user.Index)
	}
	switch {
	case rx.End == ry.Start:
		return !canShare(y, x)
	case ry.End == rx.Start:
		return !canShare(x, y)
	}
	return true
}

// deferred returns the buffers of sequential computations left without an
// allocation: the temporaries.
func (as *Assignment) deferred() []*liveness.Buffer {
	var out []*liveness.Buffer
	for _, b := range as.Analysis.Buffers {
		if as.kindOf(b) == liveness.Sequential && as.allocOf[b.ID] == nil {
			out = append(out, b)
		}
	}
	return out
}

// assignThreadLocal gives every buffer of a thread-local computation an
// allocation of its own.
func (as *Assignment) assignThreadLocal() {
	for _, b := range as.sortedBuffersOf(liveness.ThreadLocal) {
		constant := false
		for _, v := range b.Values {
			constant = constant || v.Inst.Opcode == hlo.OpConstant
		}
		al := as.newAllocation(b, b.Size)
		al.ThreadLocal = !constant
		al.Constant = constant
		as.addBuffer(al, b)
	}
}

// finish marks live-out allocations, combines the temp allocations as
// XLA's CombineTempAllocations does, numbers the allocations and sorts
// their slots by value ID.
func (as *Assignment) finish() {
	root := as.Module.Entry.Root
	for _, al := range as.Allocations {
		for _, s := range al.Slots {
			if s.Value.LiveOut {
				al.MaybeLiveOut = true
			}
			for _, p := range s.Value.Positions {
				if p.Inst == root && len(p.Index) == 0 {
					sh := root.Shape
					al.Output = &sh
				}
			}
		}
	}
	as.combineTemps()
	for i, al := range as.Allocations {
		al.Index = i
		sort.SliceStable(al.Slots, func(i, j int) bool { return al.Slots[i].Value.ID < al.Slots[j].Value.ID })
	}
	st := &as.Stats
	for _, al := range as.Allocations {
		st.TotalBytes += al.Size
		if al.Color == HostMemorySpace {
			st.HostBytes += al.Size
		}
		switch {
		case al.IsParameter():
			st.ParameterBytes += al.Size
		case al.Constant:
			st.ConstantBytes += al.Size
		case al.MaybeLiveOut:
			st.MaybeLiveOutBytes += al.Size
		case al.Temp:
			st.TempBytes += al.Size
		}
	}
	for _, h := range as.Heaps {
		st.TempLowerBound += h.LowerBound
		st.TempFragmentation += h.Solution.Height() - h.LowerBound
	}
	st.LowerBound = as.bound.Bytes // as.bound and XLAMinimumBytes: see Assign
	st.TotalFragmentation = st.TotalBytes - st.XLAMinimumBytes
	st.DeviceBytes = st.TotalBytes - st.HostBytes
}

// partition moves the elements for which keep is false behind the others
// exactly as libstdc++'s and libc++'s std::partition do (swapping the first
// misplaced element from the left with the last misplaced one from the
// right), which is the order XLA's CombineTempAllocations sees. It returns
// the index of the first element of the second group.
func partition(als []*Allocation, keep func(*Allocation) bool) int {
	first, last := 0, len(als)
	for {
		for {
			if first == last {
				return first
			}
			if !keep(als[first]) {
				break
			}
			first++
		}
		last--
		for {
			if first == last {
				return first
			}
			if keep(als[last]) {
				break
			}
			last--
		}
		als[first], als[last] = als[last], als[first]
		first++
	}
}

// combineTemps concatenates the temp allocations of each color into one
// preallocated-temp allocation, in partition order, each part starting at
// the next multiple of the alignment.
func (as *Assignment) combineTemps() {
	als := as.Allocations
	cut := partition(als, func(al *Allocation) bool { return !al.isTemp() })
	kept := als[:cut:cut]
	combined := map[int64]*Allocation{}
	var order []*Allocation
	for _, t := range als[cut:] {
		c := combined[t.Color]
		if c == nil {
			c = &Allocation{Color: t.Color, Parameter: -1, Temp: true, order: t.order}
			combined[t.Color] = c
			order = append(order, c)
			c.Slots = append(c.Slots, t.Slots...)
			c.Size = t.Size
			c.buffers = append(c.buffers, t.buffers...)
		} else {
			base := roundUp(c.Size, as.ColorAlign(t.Color))
			for _, s := range t.Slots {
				s.Offset += base
				c.Slots = append(c.Slots, s)
			}
			c.Size = base + t.Size
			c.buffers = append(c.buffers, t.buffers...)
		}
		for _, h := range as.Heaps {
			if h.Allocation == t {
				h.Allocation = c
				h.Base = c.Size - t.Size
			}
		}
		for _, b := range t.buffers {
			as.allocOf[b.ID] = c
		}
	}
	as.Allocations = append(kept, order...)
}

// ColorAlign is the alignment of the temp chunks of memory space color:
// the target's ColorAlignment for it, else Options.Align.
func (as *Assignment) ColorAlign(color int64) int64 {
	if a, ok := as.Options.Target.ColorAlignment[color]; ok && a > 0 {
		return a
	}
	return as.Options.Align
}

func roundUp(x, a int64) int64 {
	if a <= 1 {
		return x
	}
	return (x + a - 1) / a * a
}
