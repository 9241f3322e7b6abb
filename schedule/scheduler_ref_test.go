package schedule

// The schedulers as first written, with maps keyed by instruction and
// value: the reference the faster ones must match order for order.

import (
	"container/heap"
	"fmt"
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

func refPostOrder(c *hlo.Computation, order func([]*hlo.Instruction)) []*hlo.Instruction {
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

// refMemModel is the per-computation view the size-aware schedulers use.
type refMemModel struct {
	defines map[*hlo.Instruction][]*liveness.Value // values an instruction defines
	uses    map[*hlo.Instruction][]*liveness.Value // distinct values it reads
	users   map[*liveness.Value]int                // distinct users within the computation
	pinned  map[*liveness.Value]bool               // never freed here: parameters, constants, values leaving the computation
}

func refNewMemModel(a *liveness.Analysis, c *hlo.Computation) *refMemModel {
	mm := &refMemModel{defines: map[*hlo.Instruction][]*liveness.Value{}, uses: map[*hlo.Instruction][]*liveness.Value{}, users: map[*liveness.Value]int{}, pinned: map[*liveness.Value]bool{}}
	for _, in := range c.Instructions {
		n := in.Shape.NumSubshapes()
		seen := map[*liveness.Value]bool{}
		for o := 0; o < n; o++ {
			v := a.SubshapeValues(in)[o]
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

func refDFS(a *liveness.Analysis) *liveness.Schedule {
	s := liveness.NewSchedule(DFS)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		mm := refNewMemModel(a, c)
		extra := map[*hlo.Instruction]int64{}
		total := map[*hlo.Instruction]int64{}
		for _, in := range refPostOrder(c, nil) {
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
		s.Set(c, refPostOrder(c, func(ops []*hlo.Instruction) {
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

func refList(a *liveness.Analysis) *liveness.Schedule {
	s := liveness.NewSchedule(List)
	for _, c := range sequentialComputations(a.Module, a.Kinds) {
		s.Set(c, refListSchedule(a, c))
	}
	return s
}

func refListSchedule(a *liveness.Analysis, c *hlo.Computation) []*hlo.Instruction {
	mm := refNewMemModel(a, c)
	remaining := make(map[*liveness.Value]int, len(mm.users))
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
	usersOf := map[*liveness.Value][]*hlo.Instruction{}
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
		return refPostOrder(c, nil)
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
			require.Equal(t, names(refPostOrder(c, nil)), names(postOrder(c, nil)), "%s: post-order of %s", name, c.Name)
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
