package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Violation is the first place a plan fails when the program runs on it.
type Violation struct {
	Kind ViolationKind
	// Step is the position in the flattened schedule and Inst the
	// instruction running there (nil for a check after the last step).
	Step int
	Inst *hlo.Instruction
	// Value is the value being read or written; Other the value whose
	// bytes were in the way (nil when none).
	Value, Other *liveness.Value
	// Position and OtherPosition name the two positions (name{index})
	// whose bytes these are: the check's own sources, which have a value
	// of the analysis only where it defines one.
	Position, OtherPosition string
	// Allocation is the index of the allocation holding Value, and
	// Offset/OtherOffset the two values' offsets in it.
	Allocation          int
	Offset, OtherOffset int64
}

// ViolationKind says which rule a Violation breaks.
type ViolationKind int

const (
	// Clobber: an instruction writes its output over bytes holding a
	// value of another buffer that is still read later (or is an output).
	Clobber ViolationKind = iota + 1
	// StaleRead: an instruction reads an operand whose bytes no longer
	// hold it (another buffer's value was written over them).
	StaleRead
	// OutputLost: after the last step, an output's bytes hold something
	// else.
	OutputLost
	// OutsideAllocation: a value's slot does not lie inside its
	// allocation.
	OutsideAllocation
	// Unplaced: a value the program reads or writes has no slot.
	Unplaced
	// Unshared: two positions the program keeps in one storage (a loop's
	// state, a conditional's result, an in-place update and the operand
	// it updates, a donated parameter and its output) have different
	// places in the plan.
	Unshared
)

func (k ViolationKind) String() string {
	switch k {
	case Clobber:
		return "clobber"
	case StaleRead:
		return "stale read"
	case OutputLost:
		return "output lost"
	case OutsideAllocation:
		return "outside allocation"
	case Unplaced:
		return "unplaced"
	case Unshared:
		return "unshared"
	}
	return fmt.Sprintf("ViolationKind(%d)", int(k))
}

func rangeText(v *liveness.Value) string {
	if v == nil || !v.Scheduled {
		return "unscheduled"
	}
	return fmt.Sprintf("[%d,%d]", v.Range.Start, v.Range.End)
}

// valueText names a violation's value: the position, and the analysis'
// value there when it is another one (a merge the analysis resolved).
func valueText(v *liveness.Value, pos string) string {
	switch {
	case v == nil && pos == "":
		return "?"
	case v == nil:
		return pos
	case pos == "" || pos == v.Name():
		return v.Name()
	}
	return pos + " (" + v.Name() + ")"
}

// Error describes the violation in one line: step, instruction, both
// values with their live ranges and offsets.
func (v *Violation) Error() string {
	where := "after the last step"
	if v.Inst != nil {
		where = fmt.Sprintf("step %d (%s)", v.Step, v.Inst.Name)
	}
	name, other := valueText(v.Value, v.Position), valueText(v.Other, v.OtherPosition)
	val := fmt.Sprintf("%s live %s at allocation %d offset %d", name, rangeText(v.Value), v.Allocation, v.Offset)
	switch v.Kind {
	case Clobber:
		return fmt.Sprintf("%s: %s: writing %s overwrites %s live %s at offset %d", where, v.Kind, val, other, rangeText(v.Other), v.OtherOffset)
	case StaleRead:
		if v.Other == nil && v.OtherPosition == "" {
			return fmt.Sprintf("%s: %s: reading %s finds bytes never written", where, v.Kind, val)
		}
		return fmt.Sprintf("%s: %s: reading %s finds %s live %s (offset %d) written over it", where, v.Kind, val, other, rangeText(v.Other), v.OtherOffset)
	case OutputLost:
		return fmt.Sprintf("%s: %s: output %s holds %s live %s (offset %d)", where, v.Kind, val, other, rangeText(v.Other), v.OtherOffset)
	case OutsideAllocation:
		size := int64(0)
		if v.Value != nil {
			size = v.Value.Size
		}
		return fmt.Sprintf("%s: %s: %s, %d bytes, past the allocation's end", where, v.Kind, val, size)
	case Unshared:
		return fmt.Sprintf("%s: %s: %s and %s are one storage, but the plan puts the second at offset %d", where, v.Kind, val, other, v.OtherOffset)
	}
	return fmt.Sprintf("%s: %s: %s has no slot", where, v.Kind, name)
}

// ShadowReport is the outcome of a shadow run.
type ShadowReport struct {
	Steps        int   // instructions run
	Writes       int   // values written
	Reads        int   // operand reads checked
	BytesChecked int64 // bytes of those reads and writes
	// Violation is the first rule broken, or nil when the plan held.
	Violation *Violation
	// Timeline is the memory held at every step (nil after a violation).
	Timeline *Timeline
}

// Shadow runs the flattened schedule of as on ownership alone: every byte
// of every allocation records which source (a definition, or the merged
// state of a loop or a conditional) was written there last. At each step
// the instruction's operands must still own their bytes, and its outputs
// may only be written over bytes whose sources are not needed after the
// step: dead, or read for the last time by this very instruction where it
// may write over that operand (in place, or element-wise; XLA's
// CanShareOperandBufferWithUser for the plan's target). After the last
// step every output must still own its bytes.
//
// What each step reads and writes, what is needed when, and which
// positions must share bytes (a loop's state, a conditional's result, an
// in-place update, a donated parameter) come from the check's own reading
// of the IR (access.go), not from the analysis' uses, live ranges or
// buffers, so that a liveness bug shows as a violation instead of being
// mirrored. The run covers every opcode, and its memory is proportional
// to the values, not to the allocations' bytes.
func Shadow(ctx context.Context, as *assign.Assignment) (*ShadowReport, error) {
	if as == nil || as.Analysis == nil {
		return nil, errors.New("runtime: no assignment")
	}
	a := as.Analysis
	rep := &ShadowReport{Steps: len(a.Sequence)}

	places, bad := slotPlaces(as)
	if bad != nil {
		rep.Violation = bad
		return rep, nil
	}
	r := newReading(as)
	lp, repr := r.places(places)
	violation := func(kind ViolationKind, t int, in *hlo.Instruction, l, other label) *Violation {
		v := &Violation{Kind: kind, Step: t, Inst: in, Value: repr[l], Position: r.name(l), Allocation: lp[l].alloc, Offset: lp[l].offset}
		if other >= 0 {
			v.Other, v.OtherPosition, v.OtherOffset = repr[other], r.name(other), lp[other].offset
		}
		return v
	}
	// unplaced reports a source with bytes that has no slot.
	unplaced := func(t int, in *hlo.Instruction, l label) bool {
		if lp[l].ok || r.srcs[l].size == 0 {
			return false
		}
		rep.Violation = violation(Unplaced, t, in, l, -1)
		return true
	}
	// apart reports two sources the IR makes one storage at different
	// places.
	apart := func(t int, in *hlo.Instruction, x, y label) bool {
		px, py := lp[x], lp[y]
		if !px.ok || !py.ok || px.size == 0 || py.size == 0 || px.alloc == py.alloc && px.offset == py.offset {
			return false
		}
		rep.Violation = violation(Unshared, t, in, x, y)
		return true
	}

	owners := make([]ownerMap, len(as.Allocations))
	write := func(t int, in *hlo.Instruction, l label) bool {
		if unplaced(t, in, l) {
			return false
		}
		p := lp[l]
		if p.size == 0 {
			return true
		}
		ix := r.srcs[l].index
		var clash *segment
		owners[p.alloc].each(p.offset, p.offset+p.size, func(seg *segment) bool {
			q := seg.val
			switch {
			case q == l:
			case r.tableTwin(q) == l:
			case r.needed(q, t, l):
				clash = seg
				return false
			case !r.readHere(q, t) || r.overwrites(as, t, in, ix, q) || r.oneStorage(q, l):
				// Not read here; or read here by an op that may write
				// over it; or what the IR makes the writer's own storage
				// (a donated parameter, a loop's state), where the plan
				// has no choice: whether the op can run on it in place
				// is copy insertion's business, not checked here.
			default:
				clash = seg
				return false
			}
			return true
		})
		if clash != nil {
			rep.Violation = violation(Clobber, t, in, l, clash.val)
			return false
		}
		owners[p.alloc].set(p.offset, p.offset+p.size, l, l)
		rep.Writes++
		rep.BytesChecked += p.size
		return true
	}
	// holds checks that the bytes of l's place are all owned by sources
	// of accept.
	holds := func(t int, in *hlo.Instruction, l label, accept []label, kind ViolationKind) bool {
		if unplaced(t, in, l) {
			return false
		}
		p := lp[l]
		if p.size == 0 {
			return true
		}
		at, ok := p.offset, true
		other := label(-1)
		owners[p.alloc].each(p.offset, p.offset+p.size, func(seg *segment) bool {
			if seg.lo > at || !slices.Contains(accept, seg.val) && !r.asyncOwnWrite(t, seg.val) {
				ok = false
				if seg.lo <= at {
					other = seg.val
				}
				return false
			}
			at = seg.hi
			return true
		})
		if ok && at >= p.offset+p.size {
			rep.BytesChecked += p.size
			return true
		}
		if kind == OutputLost && other < 0 {
			kind = StaleRead
		}
		rep.Violation = violation(kind, t, in, l, other)
		return false
	}
	// bind enters merge b.merge: its inputs must lie on its bytes, which
	// must hold one of them, and then hold the merge.
	bind := func(t int, in *hlo.Instruction, b binding) bool {
		m := b.merge
		for _, x := range r.fams[r.srcs[m].fam].inputs {
			if x = r.find(x); x >= 0 && x != m && apart(t, in, m, x) {
				return false
			}
		}
		if !holds(t, in, m, b.accept, StaleRead) {
			return false
		}
		if p := lp[m]; p.size > 0 {
			owners[p.alloc].set(p.offset, p.offset+p.size, m, m)
		}
		return true
	}

	var forks map[int][]ownerMap // by conditional ID: the owners its branches start from
	for t, in := range a.Sequence {
		if t&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// Each branch of a conditional starts from the memory the first
		// one found; the conditional's result is the last one's.
		for _, c := range r.rejoin[t] {
			owners = cloneOwners(forks[c])
		}
		for _, c := range r.fork[t] {
			if forks == nil {
				forks = map[int][]ownerMap{}
			}
			forks[c] = cloneOwners(owners)
		}
		if in.Opcode == hlo.OpConditional {
			delete(forks, in.ID)
		}
		for _, b := range r.bindings[t] {
			if !bind(t, in, b) {
				return rep, nil
			}
		}
		for i, x := range r.reads[t] {
			if slices.ContainsFunc(r.reads[t][:i], func(y readAt) bool { return y.src == x.src }) {
				continue
			}
			rep.Reads++
			accept := []label{x.src}
			if twin := r.tableTwin(x.src); twin >= 0 {
				accept = append(accept, twin)
			}
			if !holds(t, in, x.src, accept, StaleRead) {
				return rep, nil
			}
		}
		for _, ip := range r.inPlace[t] {
			if apart(t, in, ip.out, ip.operand) {
				return rep, nil
			}
		}
		for _, l := range r.writes[t] {
			if !write(t, in, l) {
				return rep, nil
			}
		}
	}
	end := len(a.Sequence)
	for _, io := range r.ioAlias {
		if io[0] >= 0 && io[1] >= 0 && apart(end, nil, io[0], io[1]) {
			return rep, nil
		}
	}
	for l := range r.srcs {
		if r.liveOut[l] && r.rep[l] == label(l) && r.srcs[l].size > 0 {
			if !holds(end, nil, label(l), []label{label(l)}, OutputLost) {
				return rep, nil
			}
		}
	}
	rep.Timeline = timeline(as)
	return rep, nil
}

// cloneOwners returns a copy of os that changes independently.
func cloneOwners(os []ownerMap) []ownerMap {
	out := make([]ownerMap, len(os))
	for i := range os {
		out[i].segs = slices.Clone(os[i].segs)
	}
	return out
}

// shadowPlace is where a value's slot lies: its allocation, offset and
// size (ok: the value has a slot).
type shadowPlace struct {
	alloc  int
	offset int64
	size   int64
	ok     bool
}

// slotPlaces returns each value's place by value ID, or the violation of
// the first slot outside its allocation.
func slotPlaces(as *assign.Assignment) ([]shadowPlace, *Violation) {
	places := make([]shadowPlace, len(as.Analysis.Values))
	for ai, al := range as.Allocations {
		for _, s := range al.Slots {
			if s.Value == nil || s.Value.ID < 0 || s.Value.ID >= len(places) {
				continue
			}
			places[s.Value.ID] = shadowPlace{alloc: ai, offset: s.Offset, size: s.Size, ok: true}
			if s.Offset < 0 || s.Offset+s.Size > al.Size || s.Offset+s.Size < s.Offset {
				return nil, &Violation{Kind: OutsideAllocation, Step: -1, Value: s.Value, Allocation: ai, Offset: s.Offset}
			}
		}
	}
	return places, nil
}

type span struct{ lo, hi int } // steps t with lo <= t < hi

// mergeSpans sorts sp and merges the spans that overlap or touch, in
// place.
func mergeSpans(sp []span) []span {
	slices.SortFunc(sp, func(x, y span) int { return x.lo - y.lo })
	merged := sp[:0]
	for _, s := range sp {
		if k := len(merged); k > 0 && s.lo <= merged[k-1].hi {
			merged[k-1].hi = max(merged[k-1].hi, s.hi)
		} else {
			merged = append(merged, s)
		}
	}
	return merged
}

// Timeline is the memory a run holds at every step.
type Timeline struct {
	// Live[t] is the bytes of the buffers held during step t (0 <= t <=
	// Steps): within one of their values' live ranges (to its end,
	// inclusive, as XLA's ranges are; an output to the end of the run), or
	// kept for the whole run in an allocation of their own by the plan (a
	// constant, an undonated entry parameter, a thread-local buffer). Each
	// buffer counts once, at its size, and bytes once: at a step where a
	// buffer ends and another, placed over some of its bytes, starts (a
	// result written over an operand read for the last time), the shared
	// bytes count once.
	Live []int64
	// Peak is the largest Live and PeakStep its first step.
	Peak     int64
	PeakStep int
}

// timeline builds the Timeline of a plan: the live ranges of the values
// the shadow run checked, and the allocations the plan keeps for the
// whole run.
func timeline(as *assign.Assignment) *Timeline {
	a := as.Analysis
	end := len(a.Sequence)
	resident := make([]bool, len(a.Buffers))
	for _, al := range as.Allocations {
		if al.Constant || al.ThreadLocal || al.IsParameter() && !al.ParameterAliased {
			for _, s := range al.Slots {
				if s.Value != nil && s.Value.Buffer != nil {
					resident[s.Value.Buffer.ID] = true
				}
			}
		}
	}
	// Intervals [lo, hi) of steps each buffer is held.
	held := make([][]span, len(a.Buffers))
	for _, v := range a.Values {
		if v.Buffer == nil || !v.Scheduled || v.Range.End < v.Range.Start {
			continue
		}
		hi := v.Range.End + 1
		if v.LiveOut {
			hi = end + 1
		}
		held[v.Buffer.ID] = append(held[v.Buffer.ID], span{v.Range.Start, hi})
	}
	diff := make([]int64, end+2)
	for id, sp := range held {
		size := a.Buffers[id].Size
		if resident[id] {
			diff[0] += size
			diff[end+1] -= size
			continue
		}
		held[id] = mergeSpans(sp)
		for _, s := range held[id] {
			diff[s.lo] += size
			diff[min(s.hi, end+1)] -= size
		}
	}
	handoverBytes(as, held, resident, func(t int, b int64) {
		diff[t] -= b
		diff[t+1] += b
	})
	tl := &Timeline{Live: make([]int64, end+1), PeakStep: -1}
	var cur int64
	for t := 0; t <= end; t++ {
		cur += diff[t]
		tl.Live[t] = cur
		if cur > tl.Peak {
			tl.Peak, tl.PeakStep = cur, t
		}
	}
	return tl
}

// handoverBytes finds, by step, the bytes two buffers held at that step
// share in the plan: one's held span ends there (inclusive) and the
// other's starts there, on some of the same bytes of one allocation (a
// plan never puts buffers held at once on the same bytes otherwise). held
// is each buffer's merged spans [lo, hi) of steps. It calls f with each
// step and bytes shared there, possibly several times for one step.
func handoverBytes(as *assign.Assignment, held [][]span, resident []bool, f func(t int, b int64)) {
	type place struct {
		alloc      int
		off, limit int64
	}
	places := make([]place, len(held))
	placed := make([]bool, len(held))
	for ai, al := range as.Allocations {
		for _, s := range al.Slots {
			if s.Value == nil || s.Value.Buffer == nil || s.Size == 0 {
				continue
			}
			id := s.Value.Buffer.ID
			if id < len(places) && !placed[id] {
				places[id], placed[id] = place{ai, s.Offset, s.Offset + s.Size}, true
			}
		}
	}
	// The ends and starts of held spans by (step, allocation), sorted
	// and joined, rather than maps of lists (two entries and two small
	// slices per buffer, 170 MB on a chain of 10^6 operations).
	type edge struct {
		t, alloc, id int
	}
	var ends, starts []edge
	for id, sp := range held {
		if !placed[id] || resident[id] {
			continue
		}
		for _, s := range sp {
			ends = append(ends, edge{s.hi - 1, places[id].alloc, id})
			starts = append(starts, edge{s.lo, places[id].alloc, id})
		}
	}
	at := func(x, y edge) int {
		if c := cmp.Compare(x.t, y.t); c != 0 {
			return c
		}
		return cmp.Compare(x.alloc, y.alloc)
	}
	slices.SortFunc(ends, at)
	slices.SortFunc(starts, at)
	j := 0
	for i := 0; i < len(ends); {
		k := i + 1
		for k < len(ends) && at(ends[k], ends[i]) == 0 {
			k++
		}
		for j < len(starts) && at(starts[j], ends[i]) < 0 {
			j++
		}
		l := j
		for l < len(starts) && at(starts[l], ends[i]) == 0 {
			l++
		}
		for _, x := range ends[i:k] {
			for _, y := range starts[j:l] {
				if x.id == y.id {
					continue
				}
				px, py := places[x.id], places[y.id]
				if lo, hi := max(px.off, py.off), min(px.limit, py.limit); hi > lo {
					f(x.t, hi-lo)
				}
			}
		}
		i = k
	}
}
