package remat

import (
	"cmp"
	"context"
	"slices"

	"github.com/hlomem/hlomem/cost"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/segtree"
	"github.com/hlomem/hlomem/liveness"
)

// The plan algorithm (Plan) measures what XLA's pass estimates. Each
// round analyses the module in its order and plans it (FitOptions.Plan);
// the plan's total less the limit is what must go. Over the steps where
// the lower bound's curve (liveness.Analysis.LowerBoundCurve) stands above
// the limit less the plan's own slack (its total less the curve's peak),
// the region, it weighs every split of a value's life: a value that is
// idle between two uses (or between its definition and first use) can be
// computed again right before the later use, so its bytes leave every
// step between. What that costs is the FLOPs of the recomputation
// (nothing for a move: the original then has no use left and goes) and
// the bytes of operands that must now live on to the new point where
// those steps lie in the region; an operand that would is recomputed as
// well (a chain, up to chainDepth deep) when it can be. Splits are taken
// cheapest FLOPs per region byte first, each one's effect taken off the
// curve, until the curve is under the limit; then the module is analysed
// and planned again. The best module seen is kept: a round whose plan is
// no smaller ends the search after patience such rounds.
//
// Unlike XLA's tracker, the measure is the plan's own (parameters and
// outputs counted once, in-place reuse and the packer's slack included),
// the whole region is weighed at once rather than one program point at a
// time, moves and chains are first-class, and any value of any
// computation in the flattened schedule (loop bodies included) may be
// split, asynchronous programs too (their async ops are never recomputed).

const (
	chainDepth = 3   // most instructions a recomputation clones
	patience   = 3   // rounds without a smaller plan before giving up
	maxRounds  = 256 // rounds at most
	stepShare  = 50  // a stepped descent's round aims this share of the input's total lower
)

// fitPlan is the plan algorithm; res holds the input's total. It
// descends twice, by short steps and straight at the limit (a greedy aimed
// far below the curve may stall higher, or lower, than one aimed near
// it), and keeps the better: the one that fits with fewer added FLOPs,
// else the smaller total.
func fitPlan(ctx context.Context, m *hlo.Module, limit int64, opts FitOptions, plan PlanFunc, res *FitResult) error {
	var best *snapshot
	for _, step := range []int64{max(1, res.TotalBefore/stepShare), 0} {
		d, err := descend(ctx, m, limit, plan, res.TotalBefore, step)
		if err != nil {
			return err
		}
		if d.m == nil {
			continue
		}
		d.flops = cost.Module(d.m).FLOPs
		if best == nil || d.better(best, limit) {
			best = d
		}
		if d.total <= limit && d.flops <= res.FLOPs {
			break // fits at no added compute: nothing to improve
		}
	}
	if best != nil {
		res.Module, res.TotalAfter, res.Recomputed = best.m, best.total, best.recomputed
	}
	return nil
}

// snapshot is a module a descent reached.
type snapshot struct {
	m          *hlo.Module
	recomputed []Recomputed
	total      int64 // the plan's, -1 when not planned
	flops      int64
}

// better reports whether d beats o toward limit: fitting with fewer
// FLOPs, or not fitting with a smaller total.
func (d *snapshot) better(o *snapshot, limit int64) bool {
	df, of := d.total <= limit, o.total <= limit
	switch {
	case df && of:
		return d.flops < o.flops || (d.flops == o.flops && d.total < o.total)
	case df != of:
		return df
	}
	return d.total < o.total || (d.total == o.total && d.flops < o.flops)
}

// descend runs rounds on a clone of m toward limit, each aiming step
// lower than the last estimate (0: at the limit itself), and returns the
// smallest plan reached (nil m: none smaller than before). A round plans
// its module (the costly part) only when the estimate (the curve's peak
// plus the slack the last plan showed over it) is within the limit; the
// module of the lowest estimate is planned at the end.
func descend(ctx context.Context, m *hlo.Module, limit int64, plan PlanFunc, before, step int64) (*snapshot, error) {
	nm := m.Clone()
	if _, err := hlo.FlattenCallGraphContext(ctx, nm); err != nil {
		return nil, err
	}
	nm.IsScheduled = true
	best := &snapshot{total: before} // the smallest plan (nil m: the input)
	var lowest *snapshot             // the lowest estimate
	lowestEst := before
	var recomputed []Recomputed
	var slack int64
	stale := 0
	for round := 0; round < maxRounds; round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a, err := liveness.Analyze(nm, liveness.Options{})
		if err != nil {
			return nil, err
		}
		s := newSplitter(a)
		if round == 0 {
			slack = before - s.peak
		} else {
			est := s.peak + slack
			if est <= limit {
				total, err := plan(ctx, nm)
				if err != nil {
					return nil, err
				}
				slack, est = total-s.peak, total
				if total < best.total {
					best = &snapshot{m: nm.Clone(), recomputed: slices.Clone(recomputed), total: total}
				}
				if total <= limit {
					break
				}
			}
			if est < lowestEst {
				lowestEst, stale = est, 0
				lowest = &snapshot{m: nm.Clone(), recomputed: slices.Clone(recomputed), total: -1}
			} else if stale++; stale >= patience {
				break
			}
		}
		goal := limit
		if est := s.peak + slack; step > 0 {
			goal = max(limit, est-step)
		}
		s.target(goal - slack)
		done := s.run()
		if len(done) == 0 {
			break
		}
		recomputed = append(recomputed, done...)
		if _, err := fusion.DCE(nm); err != nil {
			return nil, err
		}
		nm.Renumber()
	}
	if lowest != nil && best.total > limit {
		total, err := plan(ctx, lowest.m)
		if err != nil {
			return nil, err
		}
		if total < best.total {
			lowest.total = total
			best = lowest
		}
	}
	return best, nil
}

// splitter is one round of the plan algorithm.
type splitter struct {
	a *liveness.Analysis
	// excess is the curve less the target at each step, carry the bytes
	// live at both t-1 and t (and owned) less the target, as picks change
	// them; pos and cnt are the prefix sums of the round's first excess
	// above zero and of the steps where it is (the region).
	excess, carry *segtree.AddMax[int64]
	pos, cnt      []int64
	// curve is the analysis' lower-bound curve, out the output bytes
	// idle at each step (outputsIdle), peak the highest of their sums.
	curve []liveness.StepBound
	out   []int64
	peak  int64
	p     *pass
	used  map[*hlo.Instruction]bool // split this round (as value or operand)
	flops map[*hlo.Instruction]int64
}

func newSplitter(a *liveness.Analysis) *splitter {
	s := &splitter{a: a, used: map[*hlo.Instruction]bool{}, flops: map[*hlo.Instruction]int64{},
		curve: a.LowerBoundCurve(nil, nil)}
	s.out = outputsIdle(a, len(s.curve))
	for t, c := range s.curve {
		s.peak = max(s.peak, c.Bytes()+s.out[t])
	}
	m := a.Module
	s.p = &pass{m: m, names: hlo.NewNameUniquer(m)}
	return s
}

// target sets the curve's target: the excess at each step is its bytes
// (the outputs counted throughout) less target.
func (s *splitter) target(target int64) {
	n := len(s.curve)
	s.pos, s.cnt = make([]int64, n+1), make([]int64, n+1)
	excess, carry := make([]int64, n), make([]int64, n)
	for t, c := range s.curve {
		excess[t] = c.Bytes() + s.out[t] - target
		carry[t] = c.Between + c.Fixed + s.out[t] - target
		s.pos[t+1], s.cnt[t+1] = s.pos[t], s.cnt[t]
		if excess[t] > 0 {
			s.pos[t+1] += excess[t]
			s.cnt[t+1]++
		}
	}
	s.excess, s.carry = segtree.FromValues(excess), segtree.FromValues(carry)
}

// outputsIdle returns, per step, the bytes of the module's output
// buffers not live then: the plan gives each output an allocation for the
// whole run, which the lower bound counts only while the output is live.
func outputsIdle(a *liveness.Analysis, n int) []int64 {
	out := make([]int64, n+1)
	for _, b := range a.Buffers {
		if !b.LiveOut() || a.OwnsMemory(b) {
			continue
		}
		out[0] += b.Size
		if r, ok := b.Range(); ok && r.Start >= 0 && r.End < n {
			out[r.Start] -= b.Size
			out[r.End+1] += b.Size
		}
	}
	for t := 1; t <= n; t++ {
		out[t] += out[t-1]
	}
	return out[:n]
}

// split is one candidate: recompute v's instruction (and chain, operands
// first) right before the use at time to, the uses from there on reading
// the clone; the value then leaves steps lo..to-1: those after its use at
// from, or for a move (from is its definition, which goes) from on.
type split struct {
	v        *liveness.Value
	lo, to   int
	move     bool               // lo is the value's definition, which goes
	chain    []*hlo.Instruction // cloned, operands first, v's instruction last
	extended []*liveness.Value  // operands that must live to `to`
	flops    int64
	gain     int64
}

// run picks and applies splits until the curve is under the target or
// its highest step cannot come down, and returns what it recomputed. Each
// pick lowers the highest step: of the splits that free it, the one of
// fewest FLOPs per byte it takes off the whole region (the larger gain on
// a tie). Steps below a peak that must stay cost no FLOPs.
func (s *splitter) run() []Recomputed {
	if s.excess.All() <= 0 {
		return nil
	}
	var cands []*split
	for _, v := range s.a.Values {
		cands = s.candidates(v, cands)
	}
	// Fewest FLOPs per region byte first, then the larger gain.
	slices.SortStableFunc(cands, func(x, y *split) int {
		l, r := float64(x.flops)/float64(x.gain), float64(y.flops)/float64(y.gain)
		switch {
		case l < r:
			return -1
		case l > r:
			return 1
		}
		return cmp.Compare(y.gain, x.gain)
	})
	var out []Recomputed
	for s.excess.All() > 0 {
		top, high := s.excess.ArgMax(), s.excess.All()
		var best *split
		live := cands[:0]
		for k, c := range cands {
			if s.conflicts(c) {
				continue // dropped for the round
			}
			live = append(live, c)
			if top < c.lo || top >= c.to {
				continue
			}
			if s.extendedAt(c, top) >= c.v.Size || s.atClone(c) >= high {
				continue // the top step would not come down, or the clone's would be as high
			}
			best = c
			live = append(live, cands[k+1:]...)
			break
		}
		cands = live
		if best == nil {
			break
		}
		out = append(out, s.apply(best))
	}
	return out
}

// conflicts reports whether c touches what a split of this round
// changed: an instruction of its chain or one its chain reads (whose live
// range the round's estimate no longer knows).
func (s *splitter) conflicts(c *split) bool {
	for _, in := range c.chain {
		if s.used[in] {
			return true
		}
		for _, op := range in.Operands {
			if s.used[op] {
				return true
			}
		}
	}
	return false
}

// atClone is the excess at the steps c inserts before its use: what is
// carried from the step before into the use's step, without the value,
// with the extended operands and the clones.
func (s *splitter) atClone(c *split) int64 {
	e := s.carry.At(c.to)
	if c.lo <= c.to-1 {
		e -= c.v.Size
	}
	for _, o := range c.extended {
		e += o.Size
	}
	for _, in := range c.chain {
		if v := s.a.ValueAt(in, nil); v != nil {
			e += v.Size
		}
	}
	return e
}

// extendedAt is the bytes c's extended operands add at step t.
func (s *splitter) extendedAt(c *split, t int) int64 {
	var n int64
	for _, o := range c.extended {
		if o.Range.End < t && t <= c.to {
			n += o.Size
		}
	}
	return n
}

// gain is what c takes off the region as the round began: its bytes at
// each region step it frees (at most that step's excess), less the bytes
// its extended operands add at the region steps they newly cover.
func (s *splitter) gain(c *split) int64 {
	g := min(c.v.Size*(s.cnt[c.to]-s.cnt[c.lo]), s.pos[c.to]-s.pos[c.lo])
	for _, o := range c.extended {
		g -= o.Size * (s.cnt[c.to+1] - s.cnt[o.Range.End+1])
	}
	return g
}

// candidates appends v's splits that touch the region.
func (s *splitter) candidates(v *liveness.Value, out []*split) []*split {
	x := v.Inst
	if !s.splittable(v) {
		return out
	}
	times := []int{s.a.Time(x)}
	uses := map[int]bool{}
	for _, u := range v.Uses {
		t := s.a.Time(u.Inst)
		if u.Inst.Parent != x.Parent || t < 0 || !slices.Contains(u.Inst.Operands, x) {
			return out // read from another computation or not directly
		}
		if !uses[t] {
			uses[t] = true
			times = append(times, t)
		}
	}
	slices.Sort(times[1:])
	for i := 0; i+1 < len(times); i++ {
		from, to := times[i], times[i+1]
		lo := from + 1
		if i == 0 {
			lo = from // a move: the original loses every use and goes
		}
		if lo >= to {
			continue
		}
		// Two variants: operands extended, and operands whose extension
		// reaches the region recomputed too; the ranking takes the
		// cheaper per byte.
		var prev *split
		for _, depth := range []int{1, chainDepth} {
			c := &split{v: v, lo: lo, to: to, move: i == 0}
			if !s.plan(c, x, 0, depth) || (prev != nil && len(c.chain) == len(prev.chain)) {
				continue
			}
			if i == 0 {
				c.flops -= s.cost(x)
			}
			if c.gain = s.gain(c); c.gain > 0 {
				out = append(out, c)
			}
			prev = c
		}
	}
	return out
}

// splittable reports whether v may be recomputed: an array of its own
// buffer (no alias, not an output, not memory owned for the whole run),
// defined by a pure instruction with no control successors, read by
// its computation's own instructions only.
func (s *splitter) splittable(v *liveness.Value) bool {
	x := v.Inst
	return v.Scheduled && !v.IsPhi && !v.LiveOut && len(v.Index) == 0 && !x.Shape.IsTuple() &&
		len(v.Positions) == 1 && len(v.Buffer.Values) == 1 && !s.a.OwnsMemory(v.Buffer) &&
		v.Size > 0 && pure(x) && len(x.ControlSuccessors()) == 0
}

// plan fills c's chain and extended operands for recomputing in at
// c.to: an operand dead by then is extended, or recomputed too when its
// extension would reach the region and it can be.
func (s *splitter) plan(c *split, in *hlo.Instruction, depth, maxDepth int) bool {
	if depth >= maxDepth {
		return false
	}
	for _, op := range in.Operands {
		if op.Shape.IsTuple() {
			return false
		}
		o := s.a.ValueAt(op, nil)
		if o == nil || !o.Scheduled {
			return false
		}
		if o.Range.End >= c.to || s.a.OwnsMemory(o.Buffer) || slices.Contains(c.extended, o) {
			continue // live there anyway
		}
		if len(o.Buffer.Values) != 1 {
			return false // its buffer is taken over in place: no longer intact
		}
		if s.reaches(o, c.to) && s.splittable(o) && op.Parent == in.Parent && s.plan(c, op, depth+1, maxDepth) {
			continue
		}
		c.extended = append(c.extended, o)
	}
	c.chain = append(c.chain, in)
	c.flops += s.cost(in)
	return true
}

// reaches reports whether extending o to t lands in the region.
func (s *splitter) reaches(o *liveness.Value, t int) bool {
	return s.cnt[t+1]-s.cnt[o.Range.End+1] > 0
}

func (s *splitter) cost(in *hlo.Instruction) int64 {
	f, ok := s.flops[in]
	if !ok {
		f = cost.Instruction(in).FLOPs
		s.flops[in] = f
	}
	return f
}

// apply rewrites the module for c and takes its effect off the curve.
func (s *splitter) apply(c *split) Recomputed {
	x := c.v.Inst
	comp := x.Parent
	before := s.a.Sequence[c.to]
	clones := map[*hlo.Instruction]*hlo.Instruction{}
	var last *hlo.Instruction
	for _, in := range c.chain {
		s.used[in] = true
		for _, op := range in.Operands {
			s.used[op] = true
		}
		cl := s.p.cloneInstruction(in)
		for k, op := range cl.Operands {
			if r, ok := clones[op]; ok {
				cl.Operands[k] = r
			}
		}
		comp.InsertBefore(cl, before)
		clones[in] = cl
		last = cl
	}
	// The uses at c.to and after read the clone.
	for _, u := range slices.Clone(x.Users) {
		if u == last || s.a.Time(u) < c.to || u.Parent != comp {
			continue
		}
		for k, op := range u.Operands {
			if op == x {
				setOperand(u, k, last)
			}
		}
	}
	at := s.atClone(c)
	s.excess.Add(c.lo, c.to, -c.v.Size)
	if c.move {
		s.carry.Add(c.lo+1, c.to, -c.v.Size)
	} else {
		s.carry.Add(c.lo, c.to, -c.v.Size)
	}
	for _, o := range c.extended {
		s.excess.Add(o.Range.End+1, c.to+1, o.Size)
		s.carry.Add(o.Range.End+1, c.to+1, o.Size)
	}
	if cur := s.excess.At(c.to); at > cur {
		s.excess.Add(c.to, c.to+1, at-cur)
	}
	return Recomputed{Computation: comp.Name, Original: x.Name, Clone: last.Name, Bytes: c.v.Size, StepsFreed: c.to - c.lo}
}

// pure reports whether recomputing in gives the same array and has no
// other effect: not a parameter, constant, control flow, custom call,
// random number, collective, asynchronous or side-effecting op, copy, or
// a fusion (or other caller) of any of those.
func pure(in *hlo.Instruction) bool {
	if !rematerializable(in) {
		return false
	}
	return !impure(in)
}

func impure(in *hlo.Instruction) bool {
	return anyInside(in, func(x *hlo.Instruction) bool {
		switch op := x.Opcode; {
		case op == hlo.OpRng, op == hlo.OpRngBitGenerator, op == hlo.OpRngGetAndUpdateState,
			op == hlo.OpCustomCall, op == hlo.OpCopyStart, op == hlo.OpCopyDone,
			op.Has(hlo.Collective), op.Has(hlo.AsyncStart), op.Has(hlo.AsyncDone), op.Has(hlo.SideEffect):
			return true
		}
		return false
	})
}
