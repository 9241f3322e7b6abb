package schedule

// The exact search over the orders of one segment (segment.go): which
// order of its blocks gives the smallest worst step.
//
// The figure at a step depends on the set S of blocks run before it and on
// the block run there, and on nothing else (segment.go; the signature of
// S also holds the tracked end positions). So the least worst step of the
// completions of S, F(S), depends on S alone:
//
//	F(full) = 0 (below every figure)
//	F(S)    = min over the blocks b that S makes ready of max(cost(S, b), F(S ∪ {b}))
//
// and the search is this dynamic program over sets, run depth first with
// memoised signatures, as in Serenity (Ahn, Lee, Ren et al., "Ordering
// Chaos: Memory-Aware Scheduling of Irregular Neural Networks", MLSys
// 2020), which finds the order of least peak memory of a dataflow graph
// by a dynamic program over the sets of scheduled nodes:
//
//   - a budget θ: a set is explored only to learn whether F(S) <= θ; θ
//     starts one below the incumbent's worst step (the best heuristic's
//     order, improved by the windows) and, within a set, drops below the
//     best child found so far. The memo keeps F(S) when it is known (with
//     the child that reaches it) and otherwise a lower bound above the θ
//     it was explored with, so a set is explored again only under a
//     larger θ;
//   - children are tried cheapest step first (then the fewest bytes left
//     open, then incumbent order), so the first descent is a greedy list
//     schedule on the true figure; every complete order seen whose worst
//     step beats the best so far becomes the best (the search is anytime),
//     and lowers θ everywhere;
//   - pruning that never loses the optimum (TestExactRulesKeepTheOptimum
//     holds the search with and without it to the same figure): a static
//     bound (the buffers every order holds at some step, staticBound) that
//     ends the search when the incumbent meets it; a bound per set
//     (stateBound) from the values open after S that must stay live until
//     some block left to run; inert blocks (no event of a value the window
//     touches) and free blocks (the cheapest child, freeing at least what
//     it keeps) run at once as the only child; sources (a step that only
//     makes buffers of its own) run only right before their first
//     successor (segment.source);
//   - the search stops when the worst step reaches the floor (a figure no
//     order beats: the steps outside the segment, or a static bound), when
//     F(empty) is known (the proof), or when the budget of expanded sets
//     runs out (no proof). The budget is counted in expansions, so that a
//     result does not depend on the machine's speed; a deadline caps the
//     CPU time as a safety net, and a result it cuts short may (though not
//     on how busy the machine is).
//
// The model is exact (segment.go), so F(empty) is the least LowerBound
// over the window's orders; the caller still checks LowerBound itself.

import (
	"context"
	"math/bits"
	"slices"
)

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }

// workPerExpansion is the values visited (segment.work) that count as
// one more expansion of the budget.
const workPerExpansion = 16384

// exactOptions bounds one exact search.
type exactOptions struct {
	// Budget is the most sets the search expands (0: no bound).
	Budget int64
	// Deadline, when set, stops the search once it passes.
	Deadline cutoff
	// Floor is a figure no order beats: the search stops at it.
	Floor int64
	// MaxDead bounds the words of the dead sets kept (0: 32 million,
	// 256 MB); past it the search goes on without recording more (still
	// sound, slower).
	MaxDead int
	// Bound prunes with the state bound (stateBound), which pays off on
	// whole computations the search means to exhaust.
	Bound bool
	// NoSearch only checks the static bound.
	NoSearch bool
	// plain turns off what only prunes: the static and state bounds and
	// the inert, free and source rules (tests compare against it).
	plain bool
}

// exactResult is the outcome of one exact search.
type exactResult struct {
	Order      []int32 // the best order found (the incumbent when none was better)
	Cost       int64   // its model figure (the worst step of the segment)
	Exhausted  bool    // the search covered every order: Cost is the optimum of the model
	Expansions int64
	Improved   bool // an order better than the incumbent was found
	Pruned     int64
}

// solve runs the exact search on s from the incumbent order inc.
func (s *segment) solve(ctx context.Context, inc []int32, opts exactOptions) exactResult {
	m := len(s.blocks)
	wb := (m + 63) / 64
	w := wb + (len(s.lastItem)+3)/4 // the set, then the tracked end positions
	if opts.MaxDead == 0 {
		opts.MaxDead = (32 << 20) / w
	}
	incCost := s.evaluate(inc, nil)
	res := exactResult{Order: slices.Clone(inc), Cost: incCost}
	if incCost <= opts.Floor {
		res.Exhausted = true
		return res
	}
	if lb := s.staticBound(); opts.plain {
	} else if lb >= res.Cost {
		res.Exhausted = true // the incumbent meets a bound every order obeys
		return res
	} else {
		opts.Floor = max(opts.Floor, lb)
	}
	if opts.NoSearch {
		return res
	}
	d := &dfs{s: s, opts: opts, ctx: ctx, res: &res, global: incCost - 1, w: w, wb: wb,
		key: make([]uint64, w), memo: newStateMemo(w), indeg: make([]int32, m), path: make([]int32, 0, m)}
	for b := range m {
		d.indeg[b] = int32(len(s.preds[b]))
	}
	if opts.Bound && m <= min(1024, precedenceBlocks) && !opts.plain {
		d.bound = newStateBound(s)
	}
	d.srcPreds = make([][]int32, m)
	for b := range m {
		for _, p := range s.preds[b] {
			if !opts.plain && s.source(p) {
				d.srcPreds[b] = append(d.srcPreds[b], p)
			}
		}
	}
	var ready []int32
	for b := range m {
		if d.indeg[b] == 0 {
			ready = append(ready, int32(b))
		}
	}
	d.explore(ready, 0, incCost-1)
	res.Exhausted = !d.stopped
	return res
}

// dfs is the state of one exact search.
type dfs struct {
	s      *segment
	opts   exactOptions
	ctx    context.Context
	res    *exactResult
	global int64 // orders must keep every step at most global (one below the best found)
	w, wb  int
	key    []uint64 // the bitset of S (wb words), then the tracked end positions
	memo   *stateMemo
	indeg  []int32
	path   []int32
	bound  *stateBound
	// srcPreds lists, per block, its predecessors that are sources
	// (segment.source): they run right before their first successor.
	srcPreds [][]int32
	// stopped: budget, deadline or cancellation, and no proof.
	stopped bool
}

// child is one move of the search: block b, run alone, or, when b waits
// only for sources, after them (macro: the sources then b).
type child struct {
	b     int32
	cost  int64
	open  int64
	macro []int32
}

// explore computes F(S), the least worst step of the completions of the
// current set S (the path so far; ready are the blocks it makes ready,
// peak its worst step), when F(S) <= theta; otherwise it returns a lower
// bound of F(S) above theta. exact says which. Step figures are taken no
// lower than the floor, so that an order reaching it ends the search.
// Every completion it sees whose worst step with the path's is below the
// best order found so far becomes the new best (the search is anytime).
func (d *dfs) explore(ready []int32, peak, theta int64) (val int64, exact bool) {
	s := d.s
	if len(d.path) == len(s.blocks) {
		d.found(peak, nil)
		return d.opts.Floor, true
	}
	if e, ok := d.memo.get(d.key); ok {
		if e.exact {
			d.found(max(peak, e.val), d.key)
			return e.val, true
		}
		if e.val > theta {
			return e.val, false
		}
	}
	if d.bound != nil && len(d.path) > 0 {
		if lb := d.bound.of(d.key); lb > theta {
			d.res.Pruned++
			d.memo.put(d.key, memoEntry{val: lb}, d.opts.MaxDead)
			return lb, false
		}
	}
	d.res.Expansions++
	if d.opts.Budget > 0 && d.res.Expansions > d.opts.Budget {
		d.stopped = true
		return theta + 1, false
	}
	if d.res.Expansions&1023 == 0 {
		if d.ctx.Err() != nil || d.opts.Deadline.passed() {
			d.stopped = true
			return theta + 1, false
		}
	}
	// An expansion whose children's steps visit many values (buffers of
	// thousands of values, as a long loop's state can have) is charged
	// as several, so that the budget bounds the work and a result stays
	// independent of the machine's speed (the deadline is rarely what
	// stops a search).
	defer func(w0 int64) { d.res.Expansions += (s.work - w0) / workPerExpansion }(s.work)
	kids := d.children(ready)
	best, bestB := int64(-1), int32(-1)
	lb := int64(1<<63 - 1)
	for _, k := range kids {
		th := min(theta, d.global)
		if best >= 0 {
			th = min(th, best-1)
		}
		if k.cost > th {
			lb = min(lb, k.cost)
			break // sorted: the rest cost as much
		}
		moves := k.macro
		if moves == nil {
			moves = []int32{k.b}
		}
		next := make([]int32, 0, len(ready)+4)
		for _, r := range ready {
			if !slices.Contains(moves, r) {
				next = append(next, r)
			}
		}
		for _, b := range moves {
			s.apply(b)
			d.path = append(d.path, b)
			d.key[b/64] |= 1 << (b % 64)
			for _, u := range s.succs[b] {
				d.indeg[u]--
				if d.indeg[u] == 0 && !slices.Contains(moves, u) {
					next = append(next, u)
				}
			}
		}
		s.lastKey(d.key[d.wb:])
		v, ex := d.explore(next, max(peak, k.cost), th)
		for i := len(moves) - 1; i >= 0; i-- {
			b := moves[i]
			for _, u := range s.succs[b] {
				d.indeg[u]++
			}
			d.key[b/64] &^= 1 << (b % 64)
			d.path = d.path[:len(d.path)-1]
			s.undo(b)
		}
		s.lastKey(d.key[d.wb:])
		if d.stopped {
			return theta + 1, false
		}
		tot := max(k.cost, v)
		if ex && tot <= th {
			best, bestB = tot, k.b
		} else {
			lb = min(lb, tot)
		}
	}
	// F(S) is best when every child not taken was shown no better than
	// it: those skipped or failed were above the threshold they were
	// tried with, which is best-1 unless the best order found overall
	// had lowered it further.
	if best >= 0 && lb >= best {
		d.memo.put(d.key, memoEntry{val: best, exact: true, next: bestB}, d.opts.MaxDead)
		return best, true
	}
	if best >= 0 {
		lb = min(lb, best)
	}
	d.memo.put(d.key, memoEntry{val: lb}, d.opts.MaxDead)
	return lb, false
}

// children returns the moves from the current set (ready are the blocks
// it makes ready), cheapest step first (then fewest bytes left open, then
// incumbent order), each step figure taken no lower than the floor. A
// free child is the only one (see freeChild), and so is an inert block. A
// source is never a child of its own: it runs right before its first
// successor, as part of that successor's move (see segment.source).
func (d *dfs) children(ready []int32) []child {
	s := d.s
	floor := d.opts.Floor
	kids := make([]child, 0, len(ready))
	var waiting []int32 // blocks that wait only for ready sources
	for _, b := range ready {
		if !d.opts.plain && s.source(b) {
			for _, u := range s.succs[b] {
				if !s.inS[u] && !slices.Contains(waiting, u) && d.onlySources(u) {
					waiting = append(waiting, u)
				}
			}
			continue
		}
		if !d.opts.plain && s.inert(b) {
			// Its step holds what is open across it, which every next step
			// holds too (segment.inert): no more than any other child.
			kids = append(kids[:0], child{b: b, cost: max(s.cost(b, nil), floor)})
			waiting = nil
			break
		}
		c := max(s.cost(b, nil), floor)
		s.apply(b)
		kids = append(kids, child{b: b, cost: c, open: s.openBytes})
		s.undo(b)
	}
	for _, u := range waiting {
		var macro []int32
		for _, p := range d.srcPreds[u] {
			if !s.inS[p] {
				macro = append(macro, p)
			}
		}
		macro = append(macro, u)
		c := int64(0)
		for _, b := range macro {
			c = max(c, s.cost(b, nil))
			s.apply(b)
		}
		open := s.openBytes
		for i := len(macro) - 1; i >= 0; i-- {
			s.undo(macro[i])
		}
		kids = append(kids, child{b: u, cost: max(c, floor), open: open, macro: macro})
	}
	slices.SortFunc(kids, func(x, y child) int {
		if x.cost != y.cost {
			return cmpInt64(x.cost, y.cost)
		}
		if x.open != y.open {
			return cmpInt64(x.open, y.open)
		}
		return int(x.b - y.b)
	})
	if len(kids) > 1 && !d.opts.plain {
		if k, ok := d.freeChild(kids); ok {
			kids = append(kids[:0], k)
		}
	}
	return kids
}

// freeChild returns, among kids sorted cheapest first, a free one whose
// step is no dearer than the cheapest: running it now is as good as any
// order from here. Running a freeable block earlier (segment.freeable)
// only trades the bytes it frees for the no more bytes it keeps open, at
// every step it moves ahead of; and every completion's first step costs
// at least the cheapest child, so its own step is no worse either.
func (d *dfs) freeChild(kids []child) (child, bool) {
	s := d.s
	cheapest := kids[0].cost
	before := s.openBytes
	for _, k := range kids {
		if k.cost > cheapest {
			break
		}
		if k.macro == nil && s.freeable(k.b) && k.open <= before {
			return k, true
		}
	}
	return child{}, false
}

// onlySources reports whether every predecessor of u not yet run is a
// source that is ready itself.
func (d *dfs) onlySources(u int32) bool {
	s := d.s
	pending := 0
	for _, p := range d.srcPreds[u] {
		if !s.inS[p] {
			if d.indeg[p] != 0 {
				return false
			}
			pending++
		}
	}
	return pending > 0 && int(d.indeg[u]) == pending
}

// found records the order of the current path, completed from the set
// key along the memo's best children (key nil: the path is complete),
// when its worst step, total, beats the best so far.
func (d *dfs) found(total int64, key []uint64) {
	if total > d.global {
		return
	}
	order := slices.Clone(d.path)
	if key != nil {
		// Follow the memo's best children, running them on the segment
		// for their signatures, and take them back.
		s := d.s
		k := slices.Clone(key)
		var applied []int32
		for len(order) < len(s.blocks) {
			e, ok := d.memo.get(k)
			if !ok || !e.exact || e.next < 0 {
				break
			}
			// The best move: its sources not yet run, then the block.
			var moves []int32
			for _, p := range d.srcPreds[e.next] {
				if !s.inS[p] {
					moves = append(moves, p)
				}
			}
			for _, b := range append(moves, e.next) {
				order = append(order, b)
				s.apply(b)
				applied = append(applied, b)
				k[b/64] |= 1 << (b % 64)
			}
			s.lastKey(k[d.wb:])
		}
		for i := len(applied) - 1; i >= 0; i-- {
			s.undo(applied[i])
		}
		if len(order) < len(s.blocks) {
			return // the memo no longer holds the chain (it is full)
		}
	}
	d.res.Order, d.res.Cost, d.res.Improved = order, total, true
	d.global = total - 1
}

func cmpInt64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// memoEntry is what the search knows of a set: F(S) itself (exact, with
// the child that achieves it), or a lower bound of it.
type memoEntry struct {
	val   int64
	exact bool
	next  int32
}

// stateMemo maps fixed-width bitsets (sets of blocks) to entries: open
// addressing on a hash, the keys stored whole, so a lookup never confuses
// two sets.
type stateMemo struct {
	w     int
	keys  []uint64 // slot i holds keys[i*w:(i+1)*w]
	vals  []memoEntry
	used  []bool
	n     int
	shift uint
}

func newStateMemo(w int) *stateMemo {
	const initial = 1 << 10
	return &stateMemo{w: w, keys: make([]uint64, initial*w), vals: make([]memoEntry, initial), used: make([]bool, initial), shift: 64 - 10}
}

func (h *stateMemo) hash(k []uint64) uint64 {
	x := uint64(0x9e3779b97f4a7c15)
	for _, v := range k {
		x ^= v
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
	}
	return x * 0x9e3779b97f4a7c15
}

func (h *stateMemo) slot(k []uint64) (int, bool) {
	mask := len(h.used) - 1
	for i := int(h.hash(k) >> h.shift); ; i = (i + 1) & mask {
		if !h.used[i] {
			return i, false
		}
		if slices.Equal(h.keys[i*h.w:(i+1)*h.w], k) {
			return i, true
		}
	}
}

func (h *stateMemo) get(k []uint64) (memoEntry, bool) {
	i, ok := h.slot(k)
	if !ok {
		return memoEntry{}, false
	}
	return h.vals[i], true
}

// put records e for k, unless the memo holds max sets already (then the
// search goes on without it: still sound, slower).
func (h *stateMemo) put(k []uint64, e memoEntry, max int) {
	i, ok := h.slot(k)
	if ok {
		h.vals[i] = e
		return
	}
	if h.n >= max {
		return
	}
	if 2*(h.n+1) > len(h.used) {
		old, oldVals, oldUsed := h.keys, h.vals, h.used
		h.keys = make([]uint64, 2*len(oldUsed)*h.w)
		h.vals = make([]memoEntry, 2*len(oldUsed))
		h.used = make([]bool, 2*len(oldUsed))
		h.shift--
		h.n = 0
		for j, u := range oldUsed {
			if u {
				h.put(old[j*h.w:(j+1)*h.w], oldVals[j], max)
			}
		}
		i, _ = h.slot(k)
	}
	copy(h.keys[i*h.w:], k)
	h.vals[i] = e
	h.used[i] = true
	h.n++
}

// stateBound bounds from below the worst step of every completion of a
// set S: for each block r not in S, the buffers that must be live across
// the step before r's first and that step, whatever the order. A value
// open after S stays live until the last of its end events runs, so it is
// live at every r that must run before one of them (or is one of them); a
// value that starts in a block that must precede r and surely ends at r
// or later is too. Pruning a set whose bound exceeds θ is sound: every
// completion has a step above θ.
type stateBound struct {
	s      *segment
	w      int
	anc    []uint64  // per block: the blocks that must precede it, and itself
	forced [][]int32 // per block r: values starting in a block that must precede r and surely ending at r or later
	acc    []int64
	u      []uint64
	stamp  []int32
	gen    int32
}

func newStateBound(s *segment) *stateBound {
	m := len(s.blocks)
	s.precedes(0, 0)
	w := s.reachW
	sb := &stateBound{s: s, w: w, anc: make([]uint64, m*w), forced: make([][]int32, m), acc: make([]int64, m), u: make([]uint64, w), stamp: make([]int32, len(s.bufs))}
	for x := range m {
		for y := range m {
			if x == y || s.precedes(int32(x), int32(y)) {
				sb.anc[y*w+x/64] |= 1 << (x % 64)
			}
		}
	}
	for id := range s.vals {
		sv := &s.vals[id]
		if sv.start.block < 0 {
			continue
		}
		for r := range int32(m) {
			if sv.start.block == r || !s.precedes(sv.start.block, r) {
				continue
			}
			after := sv.post
			for _, c := range sv.cands {
				after = after || c.block == r || s.precedes(r, c.block)
			}
			if after {
				sb.forced[r] = append(sb.forced[r], int32(id))
			}
		}
	}
	return sb
}

// of returns the bound for the set key (the segment's current S).
func (sb *stateBound) of(key []uint64) int64 {
	s := sb.s
	m := len(s.blocks)
	clear(sb.acc)
	w := sb.w
	for buf := range s.bufs {
		if s.openCnt[buf] == 0 {
			continue
		}
		u := sb.u
		clear(u)
		post := false
		for _, id := range s.bufs[buf].vals {
			if !s.open(id) {
				continue
			}
			sv := &s.vals[id]
			if sv.post {
				post = true
				break
			}
			for _, c := range sv.cands {
				if !s.inS[c.block] {
					row := sb.anc[int(c.block)*w : (int(c.block)+1)*w]
					for k := range u {
						u[k] |= row[k]
					}
				}
			}
		}
		size := s.bufs[buf].size
		for k := range w {
			bits := ^key[k]
			if !post {
				bits &= u[k]
			}
			for bits != 0 {
				r := k*64 + trailingZeros(bits)
				bits &= bits - 1
				if r < m {
					sb.acc[r] += size
				}
			}
		}
	}
	best := int64(0)
	for r := range m {
		if s.inS[r] {
			continue
		}
		sum := sb.acc[r]
		sb.gen++
		for _, id := range sb.forced[r] {
			sv := &s.vals[id]
			if s.inS[sv.start.block] || s.openCnt[sv.buf] > 0 || sb.stamp[sv.buf] == sb.gen {
				continue
			}
			sb.stamp[sv.buf] = sb.gen
			sum += s.bufs[sv.buf].size
		}
		best = max(best, sum)
	}
	return s.K + best
}
