package tpu

// Memory spaces: a small memory-space assignment (MSA) for the TPU's fast
// memory, VMEM, which HLO calls memory space S(1).
//
// XLA's MSA (xla/service/memory_space_assignment, "Quick reference" in
// memory_space_assignment.h) runs on the scheduled module before buffer
// assignment. It places values, or the segments between their uses, in the
// small alternate memory, best fit in offset × time, ordered by a cost
// model's "memory boundedness", and brings them in with asynchronous
// copy-start/copy-done pairs (prefetches) whose window a prefetch-interval
// picker chooses so that the copy overlaps compute; it evicts, repacks and
// keeps buffers across programs. AssignSpaces does the simplest safe part
// of that, with the same IR:
//
//  1. Prepare a clone of the module as buffer assignment would
//     (liveness.PrepareWith: flatten the call graph, insert copies, keep or
//     choose the schedule) and make the schedule the module's instruction
//     order (is_scheduled=true), so that every later preparation keeps it.
//
//  2. Candidates are array values read in the entry computation or in a
//     computation it calls through call instructions (each runs once per
//     run of its caller); loop bodies and conditions, conditional branches
//     and asynchronous computations are left alone. A value qualifies when
//     nothing else shares it: alone in its buffer (so no donated
//     parameter, no in-place update, no loop state), not live out, not
//     defined by an asynchronous, collective or control-flow instruction,
//     not already outside the default space. It is read at its definition
//     or, in a called computation, at the parameter that holds it. Of its
//     uses there, those that read the array directly as data can move to
//     VMEM; a use that only forwards or hands the value on (tuple,
//     get-tuple-element, bitcast, while, call, conditional,
//     add-dependency, ...), an asynchronous or collective operation, one
//     with side effects and one that writes its result over that operand
//     in place keep reading HBM, and so do the uses too close to the
//     definition for a window (below).
//
//  3. Benefit per byte is (uses moved to VMEM) / bytes; candidates are
//     taken greedily in decreasing benefit (ties: earlier window, then
//     name). For a value read at step d of its computation's schedule,
//     with moved uses whose first is at step f and last at step l, the
//     prefetch is copy-start placed right after step s = f-1-MinWindow and
//     copy-done right before f, so that MinWindow instructions of the
//     schedule run between the two: the latest start that overlaps that
//     much compute, which keeps VMEM busy for the shortest time. A use is
//     moved only if s >= d then, i.e. it comes at least MinWindow+2 steps
//     after d. The moved uses read the copy-done. VMEM holds the value
//     from the copy-start to l: in the flattened schedule (liveness'
//     Sequence, callees before their call), the steps after s's up to l's.
//
//  4. Capacity: a segment tree keeps the VMEM bytes held at every step of
//     the flattened schedule, each value counted at its size rounded up to
//     the TPU target's chunk alignment (assign.TPU.Alignment), since the
//     plan starts every chunk there; a candidate is taken only when it
//     fits under opts.VMEM at every step it holds. Then the rewritten
//     module is prepared and assigned for real (assign.Assign with
//     assign.TPU): while the color-1 allocations exceed opts.VMEM
//     (fragmentation the step count does not see), the last values taken
//     are dropped, at least as many bytes as the plan is over, and the
//     module rebuilt. No corpus module needs it.
//
// No value is evicted: a value in VMEM is a copy of one that stays valid
// in HBM, so nothing is written back (SpaceReport.BytesEvicted is 0).
//
// The traffic model counts every use as one read of the whole array:
// HBMTrafficSaved = Σ over placed values of (uses moved − 1) × bytes, the
// HBM reads the moved uses no longer make less the one read of the
// prefetch. A value with a single moved use saves no traffic; it is still
// worth a place if there is room, as in XLA, because the prefetch takes
// the read off the instruction's critical path.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/segtree"
	"github.com/hlomem/hlomem/liveness"
)

// VMEMSpace is the memory space of VMEM in HLO layouts: S(1).
const VMEMSpace = 1

// DefaultMinWindow is SpaceOptions.MinWindow when it is 0: two
// instructions between copy-start and copy-done, the minimum prefetch
// interval of XLA's InstructionCountPrefetchIntervalPicker in the MSA
// tests.
const DefaultMinWindow = 2

// ErrSpaceOptions is the error (under errors.Is) for invalid SpaceOptions.
var ErrSpaceOptions = errors.New("tpu: invalid space options")

// SpaceOptions configures AssignSpaces.
type SpaceOptions struct {
	// VMEM is the capacity of VMEM in bytes (e.g. 16 << 20); it must be
	// positive.
	VMEM int64
	// MinWindow is the fewest instructions of the schedule that must run
	// between a prefetch's copy-start and its copy-done, for the copy to
	// overlap compute; 0 means DefaultMinWindow, a negative value is an
	// error. Copy-starts and copy-dones do not count.
	MinWindow int
}

// SpaceReport says what AssignSpaces did.
type SpaceReport struct {
	// Placed is the number of values moved to VMEM.
	Placed int
	// BytesPrefetched is the bytes copied HBM -> VMEM by copy-start/
	// copy-done.
	BytesPrefetched int64
	// BytesEvicted is the bytes copied back VMEM -> HBM: always 0, values
	// in VMEM are copies and never evicted.
	BytesEvicted int64
	// HBMTrafficSaved is Σ (uses moved − 1) × bytes over the placed
	// values: the HBM reads of the uses now served from VMEM less the
	// prefetches' own reads, each use counted as reading the whole array.
	HBMTrafficSaved int64
	// VMEMPeak is the liveness lower bound on the VMEM (color 1) buffers
	// of the final module: the most VMEM bytes live at any step.
	VMEMPeak int64
	// VMEMHeap is the bytes of VMEM the plan of the final module takes
	// (its color-1 allocations, assigned with assign.TPU); at most
	// SpaceOptions.VMEM.
	VMEMHeap int64
	// Dropped counts values the greedy step took that the final check of
	// the plan made AssignSpaces give up again.
	Dropped int
	// Decisions lists the placed values in the order they were chosen.
	Decisions []SpaceDecision
}

// SpaceDecision is one value placed in VMEM.
type SpaceDecision struct {
	// Name is the instruction the copy-start reads: the value's
	// definition, or the parameter of a called computation that holds it;
	// Computation is the computation of the prefetch.
	Name, Computation string
	Bytes             int64
	// Uses is the number of reads moved to the VMEM copy; HBMUses those
	// left on the HBM value (forwarding, control flow, in-place and
	// asynchronous uses).
	Uses, HBMUses int
	// BenefitPerByte is Uses / Bytes, the greedy order.
	BenefitPerByte float64
	// CopyStart and CopyDone name the prefetch's instructions.
	CopyStart, CopyDone string
	// Window is the number of instructions of the original schedule
	// between the copy-start and the copy-done (SpaceOptions.MinWindow).
	Window int
	// Start, Done and LastUse are the positions of the copy-start, the
	// copy-done and the last moved use in the final schedule of
	// Computation: VMEM holds the value from Start to LastUse.
	Start, Done, LastUse int
}

// AssignSpaces chooses values to keep in VMEM (memory space S(1)) and
// inserts their prefetches; see the comment at the top of this file for
// the method. It works on a clone of m, leaves m as it was and returns the
// clone prepared (call graph flattened, copies inserted, scheduled with
// is_scheduled=true, instruction order the schedule) and rewritten, with
// a report. With Placed == 0 the returned module is only the prepared
// one. The module it returns verifies, prints and parses back to the same
// text, preparing it again changes nothing, and its plan for assign.TPU
// keeps the color-1 allocations within opts.VMEM. An error from preparing
// m (a module liveness refuses) is returned wrapped.
func AssignSpaces(ctx context.Context, m *hlo.Module, opts SpaceOptions) (*hlo.Module, *SpaceReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.VMEM <= 0 {
		return nil, nil, fmt.Errorf("%w: VMEM capacity %d, want > 0", ErrSpaceOptions, opts.VMEM)
	}
	if opts.MinWindow < 0 {
		return nil, nil, fmt.Errorf("%w: MinWindow %d, want >= 0", ErrSpaceOptions, opts.MinWindow)
	}
	if opts.MinWindow == 0 {
		opts.MinWindow = DefaultMinWindow
	}
	if m == nil {
		return nil, nil, errors.New("tpu: assign spaces: no module")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	base := m.Clone()
	a, err := liveness.PrepareWith(base, liveness.PrepareOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("tpu: assign spaces: %w", err)
	}
	cands := spaceCandidates(a, opts.MinWindow, opts.VMEM)
	chosen := chooseSpaces(cands, a.EndTime(), opts.VMEM)
	a.Schedule.Apply(base) // the instruction order becomes the schedule
	return fitSpaces(ctx, base, chosen, opts.VMEM)
}

// fitSpaces rewrites a clone of base, prepared and scheduled, with the
// prefetches of chosen, prepares and assigns it for assign.TPU and, while
// the color-1 allocations exceed vmem, gives up the last values chosen
// and tries again.
func fitSpaces(ctx context.Context, base *hlo.Module, chosen []*spaceCand, vmem int64) (*hlo.Module, *SpaceReport, error) {
	dropped := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		out := base.Clone()
		decisions := rewriteSpaces(out, chosen)
		a, err := liveness.PrepareWith(out, liveness.PrepareOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("tpu: assign spaces: the rewritten module: %w", err)
		}
		as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU})
		if err != nil {
			return nil, nil, fmt.Errorf("tpu: assign spaces: the rewritten module: %w", err)
		}
		var heap int64
		for _, al := range as.Allocations {
			if al.Color == VMEMSpace {
				heap += al.Size
			}
		}
		if heap > vmem && len(chosen) > 0 {
			// Give up the last values taken, at least as many bytes as
			// the plan is over.
			for over := heap - vmem; over > 0 && len(chosen) > 0; dropped++ {
				over -= chosen[len(chosen)-1].aligned
				chosen = chosen[:len(chosen)-1]
			}
			continue
		}
		if heap > vmem {
			return nil, nil, fmt.Errorf("tpu: assign spaces: a VMEM plan of %d bytes with nothing placed exceeds %d", heap, vmem)
		}
		peak := a.LowerBound(func(b *liveness.Buffer) bool { return b.Color == VMEMSpace }).Bytes
		// Preparation keeps the schedule of a scheduled module; should it
		// have added copies, make the order the schedule again.
		a.Schedule.Apply(out)
		rep := &SpaceReport{
			Placed:    len(decisions),
			VMEMPeak:  peak,
			VMEMHeap:  heap,
			Dropped:   dropped,
			Decisions: decisions,
		}
		for _, d := range decisions {
			rep.BytesPrefetched += d.Bytes
			rep.HBMTrafficSaved += int64(d.Uses-1) * d.Bytes
		}
		return out, rep, nil
	}
}

// spaceUse is a use of a candidate, by position in its computation's
// schedule.
type spaceUse struct {
	pos, operand int
}

// spaceCand is a value that may move to VMEM, read at instruction def of
// computation comp (its definition, or the parameter of a called
// computation it is passed in). Positions are indices into the
// computation's schedule, which is also its instruction order once the
// schedule is applied, and comp indexes Module.Computations: both survive
// hlo.Module.Clone.
type spaceCand struct {
	name    string
	comp    int
	def     int // position of the instruction the copy-start reads
	bytes   int64
	aligned int64 // bytes rounded up to the plan's chunk alignment
	uses    []spaceUse
	hbmUses int
	start   int // the copy-start goes right after this position
	first   int // the copy-done goes right before this position
	last    int // the last moved use
	// lo..hi are the steps of the flattened schedule (liveness.Analysis
	// Sequence) over which VMEM holds the value.
	lo, hi int
}

// spaceComputations returns the computations AssignSpaces places values
// of: the entry and, through call instructions only, the computations it
// calls, which run once per run of their caller (after flattening, each
// has one call site). Loop bodies and conditions, conditional branches and
// asynchronous computations are left out.
func spaceComputations(a *liveness.Analysis) []*hlo.Computation {
	entry := a.Module.Entry
	out := []*hlo.Computation{entry}
	seen := map[*hlo.Computation]bool{entry: true}
	for i := 0; i < len(out); i++ {
		for _, in := range out[i].Instructions {
			if in.Opcode != hlo.OpCall {
				continue
			}
			for _, c := range in.Callees() {
				if c != nil && !seen[c] && a.Kinds[c.ID] == liveness.Sequential {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// spaceCandidates returns the values that may move to VMEM, with their
// windows, in the greedy order. a must be the analysis of the prepared
// module, not yet renumbered.
func spaceCandidates(a *liveness.Analysis, minWindow int, vmem int64) []*spaceCand {
	comps := spaceComputations(a)
	pos := make([]int, a.Module.NumInstructions()) // by instruction ID, within its computation
	for i := range pos {
		pos[i] = -1
	}
	compIndex := make(map[*hlo.Computation]int, len(a.Module.Computations))
	for i, c := range a.Module.Computations {
		compIndex[c] = i
	}
	in := make(map[*hlo.Computation]bool, len(comps))
	for _, c := range comps {
		in[c] = true
		for i, x := range a.Schedule.Sequence(c) {
			pos[x.ID] = i
		}
	}
	var out []*spaceCand
	add := func(v *liveness.Value, d *hlo.Instruction) {
		if c := spaceCandidate(a, v, d, compIndex[d.Parent], pos, minWindow, vmem); c != nil {
			out = append(out, c)
		}
	}
	for _, v := range a.Values {
		if in[v.Inst.Parent] {
			add(v, v.Inst)
		}
	}
	// The parameters of called computations hold their caller's values.
	for _, c := range comps[1:] {
		for _, p := range c.Params {
			if p != nil && p.Shape.IsArray() {
				if v := a.ValueAt(p, hlo.ShapeIndex{}); v != nil && v.Inst != p {
					add(v, p)
				}
			}
		}
	}
	// Benefit per byte, uses/bytes, decreasing: compare cross-multiplied
	// (uses below 2^31, bytes below 2^32 under any VMEM this takes), then
	// earlier definition, then name.
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		bx, by := int64(len(x.uses))*y.bytes, int64(len(y.uses))*x.bytes
		if bx != by {
			return bx > by
		}
		if x.lo != y.lo {
			return x.lo < y.lo
		}
		return x.name < y.name
	})
	return out
}

// spaceCandidate returns value v, read at d, as a candidate, or nil when
// it cannot move to VMEM.
func spaceCandidate(a *liveness.Analysis, v *liveness.Value, d *hlo.Instruction, comp int, pos []int, minWindow int, vmem int64) *spaceCand {
	if len(v.Index) != 0 || !v.Shape.IsArray() || v.IsPhi || v.LiveOut || v.Buffer == nil ||
		len(v.Buffer.Values) != 1 || !definesForSpace(v.Inst) || d.Shape.MemorySpace() != 0 ||
		v.Size <= 0 || v.Size > vmem || pos[d.ID] < 0 {
		return nil
	}
	align := assign.TPU.Alignment
	c := &spaceCand{name: d.Name, comp: comp, def: pos[d.ID], bytes: v.Size, aligned: (v.Size + align - 1) / align * align}
	if c.aligned > vmem {
		return nil
	}
	// A use can read the prefetch if minWindow instructions fit between
	// d and it: the copy-start right after d at the earliest, the
	// copy-done right before the use.
	earliest := c.def + 1 + minWindow + 1
	for _, u := range v.Uses {
		if movableUse(u, d) && pos[u.Inst.ID] >= earliest {
			c.uses = append(c.uses, spaceUse{pos: pos[u.Inst.ID], operand: u.Operand})
		}
	}
	c.hbmUses = len(v.Uses) - len(c.uses)
	if len(c.uses) == 0 {
		return nil
	}
	sort.Slice(c.uses, func(i, j int) bool {
		if c.uses[i].pos != c.uses[j].pos {
			return c.uses[i].pos < c.uses[j].pos
		}
		return c.uses[i].operand < c.uses[j].operand
	})
	c.first, c.last = c.uses[0].pos, c.uses[len(c.uses)-1].pos
	c.start = c.first - 1 - minWindow // >= c.def
	seq := a.Schedule.Sequence(d.Parent)
	c.lo, c.hi = a.Time(seq[c.start])+1, a.Time(seq[c.last])
	if c.lo <= 0 || c.hi < c.lo {
		return nil // outside the flattened schedule: cannot happen after preparation
	}
	return c
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
		hlo.OpDomain, hlo.OpAddDependency, hlo.OpOptimizationBarrier:
		return false
	}
	for _, p := range liveness.InPlacePairs(in) {
		if p.Operand == u.Operand {
			return false
		}
	}
	return true
}

// chooseSpaces takes candidates in order while they fit: a segment tree
// over the n steps of the flattened schedule holds the VMEM bytes in use,
// and a candidate holds its aligned bytes over lo..hi.
func chooseSpaces(cands []*spaceCand, n int, vmem int64) []*spaceCand {
	if n == 0 {
		return nil
	}
	t := segtree.New[int64](n)
	var chosen []*spaceCand
	for _, c := range cands {
		// lo..hi are inclusive steps.
		if t.Max(c.lo, c.hi+1)+c.aligned > vmem {
			continue
		}
		t.Add(c.lo, c.hi+1, c.aligned)
		chosen = append(chosen, c)
	}
	return chosen
}

// rewriteSpaces inserts the prefetches of chosen into out, whose
// instruction orders are the schedule the candidates' positions index,
// redirects the moved uses to the copy-dones and renumbers out. It
// returns the decisions, in the order of chosen.
func rewriteSpaces(out *hlo.Module, chosen []*spaceCand) []SpaceDecision {
	if len(chosen) == 0 {
		return nil
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
		vs := vmemShape(d.Shape)
		cs := &hlo.Instruction{
			Name:     names.Unique("copy-start"),
			Opcode:   hlo.OpCopyStart,
			Shape:    hlo.TupleShape(vs, d.Shape, hlo.ArrayShape(hlo.U32)),
			Operands: []*hlo.Instruction{d},
			Parent:   comp,
		}
		cd := &hlo.Instruction{
			Name:     names.Unique("copy-done"),
			Opcode:   hlo.OpCopyDone,
			Shape:    vs,
			Operands: []*hlo.Instruction{cs},
			Parent:   comp,
		}
		after[slot{c.comp, c.start}] = append(after[slot{c.comp, c.start}], cs)
		before[slot{c.comp, c.first}] = append(before[slot{c.comp, c.first}], cd)
		for _, u := range c.uses {
			seq[u.pos].Operands[u.operand] = cd
		}
		starts[i], dones[i] = cs, cd
		if !slices.Contains(comps, c.comp) {
			comps = append(comps, c.comp)
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
	at := make(map[*hlo.Instruction]int, 2*len(chosen))
	for _, ci := range comps {
		for i, in := range out.Computations[ci].Instructions {
			if in.Opcode == hlo.OpCopyStart || in.Opcode == hlo.OpCopyDone {
				at[in] = i
			}
		}
	}
	decisions := make([]SpaceDecision, len(chosen))
	for i, c := range chosen {
		decisions[i] = SpaceDecision{
			Name:           c.name,
			Computation:    out.Computations[c.comp].Name,
			Bytes:          c.bytes,
			Uses:           len(c.uses),
			HBMUses:        c.hbmUses,
			BenefitPerByte: float64(len(c.uses)) / float64(c.bytes),
			CopyStart:      starts[i].Name,
			CopyDone:       dones[i].Name,
			Window:         c.first - c.start - 1,
			Start:          at[starts[i]],
			Done:           at[dones[i]],
			LastUse:        newPos[slot{c.comp, c.last}],
		}
	}
	return decisions
}

// vmemShape returns s in memory space S(1), with s's layout or, if it has
// none, the default (descending) one.
func vmemShape(s hlo.Shape) hlo.Shape {
	v := s.Clone()
	if v.Layout == nil {
		l := &hlo.Layout{MinorToMajor: make([]int64, len(v.Dims))}
		for i := range l.MinorToMajor {
			l.MinorToMajor[i] = int64(len(v.Dims) - 1 - i)
		}
		v.Layout = l
	}
	v.Layout.MemorySpace = VMEMSpace
	return v
}
