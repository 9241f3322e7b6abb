package schedule

// Memory-minimising schedulers, after XLA's hlo_memory_scheduler.cc. Each
// orders every sequential computation on its own; all respect operands and
// control predecessors. xla_scheduler_test.go holds them to the cases of
// XLA's hlo_memory_scheduler_test.cc and to the rules below, and
// scheduler_ref_test.go to direct ports of XLA's code.
//
//   - PostOrder: XLA's MakeInstructionPostOrder, a depth-first post-order
//     from each instruction without users, first operand first
//     (liveness.PostOrder, which the analysis itself falls back on).
//   - DFSOrder: DFSMemoryScheduler, a post-order from the unreachable
//     roots and then the root that visits first the operands (and control
//     predecessors) with more extra users (users beyond the first, summed
//     over the operand's subgraph), then those with larger subgraph sizes,
//     then by name; parameters and constants count for neither, and the
//     sums are capped as XLA caps them.
//   - ListOrder: ListMemoryScheduler, greedy over the ready instructions
//     by the bytes the choice frees minus the bytes it defines, then by
//     user count, the newest first among equals; effective scalars first
//     (all equal). Parameters and constants never free anything. After a
//     step only the ready users of its operands are re-keyed, as XLA does:
//     other priorities may be stale.
//   - HeuristicBest: all three (and the module's own order), keeping the
//     one with the smallest live peak (XLA's DefaultMemoryScheduler, which
//     considers the three only; ties go to list, then DFS). The name
//     "heuristic"; "best" named it before it became the search
//     (RunSearch, search.go), which starts from these heuristics scored by
//     the lower bound and searches below them.
//
// Values are the unit of memory: an instruction defines the values it
// defines, and frees a value when it is the last unscheduled instruction of
// the computation that uses it, unless the value leaves the computation
// (appears at its root) or is a parameter, a constant or defined in
// another computation (XLA frees the latter in the callee of a call or
// conditional; hlomem does not).

import (
	"container/heap"
	"context"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

func sequentialComputations(m *hlo.Module, kinds []liveness.CompKind) []*hlo.Computation {
	var out []*hlo.Computation
	for _, c := range m.Computations {
		if kinds == nil || kinds[c.ID] == liveness.Sequential {
			out = append(out, c)
		}
	}
	return out
}

// memModel is the per-computation view the size-aware schedulers use:
// instructions by their number in the computation (hlo.InstructionIndex), values by a
// number local to the computation. The per-instruction lists are cut from
// flat arrays, which keeps a million-instruction module to a few
// allocations.
type memModel struct {
	ix      hlo.InstructionIndex
	vals    []*liveness.Value // the values the computation defines or reads
	def     []int32           // the distinct values instruction i defines: def[defAt[i]:defAt[i+1]]
	defAt   []int32
	use     []int32 // the distinct values instruction i reads: use[useAt[i]:useAt[i+1]]
	useAt   []int32
	users   []int32 // per value: distinct users within the computation
	pinned  []bool  // never freed here: parameters, constants, values leaving the computation
	liveOut []bool  // at the computation's root
}

func (mm *memModel) defines(i int) []int32 { return mm.def[mm.defAt[i]:mm.defAt[i+1]] }
func (mm *memModel) uses(i int) []int32    { return mm.use[mm.useAt[i]:mm.useAt[i+1]] }

// localValues maps value IDs to the numbers local to one computation
// (memModel.vals). One serves every computation of a scheduler run: each
// memModel resets the entries it set, so many small computations do not
// each pay for every value of the module.
type localValues []int32

func newLocalValues(a *liveness.Analysis) localValues {
	l := make(localValues, len(a.Values))
	for i := range l {
		l[i] = -1
	}
	return l
}

// release forgets mm's local numbers, for the next computation.
func (l localValues) release(mm *memModel) {
	for _, v := range mm.vals {
		l[v.ID] = -1
	}
}

func newMemModel(a *liveness.Analysis, c *hlo.Computation, local localValues) *memModel {
	n := len(c.Instructions)
	mm := &memModel{ix: hlo.NewInstructionIndex(c), defAt: make([]int32, n+1), useAt: make([]int32, n+1)}
	defer local.release(mm)
	var stamp []int32 // per value: the last instruction (+1) that saw it
	id := func(v *liveness.Value) int32 {
		lv := local[v.ID]
		if lv < 0 {
			lv = int32(len(mm.vals))
			local[v.ID] = lv
			mm.vals = append(mm.vals, v)
			mm.users = append(mm.users, 0)
			mm.pinned = append(mm.pinned, false)
			mm.liveOut = append(mm.liveOut, false)
			stamp = append(stamp, 0)
		}
		return lv
	}
	for i, in := range c.Instructions {
		mm.defAt[i] = int32(len(mm.def))
		k := in.Shape.NumSubshapes()
		for o := 0; o < k; o++ {
			v := a.SubshapeValues(in)[o]
			if v == nil {
				continue
			}
			lv := id(v)
			if in == c.Root {
				mm.pinned[lv], mm.liveOut[lv] = true, true
			}
			if v.Inst == in && stamp[lv] != int32(i+1) {
				stamp[lv] = int32(i + 1)
				mm.def = append(mm.def, lv)
				if in.Opcode == hlo.OpParameter || in.Opcode == hlo.OpConstant {
					mm.pinned[lv] = true
				}
			}
		}
	}
	mm.defAt[n] = int32(len(mm.def))
	clear(stamp)
	for i, in := range c.Instructions {
		mm.useAt[i] = int32(len(mm.use))
		for _, o := range in.Operands {
			k := o.Shape.NumSubshapes()
			for j := 0; j < k; j++ {
				v := a.SubshapeValues(o)[j]
				if v == nil {
					continue
				}
				lv := id(v)
				if stamp[lv] == int32(i+1) {
					continue
				}
				stamp[lv] = int32(i + 1)
				mm.use = append(mm.use, lv)
				mm.users[lv]++
				// Values defined outside c (parameters of the caller reach
				// c through its parameters) are pinned: c cannot free them.
				if v.Inst.Parent != c {
					mm.pinned[lv] = true
				}
			}
		}
	}
	mm.useAt[n] = int32(len(mm.use))
	return mm
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// DFSOrder returns XLA's DFS memory schedule of every sequential
// computation (the scheduler DFS names), after DFSMemoryScheduler::Run.
// Over XLA's post-order (liveness.InstructionPostOrder) each instruction
// gets its extra users (users beyond the first) and its size (the bytes of
// the values it defines), each plus those of its unique operands;
// parameters and constants get neither. A size is capped by the total of
// the sizes reached so far in that post-order, extra users by the number
// of instructions, as XLA does against double counting in a DAG. The
// order is then XLA's HloComputation::AcceptWithOperandOrder (dfsVisit):
// operands and control predecessors by more extra users, then larger
// size, then name.
func DFSOrder(a *liveness.Analysis) *liveness.Schedule {
	s := liveness.NewSchedule(DFS)
	local := newLocalValues(a)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		mm := newMemModel(a, c, local)
		n := len(c.Instructions)
		extra := make([]int64, n)
		total := make([]int64, n)
		at := func(vs []int64, in *hlo.Instruction) int64 {
			if i := mm.ix.Of(in); i >= 0 {
				return vs[i]
			}
			return 0
		}
		var cumulative int64
		for _, in := range liveness.InstructionPostOrder(c) {
			i := mm.ix.Of(in)
			if i < 0 || in.Opcode == hlo.OpParameter || in.Opcode == hlo.OpConstant {
				continue
			}
			var size int64
			for _, lv := range mm.defines(i) {
				size = satAdd(size, mm.vals[lv].Size)
			}
			cumulative = satAdd(cumulative, size)
			e := int64(0)
			if len(in.Users) > 0 {
				e = int64(len(in.Users) - 1)
			}
			for _, o := range distinct(in.Operands) {
				e = satAdd(e, at(extra, o))
				size = satAdd(size, at(total, o))
			}
			extra[i], total[i] = min(e, int64(n)), min(size, cumulative)
		}
		s.Set(c, dfsVisit(c, func(x, y *hlo.Instruction) bool {
			if ex, ey := at(extra, x), at(extra, y); ex != ey {
				return ex > ey
			}
			if tx, ty := at(total, x), at(total, y); tx != ty {
				return tx > ty
			}
			return x.Name < y.Name
		}))
	}
	return s
}

// ListOrder returns XLA's list memory schedule of every sequential
// computation (the scheduler List names).
func ListOrder(a *liveness.Analysis) *liveness.Schedule {
	s := liveness.NewSchedule(List)
	local := newLocalValues(a)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		s.Set(c, listSchedule(a, c, local))
	}
	return s
}

type readyEntry struct {
	in       *hlo.Instruction
	idx      int   // in's number in its computation
	seq      int   // insertion order: among equal priorities the newest wins, as in XLA's multimap
	priority int64 // bytes freed - bytes defined
	scalar   bool
	users    int
	version  int
}

type readyHeap []*readyEntry

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.scalar != b.scalar {
		return a.scalar
	}
	if a.scalar {
		// Every effective scalar has the same priority ({max, max} in
		// XLA): the newest runs first.
		return a.seq > b.seq
	}
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.users != b.users {
		return a.users > b.users
	}
	return a.seq > b.seq
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(*readyEntry)) }
func (h *readyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func effectiveScalar(s hlo.Shape) bool {
	if !s.IsArray() {
		return false
	}
	for _, d := range s.Dims {
		if d != 1 {
			return false
		}
	}
	return true
}

func listSchedule(a *liveness.Analysis, c *hlo.Computation, local localValues) []*hlo.Instruction {
	mm := newMemModel(a, c, local)
	n := len(c.Instructions)
	// A value's unscheduled uses, and one more for a value leaving the
	// computation, as XLA counts them: its count falls to 1 only when
	// every reader has run, which matters for when ready priorities are
	// re-keyed.
	remaining := append([]int32(nil), mm.users...)
	for lv, out := range mm.liveOut {
		if out {
			remaining[lv]++
		}
	}
	deps := make([]int32, n)
	for i, in := range c.Instructions {
		deps[i] = int32(len(distinct(in.Operands)) + len(in.ControlPredecessors()))
	}
	priority := func(i int, in *hlo.Instruction) int64 {
		var freed, defined int64
		if in.Opcode != hlo.OpParameter && in.Opcode != hlo.OpConstant {
			for _, lv := range mm.defines(i) {
				defined += mm.vals[lv].Size
			}
		}
		for _, lv := range mm.uses(i) {
			if remaining[lv] == 1 && !mm.pinned[lv] {
				freed += mm.vals[lv].Size
			}
		}
		return freed - defined
	}
	version := make([]int32, n)
	queued := make([]bool, n)   // in the ready list, not yet scheduled
	current := make([]int64, n) // the priority of i's entry in the ready list
	scalar := make([]bool, n)
	for i, in := range c.Instructions {
		scalar[i] = effectiveScalar(in.Shape)
	}
	ru := newReadyUsers(c, mm.ix)
	seq := 0
	// entry makes i's entry in the ready list at priority p, the newest,
	// and makes it i's current one.
	entry := func(i int, p int64) *readyEntry {
		version[i]++
		seq++
		if !queued[i] && !scalar[i] {
			ru.add(i)
		}
		queued[i], current[i] = true, p
		in := c.Instructions[i]
		return &readyEntry{in: in, idx: i, seq: seq, priority: p, scalar: scalar[i], users: len(in.Users), version: int(version[i])}
	}
	var h readyHeap
	for i, in := range c.Instructions {
		if deps[i] == 0 {
			h = append(h, entry(i, priority(i, in)))
		}
	}
	heap.Init(&h)
	seen := make([]int32, n) // per instruction: the step (+1) that released it
	out := make([]*hlo.Instruction, 0, n)
	for h.Len() > 0 {
		e := heap.Pop(&h).(*readyEntry)
		i := e.idx
		if !queued[i] || e.version != int(version[i]) {
			continue
		}
		in := e.in
		queued[i] = false
		if !scalar[i] {
			ru.remove(i)
		}
		out = append(out, in)
		adjust := false
		for _, lv := range mm.uses(i) {
			remaining[lv]--
			if remaining[lv] == 1 {
				adjust = true
			}
		}
		// Newly ready users and control successors join the ready list
		// first, in XLA's order (users, then control successors).
		release := func(u int) {
			deps[u]--
			if deps[u] == 0 {
				heap.Push(&h, entry(u, priority(u, c.Instructions[u])))
			}
		}
		step := int32(len(out))
		for _, u := range in.Users {
			if u.Parent != c {
				continue
			}
			if k := mm.ix.Of(u); k >= 0 && seen[k] != step {
				seen[k] = step
				release(k)
			}
		}
		for _, u := range in.ControlSuccessors() {
			if k := mm.ix.Of(u); k >= 0 {
				release(k)
			}
		}
		if !adjust {
			continue
		}
		// A value's count fell to 1: XLA re-keys the ready users of the
		// scheduled instruction's operands whose priority changed, and
		// those only; every other ready instruction keeps its priority,
		// stale or not. A re-keyed entry is the newest of its priority.
		// ru lists, per operand, exactly the users this walk of its
		// Users in order would reach: queued, not scalar, at the
		// position of their first appearance.
		for _, o := range in.Operands {
			for _, j := range ru.of(mm.ix.Of(o)) {
				u := o.Users[j]
				k := mm.ix.Of(u)
				if p := priority(k, u); p != current[k] {
					heap.Push(&h, entry(k, p))
				}
			}
		}
	}
	if len(out) != len(c.Instructions) {
		// A dependency cycle (rejected by hlo.Verify): fall back to post-order.
		return postOrder(c)
	}
	return out
}

// readyUsers indexes, for the list scheduler's re-keying, the users in
// the ready list of each instruction of a computation by their position
// in its Users: walking every user of an operand read by thousands (a
// weight every layer reads) at every step made the list scheduler
// quadratic, while the ready ones among them are few.
type readyUsers struct {
	// at[at0[k]:at0[k+1]] are instruction k's operands (their numbers in
	// the computation) and its first position in each one's Users, pos.
	at0      []int32
	ops, pos []int32
	// ready[o] are the positions in o's Users of its queued users,
	// ascending.
	ready [][]int32
}

func newReadyUsers(c *hlo.Computation, ix hlo.InstructionIndex) *readyUsers {
	n := len(c.Instructions)
	r := &readyUsers{at0: make([]int32, n+1), ready: make([][]int32, n)}
	stamp := make([]int32, n) // per user: the operand (+1) last seen
	type edge struct{ k, o, j int32 }
	var edges []edge
	for oi, o := range c.Instructions {
		for j, u := range o.Users {
			k := ix.Of(u)
			if k < 0 || stamp[k] == int32(oi+1) {
				continue
			}
			stamp[k] = int32(oi + 1)
			edges = append(edges, edge{int32(k), int32(oi), int32(j)})
			r.at0[k+1]++
		}
	}
	for k := 0; k < n; k++ {
		r.at0[k+1] += r.at0[k]
	}
	r.ops, r.pos = make([]int32, len(edges)), make([]int32, len(edges))
	fill := slices.Clone(r.at0[:n])
	for _, e := range edges {
		r.ops[fill[e.k]], r.pos[fill[e.k]] = e.o, e.j
		fill[e.k]++
	}
	return r
}

// add records that instruction k joined the ready list.
func (r *readyUsers) add(k int) {
	for x := r.at0[k]; x < r.at0[k+1]; x++ {
		o, j := r.ops[x], r.pos[x]
		l := r.ready[o]
		at, _ := slices.BinarySearch(l, j)
		r.ready[o] = slices.Insert(l, at, j)
	}
}

// remove records that instruction k left the ready list.
func (r *readyUsers) remove(k int) {
	for x := r.at0[k]; x < r.at0[k+1]; x++ {
		o, j := r.ops[x], r.pos[x]
		l := r.ready[o]
		if at, ok := slices.BinarySearch(l, j); ok {
			r.ready[o] = slices.Delete(l, at, at+1)
		}
	}
}

// of returns the positions in the Users of instruction o (its number;
// none for -1) of its users in the ready list, ascending.
func (r *readyUsers) of(o int) []int32 {
	if o < 0 {
		return nil
	}
	return r.ready[o]
}

// Candidate is one scheduler's result as Best saw it.
type Candidate struct {
	Name     string
	Schedule *liveness.Schedule
	// LivePeak is the largest total of buffers live at one step under
	// this schedule, each buffer over its whole hull and an output counted
	// apart from the operand it may reuse: the figure HeuristicBest
	// minimises. It is not a lower bound of a plan (Analysis.LowerBound
	// is).
	LivePeak int64
	// LowerBound is liveness.Analysis.LowerBound under this schedule
	// (before any copies it may need), the figure RunSearch and RunOptimal
	// minimise; set by them, not by HeuristicBest.
	LowerBound int64
	// NeedsCopies reports that the order reads a value after its buffer's
	// next value is written (liveness.Analysis.Interference); AfterCopies
	// is then the module's LowerBound once the copies that repair it are in (-1 when
	// they do not settle, or when it was not worth computing: the order's
	// bound before the copies was no better than that of an order needing
	// none, and it is not XLA's choice), and LowerBound otherwise. Set by
	// Search and Optimal.
	NeedsCopies bool
	AfterCopies int64
}

// HeuristicBest runs the list, DFS and post-order schedulers, and
// considers the module's own order too when it is a valid schedule, and
// returns the schedule whose live peak (Candidate.LivePeak) is smallest,
// with every candidate's. Ties go to list, then DFS, then post-order, as
// in XLA's DefaultMemoryScheduler (which "best" named before it became
// Search). It leaves a analysed under the chosen schedule.
func HeuristicBest(a *liveness.Analysis) (*liveness.Schedule, []Candidate, error) {
	names := append(append([]string(nil), Heuristics...), Keep)
	cands := make([]Candidate, len(names))
	ok := make([]bool, len(names))
	errs := make([]error, len(names))
	// The schedulers only read the analysis; each candidate is laid out
	// and scored on its own timeline. As many run at once as there are
	// processors, and only the best timeline so far is kept (ties to the
	// earlier name), which bounds memory on large modules.
	var mu sync.Mutex
	best := -1
	var bestTL *liveness.Timeline
	run := func(i int) {
		name := names[i]
		s, err := ByName(context.Background(), a, name, Options{})
		if err != nil {
			errs[i] = err
			return
		}
		if err := s.Validate(a.Module, a.Kinds); err != nil {
			if name == Keep {
				return // text with forward references: not a candidate
			}
			errs[i] = err
			return
		}
		tl := a.Layout(s)
		c := Candidate{Name: name, Schedule: s, LivePeak: tl.LivePeak(a)}
		mu.Lock()
		defer mu.Unlock()
		cands[i], ok[i] = c, true
		if best < 0 || c.LivePeak < cands[best].LivePeak || c.LivePeak == cands[best].LivePeak && i < best {
			best, bestTL = i, tl
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				run(i)
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []Candidate
	for i := range names {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		if ok[i] {
			out = append(out, cands[i])
		}
	}
	a.Install(cands[best].Schedule, bestTL)
	return cands[best].Schedule, out, nil
}
