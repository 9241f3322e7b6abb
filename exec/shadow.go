package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

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
	}
	return fmt.Sprintf("ViolationKind(%d)", int(k))
}

func rangeText(v *liveness.Value) string {
	if v == nil || !v.Scheduled {
		return "unscheduled"
	}
	return fmt.Sprintf("[%d,%d]", v.Range.Start, v.Range.End)
}

// Error describes the violation in one line: step, instruction, both
// values with their live ranges and offsets.
func (v *Violation) Error() string {
	where := "after the last step"
	if v.Inst != nil {
		where = fmt.Sprintf("step %d (%s)", v.Step, v.Inst.Name)
	}
	val := fmt.Sprintf("%s live %s at allocation %d offset %d", v.Value.Name(), rangeText(v.Value), v.Allocation, v.Offset)
	switch v.Kind {
	case Clobber:
		return fmt.Sprintf("%s: %s: writing %s overwrites %s live %s at offset %d", where, v.Kind, val, v.Other.Name(), rangeText(v.Other), v.OtherOffset)
	case StaleRead:
		if v.Other == nil {
			return fmt.Sprintf("%s: %s: reading %s finds bytes never written", where, v.Kind, val)
		}
		return fmt.Sprintf("%s: %s: reading %s finds %s live %s (offset %d) written over it", where, v.Kind, val, v.Other.Name(), rangeText(v.Other), v.OtherOffset)
	case OutputLost:
		return fmt.Sprintf("%s: %s: output %s holds %s live %s (offset %d)", where, v.Kind, val, v.Other.Name(), rangeText(v.Other), v.OtherOffset)
	case OutsideAllocation:
		return fmt.Sprintf("%s: %s: %s, %d bytes, past the allocation's end", where, v.Kind, val, v.Value.Size)
	}
	return fmt.Sprintf("%s: %s: %s has no slot", where, v.Kind, v.Value.Name())
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
// of every allocation records which value was written there last. At each
// step the instruction's operands must still own their bytes, and its
// outputs may only be written over bytes whose values are not needed
// after the step (dead, or read for the last time by this very
// instruction, which reads before it writes). After the last step every
// output must still own its bytes. The run needs only which values an
// instruction reads and writes, so it covers every opcode, and its memory
// is proportional to the values, not to the allocations' bytes.
//
// Aliasing inside a buffer (a loop's state, a conditional's result, an
// in-place update) is the analysis' business: ownership is checked by
// buffer, so a value may find bytes last written by another value of its
// own buffer.
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
	reads, writes, preset := stepAccesses(a)

	// A buffer is needed after step t when one of its values is live
	// across t, or is an output defined by then.
	needed := newNeedIndex(a)

	owners := make([]ownerMap, len(as.Allocations))
	write := func(t int, in *hlo.Instruction, v *liveness.Value) bool {
		p := places[v.ID]
		if !p.ok {
			rep.Violation = &Violation{Kind: Unplaced, Step: t, Inst: in, Value: v}
			return false
		}
		if p.size == 0 {
			return true
		}
		var clash *segment
		owners[p.alloc].each(p.offset, p.offset+p.size, func(s *segment) bool {
			if s.buf != int32(v.Buffer.ID) && needed.after(s.buf, t) {
				clash = s
				return false
			}
			return true
		})
		if clash != nil {
			o := a.Values[clash.val]
			rep.Violation = &Violation{Kind: Clobber, Step: t, Inst: in, Value: v, Other: o, Allocation: p.alloc, Offset: p.offset, OtherOffset: places[o.ID].offset}
			return false
		}
		owners[p.alloc].set(p.offset, p.offset+p.size, int32(v.Buffer.ID), int32(v.ID))
		rep.Writes++
		rep.BytesChecked += p.size
		return true
	}
	check := func(t int, in *hlo.Instruction, v *liveness.Value, kind ViolationKind) bool {
		p := places[v.ID]
		if !p.ok {
			rep.Violation = &Violation{Kind: Unplaced, Step: t, Inst: in, Value: v}
			return false
		}
		if p.size == 0 {
			return true
		}
		bad, gap := owners[p.alloc].foreign(p.offset, p.offset+p.size, int32(v.Buffer.ID))
		if bad == nil && !gap {
			rep.BytesChecked += p.size
			return true
		}
		viol := &Violation{Kind: kind, Step: t, Inst: in, Value: v, Allocation: p.alloc, Offset: p.offset}
		if bad != nil {
			o := a.Values[bad.val]
			viol.Other, viol.OtherOffset = o, places[o.ID].offset
		} else if kind == OutputLost {
			viol.Kind = StaleRead
		}
		rep.Violation = viol
		return false
	}

	for _, v := range preset {
		if !write(-1, nil, v) {
			return rep, nil
		}
	}
	for t, in := range a.Sequence {
		if t&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		for _, v := range reads[t] {
			rep.Reads++
			if !check(t, in, v, StaleRead) {
				return rep, nil
			}
		}
		for _, v := range writes[t] {
			if !write(t, in, v) {
				return rep, nil
			}
		}
	}
	for _, v := range a.Values {
		if v.LiveOut && v.Size > 0 && places[v.ID].ok {
			if !check(len(a.Sequence), nil, v, OutputLost) {
				return rep, nil
			}
		}
	}
	rep.Timeline = timeline(as)
	return rep, nil
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

// stepAccesses returns, for each step of the schedule, the values its
// instruction reads (once per step, phis included) and writes (values of
// bytes, not phis), and the values defined outside the schedule, present
// from the start.
func stepAccesses(a *liveness.Analysis) (reads, writes [][]*liveness.Value, preset []*liveness.Value) {
	writes = make([][]*liveness.Value, len(a.Sequence))
	reads = make([][]*liveness.Value, len(a.Sequence))
	// addReads records the steps that read v, once per step.
	addReads := func(v *liveness.Value) {
		seen := -1
		for _, u := range v.Uses {
			if u.HandsOn() {
				continue
			}
			if t := a.Time(u.Inst); t >= 0 && t != seen {
				reads[t] = append(reads[t], v)
				seen = t
			}
		}
	}
	for _, v := range a.Values {
		if v.IsPhi || v.Size == 0 {
			continue
		}
		if t := a.Time(v.Inst); t >= 0 {
			writes[t] = append(writes[t], v)
		} else {
			preset = append(preset, v)
		}
		addReads(v)
	}
	// Phis are read too: they own nothing of their own, their buffer does.
	for _, v := range a.Values {
		if v.IsPhi && v.Size > 0 {
			addReads(v)
		}
	}
	return reads, writes, preset
}

// needIndex answers "is a value of buffer b live across step t": for
// every buffer, the merged steps (Start, End] its values cover, and
// whether it holds an output (live to the end once defined).
type needIndex struct {
	spans  [][]span // by buffer ID: merged, sorted
	outAt  []int    // by buffer ID: earliest start of an output value, or -1
	maxEnd int
}

type span struct{ lo, hi int } // steps t with lo <= t < hi need the buffer

func newNeedIndex(a *liveness.Analysis) *needIndex {
	n := &needIndex{spans: make([][]span, len(a.Buffers)), outAt: make([]int, len(a.Buffers))}
	for i := range n.outAt {
		n.outAt[i] = -1
	}
	for _, v := range a.Values {
		if v.Buffer == nil || !v.Scheduled || v.Buffer.ID >= len(n.spans) {
			continue
		}
		id := v.Buffer.ID
		if v.Range.End > v.Range.Start {
			n.spans[id] = append(n.spans[id], span{v.Range.Start, v.Range.End})
		}
		if v.LiveOut && (n.outAt[id] < 0 || v.Range.Start < n.outAt[id]) {
			n.outAt[id] = v.Range.Start
		}
	}
	for id, sp := range n.spans {
		n.spans[id] = mergeSpans(sp)
	}
	return n
}

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

// after reports whether buffer b is still needed once step t has read its
// operands: one of its values is live from t or before to after t, or it
// holds an output already defined. A value read for the last time at t
// (End == t) is no longer needed.
func (n *needIndex) after(b int32, t int) bool {
	if int(b) >= len(n.spans) || b < 0 {
		return false
	}
	if o := n.outAt[b]; o >= 0 && o <= t {
		return true
	}
	sp := n.spans[b]
	i := sort.Search(len(sp), func(i int) bool { return sp[i].hi > t })
	return i < len(sp) && sp[i].lo <= t
}

// Timeline is the memory a run holds at every step.
type Timeline struct {
	// Live[t] is the bytes of the buffers held during step t (0 <= t <=
	// Steps): within one of their values' live ranges (to its end,
	// inclusive, as XLA's ranges are; an output to the end of the run), or
	// kept for the whole run in an allocation of their own by the plan (a
	// constant, an undonated entry parameter, a thread-local buffer). Each
	// buffer counts once, at its size.
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
		for _, s := range mergeSpans(sp) {
			diff[s.lo] += size
			diff[min(s.hi, end+1)] -= size
		}
	}
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
