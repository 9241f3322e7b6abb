package liveness

// Memory-minimising schedulers, after XLA's hlo_memory_scheduler.cc. Each
// orders every sequential computation on its own; all respect operands and
// control predecessors.
//
//   - PostOrder: XLA's MakeInstructionPostOrder, a depth-first post-order
//     from each instruction without users, first operand first.
//   - DFS: a post-order that visits first the operands with more extra
//     users (users beyond the first, summed over the operand's subgraph),
//     then those with larger subgraph sizes, then by name
//     (DFSMemoryScheduler).
//   - List: greedy over the ready instructions by the bytes the choice
//     frees minus the bytes it defines, then by user count; effective
//     scalars first (ListMemoryScheduler). Parameters and constants never
//     free anything.
//   - Best: all three (and the module's own order), keeping the one with
//     the smallest lower bound (XLA's DefaultMemoryScheduler; ties go to
//     list, then DFS).
//
// Values are the unit of memory: an instruction defines the values it
// defines, and frees a value when it is the last unscheduled instruction of
// the computation that uses it, unless the value leaves the computation
// (appears at its root) or is a parameter.

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/hlomem/hlomem/hlo"
)

// Scheduler names accepted by ScheduleByName.
const (
	SchedKeep      = "keep"
	SchedPostOrder = "postorder"
	SchedDFS       = "dfs"
	SchedList      = "list"
	SchedBest      = "best"
)

// SchedulerNames lists the scheduler names in the order Best tries them.
var SchedulerNames = []string{SchedList, SchedDFS, SchedPostOrder}

// ScheduleByName returns the schedule the named scheduler makes for the
// analysed module ("keep" is the module's own order).
func ScheduleByName(a *Analysis, name string) (*Schedule, error) {
	switch name {
	case SchedKeep:
		return ModuleOrder(a.Module), nil
	case SchedPostOrder:
		return PostOrder(a.Module), nil
	case SchedDFS:
		return DFS(a), nil
	case SchedList:
		return List(a), nil
	case SchedBest:
		s, _, err := Best(a)
		return s, err
	}
	return nil, fmt.Errorf("liveness: unknown scheduler %q (want keep, postorder, dfs, list or best)", name)
}

func sequentialComputations(m *hlo.Module, kinds map[*hlo.Computation]CompKind) []*hlo.Computation {
	var out []*hlo.Computation
	for _, c := range m.Computations {
		if kinds == nil || kinds[c] == Sequential {
			out = append(out, c)
		}
	}
	return out
}

// PostOrder returns XLA's post-order schedule of every computation
// (InstructionPostOrder).
func PostOrder(m *hlo.Module) *Schedule {
	s := NewSchedule(SchedPostOrder)
	for _, c := range m.Computations {
		s.Set(c, InstructionPostOrder(c))
	}
	return s
}

// postOrder returns c's instructions in depth-first post-order, starting
// from the root and then from every instruction nothing depends on, in text
// order. order, when not nil, sorts each instruction's operands first.
func postOrder(c *hlo.Computation, order func([]*hlo.Instruction)) []*hlo.Instruction {
	out := make([]*hlo.Instruction, 0, len(c.Instructions))
	state := make(map[*hlo.Instruction]uint8, len(c.Instructions))
	type frame struct {
		in   *hlo.Instruction
		deps []*hlo.Instruction
		next int
	}
	deps := func(in *hlo.Instruction) []*hlo.Instruction {
		d := make([]*hlo.Instruction, 0, len(in.Operands)+len(in.ControlPredecessors()))
		d = append(d, in.ControlPredecessors()...)
		seen := make(map[*hlo.Instruction]bool, len(in.Operands))
		var ops []*hlo.Instruction
		for _, o := range in.Operands {
			if !seen[o] {
				seen[o] = true
				ops = append(ops, o)
			}
		}
		if order != nil {
			order(ops)
		}
		return append(d, ops...)
	}
	visit := func(start *hlo.Instruction) {
		if state[start] != 0 {
			return
		}
		stack := []frame{{in: start, deps: deps(start)}}
		state[start] = 1
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next < len(f.deps) {
				d := f.deps[f.next]
				f.next++
				if state[d] == 0 {
					state[d] = 1
					stack = append(stack, frame{in: d, deps: deps(d)})
				}
				continue
			}
			state[f.in] = 2
			out = append(out, f.in)
			stack = stack[:len(stack)-1]
		}
	}
	if c.Root != nil {
		visit(c.Root)
	}
	for _, in := range c.Instructions {
		if len(in.Users) == 0 && len(in.ControlSuccessors()) == 0 {
			visit(in)
		}
	}
	for _, in := range c.Instructions {
		visit(in)
	}
	return out
}

// memModel is the per-computation view the size-aware schedulers use.
type memModel struct {
	defines map[*hlo.Instruction][]*Value // values an instruction defines
	uses    map[*hlo.Instruction][]*Value // distinct values it reads
	users   map[*Value]int                // distinct users within the computation
	pinned  map[*Value]bool               // never freed here: parameters, constants, values leaving the computation
}

func newMemModel(a *Analysis, c *hlo.Computation) *memModel {
	mm := &memModel{defines: map[*hlo.Instruction][]*Value{}, uses: map[*hlo.Instruction][]*Value{}, users: map[*Value]int{}, pinned: map[*Value]bool{}}
	for _, in := range c.Instructions {
		n := in.Shape.NumSubshapes()
		seen := map[*Value]bool{}
		for o := 0; o < n; o++ {
			v := a.slots[in.FirstValue+o]
			if v == nil {
				continue
			}
			if in == c.Root {
				mm.pinned[v] = true
			}
			if v.Inst == in && !seen[v] {
				seen[v] = true
				mm.defines[in] = append(mm.defines[in], v)
				if in.Opcode == hlo.OpParameter || in.Opcode == hlo.OpConstant {
					mm.pinned[v] = true
				}
			}
		}
	}
	for _, in := range c.Instructions {
		seen := map[*Value]bool{}
		for _, o := range in.Operands {
			n := o.Shape.NumSubshapes()
			for k := 0; k < n; k++ {
				v := a.slots[o.FirstValue+k]
				if v == nil || seen[v] {
					continue
				}
				seen[v] = true
				mm.uses[in] = append(mm.uses[in], v)
				mm.users[v]++
			}
		}
	}
	// Values defined outside c (parameters of the caller reach c through
	// its parameters) are pinned: c cannot free them.
	for _, vs := range mm.uses {
		for _, v := range vs {
			if v.Inst.Parent != c {
				mm.pinned[v] = true
			}
		}
	}
	return mm
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// DFS returns XLA's DFS memory schedule of every sequential computation.
func DFS(a *Analysis) *Schedule {
	s := NewSchedule(SchedDFS)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		mm := newMemModel(a, c)
		extra := map[*hlo.Instruction]int64{}
		total := map[*hlo.Instruction]int64{}
		for _, in := range postOrder(c, nil) {
			var size int64
			for _, v := range mm.defines[in] {
				size = satAdd(size, v.Size)
			}
			e := int64(0)
			if len(in.Users) > 0 {
				e = int64(len(in.Users) - 1)
			}
			for _, o := range in.Operands {
				e = satAdd(e, extra[o])
				size = satAdd(size, total[o])
			}
			extra[in], total[in] = e, size
		}
		s.Set(c, postOrder(c, func(ops []*hlo.Instruction) {
			sort.SliceStable(ops, func(i, j int) bool {
				x, y := ops[i], ops[j]
				if extra[x] != extra[y] {
					return extra[x] > extra[y]
				}
				if total[x] != total[y] {
					return total[x] > total[y]
				}
				return x.Name < y.Name
			})
		}))
	}
	return s
}

// List returns XLA's list memory schedule of every sequential computation.
func List(a *Analysis) *Schedule {
	s := NewSchedule(SchedList)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		s.Set(c, listSchedule(a, c))
	}
	return s
}

type readyEntry struct {
	in       *hlo.Instruction
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

func listSchedule(a *Analysis, c *hlo.Computation) []*hlo.Instruction {
	mm := newMemModel(a, c)
	remaining := make(map[*Value]int, len(mm.users))
	for v, n := range mm.users {
		remaining[v] = n
	}
	pos := make(map[*hlo.Instruction]int, len(c.Instructions))
	deps := make(map[*hlo.Instruction]int, len(c.Instructions))
	for i, in := range c.Instructions {
		pos[in] = i
		seen := map[*hlo.Instruction]bool{}
		for _, o := range in.Operands {
			if !seen[o] {
				seen[o] = true
				deps[in]++
			}
		}
		deps[in] += len(in.ControlPredecessors())
	}
	priority := func(in *hlo.Instruction) int64 {
		var freed, defined int64
		if in.Opcode != hlo.OpParameter && in.Opcode != hlo.OpConstant {
			for _, v := range mm.defines[in] {
				defined += v.Size
			}
		}
		for _, v := range mm.uses[in] {
			if remaining[v] == 1 && !mm.pinned[v] {
				freed += v.Size
			}
		}
		return freed - defined
	}
	version := map[*hlo.Instruction]int{}
	seq := 0
	entry := func(in *hlo.Instruction) *readyEntry {
		version[in]++
		seq++
		return &readyEntry{in: in, seq: seq, priority: priority(in), scalar: effectiveScalar(in.Shape), users: len(in.Users), version: version[in]}
	}
	var h readyHeap
	ready := map[*hlo.Instruction]bool{}
	for _, in := range c.Instructions {
		if deps[in] == 0 {
			ready[in] = true
			h = append(h, entry(in))
		}
	}
	heap.Init(&h)
	// lastUser returns the one unscheduled user of v in c, if ready.
	usersOf := map[*Value][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, v := range mm.uses[in] {
			usersOf[v] = append(usersOf[v], in)
		}
	}
	done := map[*hlo.Instruction]bool{}
	out := make([]*hlo.Instruction, 0, len(c.Instructions))
	for h.Len() > 0 {
		e := heap.Pop(&h).(*readyEntry)
		if done[e.in] || e.version != version[e.in] {
			continue
		}
		in := e.in
		done[in] = true
		out = append(out, in)
		for _, v := range mm.uses[in] {
			remaining[v]--
			if remaining[v] == 1 {
				// The last user's priority rises: re-key it.
				for _, u := range usersOf[v] {
					if !done[u] && ready[u] {
						heap.Push(&h, entry(u))
					}
				}
			}
		}
		release := func(u *hlo.Instruction) {
			deps[u]--
			if deps[u] == 0 {
				ready[u] = true
				heap.Push(&h, entry(u))
			}
		}
		seen := map[*hlo.Instruction]bool{}
		for _, u := range in.Users {
			if u.Parent == c && !seen[u] {
				seen[u] = true
				release(u)
			}
		}
		for _, u := range in.ControlSuccessors() {
			release(u)
		}
	}
	if len(out) != len(c.Instructions) {
		// A dependency cycle (rejected by hlo.Verify): fall back to post-order.
		return postOrder(c, nil)
	}
	return out
}

// Candidate is one scheduler's result as Best saw it.
type Candidate struct {
	Name     string
	Schedule *Schedule
	// LivePeak is the largest total of buffers live at one step under
	// this schedule, each buffer over its whole hull and an output counted
	// apart from the operand it may reuse: the figure Best minimises. It is
	// not a lower bound of a plan (Analysis.LowerBound is).
	LivePeak int64
}

// Best runs the list, DFS and post-order schedulers, and considers the
// module's own order too when it is a valid schedule, and returns the
// schedule whose live peak (Candidate.LivePeak) is smallest, with every
// candidate's. Ties go to list, then DFS, then post-order, as
// in XLA's DefaultMemoryScheduler. It leaves a analysed under the chosen
// schedule.
func Best(a *Analysis) (*Schedule, []Candidate, error) {
	names := append(append([]string(nil), SchedulerNames...), SchedKeep)
	cands := make([]Candidate, len(names))
	tls := make([]*timeline, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			// The schedulers only read the analysis; each candidate is laid
			// out and scored on its own timeline.
			defer wg.Done()
			s, err := ScheduleByName(a, name)
			if err != nil {
				errs[i] = err
				return
			}
			if err := s.Validate(a.Module, a.Kinds); err != nil {
				if name == SchedKeep {
					return // text with forward references: not a candidate
				}
				errs[i] = err
				return
			}
			tls[i] = a.layout(s)
			cands[i] = Candidate{Name: name, Schedule: s, LivePeak: tls[i].livePeak(a)}
		}()
	}
	wg.Wait()
	best := -1
	var out []Candidate
	for i := range names {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		if tls[i] == nil {
			continue
		}
		out = append(out, cands[i])
		if best < 0 || cands[i].LivePeak < cands[best].LivePeak {
			best = i
		}
	}
	a.install(cands[best].Schedule, tls[best])
	return cands[best].Schedule, out, nil
}
