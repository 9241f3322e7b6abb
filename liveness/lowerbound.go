package liveness

import (
	"slices"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// The figures of this file, and how they differ from the others hlomem
// prints (README, "Peaks and bounds"):
//
//   - LowerBound: no plan of the analysed buffers under this schedule can
//     take fewer bytes, whatever in-place reuse the planner makes. It is
//     what `hlomem liveness --format=json` calls lower_bound.
//   - LivePeak: the largest total of buffers whose hulls (first value's
//     start to last value's end, both inclusive) share a step. An output
//     and the operand it reuses in place are both counted, and so are two
//     buffers that could take turns in one slot, so it can exceed what a
//     planner achieves: it is not a bound, only the figure XLA's
//     DefaultMemoryScheduler minimises (schedule.HeuristicBest,
//     schedule.Candidate.LivePeak).
//   - XLAPeak: XLA's HloLiveRange::ComputePeakMemoryMoment, printed in the
//     live-range dump as "Live ranges at T (peak)". Its sizes are whole
//     defining shapes and aliasing is ignored: a report, neither a bound nor
//     a plan.

// Bound is a lower bound on the bytes of a set of buffers, with the moment
// that proves it.
type Bound struct {
	Bytes int64
	// Time is the first step at which the bound is reached (-1 when it is
	// 0).
	Time int
	// Live lists the buffers holding memory at Time that make the bound,
	// largest first (ties by ID). Bytes is their total, less what in-place
	// reuse could save at Time (Saved).
	Live  []*Buffer
	Saved int64
}

// LowerBound returns a lower bound on the memory any valid plan of the
// scheduled buffers that include accepts (all when include is nil) needs
// under the analysis' schedule, whatever operand reuse the planner makes.
//
// Two buffers may share memory when no value of one overlaps a value of
// the other, or when they overlap at one step t only, where a value x of
// one ends and a value y of the other starts, and y's instruction, not a
// copy, has x's defining or last instruction as an operand: y may then
// take over x's memory (XLA's in-place reuse of a dying operand, which a
// target allows for some of these pairs only). So the bound takes the
// largest of
//
//   - between steps t-1 and t, the buffers with a value live at both: no
//     two of them can share;
//   - during step t, every buffer live at t, less the most that such
//     takeovers at t can save: each buffer takes over at most one other,
//     and gives its memory to at most one, saving at most the smaller of
//     the two sizes.
//
// As in XLA's buffer assignment (and hlomem's), a constant, an entry
// parameter that is not donated (input_output_alias) and a buffer of a
// thread-local computation keep an allocation of their own for the whole
// run (OwnsMemory): they count at every step and take part in no takeover.
// A buffer counts once however many of its values are live.
// Every plan
// hlomem makes (assign, whatever the packer) takes at least
// LowerBound(nil).Bytes in total; the corpus tests hold that.
func (a *Analysis) LowerBound(include func(*Buffer) bool) Bound {
	return a.LowerBoundWith(include, nil)
}

// MinBytes returns the lower bound over every buffer of the module in
// bytes, LowerBound(nil).Bytes: no plan of the module under this schedule
// takes fewer.
func (a *Analysis) MinBytes() int64 {
	return a.LowerBound(nil).Bytes
}

// ShareFunc is a target's rule for in-place reuse: whether user's value at
// userIx may take over the memory of operand's value at opIx when that
// value dies there (XLA's CanShareOperandBufferWithUser with the backend's
// hooks).
type ShareFunc func(operand *hlo.Instruction, opIx hlo.ShapeIndex, user *hlo.Instruction, userIx hlo.ShapeIndex) bool

// StepBound is the lower bound's figures at one step t (see LowerBound).
type StepBound struct {
	// Live is the bytes of the buffers with a value live at t (each
	// buffer once), Between those of the buffers with a value live at t-1
	// and at t, and Saved the most that takeovers at t can save. Fixed is
	// the memory of the buffers that own an allocation for the whole run,
	// counted in none of the others.
	Live, Between, Saved, Fixed int64
}

// Bytes is the bound at the step: the larger of Between and Live - Saved,
// plus Fixed.
func (s StepBound) Bytes() int64 { return max(s.Between, s.Live-s.Saved) + s.Fixed }

// LowerBoundCurve returns the lower bound's figures at every step
// 0..EndTime() of the schedule: LowerBoundWith is their largest Bytes (the
// buffers it lists are those of that step), and Live+Fixed is the bytes
// held at each step before any in-place takeover.
func (a *Analysis) LowerBoundCurve(include func(*Buffer) bool, share ShareFunc) []StepBound {
	c, _, _ := a.boundCurve(include, share)
	return c
}

// boundCurve computes LowerBoundCurve and the buffers it counts: those
// owning memory, and the others with a scheduled value.
func (a *Analysis) boundCurve(include func(*Buffer) bool, share ShareFunc) (curve []StepBound, own, bufs []*Buffer) {
	end := a.EndTime()
	between, live, vals, fixed, own, bufs := a.occupancy(include)
	saved := a.takeoverSavings(vals, share)
	curve = make([]StepBound, end+1)
	for t := range curve {
		curve[t] = StepBound{Live: live[t], Saved: saved[t], Fixed: fixed}
		if t >= 1 {
			curve[t].Between = between[t]
		}
	}
	return curve, own, bufs
}

// ByStep buckets vals by the step step gives each (0..end): the values
// at step t are list[at[t]:at[t+1]], in their order in vals (a counting
// sort, O(len(vals) + end)). Every step must be within 0..end.
func ByStep(vals []*Value, end int, step func(*Value) int) (at []int32, list []*Value) {
	at = make([]int32, end+2)
	for _, v := range vals {
		at[step(v)+1]++
	}
	for t := 0; t <= end; t++ {
		at[t+1] += at[t]
	}
	list = make([]*Value, len(vals))
	fill := append([]int32(nil), at[:end+1]...)
	for _, v := range vals {
		t := step(v)
		list[fill[t]] = v
		fill[t]++
	}
	return at, list
}

// boundSpan is a range of steps, both ends included.
type boundSpan struct{ lo, hi int }

// occupancy returns, over the steps of the schedule, the bytes of the
// buffers (of those include takes) with a value live at t (live[t]) and
// at both t-1 and t (between[t], t >= 1); the scheduled values it counts;
// the bytes of the buffers owning memory (fixed) and those buffers (own);
// and the buffers it counts otherwise (bufs).
func (a *Analysis) occupancy(include func(*Buffer) bool) (between, live []int64, vals []*Value, fixed int64, own, bufs []*Buffer) {
	end := a.EndTime()
	// between[t] (t >= 1): buffers with a value live at t-1 and t.
	// live[t]: buffers with a value live at t.
	between = make([]int64, end+3)
	live = make([]int64, end+3)
	var bs, ls []boundSpan
	for _, b := range a.Buffers {
		if include != nil && !include(b) {
			continue
		}
		if a.OwnsMemory(b) {
			own = append(own, b)
			fixed += b.Size
			continue
		}
		bs, ls = bs[:0], ls[:0]
		for _, v := range b.Values {
			r := v.Range
			if !v.Scheduled || r.Start < 0 || r.End > end || r.End < r.Start {
				continue
			}
			vals = append(vals, v)
			ls = append(ls, boundSpan{r.Start, r.End})
			if r.End > r.Start {
				bs = append(bs, boundSpan{r.Start + 1, r.End})
			}
		}
		if len(ls) == 0 {
			continue
		}
		bufs = append(bufs, b)
		for _, sp := range [][]boundSpan{bs, ls} {
			slices.SortFunc(sp, func(x, y boundSpan) int { return x.lo - y.lo })
		}
		add := func(arr []int64, sp []boundSpan) {
			lo, hi := -1, -2
			for _, s := range sp {
				if s.lo <= hi+1 {
					hi = max(hi, s.hi)
					continue
				}
				if lo >= 0 {
					arr[lo] += b.Size
					arr[hi+1] -= b.Size
				}
				lo, hi = s.lo, s.hi
			}
			if lo >= 0 {
				arr[lo] += b.Size
				arr[hi+1] -= b.Size
			}
		}
		add(between, bs)
		add(live, ls)
	}
	for t := 1; t < len(between); t++ {
		between[t] += between[t-1]
		live[t] += live[t-1]
	}
	return between, live, vals, fixed, own, bufs
}

// takeoverSavings returns, at each step t, the most the in-place
// takeovers at t can save: a value y starting at t may take over a value
// x ending at t (of another buffer) when y's instruction has x's defining
// or last instruction as an operand (and share allows it).
func (a *Analysis) takeoverSavings(vals []*Value, share ShareFunc) []int64 {
	end := a.EndTime()
	// Takeovers at t: a value y starting at t may take over a value x
	// ending at t (of another buffer) when y's instruction has x's
	// defining or last instruction as an operand. giver[b] and taker[b]
	// are the most buffer b can save in either role at the current t, and
	// a buffer with a value live across t (crossing) takes part in none.
	// The values starting at t: starts[startAt[t]:startAt[t+1]], and
	// likewise those ending at t.
	startAt, starts := ByStep(vals, end, func(v *Value) int { return v.Range.Start })
	endAt, ends := ByStep(vals, end, func(v *Value) int { return v.Range.End })
	// crossing: some value of b is live across t (Start < t < End). A
	// buffer of many values (a loop-carried one, nested loops deep) has
	// its steps merged once and searched, not scanned at every step.
	interior := make([][]boundSpan, len(a.Buffers)) // by buffer ID, once merged
	merged := make([]bool, len(a.Buffers))
	crossing := func(b *Buffer, t int) bool {
		if len(b.Values) <= 8 {
			for _, v := range b.Values {
				if v.Scheduled && v.Range.Start < t && v.Range.End > t {
					return true
				}
			}
			return false
		}
		sp := interior[b.ID]
		if !merged[b.ID] {
			for _, v := range b.Values {
				if v.Scheduled && v.Range.End-v.Range.Start >= 2 {
					sp = append(sp, boundSpan{v.Range.Start + 1, v.Range.End - 1})
				}
			}
			slices.SortFunc(sp, func(x, y boundSpan) int { return x.lo - y.lo })
			out := sp[:0]
			for _, s := range sp {
				if n := len(out); n > 0 && s.lo <= out[n-1].hi+1 {
					out[n-1].hi = max(out[n-1].hi, s.hi)
				} else {
					out = append(out, s)
				}
			}
			sp = out
			interior[b.ID] = sp
			merged[b.ID] = true
		}
		i := sort.Search(len(sp), func(i int) bool { return sp[i].hi >= t })
		return i < len(sp) && sp[i].lo <= t
	}
	saved := make([]int64, end+1)
	// Side tables by buffer ID and instruction ID, reset at each t through
	// the lists of what was touched.
	give := make([]int64, len(a.Buffers))
	take := make([]int64, len(a.Buffers))
	var gave, took []*Buffer
	byInst := make([][]*Value, a.Module.NumInstructions())
	var ended []int
	crossAt := make([]int32, len(a.Buffers)) // t+1 when cross[b] is known for t
	cross := make([]bool, len(a.Buffers))
	for t := 0; t <= end; t++ {
		startsT, endsT := starts[startAt[t]:startAt[t+1]], ends[endAt[t]:endAt[t+1]]
		if len(startsT) == 0 || len(endsT) == 0 {
			continue
		}
		for _, b := range gave {
			give[b.ID] = 0
		}
		for _, b := range took {
			take[b.ID] = 0
		}
		gave, took = gave[:0], took[:0]
		for _, id := range ended {
			byInst[id] = byInst[id][:0]
		}
		ended = ended[:0]
		endedAt := func(in *hlo.Instruction, x *Value) {
			if len(byInst[in.ID]) == 0 {
				ended = append(ended, in.ID)
			}
			byInst[in.ID] = append(byInst[in.ID], x)
		}
		for _, x := range endsT {
			endedAt(x.Inst, x)
			if e := x.EndPosition.Inst; e != nil && e != x.Inst {
				endedAt(e, x)
			}
		}
		stamp := int32(t + 1)
		isCross := func(b *Buffer) bool {
			if crossAt[b.ID] != stamp {
				crossAt[b.ID] = stamp
				cross[b.ID] = crossing(b, t)
			}
			return cross[b.ID]
		}
		for _, y := range startsT {
			if y.Inst.Opcode == hlo.OpCopy || isCross(y.Buffer) {
				continue
			}
			for _, op := range y.Inst.Operands {
				for _, x := range byInst[op.ID] {
					if x.Buffer == y.Buffer || isCross(x.Buffer) {
						continue
					}
					if share != nil && !(x.Inst == op && share(x.Inst, x.Index, y.Inst, y.Index) ||
						x.EndPosition.Inst == op && share(op, x.EndPosition.Index, y.Inst, y.Index)) {
						continue
					}
					s := min(x.Buffer.Size, y.Buffer.Size)
					if give[x.Buffer.ID] == 0 {
						gave = append(gave, x.Buffer)
					}
					if take[y.Buffer.ID] == 0 {
						took = append(took, y.Buffer)
					}
					give[x.Buffer.ID] = max(give[x.Buffer.ID], s)
					take[y.Buffer.ID] = max(take[y.Buffer.ID], s)
				}
			}
		}
		var g, k int64
		for _, b := range gave {
			g += give[b.ID]
		}
		for _, b := range took {
			k += take[b.ID]
		}
		saved[t] = min(g, k)
	}
	return saved
}

// LowerBoundWith is LowerBound for a target whose in-place reuse share
// allows (nil allows every takeover LowerBound considers): a pair that
// share refuses cannot save anything, so the bound is higher and holds for
// plans of that target only. assign reports it with its target's rule.
func (a *Analysis) LowerBoundWith(include func(*Buffer) bool, share ShareFunc) Bound {
	curve, own, bufs := a.boundCurve(include, share)
	var fixed int64
	if len(curve) > 0 {
		fixed = curve[0].Fixed
	}
	best := Bound{Time: -1}
	during := false
	for t, c := range curve {
		if c.Between > best.Bytes && t >= 1 {
			best.Bytes, best.Time, during = c.Between, t-1, false
		}
		if d := c.Live - c.Saved; d > best.Bytes {
			best.Bytes, best.Time, during = d, t, true
		}
	}
	if best.Time < 0 {
		if fixed == 0 {
			return best
		}
		best.Time = 0
	}
	best.Bytes += fixed
	best.Live = append(best.Live, own...)
	t := best.Time
	for _, b := range bufs {
		in := false
		for _, v := range b.Values {
			r := v.Range
			if !v.Scheduled {
				continue
			}
			if during {
				in = in || r.Contains(t)
			} else {
				in = in || r.Start <= t && r.End >= t+1
			}
		}
		if in {
			best.Live = append(best.Live, b)
		}
	}
	if during {
		best.Saved = curve[t].Saved
	}
	sortBySize(best.Live)
	return best
}

// OwnsMemory reports whether b keeps an allocation of its own that no
// other buffer shares at any time, as XLA's buffer assignment gives one to
// every buffer of a thread-local computation and, in sequential ones, to a
// constant and to an entry parameter that is not donated. A buffer's kind
// is its first value's computation's, as in assign.
func (a *Analysis) OwnsMemory(b *Buffer) bool {
	if len(b.Values) == 0 {
		return false
	}
	switch a.Kinds[b.Values[0].Inst.Parent.ID] {
	case ThreadLocal:
		return true
	case Sequential:
	default:
		return false
	}
	for _, v := range b.Values {
		if v.Inst.Opcode == hlo.OpConstant {
			return true
		}
	}
	for _, v := range b.Values {
		in := v.Inst
		if in.Opcode == hlo.OpParameter && in.Parent == a.Module.Entry {
			return !a.donated(in.ParameterNumber, v.Index)
		}
	}
	return false
}

// donated reports whether the entry parameter number p at index ix is
// donated to the output (input_output_alias).
func (a *Analysis) donated(p int64, ix hlo.ShapeIndex) bool {
	for _, io := range a.Module.InputOutputAlias {
		if io.Param == p && io.ParamIndex.Equal(ix) {
			return true
		}
	}
	return false
}

// sortBySize orders buffers largest first, ties by ID.
func sortBySize(bs []*Buffer) {
	sort.SliceStable(bs, func(i, j int) bool {
		if bs[i].Size != bs[j].Size {
			return bs[i].Size > bs[j].Size
		}
		return bs[i].ID < bs[j].ID
	})
}

// LivePeak is the largest total of the buffers whose hulls (first
// value's start to last value's end, both inclusive) contain one step,
// with the first such step and the buffers there. It is not a lower bound
// (see the top of this file); XLA's DefaultMemoryScheduler
// (schedule.HeuristicBest) minimises it.
func (a *Analysis) LivePeak() Bound {
	return a.hullPeak(nil, func(b *Buffer) (Range, bool) { return b.Range() })
}

// hullPeak computes LivePeak with the given buffer hulls.
func (a *Analysis) hullPeak(include func(*Buffer) bool, rangeOf func(*Buffer) (Range, bool)) Bound {
	bufs := make([]*Buffer, 0, len(a.Buffers))
	ranges := make([]Range, 0, len(a.Buffers))
	end := -1
	for _, b := range a.Buffers {
		if include != nil && !include(b) {
			continue
		}
		r, ok := rangeOf(b)
		if !ok || r.Start < 0 || r.End < r.Start {
			continue
		}
		bufs = append(bufs, b)
		ranges = append(ranges, r)
		end = max(end, r.End)
	}
	best := Bound{Time: -1}
	if end < 0 {
		return best
	}
	delta := make([]int64, end+2)
	for i, r := range ranges {
		delta[r.Start] += bufs[i].Size
		delta[r.End+1] -= bufs[i].Size
	}
	var cur int64
	for t := 0; t <= end; t++ {
		cur += delta[t]
		if cur > best.Bytes {
			best.Bytes, best.Time = cur, t
		}
	}
	if best.Time >= 0 {
		for i, b := range bufs {
			if ranges[i].Contains(best.Time) {
				best.Live = append(best.Live, b)
			}
		}
		sortBySize(best.Live)
	}
	return best
}

// LivePeak is the live peak of all buffers under timeline tl: the
// largest total of buffers live at one step, each over its whole hull
// (what XLA's DefaultMemoryScheduler minimises; not a bound of a plan).
func (tl *Timeline) LivePeak(a *Analysis) int64 {
	return a.hullPeak(nil, func(b *Buffer) (Range, bool) {
		var r Range
		ok := false
		for _, v := range b.Values {
			if !tl.Scheduled[v.ID] {
				continue
			}
			vr := tl.Ranges[v.ID]
			if !ok {
				r, ok = vr, true
				continue
			}
			r.Start, r.End = min(r.Start, vr.Start), max(r.End, vr.End)
		}
		return r, ok
	}).Bytes
}
