package schedule

// The schedulers as first written, with maps keyed by instruction and
// value: the reference the faster ones must match order for order.

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
)

func refPostOrder(c *hlo.Computation) []*hlo.Instruction {
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

// refMemModel is the per-computation view the size-aware schedulers use.
type refMemModel struct {
	defines map[*hlo.Instruction][]*liveness.Value // values an instruction defines
	uses    map[*hlo.Instruction][]*liveness.Value // distinct values it reads
	users   map[*liveness.Value]int                // distinct users within the computation
	pinned  map[*liveness.Value]bool               // never freed here: parameters, constants, values leaving the computation
	liveOut map[*liveness.Value]bool               // at the computation's root
}

func refNewMemModel(a *liveness.Analysis, c *hlo.Computation) *refMemModel {
	mm := &refMemModel{defines: map[*hlo.Instruction][]*liveness.Value{}, uses: map[*hlo.Instruction][]*liveness.Value{}, users: map[*liveness.Value]int{}, pinned: map[*liveness.Value]bool{}, liveOut: map[*liveness.Value]bool{}}
	for _, in := range c.Instructions {
		n := in.Shape.NumSubshapes()
		seen := map[*liveness.Value]bool{}
		for o := 0; o < n; o++ {
			v := a.SubshapeValues(in)[o]
			if v == nil {
				continue
			}
			if in == c.Root {
				mm.pinned[v], mm.liveOut[v] = true, true
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
		seen := map[*liveness.Value]bool{}
		for _, o := range in.Operands {
			n := o.Shape.NumSubshapes()
			for k := 0; k < n; k++ {
				v := a.SubshapeValues(o)[k]
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

// refDFS follows DFSMemoryScheduler::Run and
// HloComputation::AcceptWithOperandOrder as written in XLA: the stats over
// MakeInstructionPostOrder with parameters and constants left at zero and
// the caps, then a recursive visit from the unreachable roots and last
// the root, operands and control predecessors sorted together.
func refDFS(a *liveness.Analysis) *liveness.Schedule {
	s := liveness.NewSchedule(DFS)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		mm := refNewMemModel(a, c)
		extra := map[*hlo.Instruction]int64{}
		total := map[*hlo.Instruction]int64{}
		var cumulative int64
		n := int64(len(c.Instructions))
		for _, in := range liveness.InstructionPostOrder(c) {
			if in.Opcode == hlo.OpParameter || in.Opcode == hlo.OpConstant {
				continue
			}
			var size int64
			for _, v := range mm.defines[in] {
				size = satAdd(size, v.Size)
			}
			cumulative = satAdd(cumulative, size)
			e := int64(0)
			if len(in.Users) > 0 {
				e = int64(len(in.Users) - 1)
			}
			unique := map[*hlo.Instruction]bool{}
			for _, o := range in.Operands {
				if !unique[o] {
					unique[o] = true
					e = satAdd(e, extra[o])
					size = satAdd(size, total[o])
				}
			}
			extra[in], total[in] = min(e, n), min(size, cumulative)
		}
		visited := map[*hlo.Instruction]bool{}
		var out []*hlo.Instruction
		var visit func(in *hlo.Instruction)
		visit = func(in *hlo.Instruction) {
			if visited[in] {
				return
			}
			visited[in] = true
			children := append(append([]*hlo.Instruction(nil), in.Operands...), in.ControlPredecessors()...)
			sort.SliceStable(children, func(i, j int) bool {
				x, y := children[i], children[j]
				if extra[x] != extra[y] {
					return extra[x] > extra[y]
				}
				if total[x] != total[y] {
					return total[x] > total[y]
				}
				return x.Name < y.Name
			})
			for _, ch := range children {
				visit(ch)
			}
			out = append(out, in)
		}
		for _, in := range c.Instructions {
			if len(in.Users) == 0 && len(in.ControlSuccessors()) == 0 && in != c.Root {
				visit(in)
			}
		}
		visit(c.Root)
		s.Set(c, out)
	}
	return s
}

func refList(a *liveness.Analysis) *liveness.Schedule {
	s := liveness.NewSchedule(List)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		s.Set(c, refListSchedule(a, c))
	}
	return s
}

// refListSchedule follows ReferenceListSchedule of XLA's
// hlo_memory_scheduler_test.cc (the list scheduler written the direct way)
// over hlomem's values: a priority is (bytes freed - bytes defined, user
// count), {max, max} for an effective scalar; the ready list is a multimap
// by priority, the newest of the highest priority first; after each step
// only the ready users of the step's operands whose priority changed are
// re-keyed, and only when some value's count fell to 1.
func refListSchedule(a *liveness.Analysis, c *hlo.Computation) []*hlo.Instruction {
	mm := refNewMemModel(a, c)
	remaining := make(map[*liveness.Value]int, len(mm.users))
	for v, n := range mm.users {
		remaining[v] = n
	}
	for v := range mm.liveOut {
		remaining[v]++ // the implicit use at the end of the computation
	}
	type prio struct{ freed, users int64 }
	priority := func(in *hlo.Instruction) prio {
		if effectiveScalar(in.Shape) {
			return prio{math.MaxInt64, math.MaxInt64}
		}
		var freed int64
		for _, v := range mm.uses[in] {
			if remaining[v] == 1 && !mm.pinned[v] {
				freed += v.Size
			}
		}
		if in.Opcode != hlo.OpParameter && in.Opcode != hlo.OpConstant {
			for _, v := range mm.defines[in] {
				freed -= v.Size
			}
		}
		return prio{freed, int64(len(in.Users))}
	}
	preds := map[*hlo.Instruction]int{}
	for _, in := range c.Instructions {
		seen := map[*hlo.Instruction]bool{}
		for _, u := range in.Users {
			if u.Parent == c && !seen[u] {
				seen[u] = true
				preds[u]++
			}
		}
		for _, u := range in.ControlSuccessors() {
			preds[u]++
		}
	}
	// The multimap: entries in insertion order; the best is the last of
	// the highest priority.
	type entry struct {
		p  prio
		in *hlo.Instruction
	}
	var ready []entry
	at := map[*hlo.Instruction]int{} // index in ready of a ready instruction
	insert := func(in *hlo.Instruction, p prio) {
		at[in] = len(ready)
		ready = append(ready, entry{p, in})
	}
	remove := func(in *hlo.Instruction) {
		i := at[in]
		delete(at, in)
		ready = append(ready[:i], ready[i+1:]...)
		for j := i; j < len(ready); j++ {
			at[ready[j].in] = j
		}
	}
	for _, in := range c.Instructions {
		if len(in.Operands) == 0 && len(in.ControlPredecessors()) == 0 {
			insert(in, priority(in))
		}
	}
	var out []*hlo.Instruction
	for len(ready) > 0 {
		best := 0
		for i, e := range ready {
			b := ready[best].p
			if e.p.freed > b.freed || e.p.freed == b.freed && e.p.users >= b.users {
				best = i
			}
		}
		in := ready[best].in
		remove(in)
		out = append(out, in)
		refresh := false
		for _, v := range mm.uses[in] {
			remaining[v]--
			if remaining[v] == 1 {
				refresh = true
			}
		}
		release := func(u *hlo.Instruction) {
			preds[u]--
			if preds[u] == 0 {
				insert(u, priority(u))
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
		if !refresh {
			continue
		}
		for _, o := range in.Operands {
			for _, u := range o.Users {
				i, ok := at[u]
				if !ok {
					continue
				}
				if fresh := priority(u); fresh != ready[i].p {
					remove(u)
					insert(u, fresh)
				}
			}
		}
	}
	if len(out) != len(c.Instructions) {
		// A dependency cycle (rejected by hlo.Verify): fall back to post-order.
		return refPostOrder(c)
	}
	return out
}

// TestSchedulersMatchReferenceCorpus: post-order, DFS and list give, computation
// for computation, the orders of the reference implementations, on every
// corpus module (Mixtral included) and on random modules.
func TestSchedulersMatchReferenceCorpus(t *testing.T) {
	check := func(name string, m *hlo.Module) {
		a, err := liveness.Analyze(m, liveness.Options{})
		require.NoError(t, err, name)
		for _, c := range sequentialComputations(m, a.Kinds) {
			require.Equal(t, names(refPostOrder(c)), names(postOrder(c)), "%s: post-order of %s", name, c.Name)
		}
		for _, p := range []struct {
			what     string
			new, ref func(*liveness.Analysis) *liveness.Schedule
		}{{"dfs", DFSOrder, refDFS}, {"list", ListOrder, refList}} {
			got, want := p.new(a), p.ref(a)
			for _, c := range sequentialComputations(m, a.Kinds) {
				require.Equal(t, names(want.Sequence(c)), names(got.Sequence(c)), "%s: %s of %s", name, p.what, c.Name)
			}
		}
	}
	n := 0
	corpusmod.ForModules(t, []string{"hlo/*/*.hlo", "paired-jax/*/*after_optimizations.txt"}, func(t *testing.T, f string, m *hlo.Module) {
		_, err := hlo.FlattenCallGraph(m)
		require.NoError(t, err)
		check(filepath.Base(f), m)
		n++
	})
	for seed := uint64(0); seed < 300; seed++ {
		m, err := hlo.ParseModule("rand.hlo", randhlo.Generate(seed, randhlo.Options{Instructions: 5 + int(seed%120)}))
		require.NoError(t, err)
		check(fmt.Sprint("random ", seed), m)
		n++
	}
	require.GreaterOrEqual(t, n, corpus.Enough(601, n))
}

func names(ins []*hlo.Instruction) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.Name
	}
	return out
}
