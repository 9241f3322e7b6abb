package schedule

// The segment model: the lower bound, step by step, of one stretch of a
// computation's order as its instructions are put in another order.
//
// A segment is a window [lo, hi) of one sequential computation c's
// sequence under an incumbent schedule. Each instruction of the window is
// a block: the instruction itself, preceded by the computations it calls
// (flattened, in their incumbent orders), exactly as liveness.Analysis.Layout lays them out.
// Reordering the blocks changes nothing outside the window's stretch of
// time [T0, T1): the same instructions run before and after it. Inside, a
// block's own steps keep their offsets. So every event of every value
// (liveness.Events) falls before the window (PRE), after it (POST), or at a fixed
// offset of one block, and the lower bound at a step of a block depends
// on the set of blocks run before it, S, and on nothing else:
//
//   - a buffer is live at offset k of block b if one of its values starts
//     before (PRE or in S) or at an offset <= k of b and ends at an offset
//     >= k of b or later (an end event after b or POST); between steps
//     k-1 and k likewise, with the start strictly before k;
//   - buffers none of whose values has an event in b are live through all
//     of b exactly when they are open after S (started, not ended): the
//     model keeps their total as S grows (apply, undo);
//   - the takeovers at offset k (LowerBound's Saved) need the chained
//     ranges of the buffers touched at k: a buffer's values keep the order
//     of their starts in every order the segment allows (the aliasing
//     constraints below), so chaining them needs only where each value
//     starts and ends relative to b.
//
// One thing depends on the order within S, not only on S: a value's end
// position (the latest of its positions, where a user may take its
// buffer over) when several of its positions ran in S. Those that must
// run before another of them (an earlier offset of one block, a block the
// constraints put first) cannot be last; for a value with positions in
// blocks that no constraint orders, the segment tracks which ran last as
// blocks are applied (trackEndPositions), and the exact search makes it
// part of a set's signature. With that the model is exact: its figure at
// every step is LowerBound's (segment_test.go holds it so on random
// modules and the corpus, under random orders). Only in a window of more
// than 4096 blocks, where precedence is not computed, does the model fall
// back to taking any such position as possibly the last, a relaxation
// that can only allow more takeovers and so a figure no higher than the
// true one (counted in relaxed).
//
// Orders: the blocks follow their operands and control predecessors in
// the window, and the aliasing constraints that keep the ranges valid
// (what XLA's copy insertion guarantees): the values of one buffer are
// defined in their incumbent order, and every read of a value comes before
// the next value of its buffer is defined. An order that broke them would
// need more copies (liveness.Analysis.Interference); the search never proposes one. A
// window that is not a whole computation also keeps the order of the
// positions of each value that ends after it, whose end position decides
// a takeover the window's model does not see.
//
// Cost: building a segment reads the events of the values the window
// touches (liveness.Events.ByInst); a window's constant part K is read off the
// incumbent's figures (newWindow), so neither grows with the module.
// Evaluating a block touches the values with an event in it.

import (
	"slices"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// loc is where an event falls relative to a segment: a block and an
// offset in it, or one of the special blocks.
type loc struct{ block, off int32 }

const (
	locPre      = -1 // before the window
	locPost     = -2 // after it
	locSegStart = -3 // the window's first step (the start of c, lo == 0)
	locNever    = -4 // not in the flattened schedule: never the latest
)

// segValue is one value whose buffer has an event in the window.
type segValue struct {
	v      *liveness.Value
	buf    int32
	rank   int32 // place among its buffer's values in start order
	start  loc
	cands  []loc // end candidates in the window (one per block, its latest offset)
	post   bool  // an end candidate after the window
	segEnd bool  // an end candidate at the window's first step
	defEnd []loc // the definition's end (EndPosition's first candidate)
	pos    []loc // Positions[1:]
}

// trackItem is one item of a tracked value in a block: its index among
// the value's items (0: the definition's end, i: Positions[i]) and its
// offset.
type trackItem struct {
	t    int32 // index into lastItem
	item int16
	off  int32
}

// giver is a value x that operand op of a taker's instruction holds.
type giver struct {
	x  int32
	op *hlo.Instruction
}

// segBuffer is one buffer with a value that has an event in the window.
type segBuffer struct {
	b    *liveness.Buffer
	size int64
	vals []int32 // its segValues, by rank
}

// segment is the model of one window; see the top of the file.
type segment struct {
	// work counts the values cost has visited: the exact search charges
	// it to its budget (exact.go, workPerExpansion).
	work   int64
	a      *liveness.Analysis
	c      *hlo.Computation
	tl     *liveness.Timeline
	sched  *liveness.Schedule
	lo, hi int
	blocks []*hlo.Instruction // the window's instructions in incumbent order
	T0, T1 int
	blen   []int32 // steps of each block
	base   []int32 // each block's first step in the incumbent, relative to T0
	// blockOf gives the block of each step of [T0, T1) while the model is
	// built (where), nil afterwards.
	blockOf []int32
	preds   [][]int32
	succs   [][]int32

	vals     []segValue
	bufs     []segBuffer
	involved [][]int32 // per block: the buffers with a value that has an event in it
	startIn  [][]int32 // per block: values starting in it
	endIn    [][]int32 // per block: values with an end candidate in it
	segStart []int32   // values starting at locSegStart
	segEnd   []int32   // values with an end candidate at locSegStart
	at       map[int32][]int32
	givers   [][]giver // per value starting in a block: the values its instruction's operands hold

	// K is what every step of the window holds whatever the order: the
	// buffers that own memory and those live across the whole window
	// without an event in it. OutsideMax is the largest bound at a step
	// outside the window, under the incumbent.
	K          int64
	OutsideMax int64
	free       []int8        // freeable, per block: 1 yes, -1 no, 0 not computed
	inner      [][]int32     // per block: IDs of the computations it runs
	src        []int8        // source, per block: 1 yes, -1 no
	blockIndex map[int]int32 // by instruction ID: its block (callerSegment only)
	// End positions that depend on the order within S: the values with
	// positions in two blocks no constraint orders (tracked), the items
	// each block holds, and the latest item of each run so far (its
	// index in Positions; -1: none), with the previous ones for undo.
	tracked   []int32 // per value: index into lastItem, or -1
	itemsIn   [][]trackItem
	lastItem  []int16
	lastStack []int16
	reach     []uint64 // precedes: transitive successors, a bit row per block
	reachW    int
	// relaxed counts the takeovers the end-position relaxation allowed
	// that the first candidate alone would not have.
	relaxed int

	// The state: the blocks run so far (S).
	inS       []bool
	nS        int
	started   []bool
	rem       []int32 // per value: end-candidate blocks not in S
	openCnt   []int32 // per buffer: open values
	openBytes int64

	// Scratch for evaluating a block.
	sc segScratch
}

// segScratch is reused by every block evaluation.
type segScratch struct {
	live, betw, saved []int64
	mark              []int32 // per buffer: evaluation stamp when involved
	stamp             int32
	sl, el, en        []int32 // per value: local start, end, chained end
	cross             [][2]int32
	crossAt           []int32 // per buffer: first index into cross, +1
	crossN            []int32
	order             []int32 // chainOrder's
	takers            []int32 // values starting in the block
	give, take        []int64 // per buffer
	gave, took        []int32
}

// newSegment builds the model of the window [lo, hi) of c's sequence in
// schedule sched, laid out as tl, whose bound at each step
// (LowerBoundCurve's Bytes) is steps, with em the events of a. It reports false when the window cannot be searched: the
// incumbent breaks an aliasing constraint (it needs copies of its own).
func newSegment(a *liveness.Analysis, em *liveness.Events, tl *liveness.Timeline, sched *liveness.Schedule, steps []int64, c *hlo.Computation, lo, hi int) (*segment, bool) {
	return buildSegment(a, em, tl, sched, steps, c, lo, hi, false)
}

// newWindow is newSegment for a window searched against the peak, in a
// time that does not grow with the module: K is read off steps (the
// incumbent's figure at the window's first step, less what the model
// finds there above K), and OutsideMax is not computed (-1).
func newWindow(a *liveness.Analysis, em *liveness.Events, tl *liveness.Timeline, sched *liveness.Schedule, steps []int64, c *hlo.Computation, lo, hi int) (*segment, bool) {
	return buildSegment(a, em, tl, sched, steps, c, lo, hi, true)
}

// buildSegment is newSegment (fast false) and newWindow (fast true).
func buildSegment(a *liveness.Analysis, em *liveness.Events, tl *liveness.Timeline, sched *liveness.Schedule, steps []int64, c *hlo.Computation, lo, hi int, fast bool) (*segment, bool) {
	seq := sched.Sequence(c)
	s := &segment{a: a, c: c, tl: tl, sched: sched, lo: lo, hi: hi, blocks: seq[lo:hi]}
	s.layBlocks()
	// considered holds every buffer a value with an event in the window
	// belongs to (those owning memory aside), kept or not.
	relevant, considered := s.relevantBuffers(em)
	s.addValues(em, relevant)
	s.indexBlocks()
	if !fast {
		s.constantPart(steps, considered)
	}
	s.innerComputations()
	s.findGivers()
	s.blockOf = nil
	if !s.buildOrder() {
		return nil, false
	}
	s.trackEndPositions()
	s.reset()
	if fast {
		// The model's figures less K are the same at every step; the
		// incumbent's figure at each step gives K.
		s.OutsideMax = -1
		dyn := make([]int64, s.T1-s.T0)
		s.evaluate(identity(len(s.blocks)), dyn)
		k := steps[s.T0] - dyn[0]
		for u := range dyn {
			if steps[s.T0+u]-dyn[u] != k {
				return buildSegment(a, em, tl, sched, steps, c, lo, hi, false)
			}
		}
		s.K += k
	}
	return s, true
}

// layBlocks sets the window's stretch of time [T0, T1) and each block's
// steps in it (base, blen, and blockOf for where).
func (s *segment) layBlocks() {
	tl, seq := s.tl, s.sched.Sequence(s.c)
	m := s.hi - s.lo
	if s.lo == 0 {
		s.T0 = tl.Spans[s.c.ID].Start
	} else {
		s.T0 = tl.Time(seq[s.lo-1]) + 1
	}
	s.T1 = tl.Time(seq[s.hi-1]) + 1
	s.blen = make([]int32, m)
	s.base = make([]int32, m)
	s.blockOf = make([]int32, s.T1-s.T0)
	prev := s.T0
	for b, in := range s.blocks {
		t := tl.Time(in)
		s.base[b] = int32(prev - s.T0)
		s.blen[b] = int32(t + 1 - prev)
		for u := prev; u <= t; u++ {
			s.blockOf[u-s.T0] = int32(b)
		}
		prev = t + 1
	}
}

// where returns where event e falls relative to the window under the
// incumbent (layBlocks must have run).
func (s *segment) where(e liveness.Event) loc {
	if e.Kind == liveness.EventSpanStart && int(e.ID) == s.c.ID {
		if s.lo == 0 {
			return loc{locSegStart, 0}
		}
		return loc{locPre, 0}
	}
	t := s.tl.At(e)
	if e.Kind == liveness.EventSpanEnd && t == s.T0 {
		// A computation flattened right before the window ends at
		// its first step, whichever block runs there.
		return loc{locSegStart, 0}
	}
	switch {
	case t < 0:
		return loc{locNever, 0}
	case t < s.T0:
		return loc{locPre, int32(t)}
	case t >= s.T1:
		return loc{locPost, 0}
	}
	b := s.blockOf[t-s.T0]
	return loc{b, int32(t-s.T0) - s.base[b]}
}

// relevantBuffers returns, by ID, the buffers the model follows: those
// with a value that has an event in the window (the buffer's other values
// come with it), less those that own memory and those live and crossing
// at every step whatever the order, whose sizes go to K. considered holds
// every buffer looked at, those dropped for K included.
func (s *segment) relevantBuffers(em *liveness.Events) (relevant []*liveness.Buffer, considered map[int]bool) {
	a, tl, c := s.a, s.tl, s.c
	considered = map[int]bool{}
	consider := func(ids []int32) {
		for _, id := range ids {
			b := a.Values[id].Buffer
			if considered[b.ID] || a.OwnsMemory(b) {
				continue
			}
			considered[b.ID] = true
			relevant = append(relevant, b)
		}
	}
	for u := s.T0; u < s.T1; u++ {
		in := tl.Seq[u]
		consider(em.ByInst[in.ID])
		if in.Parent != c {
			consider(em.BySpan[in.Parent.ID])
		}
	}
	if s.lo == 0 {
		consider(em.BySpan[c.ID])
	}
	if s.T0 > 0 {
		// A computation ending right before the window ends at its first
		// step (where's locSegStart).
		if d := tl.Seq[s.T0-1].Parent; tl.Spans[d.ID].End == s.T0 {
			consider(em.BySpan[d.ID])
		}
	}
	slices.SortFunc(relevant, func(x, y *liveness.Buffer) int { return x.ID - y.ID })
	// A buffer none of whose values starts in the window, with a value
	// live from before it to after it, is live and crossing at every step
	// whatever the order (its chained ranges cover the window): it only
	// adds to K, and its values' events decide nothing.
	kept := relevant[:0]
	for _, b := range relevant {
		startsIn, spans := false, false
		for _, v := range b.Values {
			if !em.Scheduled[v.ID] {
				continue
			}
			ve := &em.Vals[v.ID]
			st := s.where(ve.Start)
			if st.block != locPre && st.block != locPost {
				startsIn = true
				break
			}
			if st.block == locPre && !spans {
				spans = ve.ToEnd
				for _, es := range [][]liveness.Event{ve.DefEnd, ve.Pos, ve.Ends} {
					for _, e := range es {
						spans = spans || s.where(e).block == locPost
					}
				}
			}
		}
		if !startsIn && spans {
			s.K += b.Size
			continue
		}
		kept = append(kept, b)
	}
	return kept, considered
}

// addValues sets bufs and vals: for each relevant buffer its scheduled
// values in the order of their ranges (rank), each with where it starts
// and where it may end; and at, the values at each instruction (their
// definition and positions).
func (s *segment) addValues(em *liveness.Events, relevant []*liveness.Buffer) {
	s.at = map[int32][]int32{}
	for i, b := range relevant {
		sb := segBuffer{b: b, size: b.Size}
		var vs []*liveness.Value
		for _, v := range b.Values {
			if em.Scheduled[v.ID] {
				vs = append(vs, v)
			}
		}
		liveness.SortByRange(vs, s.tl.Ranges)
		for r, v := range vs {
			id := int32(len(s.vals))
			sb.vals = append(sb.vals, id)
			s.vals = append(s.vals, s.newSegValue(&em.Vals[v.ID], v, int32(i), int32(r)))
			s.at[int32(v.Inst.ID)] = appendOnce(s.at[int32(v.Inst.ID)], id)
			for _, p := range v.Positions[1:] {
				s.at[int32(p.Inst.ID)] = appendOnce(s.at[int32(p.Inst.ID)], id)
			}
		}
		s.bufs = append(s.bufs, sb)
	}
}

// newSegValue places value v's events (ve) relative to the window: its
// start, the definition's end and positions, and its end candidates, one
// per block at the latest offset.
func (s *segment) newSegValue(ve *liveness.ValueEvents, v *liveness.Value, buf, rank int32) segValue {
	sv := segValue{v: v, buf: buf, rank: rank, start: s.where(ve.Start), post: ve.ToEnd}
	addCand := func(l loc) {
		switch {
		case l.block == locPost:
			sv.post = true
		case l.block == locSegStart:
			sv.segEnd = true
		case l.block >= 0:
			for k := range sv.cands {
				if sv.cands[k].block == l.block {
					sv.cands[k].off = max(sv.cands[k].off, l.off)
					return
				}
			}
			sv.cands = append(sv.cands, l)
		}
	}
	for _, e := range ve.DefEnd {
		l := s.where(e)
		sv.defEnd = append(sv.defEnd, l)
		addCand(l)
	}
	for _, e := range ve.Pos {
		l := s.where(e)
		sv.pos = append(sv.pos, l)
		addCand(l)
	}
	for _, e := range ve.Ends {
		addCand(s.where(e))
	}
	return sv
}

// indexBlocks sets, per block, the values starting in it (startIn), those
// with an end candidate in it (endIn) and the buffers either or a
// position touches (involved), and the values that start or may end at
// the window's first step (segStart, segEnd).
func (s *segment) indexBlocks() {
	m := len(s.blocks)
	s.involved = make([][]int32, m)
	s.startIn = make([][]int32, m)
	s.endIn = make([][]int32, m)
	var once onceLists
	touch := func(b, buf int32) {
		s.involved[b] = once.add(b, s.involved[b], buf)
	}
	for id := range s.vals {
		sv := &s.vals[id]
		switch {
		case sv.start.block >= 0:
			s.startIn[sv.start.block] = append(s.startIn[sv.start.block], int32(id))
			touch(sv.start.block, sv.buf)
		case sv.start.block == locSegStart:
			s.segStart = append(s.segStart, int32(id))
		}
		if sv.segEnd {
			s.segEnd = append(s.segEnd, int32(id))
		}
		for _, l := range sv.cands {
			s.endIn[l.block] = append(s.endIn[l.block], int32(id))
			touch(l.block, sv.buf)
		}
		for _, l := range sv.pos {
			if l.block >= 0 {
				touch(l.block, sv.buf)
			}
		}
	}
}

// constantPart adds to K the buffers that own memory and those, not
// considered by the model, live across the whole window under the
// incumbent, and sets OutsideMax, the incumbent's largest figure (steps)
// outside the window. Both read the whole module: newWindow does without.
func (s *segment) constantPart(steps []int64, considered map[int]bool) {
	a, tl := s.a, s.tl
	for _, b := range a.Buffers {
		if a.OwnsMemory(b) {
			s.K += b.Size
			continue
		}
		if considered[b.ID] {
			continue
		}
		for _, v := range b.Values {
			if tl.Scheduled[v.ID] && tl.Ranges[v.ID].Start < s.T0 && tl.Ranges[v.ID].End >= s.T1 {
				s.K += b.Size
				break
			}
		}
	}
	for t, x := range steps {
		if t < s.T0 || t >= s.T1 {
			s.OutsideMax = max(s.OutsideMax, x)
		}
	}
}

// innerComputations sets, per block, the computations it runs (their
// IDs), whose spans move with it.
func (s *segment) innerComputations() {
	s.inner = make([][]int32, len(s.blocks))
	var once onceLists
	for b := range s.blocks {
		for u := s.T0 + int(s.base[b]); u < s.T0+int(s.base[b])+int(s.blen[b]); u++ {
			if d := s.tl.Seq[u].Parent; d != s.c {
				s.inner[b] = once.add(int32(b), s.inner[b], int32(d.ID))
			}
		}
	}
}

// findGivers sets what each value that starts in a block may take over:
// the values its instruction's operands hold (a copy takes over nothing).
func (s *segment) findGivers() {
	s.givers = make([][]giver, len(s.vals))
	for id := range s.vals {
		sv := &s.vals[id]
		in := sv.v.Inst
		if sv.start.block < 0 || in.Opcode == hlo.OpCopy {
			continue
		}
		for _, op := range in.Operands {
			for _, x := range s.at[int32(op.ID)] {
				s.givers[id] = append(s.givers[id], giver{x, op})
			}
		}
	}
}

func appendOnce(l []int32, x int32) []int32 {
	for _, y := range l {
		if y == x {
			return l
		}
	}
	return append(l, x)
}

// onceLists appends to lists of distinct numbers, each list under a key,
// keeping the order of first appearance as appendOnce does, without its
// scan of the whole list: a list longer than onceScan gets a set of its
// own. A call's block in a window can hold most of a module (a deep call
// graph), where appendOnce alone made indexing the window quadratic.
type onceLists struct {
	sets map[int32]map[int32]struct{}
}

const onceScan = 32

// add returns l (the list under key) with x appended unless it holds x.
func (o *onceLists) add(key int32, l []int32, x int32) []int32 {
	if len(l) > 0 && l[len(l)-1] == x {
		return l
	}
	if set := o.sets[key]; set != nil {
		if _, ok := set[x]; ok {
			return l
		}
		set[x] = struct{}{}
		return append(l, x)
	}
	if len(l) < onceScan {
		return appendOnce(l, x)
	}
	if o.sets == nil {
		o.sets = map[int32]map[int32]struct{}{}
	}
	set := make(map[int32]struct{}, 2*len(l))
	for _, y := range l {
		set[y] = struct{}{}
	}
	o.sets[key] = set
	if _, ok := set[x]; ok {
		return l
	}
	set[x] = struct{}{}
	return append(l, x)
}

// blockAt returns the block of the window that instruction in runs in
// (the block of the instruction of c whose callees hold it), or -1.
func (s *segment) blockAt(in *hlo.Instruction) int32 {
	t := s.tl.Time(in)
	if t < s.T0 || t >= s.T1 {
		return -1
	}
	// Blocks are in time order: binary search on their last steps.
	k, _ := slices.BinarySearchFunc(s.blocks, t, func(x *hlo.Instruction, t int) int { return s.tl.Time(x) - t })
	return int32(k)
}

// buildOrder sets preds and succs: operands, control predecessors and the
// aliasing constraints among the window's blocks. It reports false when
// the incumbent breaks one of them.
func (s *segment) buildOrder() bool {
	m := len(s.blocks)
	s.preds = make([][]int32, m)
	s.succs = make([][]int32, m)
	ix := map[*hlo.Instruction]int32{}
	for b, in := range s.blocks {
		ix[in] = int32(b)
	}
	ok := true
	edge := func(from, to int32) {
		if from < 0 || to < 0 || from == to {
			return
		}
		if from > to {
			ok = false // the incumbent runs them the other way round
			return
		}
		for _, p := range s.preds[to] {
			if p == from {
				return
			}
		}
		s.preds[to] = append(s.preds[to], from)
		s.succs[from] = append(s.succs[from], to)
	}
	for b, in := range s.blocks {
		for _, o := range in.Operands {
			if p, found := ix[o]; found {
				edge(p, int32(b))
			}
		}
		for _, o := range in.ControlPredecessors() {
			if p, found := ix[o]; found {
				edge(p, int32(b))
			}
		}
	}
	// In a window (not a whole computation), a value that ends after it
	// keeps the incumbent order of its positions in the window: which of
	// them is its end position decides takeovers after the window, which
	// the window's model does not see.
	if s.lo > 0 || s.hi < len(s.sched.Sequence(s.c)) {
		for id := range s.vals {
			sv := &s.vals[id]
			if !sv.post {
				continue
			}
			prev := int32(-1)
			for _, l := range sv.pos {
				if l.block < 0 {
					continue
				}
				if prev >= 0 && prev != l.block {
					if prev < l.block {
						edge(prev, l.block)
					} else {
						edge(l.block, prev)
					}
				}
				prev = l.block
			}
		}
	}
	// Aliasing: per buffer, definitions in incumbent order and reads of
	// each value before the next definition.
	for _, sb := range s.bufs {
		if len(sb.vals) < 2 {
			continue
		}
		var defs []int32 // segValues of non-phi values, rank order
		for _, id := range sb.vals {
			if !s.vals[id].v.IsPhi {
				defs = append(defs, id)
			}
		}
		for i := 0; i+1 < len(defs); i++ {
			edge(s.blockAt(s.vals[defs[i]].v.Inst), s.blockAt(s.vals[defs[i+1]].v.Inst))
		}
		for _, id := range sb.vals {
			v := s.vals[id].v
			if !v.Shape.IsArray() {
				continue
			}
			start := s.tl.Ranges[v.ID].Start
			var next *liveness.Value
			for _, d := range defs {
				if w := s.vals[d].v; s.tl.Ranges[w.ID].Start > start {
					next = w
					break
				}
			}
			if next == nil {
				continue
			}
			to := s.blockAt(next.Inst)
			if to < 0 {
				continue
			}
			for _, u := range v.Uses {
				if u.ReadsNothing() {
					continue
				}
				edge(s.blockAt(u.Inst), to)
			}
		}
	}
	return ok
}

// trackEndPositions finds the values whose end position can depend on
// the order within S: two of their items (the definition's end and the
// positions) in blocks that no constraint orders. Their latest item is
// tracked as blocks run, which makes the model exact for them (segment
// windows of more than 4096 blocks, where precedes answers false, track
// none and keep the relaxation).
func (s *segment) trackEndPositions() {
	s.tracked = make([]int32, len(s.vals))
	s.itemsIn = make([][]trackItem, len(s.blocks))
	for id := range s.vals {
		s.tracked[id] = -1
	}
	if len(s.blocks) > precedenceBlocks {
		return
	}
	for id := range s.vals {
		sv := &s.vals[id]
		if len(sv.pos) == 0 || len(sv.v.Positions) > 1<<14 {
			continue
		}
		// The items in blocks: the definition's end (its latest event)
		// and each position.
		var items []trackItem
		var d loc
		dset := false
		for _, l := range sv.defEnd {
			if !dset || l.block == d.block && l.off > d.off || s.later(l, d) {
				d, dset = l, true
			}
		}
		if dset && d.block >= 0 {
			items = append(items, trackItem{item: 0, off: d.off})
		}
		blocks := []int32{}
		if dset && d.block >= 0 {
			blocks = append(blocks, d.block)
		}
		for i, l := range sv.pos {
			if l.block >= 0 {
				items = append(items, trackItem{item: int16(i + 1), off: l.off})
				blocks = append(blocks, l.block)
			}
		}
		ambiguous := false
		for i := range blocks {
			for j := range blocks {
				if blocks[i] != blocks[j] && !s.precedes(blocks[i], blocks[j]) && !s.precedes(blocks[j], blocks[i]) {
					ambiguous = true
				}
			}
		}
		if !ambiguous {
			continue
		}
		t := int32(len(s.lastItem))
		s.tracked[id] = t
		s.lastItem = append(s.lastItem, -1)
		for k, it := range items {
			it.t = t
			s.itemsIn[blocks[k]] = append(s.itemsIn[blocks[k]], it)
		}
	}
}

// later reports whether in-window location x is surely later than y
// (both in blocks): a later offset of the same block, or a block that
// must follow y's.
func (s *segment) later(x, y loc) bool {
	if x.block < 0 || y.block < 0 {
		return false
	}
	if x.block == y.block {
		return x.off > y.off
	}
	return s.precedes(y.block, x.block)
}

// lastKey writes the tracked latest items into key (two bytes each), the
// part of the exact search's signature beyond the set of blocks.
func (s *segment) lastKey(key []uint64) {
	for i := range key {
		key[i] = 0
	}
	for t, it := range s.lastItem {
		key[t/4] |= uint64(uint16(it+1)) << (16 * (t % 4))
	}
}

// reset empties S.
func (s *segment) reset() {
	n := len(s.vals)
	s.inS = make([]bool, len(s.blocks))
	s.nS = 0
	s.started = make([]bool, n)
	s.rem = make([]int32, n)
	s.openCnt = make([]int32, len(s.bufs))
	s.openBytes = 0
	for id := range s.vals {
		sv := &s.vals[id]
		s.rem[id] = int32(len(sv.cands))
		if sv.segEnd {
			s.rem[id]++
		}
		if sv.start.block == locPre {
			s.setStarted(int32(id), true)
		}
	}
	maxLen := int32(0)
	for _, l := range s.blen {
		maxLen = max(maxLen, l)
	}
	sc := &s.sc
	sc.live = make([]int64, maxLen)
	sc.betw = make([]int64, maxLen)
	sc.saved = make([]int64, maxLen)
	sc.mark = make([]int32, len(s.bufs))
	sc.sl = make([]int32, n)
	sc.el = make([]int32, n)
	sc.en = make([]int32, n)
	sc.crossAt = make([]int32, len(s.bufs))
	sc.crossN = make([]int32, len(s.bufs))
	sc.give = make([]int64, len(s.bufs))
	sc.take = make([]int64, len(s.bufs))
}

func (s *segment) open(id int32) bool {
	return s.started[id] && (s.vals[id].post || s.rem[id] > 0)
}

// adjust moves buffer buf's open count by d, keeping openBytes.
func (s *segment) adjust(id int32, was bool) {
	now := s.open(id)
	if now == was {
		return
	}
	buf := s.vals[id].buf
	if now {
		if s.openCnt[buf] == 0 {
			s.openBytes += s.bufs[buf].size
		}
		s.openCnt[buf]++
		return
	}
	s.openCnt[buf]--
	if s.openCnt[buf] == 0 {
		s.openBytes -= s.bufs[buf].size
	}
}

func (s *segment) setStarted(id int32, v bool) {
	was := s.open(id)
	s.started[id] = v
	s.adjust(id, was)
}

// apply runs block b next.
func (s *segment) apply(b int32) {
	first := s.nS == 0
	s.inS[b] = true
	s.nS++
	// The tracked values' latest items: this block's, the latest offset
	// (the first item at it), for each value it holds items of.
	items := s.itemsIn[b]
	for i := 0; i < len(items); {
		j := i
		best := items[i]
		for j < len(items) && items[j].t == items[i].t {
			if x := items[j]; x.off > best.off || x.off == best.off && x.item < best.item {
				best = x
			}
			j++
		}
		s.lastStack = append(s.lastStack, s.lastItem[best.t])
		s.lastItem[best.t] = best.item
		i = j
	}
	for _, id := range s.endIn[b] {
		was := s.open(id)
		s.rem[id]--
		s.adjust(id, was)
	}
	for _, id := range s.startIn[b] {
		s.setStarted(id, true)
	}
	if first {
		for _, id := range s.segEnd {
			was := s.open(id)
			s.rem[id]--
			s.adjust(id, was)
		}
		for _, id := range s.segStart {
			s.setStarted(id, true)
		}
	}
}

// undo takes back apply(b), the last block applied.
func (s *segment) undo(b int32) {
	s.inS[b] = false
	s.nS--
	if s.nS == 0 {
		for _, id := range s.segStart {
			s.setStarted(id, false)
		}
		for _, id := range s.segEnd {
			was := s.open(id)
			s.rem[id]++
			s.adjust(id, was)
		}
	}
	for _, id := range s.startIn[b] {
		s.setStarted(id, false)
	}
	for _, id := range s.endIn[b] {
		was := s.open(id)
		s.rem[id]++
		s.adjust(id, was)
	}
	items := s.itemsIn[b]
	for i := len(items); i > 0; {
		j := i - 1
		for j > 0 && items[j-1].t == items[i-1].t {
			j--
		}
		n := len(s.lastStack) - 1
		s.lastItem[items[i-1].t] = s.lastStack[n]
		s.lastStack = s.lastStack[:n]
		i = j
	}
}

// local returns where l falls relative to block b under S: -1 before b,
// its offset in b, or L (b's length) after b; locNever gives -2.
func (s *segment) local(l loc, b int32) int32 {
	switch l.block {
	case locPre:
		return -1
	case locPost:
		return s.blen[b]
	case locNever:
		return -2
	case locSegStart:
		if s.nS == 0 {
			return 0
		}
		return -1
	}
	switch {
	case l.block == b:
		return l.off
	case s.inS[l.block]:
		return -1
	}
	return s.blen[b]
}

// cost returns the bound at the worst step of block b run after S: the
// largest, over b's steps, of LowerBound's figure
// (liveness.StepBound.Bytes). With steps, it also writes each step's
// figure there.
//
// Only the buffers with an event in b (and, for the first block, those
// with one at the window's first step) are visited (visitBuffer); the
// others open across b add their bytes to every step (untouched).
func (s *segment) cost(b int32, steps []int64) int64 {
	sc := &s.sc
	L := s.blen[b]
	live, betw, saved := sc.live[:L], sc.betw[:L], sc.saved[:L]
	clear(live)
	clear(betw)
	clear(saved)
	sc.stamp++
	sc.cross = sc.cross[:0]
	sc.takers = sc.takers[:0]
	untouched := s.openBytes
	for _, buf := range s.involved[b] {
		untouched -= s.visitBuffer(buf, b)
	}
	if s.nS == 0 {
		for _, id := range s.segStart {
			untouched -= s.visitBuffer(s.vals[id].buf, b)
		}
		for _, id := range s.segEnd {
			untouched -= s.visitBuffer(s.vals[id].buf, b)
		}
	}
	for k := int32(1); k < L; k++ {
		live[k] += live[k-1]
		betw[k] += betw[k-1]
	}
	s.takeovers(b, saved)
	first := s.nS == 0 && s.T0 == 0
	worst := int64(0)
	for k := int32(0); k < L; k++ {
		bt := betw[k] + untouched
		if first && k == 0 {
			bt = 0 // LowerBound counts no "between" before the first step
		}
		x := s.K + max(bt, live[k]+untouched-saved[k])
		if steps != nil {
			steps[k] = x
		}
		worst = max(worst, x)
	}
	return worst
}

// visitBuffer adds buffer buf's part of block b's figures, once per
// evaluation: its values' local starts and ends (localSpans), chained in
// start order (chainOrder, chainEnds), the steps where it is live and
// live across from the step before (sc.live and sc.betw, as differences),
// the steps its chained values cross (sc.cross) and its values that start
// in b (sc.takers). It returns the bytes the buffer took out of those
// open across b (its size when it is open after S, 0 otherwise or when
// already visited).
func (s *segment) visitBuffer(buf, b int32) int64 {
	sc := &s.sc
	if sc.mark[buf] == sc.stamp {
		return 0
	}
	sc.mark[buf] = sc.stamp
	sb := &s.bufs[buf]
	s.work += int64(len(sb.vals))
	L := s.blen[b]
	s.localSpans(sb, b)
	ord := s.chainOrder(sb, L)
	s.chainEnds(ord)
	live, betw := sc.live[:L], sc.betw[:L]
	if len(sb.vals) == 1 {
		id := sb.vals[0]
		if st, e := sc.sl[id], sc.el[id]; st <= e {
			addSpan(live, max(st, 0), min(e, L-1), sb.size)
			addSpan(betw, max(st+1, 0), min(e, L-1), sb.size)
		}
	} else {
		s.addUnion(live, ord, 0, sb.size, L)
		s.addUnion(betw, ord, 1, sb.size, L)
	}
	// Crossing: a chained value strictly across the step.
	sc.crossAt[buf] = int32(len(sc.cross)) + 1
	n := int32(0)
	for _, id := range sb.vals {
		if a, z := sc.sl[id]+1, sc.en[id]-1; a <= z && z >= 0 && a < L {
			sc.cross = append(sc.cross, [2]int32{a, z})
			n++
		}
		if st := sc.sl[id]; st >= 0 && st < L {
			sc.takers = append(sc.takers, id)
		}
	}
	sc.crossN[buf] = n
	if s.openCnt[buf] > 0 {
		return sb.size
	}
	return 0
}

// localSpans sets the local start (sc.sl) and end (sc.el) of each value
// of sb relative to block b run after S, as local places them: -1 before
// b, an offset in b, b's length after it (-2: never).
func (s *segment) localSpans(sb *segBuffer, b int32) {
	sc := &s.sc
	L := s.blen[b]
	for _, id := range sb.vals {
		sv := &s.vals[id]
		st := s.local(sv.start, b)
		e := int32(-1)
		if sv.segEnd && s.nS == 0 {
			e = 0
		}
		if sv.post {
			e = L
		} else {
			for _, c := range sv.cands {
				if c.block == b {
					e = max(e, c.off)
				} else if !s.inS[c.block] {
					e = L
					break
				}
			}
		}
		sc.sl[id], sc.el[id] = st, e
	}
}

// chainOrder returns sb's values in the order their ranges chain: by
// local start, values starting at the same offset of b by end and then
// ID, the others by rank. sb.vals is in rank order and local starts
// outside b take only three values (-2 never, -1 before b, L after it),
// so a stable partition orders all but the values starting in b, which
// are few and sorted on their own: no sort of the buffer's values on
// every call. The slice is scratch (sc.order).
func (s *segment) chainOrder(sb *segBuffer, L int32) []int32 {
	sc := &s.sc
	ord := sc.order[:0]
	if len(sb.vals) == 1 {
		sc.order = append(ord, sb.vals[0])
		return sc.order
	}
	var never, before, in int
	for _, id := range sb.vals {
		switch sl := sc.sl[id]; {
		case sl < -1:
			never++
		case sl < 0:
			before++
		case sl < L:
			in++
		}
	}
	ord = slices.Grow(ord, len(sb.vals))[:len(sb.vals)]
	nx, bx, ix, ax := 0, never, never+before, never+before+in
	for _, id := range sb.vals {
		switch sl := sc.sl[id]; {
		case sl < -1:
			ord[nx] = id
			nx++
		case sl < 0:
			ord[bx] = id
			bx++
		case sl < L:
			ord[ix] = id
			ix++
		default:
			ord[ax] = id
			ax++
		}
	}
	if in > 1 {
		slices.SortFunc(ord[never+before:never+before+in], func(x, y int32) int {
			if sx, sy := sc.sl[x], sc.sl[y]; sx != sy {
				return int(sx - sy)
			}
			if ex, ey := sc.el[x], sc.el[y]; ex != ey {
				return int(ex - ey)
			}
			return s.vals[x].v.ID - s.vals[y].v.ID
		})
	}
	sc.order = ord
	return ord
}

// chainEnds sets each value's chained end (sc.en) along ord, as Layout
// chains a buffer's values: a value ends where the next begins, and the
// next carries the later end on.
func (s *segment) chainEnds(ord []int32) {
	sc := &s.sc
	mx := int32(-3)
	for i, id := range ord {
		mx = max(mx, sc.el[id])
		en := mx
		if i+1 < len(ord) {
			en = min(en, sc.sl[ord[i+1]])
		}
		sc.en[id] = en
	}
}

// addSpan adds size to arr (differences, prefix-summed later) over the
// steps [a, z] of a block, when not empty.
func addSpan(arr []int64, a, z int32, size int64) {
	if a > z {
		return
	}
	arr[a] += size
	if z+1 < int32(len(arr)) {
		arr[z+1] -= size
	}
}

// addUnion adds size to arr over the union of the spans [local start +
// shift, local end] of the values ord lists, clipped to the block's L
// steps. ord is in local start order (chainOrder), so the spans come
// sorted and merge as they come.
func (s *segment) addUnion(arr []int64, ord []int32, shift int32, size int64, L int32) {
	sc := &s.sc
	cur := [2]int32{-1, -2}
	for _, id := range ord {
		a, z := max(sc.sl[id]+shift, 0), min(sc.el[id], L-1)
		if sc.sl[id] > sc.el[id] || a > z {
			continue
		}
		if a <= cur[1]+1 && cur[0] >= 0 {
			cur[1] = max(cur[1], z)
			continue
		}
		if cur[0] >= 0 {
			addSpan(arr, cur[0], cur[1], size)
		}
		cur = [2]int32{a, z}
	}
	if cur[0] >= 0 {
		addSpan(arr, cur[0], cur[1], size)
	}
}

// crossing reports whether a chained value of buffer buf, visited in
// this evaluation, is strictly across step k of the block.
func (s *segment) crossing(buf, k int32) bool {
	sc := &s.sc
	if sc.mark[buf] != sc.stamp {
		return false
	}
	at := sc.crossAt[buf] - 1
	for _, iv := range sc.cross[at : at+sc.crossN[buf]] {
		if iv[0] <= k && k <= iv[1] {
			return true
		}
	}
	return false
}

// takeovers sets saved[k], for each step k of block b where a value
// starts (sc.takers), to LowerBound's Saved there: the bytes the values
// starting at k may take over from the values ending at k that their
// instruction reads (mayGive), neither buffer crossing k, each buffer
// counted once at its largest.
func (s *segment) takeovers(b int32, saved []int64) {
	sc := &s.sc
	takers := sc.takers
	if len(takers) == 0 {
		return
	}
	slices.SortFunc(takers, func(x, y int32) int { return int(sc.sl[x] - sc.sl[y]) })
	for i := 0; i < len(takers); {
		k := sc.sl[takers[i]]
		j := i
		for j < len(takers) && sc.sl[takers[j]] == k {
			j++
		}
		for _, buf := range sc.gave {
			sc.give[buf] = 0
		}
		for _, buf := range sc.took {
			sc.take[buf] = 0
		}
		sc.gave, sc.took = sc.gave[:0], sc.took[:0]
		for _, y := range takers[i:j] {
			yb := s.vals[y].buf
			givers := s.givers[y]
			if len(givers) == 0 || s.crossing(yb, k) {
				continue
			}
			for _, g := range givers {
				x, op := g.x, g.op
				xb := s.vals[x].buf
				if xb == yb || sc.mark[xb] != sc.stamp || sc.en[x] != k || s.crossing(xb, k) {
					continue
				}
				if !s.mayGive(x, op, b) {
					continue
				}
				sz := min(s.bufs[xb].size, s.bufs[yb].size)
				if sc.give[xb] == 0 {
					sc.gave = append(sc.gave, xb)
				}
				if sc.take[yb] == 0 {
					sc.took = append(sc.took, yb)
				}
				sc.give[xb] = max(sc.give[xb], sz)
				sc.take[yb] = max(sc.take[yb], sz)
			}
		}
		var g, t int64
		for _, buf := range sc.gave {
			g += sc.give[buf]
		}
		for _, buf := range sc.took {
			t += sc.take[buf]
		}
		saved[k] = min(g, t)
		i = j
	}
}

// mayGive reports whether value x, ending at a step of block b, may be
// taken over by a user that reads it as operand op: op is x's instruction
// or its end position. When several of x's positions ran in S, any of
// them may be the last (the relaxation at the top of the file).
func (s *segment) mayGive(x int32, op *hlo.Instruction, b int32) bool {
	sv := &s.vals[x]
	v := sv.v
	if v.Inst == op {
		return true
	}
	// Order keys: before the window by time, then S (one tie), then b's
	// offsets, then after b.
	const inS, inB, after = 1 << 40, 1 << 41, 1 << 42
	key := func(l loc) int64 {
		switch l.block {
		case locNever:
			return -1
		case locPre:
			return int64(l.off)
		case locPost:
			return after
		case locSegStart:
			if s.nS == 0 {
				return inB
			}
			return inS - 1
		}
		switch {
		case l.block == b:
			return inB + int64(l.off)
		case s.inS[l.block]:
			return inS
		}
		return after
	}
	last := int64(-2)
	var lastLoc loc
	for _, l := range sv.defEnd {
		if k := key(l); k > last {
			last, lastLoc = k, l
		}
	}
	end := v.Positions[0].Inst
	// The candidates tied in S: the definition's end (as Positions[0])
	// and positions, by index into Positions.
	var tied []int
	var tiedLoc []loc
	if last == inS {
		tied, tiedLoc = append(tied, 0), append(tiedLoc, lastLoc)
	}
	for i, l := range sv.pos {
		k := key(l)
		if k > last {
			last, end = k, v.Positions[i+1].Inst
			tied, tiedLoc = tied[:0], tiedLoc[:0]
		}
		if k == inS && last == inS {
			tied, tiedLoc = append(tied, i+1), append(tiedLoc, l)
		}
	}
	if len(tied) < 2 {
		return end == op
	}
	if t := s.tracked[x]; t >= 0 && s.lastItem[t] >= 0 {
		// Tracked: the latest item run is the end position.
		return v.Positions[s.lastItem[t]].Inst == op
	}
	// The last position ran in S among others. Those that surely ran
	// before another (an earlier offset of the same block, or a block
	// that must precede the other's) cannot be last; of the rest, which
	// is last depends on the order within S: take any (a relaxation).
	var cands []int
	for i, li := range tiedLoc {
		later := false
		for j, lj := range tiedLoc {
			if i == j {
				continue
			}
			// Same step: the first in Positions order is the end
			// position (a later one must be strictly later).
			if li.block == lj.block && (li.off < lj.off || li.off == lj.off && tied[j] < tied[i]) || li.block != lj.block && s.precedes(li.block, lj.block) {
				later = true
				break
			}
		}
		if !later {
			cands = append(cands, tied[i])
		}
	}
	if len(cands) == 1 {
		return v.Positions[cands[0]].Inst == op
	}
	for _, p := range cands {
		if v.Positions[p].Inst == op {
			s.relaxed++
			return true
		}
	}
	return false
}

// precedenceBlocks is the largest window whose precedence between blocks
// is computed (a bit row per block). Past it precedes answers false,
// trackEndPositions tracks nothing and mayGive relaxes. A variable so
// that the tests can force the relaxation on small windows.
var precedenceBlocks = 4096

// precedes reports whether block a must run before block b in every
// order of the window (a reaches b through the constraints). The
// reachability is computed on first use, for windows of up to 4096
// blocks; larger ones answer false (so the relaxation takes more).
func (s *segment) precedes(a, b int32) bool {
	m := len(s.blocks)
	if m > precedenceBlocks {
		return false
	}
	if s.reach == nil {
		w := (m + 63) / 64
		s.reach = make([]uint64, m*w)
		// Blocks are in incumbent (topological) order: successors come
		// later, so a reverse sweep sees them first.
		for x := m - 1; x >= 0; x-- {
			row := s.reach[x*w : (x+1)*w]
			for _, y := range s.succs[x] {
				row[y/64] |= 1 << (y % 64)
				for k, bits := range s.reach[int(y)*w : (int(y)+1)*w] {
					row[k] |= bits
				}
			}
		}
		s.reachW = w
	}
	return s.reach[int(a)*s.reachW+int(b)/64]&(1<<(b%64)) != 0
}

// evaluate runs the window in order (block indices), from an empty S,
// and returns the largest step figure and, when steps is not nil, every
// step's (steps must hold T1-T0). It leaves S empty.
func (s *segment) evaluate(order []int32, steps []int64) int64 {
	worst := int64(0)
	pos := 0
	for _, b := range order {
		var st []int64
		if steps != nil {
			st = steps[pos : pos+int(s.blen[b])]
		}
		worst = max(worst, s.cost(b, st))
		pos += int(s.blen[b])
		s.apply(b)
	}
	for i := len(order) - 1; i >= 0; i-- {
		s.undo(order[i])
	}
	return worst
}

// sequence returns c's sequence with the window in the given block order.
func (s *segment) sequence(order []int32) []*hlo.Instruction {
	seq := s.sched.Sequence(s.c)
	out := make([]*hlo.Instruction, 0, len(seq))
	out = append(out, seq[:s.lo]...)
	for _, b := range order {
		out = append(out, s.blocks[b])
	}
	return append(out, seq[s.hi:]...)
}

// freeable reports a block the exact search may run ahead of others when
// that frees at least the bytes it keeps: every buffer it touches holds a
// single value (no chained ranges to reorder), and it is no value's
// non-defining position (moving it cannot change an end position).
func (s *segment) freeable(b int32) bool {
	if s.free == nil {
		s.free = make([]int8, len(s.blocks))
		for id := range s.vals {
			for _, l := range s.vals[id].pos {
				if l.block >= 0 {
					s.free[l.block] = -1
				}
			}
		}
		for x := range s.blocks {
			if s.free[x] != 0 {
				continue
			}
			s.free[x] = 1
			for _, buf := range s.involved[x] {
				if len(s.bufs[buf].vals) > 1 {
					s.free[x] = -1
				}
			}
		}
	}
	return s.free[b] == 1
}

// source reports a block that the exact search runs only right before
// its first successor: a single step (no computation of its own) with
// successors in the window, that ends no value but its own (its operands'
// buffers own their memory, or stay live across the window), is no
// value's position, and whose values each fill a buffer of their own. Running such a block later only shortens the life of its
// outputs at every step it moves past, and its own step then holds no more
// than the step of the successor right after it (whose "between" figure
// counts its outputs already), so some best order runs it there.
func (s *segment) source(b int32) bool {
	if s.src == nil {
		s.src = make([]int8, len(s.blocks))
		for x := range s.blocks {
			s.src[x] = -1
		}
		for x := range s.blocks {
			b := int32(x)
			if len(s.succs[b]) == 0 || len(s.startIn[b]) == 0 || s.inert(b) || s.blen[b] != 1 {
				continue
			}
			ok := true
			for _, id := range s.endIn[b] {
				if s.vals[id].start.block != b {
					ok = false
				}
			}
			for _, id := range s.startIn[b] {
				if len(s.bufs[s.vals[id].buf].vals) > 1 {
					ok = false
				}
			}
			if ok {
				s.src[x] = 1
			}
		}
		for id := range s.vals {
			for _, l := range s.vals[id].pos {
				if l.block >= 0 {
					s.src[l.block] = -1
				}
			}
		}
	}
	return s.src[b] == 1
}

// inert reports a block that no relevant value has an event in: running
// it changes no figure of any other block, and its own figure is the
// bytes open across it, never above the step before it (the last step of
// the block before holds at least what it leaves open).
func (s *segment) inert(b int32) bool {
	return len(s.involved[b]) == 0 && len(s.startIn[b]) == 0 && len(s.endIn[b]) == 0
}

// staticBound returns a figure no order of the window goes below. At each
// step k of each block b it counts what every order must hold there: a
// value surely started by k (before the window, in a block that must
// precede b, or in b at an offset up to k; the window's first step when b
// cannot run first) and surely ending at k or later (after the window, in
// a block that must follow b, or in b at an offset from k on) is live at
// k, and across k-1 and k when it surely started before k. Takeovers at k
// can save at most the smaller of what starts at k and what may end
// there among those values. The largest such figure bounds every order,
// the optimum included.
func (s *segment) staticBound() int64 {
	m := len(s.blocks)
	if m > precedenceBlocks {
		return 0
	}
	s.precedes(0, 0) // builds reach
	var best int64
	L0 := int32(0)
	for _, l := range s.blen {
		L0 = max(L0, l)
	}
	live := make([]int64, L0+1)
	betw := make([]int64, L0+1)
	take := make([]int64, L0+1)
	give := make([]int64, L0+1)
	type span struct{ lo, hi int32 }
	liveIv := make([][]span, len(s.bufs))
	betwIv := make([][]span, len(s.bufs))
	crossIv := make([][]span, len(s.bufs))
	var touched []int32
	var tg [][3]int32 // takers and givers: offset, buffer, taker?
	for b := range int32(m) {
		L := s.blen[b]
		clear(live[:L+1])
		clear(betw[:L+1])
		clear(take[:L])
		clear(give[:L])
		hasPred := len(s.preds[b]) > 0
		for _, buf := range touched {
			liveIv[buf], betwIv[buf], crossIv[buf] = liveIv[buf][:0], betwIv[buf][:0], crossIv[buf][:0]
		}
		touched = touched[:0]
		tg = tg[:0]
		for id := range s.vals {
			sv := &s.vals[id]
			// The offset by which the value has surely started (-1:
			// before b; L: not surely by b's end).
			st := L
			switch {
			case sv.start.block == locPre:
				st = -1
			case sv.start.block == locSegStart:
				st = 0
				if hasPred {
					st = -1
				}
			case sv.start.block == b:
				st = sv.start.off
			case sv.start.block >= 0 && s.precedes(sv.start.block, b):
				st = -1
			}
			if st >= L {
				continue
			}
			// The offset from which it has surely not ended (L: after b;
			// -1: no sure end in or after b).
			en := int32(-1)
			if sv.post {
				en = L
			}
			for _, c := range sv.cands {
				switch {
				case c.block == b:
					en = max(en, c.off)
				case s.precedes(b, c.block):
					en = L
				}
			}
			if en < 0 || en < st {
				continue
			}
			if len(liveIv[sv.buf]) == 0 && len(betwIv[sv.buf]) == 0 {
				touched = append(touched, sv.buf)
			}
			liveIv[sv.buf] = append(liveIv[sv.buf], span{max(st, 0), min(en, L-1)})
			if st+1 <= min(en, L-1) {
				betwIv[sv.buf] = append(betwIv[sv.buf], span{st + 1, min(en, L-1)})
			}
			if st+1 <= min(en-1, L-1) {
				crossIv[sv.buf] = append(crossIv[sv.buf], span{st + 1, min(en-1, L-1)})
			}
			if sv.start.block == b && sv.v.Inst.Opcode != hlo.OpCopy {
				tg = append(tg, [3]int32{sv.start.off, sv.buf, 1})
			}
			if en < L {
				tg = append(tg, [3]int32{en, sv.buf, 0}) // may end at en
			}
		}
		// A buffer with a value surely across k takes part in no
		// takeover at k.
		for _, x := range tg {
			k, buf := x[0], x[1]
			crossing := false
			for _, iv := range crossIv[buf] {
				crossing = crossing || iv.lo <= k && k <= iv.hi
			}
			if crossing {
				continue
			}
			if x[2] == 1 {
				take[k] += s.bufs[buf].size
			} else {
				give[k] += s.bufs[buf].size
			}
		}
		for _, buf := range touched {
			size := s.bufs[buf].size
			for pass := range 2 {
				iv, arr := liveIv[buf], live
				if pass == 1 {
					iv, arr = betwIv[buf], betw
				}
				if len(iv) == 0 {
					continue
				}
				slices.SortFunc(iv, func(x, y span) int { return int(x.lo - y.lo) })
				lo, hi := iv[0].lo, iv[0].hi
				for _, x := range iv[1:] {
					if x.lo <= hi+1 {
						hi = max(hi, x.hi)
						continue
					}
					arr[lo] += size
					arr[hi+1] -= size
					lo, hi = x.lo, x.hi
				}
				arr[lo] += size
				arr[hi+1] -= size
			}
		}
		for k := int32(0); k < L; k++ {
			if k > 0 {
				live[k] += live[k-1]
				betw[k] += betw[k-1]
			}
			bt := betw[k]
			if k == 0 && s.T0 == 0 && !hasPred {
				bt = 0 // may be the program's first step
			}
			best = max(best, s.K+max(bt, live[k]-min(take[k], give[k])))

		}
	}
	return best
}

// withPost returns a copy of the segment in which the values ids (indices
// into vals) end after the window exactly when their bit in mask is set,
// as a different order around the window would make them; S is empty.
func (s *segment) withPost(ids []int32, mask int) *segment {
	c := *s
	c.vals = slices.Clone(s.vals)
	for k, id := range ids {
		c.vals[id].post = mask&(1<<k) != 0
	}
	c.sc = segScratch{}
	c.lastItem = make([]int16, len(s.lastItem))
	for i := range c.lastItem {
		c.lastItem[i] = -1
	}
	c.lastStack = nil
	c.reset()
	return &c
}
