package exec

// Mutation tests of the shadow check's independence from liveness: the
// analysis is corrupted before assignment (a live range cut short, two
// interfering buffers merged, a value split out of the buffer it must
// share), the corrupted analysis is planned, and the shadow check, which
// reads the IR rather than the analysis' uses, ranges and buffers, must
// refuse every plan the corruption actually broke. The old check, kept
// below as livenessShadow (what Shadow did before it read the IR itself),
// trusts the corrupted analysis and passes such plans; the test counts
// how many, so that it shows what the independence buys.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// mutation is one corruption of an analysis: apply makes it, undo
// restores the analysis exactly.
type mutation struct {
	kind  string
	what  string
	apply func()
	undo  func()
}

const (
	mutShorten = "shortened range"
	mutMerge   = "merged buffers"
	mutSplit   = "dropped alias"
)

// mutationSource is a module to corrupt: its name and HLO text, or a
// file.
type mutationSource struct{ name, src, file string }

func mutationSources(t *testing.T) []mutationSource {
	srcs := []mutationSource{
		{name: "moved.hlo", file: "testdata/moved.hlo"},
		{name: "demo.hlo", file: "../testdata/demo.hlo"},
		{name: "branch_loops.hlo", src: branchLoopsModule},
		{name: "dead_loop.hlo", src: deadLoopModule},
	}
	seeds := 60
	if testing.Short() {
		seeds = 25
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		srcs = append(srcs, mutationSource{name: fmt.Sprintf("rand_%d.hlo", seed), src: randhlo.Generate(seed, randhlo.Options{Instructions: 12 + int(seed%24)})})
	}
	if d := corpus.Dir(); d != "" {
		for _, pat := range []string{
			"paired-jax/module_0035.jit_scatter.0103/*after_optimizations.txt",
			"paired-jax/module_0379.jit_scan.0064/*after_optimizations.txt",
			"paired-jax/module_0693.jit__project_tau_onto_omega.0036/*after_optimizations.txt",
			"paired/dump_rms.module_0001.SyncTensorsGraph.9/*after_optimizations.txt",
		} {
			m, _ := filepath.Glob(filepath.Join(d, pat))
			for _, f := range m {
				srcs = append(srcs, mutationSource{name: filepath.Base(filepath.Dir(f)), file: f})
			}
		}
	}
	return srcs
}

// mutationAnalyses parses and prepares src's modules.
func mutationAnalyses(s mutationSource) []*liveness.Analysis {
	if s.file != "" {
		return prepared(s.file)
	}
	m, err := hlo.ParseModule(s.name, s.src)
	if err != nil {
		return nil
	}
	a, err := preptest.Prepare(m, "")
	if err != nil {
		return nil
	}
	return []*liveness.Analysis{a}
}

// TestShadowCatchesLivenessMutations: on bundled, random and corpus
// modules, each kind of corruption of the analysis is applied until it
// has broken at least minBroken plans, and the shadow check refuses
// every broken plan. A plan is broken when, under the true analysis, two
// values of different buffers that interfere share bytes, or the values
// of one buffer (storage the IR makes one: a loop's state, an in-place
// update) are apart. The old, liveness-driven check must miss some of
// each kind: that is the bug class this check exists for.
func TestShadowCatchesLivenessMutations(t *testing.T) {
	const minBroken = 5
	type tally struct{ tried, broken, caught, oldMissed int }
	tallies := map[string]*tally{mutShorten: {}, mutMerge: {}, mutSplit: {}}
	opts := assign.Options{Algorithm: "xla"}
	ctx := context.Background()
	for _, s := range mutationSources(t) {
		for _, a := range mutationAnalyses(s) {
			base, err := assign.Assign(ctx, a, opts)
			require.NoError(t, err, s.name)
			rep, err := Shadow(ctx, base)
			require.NoError(t, err)
			require.Nil(t, rep.Violation, "%s: the intact plan: %v", s.name, rep.Violation)
			require.Empty(t, brokenPlan(base), "%s: the oracle refuses the intact plan", s.name)
			for _, mu := range mutations(a) {
				tl := tallies[mu.kind]
				if tl.broken >= 4*minBroken && tl.tried >= 50 {
					continue
				}
				tl.tried++
				mu.apply()
				as, err := assign.Assign(ctx, a, opts)
				var newRep, oldRep *ShadowReport
				if err == nil {
					newRep, err = Shadow(ctx, as)
					require.NoError(t, err)
					oldRep, err = livenessShadow(ctx, as)
					require.NoError(t, err)
				}
				mu.undo()
				if as == nil {
					continue
				}
				why := brokenPlan(as)
				if why == "" {
					continue
				}
				tl.broken++
				require.NotNil(t, newRep.Violation, "%s: %s %s broke the plan (%s), and the shadow check passed it", s.name, mu.kind, mu.what, why)
				tl.caught++
				if oldRep.Violation == nil {
					tl.oldMissed++
				}
				if tl.broken <= 2 {
					t.Logf("%s: %s %s: %s; caught: %v", s.name, mu.kind, mu.what, why, newRep.Violation)
				}
			}
		}
	}
	for _, kind := range []string{mutShorten, mutMerge, mutSplit} {
		tl := tallies[kind]
		t.Logf("%s: %d applied, %d broke the plan, %d caught, %d of those passed by the liveness-driven check", kind, tl.tried, tl.broken, tl.caught, tl.oldMissed)
		require.GreaterOrEqual(t, tl.broken, minBroken, "%s: too few broken plans to show anything", kind)
		require.Positive(t, tl.oldMissed, "%s: the liveness-driven check caught every one", kind)
	}
}

// mutations lists the corruptions of a to try, by kind, in a
// deterministic order.
func mutations(a *liveness.Analysis) []mutation {
	var out []mutation
	plain := func(v *liveness.Value) bool {
		op := v.Inst.Opcode
		return !v.IsPhi && v.Scheduled && v.Size > 0 && !v.LiveOut && op != hlo.OpParameter && op != hlo.OpConstant
	}
	// (a) A range ends one step before its last use (by live code: a
	// dead instruction's read can break nothing).
	dead := deadSteps(a.Sequence, controlCallers(a.Module))
	for _, v := range a.Values {
		if !plain(v) || len(v.Buffer.Values) != 1 || v.Range.End <= v.Range.Start || v.Range.End >= len(dead) || dead[v.Range.End] {
			continue
		}
		v := v
		r := v.Range
		out = append(out, mutation{kind: mutShorten, what: fmt.Sprintf("%s [%d,%d] to end at %d", v.Name(), r.Start, r.End, r.End-1),
			apply: func() { v.Range.End = r.End - 1 }, undo: func() { v.Range = r }})
	}
	// (b) Two single-value buffers whose values interfere become one.
	var singles []*liveness.Value
	for _, v := range a.Values {
		if plain(v) && len(v.Buffer.Values) == 1 {
			singles = append(singles, v)
		}
	}
	for i, x := range singles {
		n := 0
		for _, y := range singles[i+1:] {
			if n == 2 {
				break
			}
			if x.Color != y.Color || x.Range.End <= y.Range.Start || y.Range.End <= x.Range.Start {
				continue
			}
			n++
			out = append(out, mergeMutation(a, x, y))
		}
	}
	// (c) A value leaves the buffer the IR makes it share: a loop body's
	// result, a conditional branch's, an in-place update's output.
	for _, v := range a.Values {
		if !plain(v) || len(v.Buffer.Values) < 2 {
			continue
		}
		shared := len(liveness.InPlacePairs(v.Inst)) > 0
		for _, w := range v.Buffer.Values {
			shared = shared || w.IsPhi
		}
		if shared {
			out = append(out, splitMutation(a, v))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].kind < out[j].kind })
	return out
}

// mergeMutation puts y into x's buffer.
func mergeMutation(a *liveness.Analysis, x, y *liveness.Value) mutation {
	bx, by := x.Buffer, y.Buffer
	var saved []*liveness.Buffer
	var ids []int
	return mutation{kind: mutMerge, what: fmt.Sprintf("%s [%d,%d] and %s [%d,%d]", x.Name(), x.Range.Start, x.Range.End, y.Name(), y.Range.Start, y.Range.End),
		apply: func() {
			saved = slices.Clone(a.Buffers)
			ids = make([]int, len(saved))
			for i, b := range saved {
				ids[i] = b.ID
			}
			a.Buffers = slices.DeleteFunc(a.Buffers, func(b *liveness.Buffer) bool { return b == by })
			for i, b := range a.Buffers {
				b.ID = i
			}
			bx.Values = []*liveness.Value{x, y}
			bx.Size = max(x.Size, y.Size)
			y.Buffer = bx
		},
		undo: func() {
			a.Buffers = saved
			for i, b := range saved {
				b.ID = ids[i]
			}
			bx.Values = []*liveness.Value{x}
			bx.Size = x.Size
			y.Buffer = by
		}}
}

// splitMutation moves v out of its buffer into one of its own.
func splitMutation(a *liveness.Analysis, v *liveness.Value) mutation {
	b := v.Buffer
	var values []*liveness.Value
	var size int64
	n := 0
	return mutation{kind: mutSplit, what: fmt.Sprintf("%s out of %s's buffer", v.Name(), b.Name()),
		apply: func() {
			values, size, n = b.Values, b.Size, len(a.Buffers)
			b.Values = slices.DeleteFunc(slices.Clone(values), func(w *liveness.Value) bool { return w == v })
			b.Size = 0
			for _, w := range b.Values {
				b.Size = max(b.Size, w.Size)
			}
			nb := &liveness.Buffer{ID: n, Values: []*liveness.Value{v}, Size: v.Size, Color: v.Color}
			a.Buffers = append(a.Buffers, nb)
			v.Buffer = nb
		},
		undo: func() {
			a.Buffers = a.Buffers[:n]
			b.Values, b.Size = values, size
			v.Buffer = b
		}}
}

// brokenPlan says how as, planned on a corrupted analysis, breaks under
// the true one (restored), or "" when it does not: two values of
// different buffers sharing bytes while they interfere (XLA's
// LiveRangeInterferes on inclusive ranges: overlapping, unless one ends
// where the other starts and the later one's instruction may overwrite
// that operand), or two values of one buffer apart.
func brokenPlan(as *assign.Assignment) string {
	type at struct {
		alloc  int
		offset int64
	}
	type first struct {
		at
		v *liveness.Value
	}
	// Dead code (a scheduled module keeps it) computes nothing that
	// reaches an output: what it holds does not break the plan.
	a := as.Analysis
	dead := deadSteps(a.Sequence, controlCallers(a.Module))
	isDead := func(v *liveness.Value) bool { t := a.Time(v.Inst); return t >= 0 && dead[t] }
	bufAt := map[*liveness.Buffer]first{}
	for ai, al := range as.Allocations {
		for i, s := range al.Slots {
			v := s.Value
			if isDead(v) {
				continue
			}
			if s.Size > 0 {
				if p, ok := bufAt[v.Buffer]; !ok {
					bufAt[v.Buffer] = first{at{ai, s.Offset}, v}
				} else if p.at != (at{ai, s.Offset}) {
					return fmt.Sprintf("%s and %s, of one buffer, are apart", p.v.Name(), v.Name())
				}
			}
			for _, o := range al.Slots[i+1:] {
				w := o.Value
				if s.Size == 0 || o.Size == 0 || isDead(w) || w.Buffer == v.Buffer || s.Offset >= o.Offset+o.Size || o.Offset >= s.Offset+s.Size {
					continue
				}
				if trueInterference(as, v, w) {
					return fmt.Sprintf("%s [%d,%d] and %s [%d,%d] share bytes", v.Name(), v.Range.Start, v.Range.End, w.Name(), w.Range.Start, w.Range.End)
				}
			}
		}
	}
	return ""
}

func trueInterference(as *assign.Assignment, x, y *liveness.Value) bool {
	if !x.Scheduled || !y.Scheduled {
		return true
	}
	rx, ry := x.Range, y.Range
	if rx.Start > ry.End || ry.Start > rx.End {
		return false
	}
	// takesOver: user's instruction reads operand, through an operand
	// position it may write user over.
	takesOver := func(user, operand *liveness.Value) bool {
		in := user.Inst
		for k, o := range in.Operands {
			for ord, w := range as.Analysis.SubshapeValues(o) {
				if w == operand && mayOverwrite(as, in, user.Index, k, subshapeIndex(o.Shape, ord)) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case rx.End == ry.Start:
		return !takesOver(y, x)
	case ry.End == rx.Start:
		return !takesOver(x, y)
	}
	return true
}

// subshapeIndex returns the index of the ord-th subshape of s in
// pre-order.
func subshapeIndex(s hlo.Shape, ord int) hlo.ShapeIndex {
	var out hlo.ShapeIndex
	i := 0
	s.ForEachSubshape(func(_ hlo.Shape, ix hlo.ShapeIndex) {
		if i == ord {
			out = append(hlo.ShapeIndex{}, ix...)
		}
		i++
	})
	return out
}

// keptParameterModule is scheduled, so liveness inserts no copies: the
// false branch returns the entry parameter p, which puts p in the
// conditional's buffer, and the plan lets the true branch write its
// result n into p's bytes, which belong to the caller (p is not donated).
// Unscheduled, the same module gets a copy in the false branch and a
// plan that leaves p alone. Liveness accepts the scheduled module; it
// ought to refuse it, as it refuses other scheduled modules whose
// interference copies would have to settle.
const keptParameterModule = `HloModule kept_parameter, is_scheduled=true

%t {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

%f {
  ROOT %y = f32[4] parameter(0)
}

ENTRY %main {
  %p = f32[4] parameter(0)
  %pred = pred[] parameter(1)
  %c = f32[4] conditional(%pred, %p, %p), true_computation=%t, false_computation=%f
  ROOT %r = f32[4] negate(%c)
}
`

// TestShadowRefusesWriteIntoKeptParameter: liveness used to plan
// keptParameterModule with n in p's allocation, writing into the caller's
// input. Now its repair gives the conditional copies of p, and the plan
// holds p alone in its allocation and passes the check; moved back onto
// p's bytes, n is a clobber for the IR-reading check, where the
// liveness-driven one, which saw p and n as one buffer, saw nothing.
func TestShadowRefusesWriteIntoKeptParameter(t *testing.T) {
	m, err := hlo.ParseModule("kept_parameter.hlo", keptParameterModule)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{})
	require.NoError(t, err)
	rep, err := Shadow(context.Background(), as)
	require.NoError(t, err)
	require.Nil(t, rep.Violation)
	var param *assign.Allocation
	var n *assign.Slot
	var nAlloc *assign.Allocation
	for _, al := range as.Allocations {
		for i := range al.Slots {
			s := &al.Slots[i]
			if al.IsParameter() && al.Parameter == 0 {
				param = al
				require.Equal(t, "p", s.Value.Inst.Name, "p's allocation holds p alone")
			}
			if s.Value.Inst.Name == "n" {
				n, nAlloc = s, al
			}
		}
	}
	require.NotNil(t, param)
	require.NotNil(t, n)
	// Move n onto p's bytes.
	moved := *n
	nAlloc.Slots = slices.DeleteFunc(nAlloc.Slots, func(s assign.Slot) bool { return s.Value == moved.Value })
	moved.Offset = 0
	param.Slots = append(param.Slots, moved)
	rep, err = Shadow(context.Background(), as)
	require.NoError(t, err)
	require.NotNil(t, rep.Violation, "n written over the caller's p went unnoticed")
	require.Equal(t, Clobber, rep.Violation.Kind)
	require.Equal(t, "n", rep.Violation.Value.Inst.Name)
	require.Equal(t, "p", rep.Violation.Other.Inst.Name)
	t.Log(rep.Violation)
}

// The shadow check as it was before it read the IR (exec/shadow.go at
// 137ea7f): reads, writes and need from the analysis' uses, live ranges
// and buffers. Kept to show, in TestShadowCatchesLivenessMutations, the
// corruptions it passes.

func livenessShadow(ctx context.Context, as *assign.Assignment) (*ShadowReport, error) {
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
	reads, writes, preset := livenessAccesses(a)

	// A buffer is needed after step t when one of its values is live
	// across t, or is an output defined by then.
	needed := newLivenessNeed(a)

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
	return rep, nil
}

func livenessAccesses(a *liveness.Analysis) (reads, writes [][]*liveness.Value, preset []*liveness.Value) {
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

type livenessNeed struct {
	spans  [][]span // by buffer ID: merged, sorted
	outAt  []int    // by buffer ID: earliest start of an output value, or -1
	maxEnd int
}

func newLivenessNeed(a *liveness.Analysis) *livenessNeed {
	n := &livenessNeed{spans: make([][]span, len(a.Buffers)), outAt: make([]int, len(a.Buffers))}
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

func (n *livenessNeed) after(b int32, t int) bool {
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
