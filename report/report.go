package report

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/remat"
	"github.com/hlomem/hlomem/schedule"
)

// DefaultTop is Options.Top when it is 0.
const DefaultTop = 10

// Options configures Build. The zero value plans for the GPU with the
// default packer and schedule, lists the DefaultTop largest of what
// occupies memory at the peak and computes every what-if.
type Options struct {
	// Compile is the plan's pipeline, as hlomem assign runs it (target,
	// packer and its budget, schedule, fusion); the searching schedulers
	// and fusion's guard always weigh the plan's total (PlanCost), as
	// hlomem assign has them do. Until is ignored.
	Compile compile.Options
	// Top is how many of what occupies memory at the peak the text
	// lists (0: DefaultTop; negative: all).
	Top int
	// WhatIf lists the alternatives to plan (WhatIfs(...) gives the
	// usual set); nil plans none.
	WhatIf []Lever
	// Progress, when set, is told each stage as it starts.
	Progress func(stage string)
	// XLA is XLA's own buffer assignment of this module (read from its
	// *-buffer-assignment.txt dump), shown beside hlomem's plan; nil
	// shows none.
	XLA *assign.XLAAssignment
	// XLAFile names where XLA came from, for the report.
	XLAFile string
	// File is the module's file as the user named it, for the command
	// line of each what-if (WhatIf.Command); "" writes FILE.
	File string
	// RematLimit is the limit on the plan's total the remat what-ifs fit
	// the module under, RematLimitLabel where it comes from (a device's
	// bytes); 0 is RematShare percent of this plan's total.
	RematLimit      int64
	RematLimitLabel string
	// Getenv reads the client's XLA_PYTHON_CLIENT_* settings for a fit
	// what-if (Lever{"fit", DEVICE}); nil is os.Getenv.
	Getenv func(string) string

	// total is this plan's total, for the remat what-ifs (set by Build).
	total int64
	// plan is this plan's pipeline, whose work the what-ifs share (set
	// by Build).
	plan *compile.Result
	// share is what the what-ifs compute once between them (set by
	// whatIfs).
	share *whatIfShare
}

// Report is what Build found about one module.
type Report struct {
	Module    string
	Target    string
	Algorithm string
	Schedule  string // the scheduler that ran ("keep" for XLA's own)
	// Rules says which of XLA's live-range rules the plan followed, and
	// on which execution threads.
	Rules liveness.Settings
	Steps []string
	// Totals.
	Parameters, Outputs, Temps, Constants, ThreadLocal, Total int64
	LowerBound, TempLowerBound, TempFragmentation             int64
	// XLAMinimum is XLA's MinimumMemoryForModule (assign.Stats).
	XLAMinimum int64
	// Above says why the plan's total is above the lower bound, in parts
	// that add up to Total - LowerBound (aboveBound); nil when the plan
	// reaches the bound.
	Above []AbovePart
	// PeakStep is the step of the plan's peak (assign.Occupancy: the first
	// step at which the memory occupied is largest), PeakInst the
	// instruction scheduled there and PeakComp its computation; PeakBytes
	// the bytes occupied there, the largest of Live.
	PeakStep  int
	PeakInst  string
	PeakComp  string
	PeakBytes int64
	// AtPeak lists what occupies memory at the peak, by allocation,
	// largest first (their bytes add up to PeakBytes), and Peak the
	// Options.Top first of them. PeakByKind totals them per allocation
	// kind, in kindOrder.
	AtPeak, Peak []*Occupant
	PeakByKind   []KindBytes
	// Buffers are every buffer of the plan with bytes, by address.
	Buffers []*Buffer
	// Allocations are the plan's allocations, stacked by index.
	Allocations []Allocation
	// Live is the bytes the plan occupies at every step
	// (assign.Occupancy), the curve of the memory viewer: parameters,
	// constants and thread-local allocations throughout, outputs from
	// their first definition, temps' chunks over their live ranges.
	Live []int64
	// WhatIf are the alternatives planned, in Options.WhatIf order.
	WhatIf []WhatIf
	// Remat is what the remat pass did before the plan, when the options
	// asked for it (compile.Options.Remat), else nil.
	Remat *remat.FitResult
	// XLA is XLA's plan of the same module beside this one, when given.
	XLA *XLAPlan
}

// Buffer is one buffer of the plan: the values that share an address.
type Buffer struct {
	ID int
	// Name is its largest value (instruction{index}), Shape that value's
	// shape, Inst its instruction's name.
	Name, Shape, Inst string
	Size              int64
	Kind              string // the allocation's kind
	Color             int64
	Allocation        int
	// Offset is the buffer's address: its allocation's base (the sum of
	// the sizes of the allocations before it) plus its slot's offset.
	Offset int64
	// Start and End are the first and last steps (inclusive) at which
	// one of its values is live.
	Start, End int
	Values     int
	OpName     string
	// Source is the file:line of the instruction (metadata, or JAX's
	// stack frames), "" when unknown.
	Source string
}

// Occupant is one of what occupies memory at the peak
// (assign.Occupant): a whole allocation outside the temp heap, or a
// region of a preallocated-temp allocation.
type Occupant struct {
	// Kind is the allocation's kind, Allocation its index, Offset the
	// region's address (allocation base plus offset, as Buffer.Offset)
	// and Bytes its size.
	Kind       string
	Allocation int
	Offset     int64
	Bytes      int64
	// Buffer names the occupant: its largest buffer. Others are the
	// other buffers holding the region then (an operand overwritten in
	// place, buffers sharing an output's allocation), largest first.
	Buffer *Buffer
	Others []*Buffer
	// Live is false when no value of its buffers is live at the peak: the
	// memory is held (a parameter after its last use, a constant before
	// its first).
	Live bool
}

// KindBytes is the bytes of one kind of allocation occupied at the peak,
// and the plan's total of that kind.
type KindBytes struct {
	Kind         string
	Bytes, Total int64
	Count        int
}

// AbovePart is one reason the plan's total is above the lower bound, at
// the bound's step t (Report.Above).
type AbovePart struct {
	// Why is one of
	//   - "held": allocations of Kind that hold memory at t for values
	//     none of which is live there, which the bound does not count: a
	//     donated entry parameter after its last read (XLA keeps its
	//     allocation for the output written over it), an output's before
	//     its first value;
	//   - "unoccupied": allocations of Kind that occupy no memory at t
	//     (an output written after t), which the total counts all the
	//     same;
	//   - "temp-free": bytes of the temp heap no chunk occupies at t: the
	//     heap's fragmentation, and its own peak elsewhere;
	//   - "reuse": what the bound counts less than the plan occupies for
	//     the values live at t: an operand's memory its user takes over in
	//     the bound but not in this plan, and chunk alignment.
	// (Constants, thread-local buffers and entry parameters that are not
	// donated the bound counts at every step, as the plan holds them.)
	Why   string
	Kind  string // for held and unoccupied
	Bytes int64
	Count int // allocations, for held and unoccupied
}

// aboveBound splits what the plan's total is above the lower bound into
// Report.Above's parts: Total - LowerBound = (Total - occupied at t) +
// held at t + (occupied and live at t - LowerBound), at the bound's step
// t, the first term split into allocations unoccupied at t and the temp
// heap's free bytes.
func aboveBound(as *assign.Assignment, r *Report) []AbovePart {
	gap := r.Total - r.LowerBound
	step, _ := as.LowerBoundStep()
	if gap <= 0 || step < 0 {
		return nil
	}
	held := map[string]*AbovePart{}
	occupied := map[*assign.Allocation]int64{}
	var tempFree, liveOccupied int64
	for _, o := range as.OccupantsAt(step) {
		occupied[o.Allocation] += o.Bytes
		al := o.Allocation
		if o.Live || al.Temp || al.Constant || al.ThreadLocal || al.IsParameter() && !al.ParameterAliased {
			liveOccupied += o.Bytes // counted by the bound
			continue
		}
		h := held[o.Kind()]
		if h == nil {
			h = &AbovePart{Why: "held", Kind: o.Kind()}
			held[o.Kind()] = h
		}
		h.Bytes += o.Bytes
		h.Count++
	}
	unoccupied := map[string]*AbovePart{}
	for _, al := range as.Allocations {
		switch {
		case al.Temp:
			tempFree += al.Size - occupied[al]
		case occupied[al] == 0 && al.Size > 0:
			u := unoccupied[al.Kind()]
			if u == nil {
				u = &AbovePart{Why: "unoccupied", Kind: al.Kind()}
				unoccupied[al.Kind()] = u
			}
			u.Bytes += al.Size
			u.Count++
		}
	}
	var parts []AbovePart
	for _, why := range []map[string]*AbovePart{held, unoccupied} {
		for _, ko := range kindOrder {
			if p := why[ko.kind]; p != nil {
				parts = append(parts, *p)
			}
		}
	}
	if tempFree != 0 {
		parts = append(parts, AbovePart{Why: "temp-free", Bytes: tempFree})
	}
	if reuse := liveOccupied - r.LowerBound; reuse != 0 {
		parts = append(parts, AbovePart{Why: "reuse", Bytes: reuse})
	}
	return parts
}

// kindOrder is the order of the kinds in PeakByKind and their names in
// the report's totals.
var kindOrder = []struct{ kind, label string }{
	{"parameter", "parameters"}, {"maybe-live-out", "outputs"}, {"preallocated-temp", "temps"},
	{"constant", "constants"}, {"thread-local", "thread-local"},
}

// Allocation is one of the plan's allocations as the chart stacks them.
type Allocation struct {
	Index      int
	Kind       string
	Color      int64
	Base, Size int64
}

// WhatIf is the plan of the module under one alternative.
type WhatIf struct {
	Lever             Lever
	LowerBound, Total int64
	// Err says why the alternative could not be planned ("" when it was).
	Err string
	// Command is the hlomem command line (program name first) whose
	// output gives LowerBound and Total (Command, the function); for a
	// jit lever, hlomem run --eager, whose "peak without jit" is Total
	// and "peak with jit" JitPeak.
	Command []string
	// JitPeak is, for a jit lever, the jitted run's peak on the same
	// device model as Total (the op-by-op run's peak); LowerBound is 0.
	JitPeak int64
	// Remat is, for a remat lever, what rematerialization did; nil for
	// the other levers.
	Remat *RematWhatIf
	// Fit is, for a fit lever, hlomem fit's cheapest combination on the
	// device; nil for the other levers.
	Fit *FitWhatIf
}

// RematWhatIf is a remat lever's outcome: the module rematerialized
// toward Limit on the plan's total (compile.Options.Remat).
type RematWhatIf struct {
	// Limit is the limit on the plan's total; LimitLabel says where it
	// comes from (a device's bytes, or a share of this plan's total).
	Limit      int64
	LimitLabel string
	// Skipped says why the row was not planned ("" when it was): the
	// plan fits already, or the remat pass refuses the module.
	Skipped string
	// Fits reports the rewritten module's total (WhatIf.Total) is within
	// Limit; AddedFLOPs are the FLOPs the recomputation adds, AddedShare
	// them as a percentage of the module's own (remat.FitResult).
	Fits       bool
	AddedFLOPs int64
	AddedShare float64
}

// Build plans m (a clone; m is left as it was) with opts and gathers the
// report.
func Build(ctx context.Context, m *hlo.Module, opts Options) (*Report, error) {
	if m == nil {
		return nil, fmt.Errorf("report: no module")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	progress := func(s string) {
		if opts.Progress != nil {
			opts.Progress(s)
		}
	}
	if opts.XLA != nil {
		if err := CheckXLAModule(m, opts.XLA, opts.XLAFile); err != nil {
			return nil, err
		}
	}
	progress("plan")
	res, err := compileClone(ctx, m, opts.Compile)
	if err != nil {
		return nil, err
	}
	as := res.Assignment
	r := newReport(as, opts)
	if r.Remat = res.Remat; r.Remat != nil {
		// The rewritten module is scheduled; the order is m's scheduler's.
		r.Schedule = scheduleName(m, opts.Compile.Scheduler)
	}
	opts.total, opts.plan = as.Stats.TotalBytes, res
	r.WhatIf = whatIfs(ctx, m, opts, progress)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.XLA != nil {
		progress("XLA's plan")
		r.XLA = compareXLA(r, as, opts.XLA, opts.XLAFile)
	}
	return r, nil
}

// plan runs the pipeline on a clone of m with opts, as hlomem assign
// does: the plan's total weighs the search's and fusion's choices, and a
// TPU module is tiled as hlomem assign --target=tpu --vmem=0 tiles it (no
// memory spaces). The plan has passed assign.Check.
func plan(ctx context.Context, m *hlo.Module, opts compile.Options) (*assign.Assignment, error) {
	r, err := compileClone(ctx, m, opts)
	if err != nil {
		return nil, err
	}
	return r.Assignment, nil
}

// compileClone is plan's pipeline, whole.
func compileClone(ctx context.Context, m *hlo.Module, opts compile.Options) (*compile.Result, error) {
	opts.PlanCost, opts.Until, opts.Spaces = true, "", nil
	return compile.Compile(ctx, m.Clone(), opts)
}

// newReport gathers the report of the plan as.
func newReport(as *assign.Assignment, opts Options) *Report {
	a := as.Analysis
	st := as.Stats
	r := &Report{
		Module:            as.Module.Name,
		Target:            as.Options.Target.Name,
		Algorithm:         as.Options.Algorithm,
		Schedule:          scheduleName(as.Module, opts.Compile.Scheduler),
		Rules:             a.Settings(),
		Parameters:        st.ParameterBytes,
		Outputs:           st.MaybeLiveOutBytes,
		Temps:             st.TempBytes,
		Constants:         st.ConstantBytes,
		Total:             st.TotalBytes,
		LowerBound:        st.LowerBound,
		TempLowerBound:    st.TempLowerBound,
		TempFragmentation: st.TempFragmentation,
		XLAMinimum:        st.XLAMinimumBytes,
	}
	if r.Target == "" {
		r.Target = assign.GPU.Name
	}
	if r.Algorithm == "" {
		r.Algorithm = "auto"
	}
	r.Steps = make([]string, len(a.Sequence))
	for i, in := range a.Sequence {
		r.Steps[i] = in.Name
	}
	// The allocations stacked, and every buffer at its address.
	var base int64
	for _, al := range as.Allocations {
		r.Allocations = append(r.Allocations, Allocation{Index: al.Index, Kind: al.Kind(), Color: al.Color, Base: base, Size: al.Size})
		if al.ThreadLocal {
			r.ThreadLocal += al.Size
		}
		base += al.Size
	}
	byID := make([]*Buffer, len(a.Buffers))
	for _, al := range as.Allocations {
		for _, s := range al.Slots {
			v := s.Value
			if v == nil || v.Buffer == nil || byID[v.Buffer.ID] != nil {
				continue
			}
			b := newBuffer(as, v.Buffer)
			b.Kind, b.Color, b.Allocation = al.Kind(), al.Color, al.Index
			b.Offset = r.Allocations[al.Index].Base + s.Offset
			byID[v.Buffer.ID] = b
			r.Buffers = append(r.Buffers, b)
		}
	}
	sort.SliceStable(r.Buffers, func(i, j int) bool {
		if r.Buffers[i].Offset != r.Buffers[j].Offset {
			return r.Buffers[i].Offset < r.Buffers[j].Offset
		}
		return r.Buffers[i].ID < r.Buffers[j].ID
	})
	r.Above = aboveBound(as, r)
	// The curve and the peak: the plan's occupancy, one definition
	// (assign.Occupancy) for every output.
	occ := as.Occupancy()
	r.Live = occ.Bytes
	step, bytes, at := as.Peak()
	r.PeakStep, r.PeakBytes = step, bytes
	if step >= 0 && step < len(a.Sequence) {
		in := a.Sequence[step]
		r.PeakInst, r.PeakComp = in.String(), in.Parent.Name
	}
	for _, o := range at {
		x := &Occupant{Kind: o.Kind(), Allocation: o.Allocation.Index, Bytes: o.Bytes, Live: o.Live,
			Offset: r.Allocations[o.Allocation.Index].Base + o.Offset}
		for _, lb := range o.Buffers {
			b := byID[lb.ID]
			if b == nil {
				b = newBuffer(as, lb) // a buffer without bytes of its own
			}
			if x.Buffer == nil {
				x.Buffer = b
			} else {
				x.Others = append(x.Others, b)
			}
		}
		r.AtPeak = append(r.AtPeak, x)
	}
	for _, k := range kindOrder {
		kb := KindBytes{Kind: k.kind}
		for _, al := range r.Allocations {
			if al.Kind == k.kind {
				kb.Total += al.Size
			}
		}
		for _, x := range r.AtPeak {
			if x.Kind == k.kind {
				kb.Bytes += x.Bytes
				kb.Count++
			}
		}
		if kb.Total > 0 || kb.Count > 0 {
			r.PeakByKind = append(r.PeakByKind, kb)
		}
	}
	top := opts.Top
	if top == 0 {
		top = DefaultTop
	}
	r.Peak = r.AtPeak
	if top > 0 && len(r.Peak) > top {
		r.Peak = r.Peak[:top]
	}
	return r
}

// newBuffer describes buffer b of as's analysis, without its place.
func newBuffer(as *assign.Assignment, lb *liveness.Buffer) *Buffer {
	b := &Buffer{ID: lb.ID, Size: lb.Size, Start: -1, End: -1, Values: len(lb.Values)}
	var rep *liveness.Value
	for _, v := range lb.Values {
		if rep == nil || v.Size > rep.Size || v.Size == rep.Size && v.ID < rep.ID {
			rep = v
		}
		if !v.Scheduled {
			continue
		}
		if b.Start < 0 || v.Range.Start < b.Start {
			b.Start = v.Range.Start
		}
		b.End = max(b.End, v.Range.End)
	}
	last := max(len(as.Analysis.Sequence)-1, 0)
	if b.Start < 0 {
		b.Start, b.End = 0, last
	}
	// A value live out is live to the schedule's end, one past its last
	// step.
	b.Start, b.End = min(b.Start, last), min(b.End, last)
	if rep != nil {
		b.Name, b.Shape, b.Inst = rep.Name(), rep.Shape.String(), rep.Inst.Name
		if md := rep.Inst.Metadata; md != nil {
			b.OpName = md.OpName
		}
		b.Source = as.Module.Source(rep.Inst)
	}
	return b
}

// scheduleName says which schedule the plan has: the one asked for, or
// what the preparation picks ("keep" for a module XLA scheduled, "search"
// otherwise; "best" is search).
func scheduleName(m *hlo.Module, asked string) string {
	switch {
	case asked != "" && asked != schedule.Best:
		return asked
	case asked == schedule.Best:
		return schedule.Search // best is search
	case m.IsScheduled:
		return schedule.Keep
	}
	return schedule.Search
}

// percent is 100·x/y, 0 when y is 0.
func percent(x, y int64) float64 {
	if y == 0 {
		return 0
	}
	return 100 * float64(x) / float64(y)
}

// shortInst is an instruction's text cut to n characters.
func shortInst(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
