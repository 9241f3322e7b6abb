package tpu

// Memory spaces: a memory-space assignment (MSA) for the TPU's small fast
// memories, VMEM (HLO memory space S(1)) for arrays and SMEM (S(2)) for
// scalars.
//
// XLA's MSA (xla/service/memory_space_assignment, "Quick reference" in
// memory_space_assignment.h) runs on the scheduled module before buffer
// assignment. It places values, or the segments between their uses, in the
// alternate memory, best fit in offset × time, ordered by a cost model's
// "memory boundedness"; it brings values in with asynchronous
// copy-start/copy-done pairs (prefetches) and sends them back the same way
// (evictions), each copy given a window of compute to hide behind by a
// prefetch-interval picker; it repacks, slices and keeps buffers across
// programs. AssignSpaces does a smaller, safe part of that with the same
// IR:
//
//  1. Prepare a clone of the module as buffer assignment would
//     (SpaceOptions.Prepare, the pipeline's: copies inserted, the
//     schedule kept or chosen; the module has XLA:TPU's tiles already, so
//     that every size below is padded) and make the schedule the module's
//     instruction order (is_scheduled=true), so that every later
//     preparation keeps it.
//
//  2. SMEM (SpaceOptions.SMEM > 0). A buffer every value of which is a
//     scalar array goes to S(2) whole (all its values, at every position:
//     a loop counter's initial copy, the while, the body's parameter and
//     root tuple, the get-tuple-elements), untiled and packed by 4-byte
//     words (assign.TPU.ColorAlignment), when it lives in sequential
//     computations only and no value of it is an entry parameter, a
//     constant, live out, or made or read by an asynchronous, collective,
//     side-effecting or custom operation (whose buffers DMA engines and
//     other devices see). Buffers are taken by uses per byte, most first,
//     while they fit SMEM at every step they span.
//
//  3. VMEM candidates are array values of the entry computation or of a
//     computation it calls through call instructions (each runs once per
//     run of its caller); loop bodies and conditions, conditional branches
//     and asynchronous computations are left alone. A value qualifies when
//     nothing else shares it: alone in its buffer (so no donated
//     parameter, no in-place update, no loop state), not live out, not
//     defined by an asynchronous, collective or control-flow instruction,
//     not already outside the default space. Of its uses, those that read
//     the array directly as data can read VMEM ("movable"); a use that
//     only forwards or hands the value on (tuple, get-tuple-element,
//     bitcast, while, call, conditional, add-dependency, ...), an
//     asynchronous or collective operation, one with side effects and one
//     that writes its result over that operand in place keep reading HBM.
//     Each value offers one or more placements:
//
//     - prefetch: the value stays in HBM (where it is defined, or in the
//     caller's buffer of a called computation's parameter) and a copy in
//     VMEM serves the movable uses from the first one a window fits
//     before;
//     - produce: its instruction writes it to VMEM (its layout gets
//     S(1)) and every use reads it there; nothing of it is in HBM;
//     - produce and evict: its instruction writes it to VMEM, its first k
//     uses (movable, k = 1, 2, ...) read it there, and an eviction
//     copies it to HBM for the rest, which read the copy. The eviction's
//     copy-start follows the definition; its copy-done comes as early as
//     its window allows, and before the first use that reads HBM.
//
//  4. Windows. A copy needs compute to overlap: at least MinWindow
//     instructions of the schedule between its copy-start and copy-done,
//     and instructions that move at least Overlap × the copy's bytes
//     (an instruction moves the bytes of its array operands and results;
//     a while, call or conditional the bytes its computations' instructions
//     move, once). Every instruction on a TPU streams its operands from
//     and its results to memory, so in a memory-bound program time is
//     bytes moved: a copy of B bytes is hidden by instructions that move B
//     bytes themselves. This is XLA's CostAnalysisPrefetchIntervalPicker's
//     rule (the copy's elapsed time against the compute's) with bandwidth
//     cancelled out. A prefetch starts as late as that allows before its
//     first use, so that VMEM is held for the shortest time; a use too
//     close to the definition for any window stays on HBM.
//
//  5. Benefit. A placement's benefit is the HBM accesses of the whole
//     array it saves, each use reading and the definition writing it
//     once: a prefetch serving m uses saves m − 1 (the copy reads HBM
//     once), a produced value with n uses saves n + 1 (its write and every
//     read), one evicted after k uses saves k (the eviction writes HBM
//     once, as the definition did). Placements are taken greedily by
//     benefit per byte, most first (ties: more uses moved, earlier in the
//     schedule, name), at most one per value, while they fit: a segment
//     tree keeps the VMEM bytes held at every step of the flattened
//     schedule, each value counted at its size rounded up to the TPU
//     target's chunk alignment (assign.TPU.Alignment), since the plan
//     starts every chunk there. A prefetch with a single use saves no
//     traffic; it is still placed if there is room, as in XLA, because the
//     prefetch takes the read off the instruction's critical path.
//
//  6. The rewritten module is prepared and assigned for real (assign.Assign
//     with assign.TPU): while the color-1 (color-2) allocations exceed VMEM
//     (SMEM), fragmentation the step count does not see, the last
//     placements taken are given up, at least as many bytes as the plan is
//     over, and the module rebuilt. No corpus module needs it.
//
// SpaceReport.HBMTrafficSaved is the sum of the placements' benefits in
// bytes.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/segtree"
	"github.com/hlomem/hlomem/liveness"
)

// The memory spaces of HLO layouts on the TPU, as XLA names its colors
// (GetMemorySpaceName: 0 default, 1 vmem, 2 smem).
const (
	HBMSpace  = 0
	VMEMSpace = 1
	SMEMSpace = 2
)

// DefaultMinWindow is SpaceOptions.MinWindow when it is 0: two
// instructions between copy-start and copy-done, the minimum prefetch
// interval of XLA's InstructionCountPrefetchIntervalPicker in the MSA
// tests.
const DefaultMinWindow = 2

// DefaultOverlap is SpaceOptions.Overlap when it is 0: the instructions of
// a copy's window move at least as many bytes as the copy.
const DefaultOverlap = 1.0

// smemWord is the granule of SMEM: a scalar takes a 4-byte word (8 bytes
// for 64-bit types).
const smemWord = 4

// ErrSpaceOptions is the error (under errors.Is) for invalid SpaceOptions.
var ErrSpaceOptions = errors.New("tpu: invalid space options")

// SpaceOptions configures AssignSpaces.
type SpaceOptions struct {
	// VMEM is the capacity of VMEM in bytes (e.g. 16 << 20, a
	// Generation's VMEM); it must be positive.
	VMEM int64
	// SMEM is the capacity of SMEM in bytes; 0 leaves every scalar in
	// HBM, a negative value is an error.
	SMEM int64
	// MinWindow is the fewest instructions of the schedule that must run
	// between a copy's copy-start and its copy-done; 0 means
	// DefaultMinWindow, a negative value is an error. Copy-starts and
	// copy-dones do not count.
	MinWindow int
	// Overlap is how many times the copy's bytes the instructions of its
	// window must move; 0 means DefaultOverlap, a negative value counts
	// instructions only (MinWindow).
	Overlap float64
	// PrefetchOnly places values in VMEM by prefetching only: no value is
	// produced in VMEM and none is evicted.
	PrefetchOnly bool
	// Prepare prepares the module (a clone AssignSpaces owns) as buffer
	// assignment would: copies inserted and the schedule chosen; the
	// analysis it returns decides what goes where. Replan prepares a
	// rewritten module (scheduled: its order is kept) the same way and
	// assigns it with opts. The pipeline (package compile) gives both;
	// both are required. The module AssignSpaces gets has its tiles
	// already (ApplyLayouts), so that every size is padded.
	Prepare func(ctx context.Context, m *hlo.Module) (*liveness.Analysis, error)
	Replan  func(ctx context.Context, m *hlo.Module, opts assign.Options) (*assign.Assignment, error)
}

// SpaceKind is how a value is placed in VMEM.
type SpaceKind uint8

const (
	// Prefetch: the value stays in HBM and a copy in VMEM serves uses.
	Prefetch SpaceKind = iota
	// Produce: the instruction writes the value to VMEM, every use reads
	// it there.
	Produce
	// ProduceEvict: the instruction writes the value to VMEM, the first
	// uses read it there, an eviction copies it to HBM for the others.
	ProduceEvict
)

func (k SpaceKind) String() string {
	switch k {
	case Prefetch:
		return "prefetch"
	case Produce:
		return "produce"
	case ProduceEvict:
		return "produce+evict"
	}
	return fmt.Sprintf("SpaceKind(%d)", uint8(k))
}

// SpaceReport says what AssignSpaces did.
type SpaceReport struct {
	// Placed is the number of values placed in VMEM; Prefetches, Produced
	// and Evicted count them by kind.
	Placed                        int
	Prefetches, Produced, Evicted int
	// BytesPrefetched is the bytes copied HBM -> VMEM by prefetches.
	BytesPrefetched int64
	// BytesProduced is the bytes instructions write straight to VMEM.
	BytesProduced int64
	// BytesEvicted is the bytes copied VMEM -> HBM by evictions.
	BytesEvicted int64
	// HBMTrafficSaved is the HBM bytes read and written that VMEM serves
	// instead, net of the copies (the sum of the placements' Benefit ×
	// Bytes; see the comment at the top of this file).
	HBMTrafficSaved int64
	// VMEMPeak is the liveness lower bound on the VMEM (color 1) buffers
	// of the final module: the most VMEM bytes live at any step.
	VMEMPeak int64
	// VMEMHeap is the bytes of VMEM the plan of the final module takes
	// (its color-1 allocations, assigned with assign.TPU); at most
	// SpaceOptions.VMEM.
	VMEMHeap int64
	// SMEMScalars is the number of scalar buffers placed in SMEM,
	// SMEMValues the values they hold; SMEMPeak and SMEMHeap are the
	// color-2 figures as VMEMPeak and VMEMHeap are color 1's.
	SMEMScalars, SMEMValues int
	SMEMPeak, SMEMHeap      int64
	// HBMPeakBefore and HBMPeakAfter are the most bytes of HBM (color 0)
	// buffers live at one step of the prepared module without and with the
	// placements (liveness' lower bound, which no packer's luck moves): a
	// value produced in VMEM leaves HBM, an evicted one enters it late.
	HBMPeakBefore, HBMPeakAfter int64
	// Dropped counts placements the greedy step took that the final check
	// of the plan made AssignSpaces give up again.
	Dropped int
	// Decisions lists the values placed in VMEM in the order they were
	// chosen; Scalars the buffers placed in SMEM.
	Decisions []SpaceDecision
	Scalars   []ScalarDecision
}

// SpaceDecision is one value placed in VMEM.
type SpaceDecision struct {
	Kind SpaceKind
	// Name is the instruction the placement is about: the value's
	// definition, or for a prefetch the parameter of a called computation
	// that holds it; Computation is its computation.
	Name, Computation string
	Bytes             int64
	// Uses is the number of reads served from VMEM; HBMUses those left on
	// HBM (forwarding, control flow, in-place and asynchronous uses, uses
	// too close for a window, uses after an eviction).
	Uses, HBMUses int
	// Benefit is the HBM accesses of the whole array saved (see the
	// comment at the top of this file), BenefitPerByte = Benefit / Bytes.
	Benefit        int
	BenefitPerByte float64
	// CopyStart and CopyDone name the prefetch's or the eviction's
	// instructions ("" for Produce).
	CopyStart, CopyDone string
	// Window is the number of instructions of the original schedule
	// between the copy-start and the copy-done, WindowBytes the bytes they
	// move.
	Window      int
	WindowBytes int64
	// Start, Done and LastUse are positions in the final schedule of
	// Computation: where VMEM begins to hold the value (the prefetch's
	// copy-start, or the definition), the copy-done (the definition for
	// Produce) and the last use that reads VMEM. VMEM holds the value from
	// Start to the later of Done and LastUse.
	Start, Done, LastUse int
}

// ScalarDecision is one buffer placed in SMEM.
type ScalarDecision struct {
	// Name is the buffer's first value (its instruction and index).
	Name string
	// Values is the number of values the buffer holds (a loop counter's
	// initial copy, phi and update are three), Uses the reads of them.
	Values, Uses int
	// Bytes is the buffer's size in SMEM.
	Bytes int64
}

// AssignSpaces chooses values to keep in VMEM (memory space S(1)) and
// scalars to keep in SMEM (S(2)), and inserts the prefetches and evictions
// they need; see the comment at the top of this file for the method. It
// works on a clone of m, leaves m as it was and returns the clone prepared
// (call graph flattened, copies inserted, scheduled with
// is_scheduled=true, instruction order the schedule) and rewritten, with a
// report. With nothing placed the returned module is only the prepared
// one. The module it returns verifies, prints and parses back to the same
// text, preparing it again changes nothing, and its plan for assign.TPU
// keeps the color-1 allocations within opts.VMEM and the color-2 ones
// within opts.SMEM. An error from preparing m (a module liveness refuses)
// is returned wrapped.
func AssignSpaces(ctx context.Context, m *hlo.Module, opts SpaceOptions) (*hlo.Module, *SpaceReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case opts.VMEM <= 0:
		return nil, nil, fmt.Errorf("%w: VMEM capacity %d, want > 0", ErrSpaceOptions, opts.VMEM)
	case opts.SMEM < 0:
		return nil, nil, fmt.Errorf("%w: SMEM capacity %d, want >= 0", ErrSpaceOptions, opts.SMEM)
	case opts.MinWindow < 0:
		return nil, nil, fmt.Errorf("%w: MinWindow %d, want >= 0", ErrSpaceOptions, opts.MinWindow)
	case math.IsNaN(opts.Overlap) || math.IsInf(opts.Overlap, 0):
		return nil, nil, fmt.Errorf("%w: Overlap %v, want a number", ErrSpaceOptions, opts.Overlap)
	}
	if opts.MinWindow == 0 {
		opts.MinWindow = DefaultMinWindow
	}
	if opts.Overlap == 0 {
		opts.Overlap = DefaultOverlap
	}
	if m == nil {
		return nil, nil, errors.New("tpu: assign spaces: no module")
	}
	if opts.Prepare == nil || opts.Replan == nil {
		return nil, nil, fmt.Errorf("%w: Prepare and Replan are required (compile.Compile gives them)", ErrSpaceOptions)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	base := m.Clone()
	a, err := opts.Prepare(ctx, base)
	if err != nil {
		return nil, nil, fmt.Errorf("tpu: assign spaces: %w", err)
	}
	sp := newSpacePlanner(a, opts)
	var scalars []*scalarCand
	if opts.SMEM > 0 {
		scalars = chooseScalars(sp.scalarCandidates(), a.EndTime(), opts.SMEM)
	}
	inSMEM := make([]bool, len(a.Buffers))
	for _, s := range scalars {
		inSMEM[s.buffer] = true
	}
	chosen := chooseSpaces(sp.candidates(inSMEM), a.EndTime(), opts.VMEM)
	chosen, err = packSpaces(ctx, chosen, opts.VMEM)
	if err != nil {
		return nil, nil, err
	}
	hbmBefore := spacePeak(a, HBMSpace)
	a.Schedule.Apply(base) // the instruction order becomes the schedule
	return fitSpaces(ctx, base, chosen, scalars, opts, hbmBefore)
}

// heaps returns the bytes of as's allocations in each memory space.
func heaps(as *assign.Assignment) (hbm, vmem, smem int64) {
	for _, al := range as.Allocations {
		switch al.Color {
		case VMEMSpace:
			vmem += al.Size
		case SMEMSpace:
			smem += al.Size
		default:
			hbm += al.Size
		}
	}
	return hbm, vmem, smem
}

// fitSpaces rewrites a clone of base, prepared and scheduled, with the
// placements chosen and scalars, prepares and assigns it for assign.TPU
// and, while the color-1 (color-2) allocations exceed opts.VMEM
// (opts.SMEM), gives up the last placements chosen and tries again.
func fitSpaces(ctx context.Context, base *hlo.Module, chosen []*spaceCand, scalars []*scalarCand, opts SpaceOptions, hbmBefore int64) (*hlo.Module, *SpaceReport, error) {
	dropped := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		out := base.Clone()
		decisions, scalarDecisions := rewriteSpaces(out, chosen, scalars)
		as, err := opts.Replan(ctx, out, assign.Options{Target: assign.TPU, Algorithm: spacePacker})
		if err != nil {
			return nil, nil, fmt.Errorf("tpu: assign spaces: the rewritten module: %w", err)
		}
		a := as.Analysis
		_, vmem, smem := heaps(as)
		retry := false
		if vmem > opts.VMEM && len(chosen) > 0 {
			// Give up the last values taken, at least as many bytes as
			// the plan is over.
			for over := vmem - opts.VMEM; over > 0 && len(chosen) > 0; dropped++ {
				over -= chosen[len(chosen)-1].aligned
				chosen = chosen[:len(chosen)-1]
			}
			retry = true
		}
		if smem > opts.SMEM && len(scalars) > 0 {
			for over := smem - opts.SMEM; over > 0 && len(scalars) > 0; dropped++ {
				over -= scalars[len(scalars)-1].bytes
				scalars = scalars[:len(scalars)-1]
			}
			retry = true
		}
		if retry {
			continue
		}
		if vmem > opts.VMEM {
			return nil, nil, fmt.Errorf("tpu: assign spaces: a VMEM plan of %d bytes with nothing placed exceeds %d", vmem, opts.VMEM)
		}
		if smem > opts.SMEM {
			return nil, nil, fmt.Errorf("tpu: assign spaces: an SMEM plan of %d bytes with nothing placed exceeds %d", smem, opts.SMEM)
		}
		// Preparation keeps the schedule of a scheduled module; should it
		// have added copies, make the order the schedule again.
		a.Schedule.Apply(out)
		rep := &SpaceReport{
			Placed:        len(decisions),
			VMEMPeak:      spacePeak(a, VMEMSpace),
			VMEMHeap:      vmem,
			SMEMPeak:      spacePeak(a, SMEMSpace),
			SMEMHeap:      smem,
			HBMPeakBefore: hbmBefore,
			HBMPeakAfter:  spacePeak(a, HBMSpace),
			Dropped:       dropped,
			Decisions:     decisions,
			Scalars:       scalarDecisions,
		}
		for _, d := range decisions {
			switch d.Kind {
			case Prefetch:
				rep.Prefetches++
				rep.BytesPrefetched += d.Bytes
			case Produce:
				rep.Produced++
				rep.BytesProduced += d.Bytes
			case ProduceEvict:
				rep.Produced++
				rep.Evicted++
				rep.BytesProduced += d.Bytes
				rep.BytesEvicted += d.Bytes
			}
			rep.HBMTrafficSaved += int64(d.Benefit) * d.Bytes
		}
		rep.SMEMScalars = len(scalarDecisions)
		for _, s := range scalarDecisions {
			rep.SMEMValues += s.Values
		}
		return out, rep, nil
	}
}

// spacePeak is the most bytes of memory space color's buffers live at
// one step of a's schedule.
func spacePeak(a *liveness.Analysis, color int64) int64 {
	return a.LowerBound(func(b *liveness.Buffer) bool { return b.Color == color }).Bytes
}

// spaceUse is a use of a candidate, by position in its computation's
// schedule.
type spaceUse struct {
	pos, operand int
}

// spaceCand is one placement of a value in VMEM. Positions are indices
// into the schedule of computation comp, which is also its instruction
// order once the schedule is applied, and comp indexes
// Module.Computations: both survive hlo.Module.Clone.
type spaceCand struct {
	kind    SpaceKind
	value   int // the value's ID: at most one placement per value
	name    string
	comp    int
	def     int // position of the instruction the placement is about
	bytes   int64
	aligned int64      // bytes rounded up to the plan's chunk alignment
	uses    []spaceUse // reads served from VMEM
	hbm     []spaceUse // ProduceEvict: reads redirected to the eviction's copy
	hbmUses int        // reads left on HBM
	benefit int
	// Prefetch: the copy-start goes right after position start, the
	// copy-done right before first. ProduceEvict: the copy-start right
	// after def, the copy-done right before first. last is the last use
	// served from VMEM.
	start, first, last int
	window             int
	windowBytes        int64
	// lo..hi are the steps of the flattened schedule (liveness.Analysis
	// Sequence) over which VMEM holds the value.
	lo, hi int
}

// scalarCand is a buffer that may move to SMEM: its values' positions.
type scalarCand struct {
	buffer    int
	name      string
	values    int
	uses      int
	bytes     int64
	positions []scalarPos
	lo, hi    int
}

// scalarPos is one position of a scalar: a shape index of the instruction
// at position pos of computation comp.
type scalarPos struct {
	comp, pos int
	index     hlo.ShapeIndex
}

// spacePlanner holds what the candidates of one analysis share.
type spacePlanner struct {
	a    *liveness.Analysis
	opts SpaceOptions
	// pos is each instruction's position in its computation's schedule
	// (by ID; -1 outside the sequential computations). The analysis
	// renumbered the module: a computation's ID is its index in
	// Module.Computations, and the tables below are by computation ID.
	pos []int
	// placeable marks the computations of VMEM placements (see
	// spaceComputations).
	placeable []bool
	// cum[c][i] is the bytes the first i instructions of computation c's
	// schedule move (instCost), for the windows; costs[c] is compCost(c),
	// -1 until computed.
	cum   [][]int64
	costs []int64
}

func newSpacePlanner(a *liveness.Analysis, opts SpaceOptions) *spacePlanner {
	m := a.Module
	nc := len(m.Computations)
	sp := &spacePlanner{
		a:         a,
		opts:      opts,
		pos:       make([]int, m.NumInstructions()),
		placeable: make([]bool, nc),
		cum:       make([][]int64, nc),
		costs:     make([]int64, nc),
	}
	for i := range sp.pos {
		sp.pos[i] = -1
	}
	for i := range sp.costs {
		sp.costs[i] = -1
	}
	for _, c := range m.Computations {
		if a.Kinds[c.ID] != liveness.Sequential {
			continue
		}
		seq := a.Schedule.Sequence(c)
		cum := make([]int64, len(seq)+1)
		for j, x := range seq {
			sp.pos[x.ID] = j
			cum[j+1] = satAdd(cum[j], sp.instCost(x))
		}
		sp.cum[c.ID] = cum
	}
	for _, c := range spaceComputations(a) {
		sp.placeable[c.ID] = true
	}
	return sp
}

func satAdd(x, y int64) int64 {
	if s := x + y; s >= x {
		return s
	}
	return math.MaxInt64
}

// arrayBytes is the bytes of the array leaves of s.
func arrayBytes(s hlo.Shape) int64 {
	var n int64
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if sub.IsArray() {
			if b, err := hlo.ByteSize(sub); err == nil {
				n = satAdd(n, b)
			}
		}
	})
	return n
}

// instCost is the bytes in moves (see the comment at the top of this
// file): its array operands and results, or for control flow what its
// computations' instructions move; instructions that only name or forward
// bytes move none.
func (sp *spacePlanner) instCost(in *hlo.Instruction) int64 {
	switch in.Opcode {
	case hlo.OpParameter, hlo.OpConstant, hlo.OpTuple, hlo.OpGetTupleElement, hlo.OpBitcast,
		hlo.OpAddDependency, hlo.OpAfterAll, hlo.OpOptBarrier, hlo.OpDomain,
		hlo.OpCopyStart, hlo.OpCopyDone:
		return 0
	case hlo.OpWhile, hlo.OpCall, hlo.OpConditional:
		var n int64
		for _, c := range in.Callees() {
			n = satAdd(n, sp.compCost(c))
		}
		return n
	}
	n := arrayBytes(in.Shape)
	for _, o := range in.Operands {
		n = satAdd(n, arrayBytes(o.Shape))
	}
	return n
}

// compCost is what c's instructions move, once.
func (sp *spacePlanner) compCost(c *hlo.Computation) int64 {
	if c == nil {
		return 0
	}
	if n := sp.costs[c.ID]; n >= 0 {
		return n
	}
	sp.costs[c.ID] = 0 // a cycle (refused by verification) costs nothing
	var n int64
	for _, x := range c.Instructions {
		n = satAdd(n, sp.instCost(x))
	}
	sp.costs[c.ID] = n
	return n
}

// windowFits reports whether the instructions at positions lo..hi-1 of c's
// schedule make a window for a copy of bytes, and what they move.
func (sp *spacePlanner) windowFits(c *hlo.Computation, lo, hi int, bytes int64) (bool, int64) {
	if lo < 0 || hi < lo {
		return false, 0
	}
	cum := sp.cum[c.ID]
	moved := cum[hi] - cum[lo]
	if hi-lo < sp.opts.MinWindow {
		return false, moved
	}
	if sp.opts.Overlap < 0 {
		return true, moved
	}
	return float64(moved) >= sp.opts.Overlap*float64(bytes), moved
}

// spaceComputations returns the computations AssignSpaces places values
// of: the entry and, through call instructions only, the computations it
// calls, which run once per run of their caller (after flattening, each
// has one call site). Loop bodies and conditions, conditional branches and
// asynchronous computations are left out.
func spaceComputations(a *liveness.Analysis) []*hlo.Computation {
	entry := a.Module.Entry
	out := []*hlo.Computation{entry}
	seen := make([]bool, len(a.Module.Computations)) // by ID
	seen[entry.ID] = true
	for i := 0; i < len(out); i++ {
		for _, in := range out[i].Instructions {
			if in.Opcode != hlo.OpCall {
				continue
			}
			for _, c := range in.Callees() {
				if c != nil && !seen[c.ID] && a.Kinds[c.ID] == liveness.Sequential {
					seen[c.ID] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// candidates returns every placement of every value that may move to
// VMEM, in the greedy order; values in buffers inSMEM are left out.
func (sp *spacePlanner) candidates(inSMEM []bool) []*spaceCand {
	a := sp.a
	var out []*spaceCand
	for _, v := range a.Values {
		if !sp.placeable[v.Inst.Parent.ID] || v.Buffer == nil || inSMEM[v.Buffer.ID] {
			continue
		}
		if c := sp.prefetch(v, v.Inst); c != nil {
			out = append(out, c)
		}
		if !sp.opts.PrefetchOnly {
			out = append(out, sp.produce(v)...)
		}
	}
	// The parameters of called computations hold their caller's values.
	for _, c := range spaceComputations(a)[1:] {
		for _, p := range c.Params {
			if p != nil && p.Shape.IsArray() {
				if v := a.ValueAt(p, hlo.ShapeIndex{}); v != nil && v.Inst != p && v.Buffer != nil && !inSMEM[v.Buffer.ID] {
					if c := sp.prefetch(v, p); c != nil {
						out = append(out, c)
					}
				}
			}
		}
	}
	// Benefit per byte, decreasing: compare cross-multiplied (benefits
	// below 2^31, bytes below 2^32 under any VMEM this takes), then more
	// uses served, earlier in the schedule, name and kind.
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		bx, by := int64(x.benefit)*y.bytes, int64(y.benefit)*x.bytes
		if bx != by {
			return bx > by
		}
		if len(x.uses) != len(y.uses) {
			return len(x.uses) > len(y.uses)
		}
		if x.lo != y.lo {
			return x.lo < y.lo
		}
		if x.name != y.name {
			return x.name < y.name
		}
		return x.kind < y.kind
	})
	return out
}

// placeableValue reports whether v may live in VMEM at all, alone in its
// buffer, and the size it takes there. A value live out may still be
// prefetched, or produced in VMEM and evicted for the root to read.
func (sp *spacePlanner) placeableValue(v *liveness.Value) (aligned int64, ok bool) {
	if len(v.Index) != 0 || !v.Shape.IsArray() || v.IsPhi || v.Buffer == nil ||
		len(v.Buffer.Values) != 1 || !definesForSpace(v.Inst) || v.Shape.MemorySpace() != HBMSpace ||
		v.Size <= 0 || v.Size > sp.opts.VMEM {
		return 0, false
	}
	align := assign.TPU.Alignment
	aligned = (v.Size + align - 1) / align * align
	return aligned, aligned <= sp.opts.VMEM
}

// prefetch returns the prefetch of value v read at d (its definition, or
// the parameter of a called computation that holds it), or nil.
func (sp *spacePlanner) prefetch(v *liveness.Value, d *hlo.Instruction) *spaceCand {
	aligned, ok := sp.placeableValue(v)
	if !ok || d.Shape.MemorySpace() != HBMSpace || sp.pos[d.ID] < 0 {
		return nil
	}
	c := &spaceCand{kind: Prefetch, value: v.ID, name: d.Name, comp: d.Parent.ID, def: sp.pos[d.ID], bytes: v.Size, aligned: aligned}
	var movable []spaceUse
	for _, u := range v.Uses {
		if movableUse(u, d) {
			movable = append(movable, spaceUse{pos: sp.pos[u.Inst.ID], operand: u.Operand})
		}
	}
	sortUses(movable)
	// The first use a window fits before: the copy-start right after
	// position s, as late as the window allows, and not before d.
	for i := 0; i < len(movable); i++ {
		if i > 0 && movable[i].pos == movable[i-1].pos {
			continue
		}
		f := movable[i].pos
		s := sp.latestStart(d.Parent, c.def, f, v.Size)
		if s < 0 {
			continue
		}
		c.uses = movable[i:]
		c.first, c.start = f, s
		break
	}
	if len(c.uses) == 0 {
		return nil
	}
	c.hbmUses = len(v.Uses) - len(c.uses)
	c.last = c.uses[len(c.uses)-1].pos
	c.window = c.first - c.start - 1
	c.windowBytes = sp.cum[d.Parent.ID][c.first] - sp.cum[d.Parent.ID][c.start+1]
	c.benefit = len(c.uses) - 1
	seq := sp.a.Schedule.Sequence(d.Parent)
	c.lo, c.hi = sp.a.Time(seq[c.start])+1, sp.a.Time(seq[c.last])
	if c.lo <= 0 || c.hi < c.lo {
		return nil // outside the flattened schedule: cannot happen after preparation
	}
	return c
}

// latestStart returns the latest position s >= def such that a copy-start
// right after s and a copy-done right before f have a window for bytes
// between them, or -1.
func (sp *spacePlanner) latestStart(c *hlo.Computation, def, f int, bytes int64) int {
	// The window's instructions are s+1..f-1; its bytes fall as s grows.
	hi := f - 1 - sp.opts.MinWindow
	if hi < def {
		return -1
	}
	if ok, _ := sp.windowFits(c, def+1, f, bytes); !ok {
		return -1
	}
	lo := def // windowFits(lo+1, f) holds
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if ok, _ := sp.windowFits(c, mid+1, f, bytes); ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// earliestDone returns the earliest position e > def such that a
// copy-start right after def and a copy-done right before e have a window
// for bytes between them, or -1 when none comes before limit (inclusive).
func (sp *spacePlanner) earliestDone(c *hlo.Computation, def, limit int, bytes int64) int {
	lo, hi := def+1+sp.opts.MinWindow, limit
	if lo > hi {
		return -1
	}
	if ok, _ := sp.windowFits(c, def+1, hi, bytes); !ok {
		return -1
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if ok, _ := sp.windowFits(c, def+1, mid, bytes); ok {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// produce returns the placements of v produced in VMEM: without an
// eviction when every use can read VMEM, and with one after each prefix
// of movable uses that leaves the rest a window.
func (sp *spacePlanner) produce(v *liveness.Value) []*spaceCand {
	d := v.Inst
	aligned, ok := sp.placeableValue(v)
	if !ok || !producesForSpace(d) || sp.pos[d.ID] < 0 || d == d.Parent.Root {
		return nil
	}
	// A value forwarded (by a tuple, to the root, to a called
	// computation) is forwarded by a direct use that must read HBM: only
	// an eviction's copy can go there.
	forwarded := v.LiveOut
	for _, p := range v.Positions {
		forwarded = forwarded || p.Inst != d
	}
	def := sp.pos[d.ID]
	// The direct uses, by position: whether each can read VMEM.
	type direct struct {
		spaceUse
		movable bool
	}
	var uses []direct
	for _, u := range v.Uses {
		if u.Inst.Parent != d.Parent || u.Operand < 0 || u.Operand >= len(u.Inst.Operands) || u.Inst.Operands[u.Operand] != d {
			continue // read through a forwarding instruction, itself a direct use
		}
		uses = append(uses, direct{spaceUse{pos: sp.pos[u.Inst.ID], operand: u.Operand}, movableUse(u, d)})
	}
	if len(uses) == 0 {
		return nil
	}
	sort.Slice(uses, func(i, j int) bool {
		if uses[i].pos != uses[j].pos {
			return uses[i].pos < uses[j].pos
		}
		return uses[i].operand < uses[j].operand
	})
	seq := sp.a.Schedule.Sequence(d.Parent)
	mk := func(kind SpaceKind, vm, hbm []spaceUse) *spaceCand {
		c := &spaceCand{kind: kind, value: v.ID, name: d.Name, comp: d.Parent.ID, def: def,
			bytes: v.Size, aligned: aligned, uses: vm, hbm: hbm, hbmUses: len(hbm)}
		c.start, c.first = def, def
		c.last = def
		if len(vm) > 0 {
			c.last = vm[len(vm)-1].pos
		}
		c.lo, c.hi = sp.a.Time(d), sp.a.Time(seq[c.last])
		return c
	}
	var out []*spaceCand
	all := make([]spaceUse, len(uses))
	allMovable := true
	for i, u := range uses {
		all[i] = u.spaceUse
		allMovable = allMovable && u.movable
	}
	if allMovable && !forwarded {
		c := mk(Produce, all, nil)
		c.benefit = len(all) + 1
		out = append(out, c)
	}
	// Evictions: the first k uses (all movable, whole positions) read
	// VMEM, the rest the eviction's copy, whose copy-done comes at the
	// earliest position e its window allows: a split needs its first HBM
	// use at e or later.
	if e := sp.earliestDone(d.Parent, def, uses[len(uses)-1].pos, v.Size); e >= 0 {
		for k := 1; k < len(uses) && uses[k-1].movable; k++ {
			if uses[k].pos == uses[k-1].pos || uses[k].pos < e {
				continue // one instruction reads one copy; no room for the window
			}
			c := mk(ProduceEvict, all[:k], all[k:])
			c.first = e
			c.window = e - def - 1
			c.windowBytes = sp.cum[d.Parent.ID][e] - sp.cum[d.Parent.ID][def+1]
			c.hi = max(c.hi, sp.a.Time(seq[e]))
			c.benefit = k
			out = append(out, c)
		}
	}
	for _, c := range out {
		if c.lo < 0 || c.hi < c.lo {
			return nil
		}
	}
	return out
}

func sortUses(us []spaceUse) {
	sort.Slice(us, func(i, j int) bool {
		if us[i].pos != us[j].pos {
			return us[i].pos < us[j].pos
		}
		return us[i].operand < us[j].operand
	})
}

// definesForSpace reports whether a value defined by in may move to VMEM:
// not asynchronous halves, collectives or control flow, whose buffers
// other devices, threads or computations see.
func definesForSpace(in *hlo.Instruction) bool {
	op := in.Opcode
	switch {
	case op.Has(hlo.AsyncStart), op.Has(hlo.AsyncDone), op == hlo.OpAsyncUpdate,
		op.Has(hlo.Collective), op.Has(hlo.SideEffect), op == hlo.OpUnknown:
		return false
	case op == hlo.OpWhile, op == hlo.OpCall, op == hlo.OpConditional:
		return false
	}
	return true
}

// producesForSpace reports whether in may write its value to VMEM itself:
// it computes the value (not a parameter, constant, copy of the async
// kind, or a custom call whose kernel writes where the runtime said).
func producesForSpace(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpParameter, hlo.OpConstant, hlo.OpCustomCall, hlo.OpTuple, hlo.OpGetTupleElement,
		hlo.OpBitcast, hlo.OpCopyStart, hlo.OpCopyDone, hlo.OpInfeed, hlo.OpRecv, hlo.OpRecvDone:
		return false
	}
	return definesForSpace(in)
}

// movableUse reports whether use u of the value d holds can read a VMEM
// copy instead: a direct operand, in d's computation, of an instruction
// that computes with it (not one that forwards or hands it on, not
// asynchronous, not collective, without side effects, not writing over it
// in place).
func movableUse(u liveness.Use, d *hlo.Instruction) bool {
	in := u.Inst
	if in.Parent != d.Parent || len(u.Index) != 0 || u.Operand < 0 || u.Operand >= len(in.Operands) ||
		in.Operands[u.Operand] != d {
		return false
	}
	op := in.Opcode
	switch {
	case op.Has(hlo.AsyncStart), op.Has(hlo.AsyncDone), op == hlo.OpAsyncUpdate,
		op.Has(hlo.Collective), op.Has(hlo.SideEffect), op == hlo.OpUnknown:
		return false
	}
	switch op {
	case hlo.OpTuple, hlo.OpGetTupleElement, hlo.OpBitcast, hlo.OpWhile, hlo.OpCall, hlo.OpConditional,
		hlo.OpDomain, hlo.OpAddDependency, hlo.OpOptBarrier, hlo.OpCustomCall,
		hlo.OpCopyStart, hlo.OpCopyDone:
		return false
	}
	for _, p := range liveness.InPlacePairs(in) {
		if p.Operand == u.Operand {
			return false
		}
	}
	return true
}

// chooseSpaces takes placements in order while they fit, one per value:
// a segment tree over the n steps of the flattened schedule holds the
// VMEM bytes in use, and a placement holds its aligned bytes over lo..hi.
func chooseSpaces(cands []*spaceCand, n int, vmem int64) []*spaceCand {
	if n == 0 {
		return nil
	}
	t := segtree.New[int64](n)
	taken := map[int]bool{}
	var chosen []*spaceCand
	for _, c := range cands {
		// lo..hi are inclusive steps.
		if taken[c.value] || c.hi >= n || t.Max(c.lo, c.hi+1)+c.aligned > vmem {
			continue
		}
		t.Add(c.lo, c.hi+1, c.aligned)
		taken[c.value] = true
		chosen = append(chosen, c)
	}
	return chosen
}

// spacePacker is the packer of the VMEM checks: the greedy portfolio,
// which the plan's default packer ("auto") starts from and never ends
// above.
const spacePacker = "portfolio"

// packSpaces returns the longest prefix of chosen whose VMEM holds pack
// within vmem: the placements as plain intervals (lo..hi, aligned to the
// plan's chunk alignment), packed as the plan will pack them. The step
// count of chooseSpaces does not see fragmentation; this does, cheaply,
// before the plan is made for real.
func packSpaces(ctx context.Context, chosen []*spaceCand, vmem int64) ([]*spaceCand, error) {
	fits := func(k int) (bool, error) {
		p := &pack.Problem{Buffers: make([]pack.Buffer, k)}
		for i, c := range chosen[:k] {
			p.Buffers[i] = pack.Buffer{ID: c.name, Start: int64(c.lo), End: int64(c.hi) + 1, Size: c.bytes, Align: assign.TPU.Alignment}
		}
		sol, err := pack.Pack(ctx, p, pack.Options{Algorithm: spacePacker})
		if err != nil {
			return false, fmt.Errorf("tpu: assign spaces: packing VMEM: %w", err)
		}
		return sol.Height() <= vmem, nil
	}
	if len(chosen) == 0 {
		return chosen, nil
	}
	if ok, err := fits(len(chosen)); ok || err != nil {
		return chosen, err
	}
	// The longest prefix that fits (fitting is monotone in practice:
	// fewer intervals pack no higher under the same greedy orders).
	lo, hi := 0, len(chosen)-1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		ok, err := fits(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return chosen[:lo], nil
}

// scalarCandidates returns the buffers that may move to SMEM, most used
// per byte first.
func (sp *spacePlanner) scalarCandidates() []*scalarCand {
	a := sp.a
	var out []*scalarCand
	for _, b := range a.Buffers {
		if c := sp.scalarCandidate(b); c != nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		bx, by := int64(x.uses)*y.bytes, int64(y.uses)*x.bytes
		if bx != by {
			return bx > by
		}
		if x.lo != y.lo {
			return x.lo < y.lo
		}
		return x.buffer < y.buffer
	})
	return out
}

// scalarCandidate returns buffer b as an SMEM candidate, or nil.
func (sp *spacePlanner) scalarCandidate(b *liveness.Buffer) *scalarCand {
	if len(b.Values) == 0 {
		return nil
	}
	c := &scalarCand{buffer: b.ID, name: b.Values[0].Name(), values: len(b.Values), lo: math.MaxInt}
	for _, v := range b.Values {
		s := v.Shape
		if !s.IsArray() || s.Rank() != 0 || v.LiveOut || !v.Scheduled || s.MemorySpace() != HBMSpace {
			return nil
		}
		d := v.Inst
		if d.Opcode == hlo.OpConstant || d.Opcode == hlo.OpCustomCall || !definesForSpace(d) && !v.IsPhi ||
			d.Opcode == hlo.OpParameter && d.Parent == sp.a.Module.Entry {
			return nil
		}
		n, err := hlo.ByteSize(smemShape(s))
		if err != nil {
			return nil
		}
		c.bytes = max(c.bytes, (n+smemWord-1)/smemWord*smemWord)
		for _, u := range v.Uses {
			op := u.Inst.Opcode
			if op.Has(hlo.AsyncStart) || op.Has(hlo.AsyncDone) || op == hlo.OpAsyncUpdate || op.Has(hlo.Collective) ||
				op.Has(hlo.SideEffect) || op == hlo.OpCustomCall || op == hlo.OpUnknown || u.Inst.Parent == nil ||
				sp.a.Kinds[u.Inst.Parent.ID] != liveness.Sequential {
				return nil
			}
		}
		c.uses += len(v.Uses)
		for _, p := range v.Positions {
			in := p.Inst
			if in.Parent == nil || sp.a.Kinds[in.Parent.ID] != liveness.Sequential || sp.pos[in.ID] < 0 {
				return nil
			}
			c.positions = append(c.positions, scalarPos{comp: in.Parent.ID, pos: sp.pos[in.ID], index: p.Index})
		}
		s0, e0 := v.Range.HalfOpen()
		c.lo, c.hi = min(c.lo, s0), max(c.hi, e0-1)
	}
	if c.bytes <= 0 || c.lo < 0 || c.hi < c.lo || c.bytes > sp.opts.SMEM {
		return nil
	}
	return c
}

// chooseScalars takes the scalar buffers in order while they fit smem at
// every step they span.
func chooseScalars(cands []*scalarCand, n int, smem int64) []*scalarCand {
	if n == 0 {
		return nil
	}
	t := segtree.New[int64](n)
	var chosen []*scalarCand
	for _, c := range cands {
		hi := min(c.hi, n-1)
		if c.lo > hi || t.Max(c.lo, hi+1)+c.bytes > smem {
			continue
		}
		t.Add(c.lo, hi+1, c.bytes)
		chosen = append(chosen, c)
	}
	return chosen
}

// copyPair returns the asynchronous copy of d from shape from to shape to
// in comp, as XLA writes it: a copy-start whose tuple holds the
// destination, the source and a u32 context, and the copy-done that
// returns the destination. Neither is placed in comp's sequence yet.
func copyPair(names *hlo.NameUniquer, comp *hlo.Computation, d *hlo.Instruction, from, to hlo.Shape) (start, done *hlo.Instruction) {
	start = comp.Module.NewInstruction(&hlo.Instruction{
		Name:     names.Unique("copy-start"),
		Opcode:   hlo.OpCopyStart,
		Shape:    hlo.TupleShape(to, from, hlo.ArrayShape(hlo.U32)),
		Operands: []*hlo.Instruction{d},
		Parent:   comp,
	})
	done = comp.Module.NewInstruction(&hlo.Instruction{
		Name:     names.Unique("copy-done"),
		Opcode:   hlo.OpCopyDone,
		Shape:    to,
		Operands: []*hlo.Instruction{start},
		Parent:   comp,
	})
	return start, done
}

// rewriteSpaces inserts the copies of chosen into out, whose instruction
// orders are the schedule the candidates' positions index, redirects the
// uses, moves the scalars of scalars to S(2) and renumbers out. It returns
// the decisions, in the order of chosen and scalars.
func rewriteSpaces(out *hlo.Module, chosen []*spaceCand, scalars []*scalarCand) ([]SpaceDecision, []ScalarDecision) {
	var scalarDecisions []ScalarDecision
	for _, s := range scalars {
		for _, p := range s.positions {
			in := out.Computations[p.comp].Instructions[p.pos]
			in.Shape = withSubshape(in.Shape, p.index, smemShape)
		}
		scalarDecisions = append(scalarDecisions, ScalarDecision{Name: s.name, Values: s.values, Uses: s.uses, Bytes: s.bytes})
	}
	if len(chosen) == 0 {
		if len(scalars) > 0 {
			out.Renumber()
		}
		return nil, scalarDecisions
	}
	type slot struct{ comp, pos int }
	names := hlo.NewNameUniquer(out)
	after := make(map[slot][]*hlo.Instruction)  // copy-starts after a position
	before := make(map[slot][]*hlo.Instruction) // copy-dones before one
	starts := make([]*hlo.Instruction, len(chosen))
	dones := make([]*hlo.Instruction, len(chosen))
	var comps []int // computations changed, in order of first change
	for i, c := range chosen {
		comp := out.Computations[c.comp]
		seq := comp.Instructions
		d := seq[c.def]
		if !slices.Contains(comps, c.comp) {
			comps = append(comps, c.comp)
		}
		hbmShape := d.Shape
		vs := vmemShape(d.Shape)
		switch c.kind {
		case Produce:
			d.Shape = vs
			continue
		case ProduceEvict:
			// Produced in VMEM, copied out to HBM for the uses there.
			d.Shape = vs
			cs, cd := copyPair(names, comp, d, vs, hbmShape)
			after[slot{c.comp, c.def}] = append(after[slot{c.comp, c.def}], cs)
			before[slot{c.comp, c.first}] = append(before[slot{c.comp, c.first}], cd)
			for _, u := range c.hbm {
				seq[u.pos].Operands[u.operand] = cd
			}
			starts[i], dones[i] = cs, cd
		case Prefetch:
			// Copied from HBM into VMEM for the uses there.
			cs, cd := copyPair(names, comp, d, hbmShape, vs)
			after[slot{c.comp, c.start}] = append(after[slot{c.comp, c.start}], cs)
			before[slot{c.comp, c.first}] = append(before[slot{c.comp, c.first}], cd)
			for _, u := range c.uses {
				seq[u.pos].Operands[u.operand] = cd
			}
			starts[i], dones[i] = cs, cd
		}
	}
	newPos := map[slot]int{}
	for _, ci := range comps {
		comp := out.Computations[ci]
		seq := comp.Instructions
		list := make([]*hlo.Instruction, 0, len(seq)+8)
		for i, in := range seq {
			list = append(list, before[slot{ci, i}]...)
			newPos[slot{ci, i}] = len(list)
			list = append(list, in)
			list = append(list, after[slot{ci, i}]...)
		}
		comp.Instructions = list
		comp.RebuildUsers()
	}
	out.Renumber()
	// at is each copy-start's and copy-done's position, by instruction ID
	// (out is renumbered).
	at := make([]int, out.NumIDs())
	for _, ci := range comps {
		for i, in := range out.Computations[ci].Instructions {
			if in.Opcode == hlo.OpCopyStart || in.Opcode == hlo.OpCopyDone {
				at[in.ID] = i
			}
		}
	}
	decisions := make([]SpaceDecision, len(chosen))
	for i, c := range chosen {
		d := SpaceDecision{
			Kind:           c.kind,
			Name:           c.name,
			Computation:    out.Computations[c.comp].Name,
			Bytes:          c.bytes,
			Uses:           len(c.uses),
			HBMUses:        c.hbmUses,
			Benefit:        c.benefit,
			BenefitPerByte: float64(c.benefit) / float64(c.bytes),
			Window:         c.window,
			WindowBytes:    c.windowBytes,
			Start:          newPos[slot{c.comp, c.def}],
			LastUse:        newPos[slot{c.comp, c.last}],
		}
		d.Done = d.Start
		if starts[i] != nil {
			d.CopyStart, d.CopyDone = starts[i].Name, dones[i].Name
			d.Start, d.Done = at[starts[i].ID], at[dones[i].ID]
		}
		if c.kind == ProduceEvict {
			d.Start = newPos[slot{c.comp, c.def}]
		}
		decisions[i] = d
	}
	return decisions, scalarDecisions
}

// vmemShape returns s in memory space S(1), with s's layout or, if it has
// none, the default (descending) one.
func vmemShape(s hlo.Shape) hlo.Shape {
	v := s.Clone()
	if v.Layout == nil {
		v.Layout = defaultLayout(len(v.Dims))
	}
	v.Layout.MemorySpace = VMEMSpace
	return v
}

// smemShape returns the scalar s in memory space S(2), untiled: SMEM holds
// words, not tiles.
func smemShape(s hlo.Shape) hlo.Shape {
	v := s.Clone()
	if v.Layout == nil {
		v.Layout = defaultLayout(len(v.Dims))
	}
	v.Layout.Tiles = nil
	v.Layout.MemorySpace = SMEMSpace
	return v
}

func defaultLayout(rank int) *hlo.Layout {
	l := &hlo.Layout{MinorToMajor: make([]int64, rank)}
	for i := range l.MinorToMajor {
		l.MinorToMajor[i] = int64(rank - 1 - i)
	}
	return l
}

// withSubshape returns s with its subshape at ix replaced by f of it; the
// tuples on the way are copied, s is left as it was.
func withSubshape(s hlo.Shape, ix hlo.ShapeIndex, f func(hlo.Shape) hlo.Shape) hlo.Shape {
	if len(ix) == 0 {
		return f(s)
	}
	if !s.IsTuple() || ix[0] < 0 || ix[0] >= int64(len(s.Tuple)) {
		return s
	}
	out := s
	out.Tuple = slices.Clone(s.Tuple)
	out.Tuple[ix[0]] = withSubshape(s.Tuple[ix[0]], ix[1:], f)
	return out
}
