package remat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// rematerializeComputation is RematerializeComputation with
// block_size_limit=1: at each program point over the limit, rematerialize
// the best single instruction until under it or no candidate is left;
// then, at a while, call or conditional still over it, rematerialize the
// computations it runs toward what is left of the limit.
func (p *pass) rematerializeComputation(c *hlo.Computation, limit int64) (bool, error) {
	if p.peak[c] <= limit {
		return false, nil
	}
	if p.done[c] {
		return false, nil
	}
	l := newList(c.Instructions, p.ix)
	t, err := newTracker(c, l)
	if err != nil {
		return false, err
	}
	for it := l.first; it != nil; it = it.next {
		it.skip = t.itemSize(it) >= p.opts.MinRematSize
	}
	st := &compState{t: t, l: l, limit: limit, moves: map[*hlo.Instruction]bool{}, remat: map[*hlo.Instruction]bool{}}
	t.eligible = func(it *item) bool { return it.skip && !it.denylisted && st.canRemat(it.in) }
	changed := false
	peak := t.usage
	for it := l.first; it != nil; it = it.next {
		if err := p.ctx.Err(); err != nil {
			return false, err
		}
		callee := p.calleeUsage(it.in)
		if err := t.begin(it); err != nil {
			return false, err
		}
		if t.itemSize(it)+callee > 0 {
			for t.usage+callee > limit {
				best := st.pick()
				if best == nil {
					break // block size 2 exceeds block_size_limit 1
				}
				n := len(p.events)
				if err := p.rematerialize(st, best); err != nil {
					return false, err
				}
				if len(p.events) == n {
					break
				}
				changed = true
			}
		}
		if controlFlow(it.in) && t.usage+callee > limit {
			for _, cc := range it.in.Callees() {
				if p.done[cc] {
					continue
				}
				ch, err := p.rematerializeComputation(cc, max(0, limit-t.usage))
				if err != nil {
					return false, err
				}
				changed = changed || ch
			}
			callee = p.calleeUsage(it.in)
		}
		peak = max(peak, t.usage+callee)
		if err := t.end(); err != nil {
			return false, err
		}
	}
	p.peak[c] = peak
	c.Instructions = l.sequence()
	c.RebuildUsers()
	p.done[c] = true
	return changed, nil
}

// compState is one computation's rematerialization state.
type compState struct {
	t     *tracker
	l     *list
	limit int64
	moves map[*hlo.Instruction]bool // remat_move_instructions
	remat map[*hlo.Instruction]bool // rematerializable_map
	known map[*hlo.Instruction]bool
}

func (st *compState) canRemat(in *hlo.Instruction) bool {
	if st.known == nil {
		st.known = map[*hlo.Instruction]bool{}
	}
	if !st.known[in] {
		st.known[in] = true
		st.remat[in] = rematerializable(in)
	}
	return st.remat[in]
}

// pick is PickRematerializationCandidates for blocks of one: the first
// (in sequence order) placed, finished, allowed item of least cost. XLA
// walks every placed item of the express lane; only those with a live
// buffer can reduce memory, so the walk goes over the candidates kept
// by the tracker, dropping those found dead.
func (st *compState) pick() *item {
	var best *item
	bestCost := int64(1<<63 - 1)
	t := st.t
	keep := t.cands[:0]
	for _, it := range t.cands {
		if it != t.inProgress && !t.hasLive(it) {
			it.inCands = false
			continue
		}
		keep = append(keep, it)
		if it == t.inProgress || it.denylisted {
			continue
		}
		if cost, ok := t.cost(it, st.limit); ok && cost < bestCost {
			best, bestCost = it, cost
		}
	}
	clear(t.cands[len(keep):])
	t.cands = keep
	return best
}

// cloneName is HloInstruction's clone name with suffix "remat"
// (SetupDerivedInstruction's naming, hlo_instruction.cc): x -> x.remat,
// x.remat -> x.remat2, x.rematN -> x.remat(N+1), found by the last
// ".remat" in the name.
func cloneName(name string) string {
	const dot = ".remat"
	i := strings.LastIndex(name, dot)
	if i < 0 {
		return name + dot
	}
	after := name[i+len(dot):]
	if after == "" {
		return name + "2"
	}
	if n, err := strconv.ParseInt(after, 10, 64); err == nil {
		return name[:i] + dot + strconv.FormatInt(n+1, 10)
	}
	return name + dot
}

// cloneInstruction copies in under a new name, with the same operands
// (not yet users of it); a fusion gets its own copy of its computation.
func (p *pass) cloneInstruction(in *hlo.Instruction) *hlo.Instruction {
	cp := *in
	cp.Name = p.names.Unique(cloneName(in.Name))
	cp.Users = nil
	cp.Operands = slices.Clone(in.Operands)
	cp.Dimensions = slices.Clone(in.Dimensions)
	cp.Attrs = slices.Clone(in.Attrs)
	if in.Metadata != nil {
		md := *in.Metadata
		cp.Metadata = &md
	}
	if in.Ext != nil {
		x := *in.Ext
		x.Calls = slices.Clone(x.Calls)
		x.ControlPredecessors = slices.Clone(x.ControlPredecessors)
		x.ControlSuccessors = nil
		cp.Ext = &x
		if in.Opcode == hlo.OpFusion && len(x.Calls) == 1 {
			fc := x.Calls[0].Clone("clone", p.names)
			p.m.AddComputation(fc, in.Parent)
			x.Calls[0] = fc
		}
		// Control successors of the original become the clone's too
		// (CopyAllControlDepsFrom).
		for _, s := range in.ControlSuccessors() {
			sx := s.EnsureExt()
			sx.ControlPredecessors = append(sx.ControlPredecessors, &cp)
		}
	}
	if in.Opcode.Has(hlo.Collective) {
		p.renumberChannel(&cp)
	}
	cp.Parent = in.Parent
	p.m.NewInstruction(&cp)
	return &cp
}

// renumberChannel gives a rematerialized collective a fresh channel_id
// (NextChannelId).
func (p *pass) renumberChannel(in *hlo.Instruction) {
	for i, a := range in.Attrs {
		if a.Name != "channel_id" {
			continue
		}
		next := int64(0)
		p.m.Instructions(func(x *hlo.Instruction) {
			if v, ok := x.Attr("channel_id"); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= next {
					next = n + 1
				}
			}
		})
		in.Attrs[i].Value = strconv.FormatInt(max(next, 1), 10)
	}
}

func (p *pass) newInstruction(c *hlo.Computation, in *hlo.Instruction, name string) *hlo.Instruction {
	in.Name = p.names.Unique(name)
	in.Parent = c
	p.m.NewInstruction(in)
	return in
}

func setOperand(u *hlo.Instruction, k int, op *hlo.Instruction) {
	old := u.Operands[k]
	u.Operands[k] = op
	if !slices.Contains(u.Operands, old) {
		old.RemoveUser(u)
	}
	op.AddUser(u)
}

// rematerialize is RematerializeInstructions for one item.
func (p *pass) rematerialize(st *compState, best *item) error {
	t, l := st.t, st.l
	if !t.hasUnplacedUsers(best) {
		return nil
	}
	c := best.in.Parent
	remat := p.cloneInstruction(best.in)
	for _, op := range remat.Operands {
		op.AddUser(remat)
	}
	ri := l.create(remat)
	var indirect []*item
	gtes := map[int64]*hlo.Instruction{}
	for _, u := range t.itemUses(best) {
		if u.user.placed {
			continue
		}
		use := remat
		uop := u.user.in.Operands[u.operand]
		if use == uop {
			continue
		}
		if u.index >= 0 && remat.Shape.String() != uop.Shape.String() {
			g, ok := gtes[u.index]
			if !ok {
				g = p.newInstruction(c, &hlo.Instruction{Opcode: hlo.OpGetTupleElement, Shape: remat.Shape.Tuple[u.index],
					Operands: []*hlo.Instruction{remat}, TupleIndex: u.index}, "gte.remat")
				remat.AddUser(g)
				indirect = append(indirect, l.create(g))
				gtes[u.index] = g
			}
			use = g
		}
		if uop.Shape.String() != use.Shape.String() {
			b := p.newInstruction(c, &hlo.Instruction{Opcode: hlo.OpBitcast, Shape: uop.Shape,
				Operands: []*hlo.Instruction{use}}, "bitcast.remat")
			use.AddUser(b)
			indirect = append(indirect, l.create(b))
			use = b
		}
		setOperand(u.user.in, u.operand, use)
	}
	if err := t.addRemat(best, ri, indirect); err != nil {
		return err
	}
	before := placeBefore(l, remat, best.in.ControlSuccessors(), indirect)
	if len(before) == 0 {
		return fmt.Errorf("remat: %s has no unplaced use to go before", remat.Name)
	}
	l.insertBeforeAny(ri, before)
	for _, iu := range indirect {
		l.insertBeforeAny(iu, before)
	}
	ri.skip = true
	for _, iu := range indirect {
		iu.skip = true
		iu.denylisted = true
	}
	if usesEmpty(best.in) {
		if st.moves[best.in] {
			ri.denylisted = true
		}
		st.moves[remat] = true
	}
	p.events = append(p.events, event{c: c, orig: best.in, clone: remat, bytes: t.itemSize(ri)})
	return nil
}

// placeBefore lists the items the clone must precede: its users, the
// users of its bitcasts and get-tuple-elements, the unplaced users of its
// operands (so their live ranges are not extended) and its control
// successors.
func placeBefore(l *list, remat *hlo.Instruction, succ []*hlo.Instruction, indirect []*item) []*item {
	isInd := func(in *hlo.Instruction) bool {
		return slices.ContainsFunc(indirect, func(x *item) bool { return x.in == in })
	}
	var out []*item
	for _, u := range remat.Users {
		if !isInd(u) {
			out = append(out, l.get(u))
		}
	}
	for _, iu := range indirect {
		for _, u := range iu.in.Users {
			if !isInd(u) {
				out = append(out, l.get(u))
			}
		}
	}
	for _, op := range remat.Operands {
		for _, u := range op.Users {
			if u != remat {
				if ui := l.get(u); ui != nil && !ui.placed {
					out = append(out, ui)
				}
			}
		}
	}
	for _, s := range succ {
		out = append(out, l.get(s))
	}
	return out
}

// usesEmpty reports whether in has no users but through bitcasts and
// get-tuple-elements that have none either.
func usesEmpty(in *hlo.Instruction) bool {
	for _, u := range in.Users {
		if !isIndirectUser(u) || !usesEmpty(u) {
			return false
		}
	}
	return true
}
