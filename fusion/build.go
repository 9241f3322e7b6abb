package fusion

// The mechanics of fusing: turning an instruction into a fusion of one,
// pulling a producer into a fusion (moving it, or cloning it when other
// users keep it), and keeping the fused computation's parameters, the
// fusion's operands and every Users list right.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hlomem/hlomem/hlo"
)

// builder edits one module. Edits that would cost a pass over a list
// (dropping an instruction from its computation, adding or dropping a
// computation of the module) are recorded and made once, by finish, so
// that fusing n producers stays linear.
type builder struct {
	m     *hlo.Module
	names *hlo.NameUniquer
	// pos gives an instruction's index in its computation's list (for
	// wrap's replacement in place); maintained by the fuser, reset for
	// each computation. Tables by instruction ID (byID) are the builder's
	// own, for m alone.
	pos byID[int32]
	// gone marks instructions taken out of their computation's list.
	gone marks
	// added lists new fused computations with the computation they go
	// before; dropped marks fused computations no longer called.
	added   []addedComp
	dropped map[*hlo.Computation]bool
	// after holds instructions to insert right after another one. A map:
	// only multi-output merges set it, a few entries, where a table would
	// span every ID up to the largest key.
	after map[*hlo.Instruction][]*hlo.Instruction
	// sorted marks the fused computations whose parameters lead their
	// list, in number order (see paramsFirst). Maps keyed by computation
	// (dropped, sorted): new fused computations have no ID of their own
	// until the module is renumbered.
	sorted map[*hlo.Computation]bool
	// remap is inline's scratch table, seen dependsOn's; each is reset
	// for every call.
	remap byID[*hlo.Instruction]
	seen  marks
}

type addedComp struct{ c, before *hlo.Computation }

func newBuilder(m *hlo.Module) *builder {
	return &builder{m: m, names: hlo.NewNameUniquer(m), dropped: map[*hlo.Computation]bool{},
		after: map[*hlo.Instruction][]*hlo.Instruction{}, sorted: map[*hlo.Computation]bool{}}
}

// paramsFirst moves fc's parameters to the front of its list, in number
// order, keeping the order of the rest. The builder's edits of a fused
// computation rely on it (a new parameter goes at index n, fused producers
// right after the parameters), and a fused computation as XLA prints it
// may interleave its parameters with the instructions that read them.
// Only computations the builder edits are reordered, once each.
func (b *builder) paramsFirst(fc *hlo.Computation) {
	if b.sorted[fc] {
		return
	}
	b.sorted[fc] = true
	if n := len(fc.Params); n <= len(fc.Instructions) && slices.Equal(fc.Instructions[:n], fc.Params) {
		return
	}
	out := make([]*hlo.Instruction, 0, len(fc.Instructions))
	out = append(out, fc.Params...)
	for _, in := range fc.Instructions {
		if in.Opcode != hlo.OpParameter {
			out = append(out, in)
		}
	}
	fc.Instructions = out
}

// addComputation records fc to go before c in the module's list.
func (b *builder) addComputation(fc, c *hlo.Computation) {
	fc.Module = b.m
	b.added = append(b.added, addedComp{fc, c})
}

// compact drops the instructions taken out of c's list and inserts the
// ones recorded to follow another.
func (b *builder) compact(c *hlo.Computation) {
	if b.gone.size() == 0 && len(b.after) == 0 {
		return
	}
	out := make([]*hlo.Instruction, 0, len(c.Instructions))
	for _, in := range c.Instructions {
		if !b.gone.has(in.ID) {
			out = append(out, in)
		}
		out = append(out, b.after[in]...)
	}
	c.Instructions = out
	b.gone.reset()
	clear(b.after)
}

// finish makes the recorded edits of the module's computation list: each
// new fused computation goes just before the computation it was made for
// (XLA prints a callee before its caller), the dropped ones go.
func (b *builder) finish() {
	if len(b.added) == 0 && len(b.dropped) == 0 {
		return
	}
	before := map[*hlo.Computation][]*hlo.Computation{}
	for _, a := range b.added {
		before[a.before] = append(before[a.before], a.c)
	}
	out := make([]*hlo.Computation, 0, len(b.m.Computations)+len(b.added))
	for _, c := range b.m.Computations {
		for _, n := range before[c] {
			if !b.dropped[n] {
				out = append(out, n)
			}
		}
		if !b.dropped[c] {
			out = append(out, c)
		}
	}
	b.m.Computations = out
	b.added, b.dropped = nil, map[*hlo.Computation]bool{}
}

// wrap replaces in (an instruction of c) by a fusion whose fused
// computation holds in alone, and returns the fusion. in moves into the
// fused computation, keeping its name; the fusion takes its place, users
// and metadata.
func (b *builder) wrap(in *hlo.Instruction, kind hlo.FusionKind) *hlo.Instruction {
	c := in.Parent
	fc := &hlo.Computation{Name: b.names.Unique("fused_computation"), Module: b.m, Pos: in.Pos}
	f := b.m.NewInstruction(&hlo.Instruction{
		Name:     b.names.Unique(fusionName(in, kind)),
		Opcode:   hlo.OpFusion,
		Shape:    in.Shape,
		Parent:   c,
		Pos:      in.Pos,
		Metadata: in.Metadata,
	})
	x := f.EnsureExt()
	x.FusionKind = kind
	x.Calls = []*hlo.Computation{fc}

	// Users of in become users of f; in leaves c's list, f takes its slot.
	in.ReplaceAllUsesWith(f)
	if i, ok := b.pos.get(in.ID); ok && int(i) < len(c.Instructions) && c.Instructions[i] == in {
		c.Instructions[i] = f
		b.pos.set(f.ID, i)
	} else {
		for i, y := range c.Instructions {
			if y == in {
				c.Instructions[i] = f
				b.pos.set(f.ID, int32(i))
				break
			}
		}
	}
	// f takes in's distinct operands; in reads parameters instead.
	ops := append([]*hlo.Instruction(nil), in.Operands...)
	for k, op := range ops {
		in.Operands[k] = b.param(f, op)
	}
	for _, op := range ops {
		dropUser(op, in)
	}
	in.Parent = fc
	fc.Instructions = append(fc.Instructions, in)
	for _, p := range in.Operands {
		p.AddUser(in)
	}
	fc.Root = in
	b.addComputation(fc, c)
	return f
}

// fusionName names a new fusion as XLA does: loop_<op>_fusion or
// input_<op>_fusion after the op it is built around.
func fusionName(in *hlo.Instruction, kind hlo.FusionKind) string {
	prefix := "loop"
	if kind == hlo.FusionInput {
		prefix = "input"
	}
	return prefix + "_" + in.OpName() + "_fusion"
}

// param returns the parameter of f's fused computation that stands for the
// outside value op, adding op as f's next operand (and a parameter for it)
// when f does not read it yet.
func (b *builder) param(f, op *hlo.Instruction) *hlo.Instruction {
	fc := f.Calls()[0]
	b.paramsFirst(fc)
	for i, o := range f.Operands {
		if o == op {
			return fc.Params[i]
		}
	}
	n := len(f.Operands)
	p := b.m.NewInstruction(&hlo.Instruction{
		Name:            b.names.Unique("param_" + strconv.Itoa(n)),
		Opcode:          hlo.OpParameter,
		Shape:           op.Shape,
		Parent:          fc,
		ParameterNumber: int64(n),
		Pos:             op.Pos,
	})
	f.Operands = append(f.Operands, op)
	op.AddUser(f)
	fc.Params = append(fc.Params, p)
	// Parameters go first, in number order.
	fc.Instructions = append(fc.Instructions, nil)
	copy(fc.Instructions[n+1:], fc.Instructions[n:])
	fc.Instructions[n] = p
	return p
}

// dropUser removes u from op's users without keeping their order (which
// settle restores once fusion is done): an operand read by thousands of
// instructions loses them one by one as they are fused, and an ordered
// removal would shift the list each time.
func dropUser(op, u *hlo.Instruction) {
	us := op.Users
	for i, x := range us {
		if x == u {
			last := len(us) - 1
			us[i] = us[last]
			us[last] = nil
			op.Users = us[:last]
			return
		}
	}
}

// drop takes in out of its computation (at compact) and, for a fusion,
// its fused computation out of the module (at finish); in no longer reads
// ops, the operands it had.
func (b *builder) drop(in *hlo.Instruction, ops []*hlo.Instruction) {
	for _, op := range ops {
		dropUser(op, in)
	}
	b.gone.mark(in.ID)
	if in.Opcode == hlo.OpFusion {
		b.dropped[in.Calls()[0]] = true
	}
}

// dropParam removes parameter j of f's fused computation (which nothing
// reads any more) and f's operand j, renumbering the later ones.
func (b *builder) dropParam(f *hlo.Instruction, j int) {
	fc := f.Calls()[0]
	p := fc.Params[j]
	op := f.Operands[j]
	fc.Params = append(fc.Params[:j], fc.Params[j+1:]...)
	for i := j; i < len(fc.Params); i++ {
		fc.Params[i].ParameterNumber = int64(i)
	}
	if j < len(fc.Instructions) && fc.Instructions[j] == p {
		// Parameters come first, in number order.
		fc.Instructions = slices.Delete(fc.Instructions, j, j+1)
	} else {
		fc.Instructions = slices.DeleteFunc(fc.Instructions, func(x *hlo.Instruction) bool { return x == p })
	}
	p.Parent = nil
	f.Operands = append(f.Operands[:j], f.Operands[j+1:]...)
	still := false
	for _, o := range f.Operands {
		if o == op {
			still = true
		}
	}
	if !still {
		dropUser(op, f)
	}
}

// fuseInto pulls producer p, an operand of fusion f, into f's fused
// computation. When f is p's only user, p itself moves (and leaves its
// computation); otherwise a copy of p is fused and p stays for its other
// users. A producer that is a fusion is inlined. p's operands become f's
// operands where f does not read them yet. It returns the instruction of
// f's fused computation that computes p's value.
func (b *builder) fuseInto(f, p *hlo.Instruction) *hlo.Instruction {
	fc := f.Calls()[0]
	b.paramsFirst(fc)
	j := -1
	for i, o := range f.Operands {
		if o == p {
			j = i
			break
		}
	}
	if j < 0 {
		panic(fmt.Sprintf("fusion: %s is not an operand of %s", p.Name, f.Name))
	}
	alone := len(p.Users) == 1
	origOps := append([]*hlo.Instruction(nil), p.Operands...)
	var root *hlo.Instruction
	var added []*hlo.Instruction
	if p.Opcode == hlo.OpFusion {
		root, added = b.inline(f, p)
	} else {
		q := p
		if !alone {
			q = b.clone(p, fc)
		}
		for k, op := range p.Operands {
			q.Operands[k] = b.param(f, op)
		}
		root = q
		added = append(added, q)
	}
	if alone {
		b.drop(p, origOps)
		p.Users = p.Users[:0]
	}
	// The new instructions go right after the parameters: they read only
	// parameters and each other, in order.
	np := len(fc.Params)
	rest := append([]*hlo.Instruction(nil), fc.Instructions[np:]...)
	fc.Instructions = append(append(fc.Instructions[:np:np], added...), rest...)
	for _, in := range added {
		in.Parent = fc
		in.Users = nil
	}
	for _, in := range added {
		for _, op := range in.Operands {
			op.AddUser(in)
		}
	}
	// Readers of parameter j read the fused producer instead.
	pj := fc.Params[j]
	pj.ReplaceAllUsesWith(root)
	b.dropParam(f, j)
	if isInputRoot(fc.Root) || isInputRoot(root) {
		f.EnsureExt().FusionKind = hlo.FusionInput
	}
	return root
}

// inline copies the instructions of fusion src's fused computation into
// fusion dst's, reading dst's parameters for src's operands (adding them
// where dst does not read them yet). It returns the copy of src's root and
// every copy, in order; the caller places them in dst's computation.
func (b *builder) inline(dst, src *hlo.Instruction) (root *hlo.Instruction, added []*hlo.Instruction) {
	fc, sc := dst.Calls()[0], src.Calls()[0]
	remap := &b.remap
	remap.reset()
	for i, p := range sc.Params {
		remap.set(p.ID, b.param(dst, src.Operands[i]))
	}
	// src's only user is dst: its fused computation is dropped, so its
	// instructions move, keeping their names, instead of being copied.
	move := len(src.Users) == 1
	for _, in := range sc.Instructions {
		if in.Opcode == hlo.OpParameter {
			continue
		}
		cp := in
		if move {
			cp.Parent = fc
		} else {
			cp = b.clone(in, fc)
		}
		for k, op := range cp.Operands {
			cp.Operands[k] = remap.at(op.ID)
		}
		remap.set(in.ID, cp)
		added = append(added, cp)
	}
	return remap.at(sc.Root.ID), added
}

// element returns get-tuple-element(t), index=i, of the given shape, for
// computation c; the caller places it.
func (b *builder) element(c *hlo.Computation, t *hlo.Instruction, i int, shape hlo.Shape) *hlo.Instruction {
	g := b.m.NewInstruction(&hlo.Instruction{Name: b.names.Unique("get-tuple-element"), Opcode: hlo.OpGetTupleElement, Shape: shape, Parent: c, Operands: []*hlo.Instruction{t}, TupleIndex: int64(i)})
	t.AddUser(g)
	return g
}

// clone copies in for computation c under a fresh name, with the same
// operands (to be remapped by the caller) and no users.
func (b *builder) clone(in *hlo.Instruction, c *hlo.Computation) *hlo.Instruction {
	cp := *in
	b.m.NewInstruction(&cp)
	cp.Name = b.names.Unique(in.Name)
	cp.Parent = c
	cp.Users = nil
	cp.Operands = append([]*hlo.Instruction(nil), in.Operands...)
	cp.Dimensions = append([]int64(nil), in.Dimensions...)
	cp.Attrs = append([]hlo.Attr(nil), in.Attrs...)
	if in.Ext != nil {
		x := *in.Ext
		x.ControlPredecessors, x.ControlSuccessors = nil, nil
		cp.Ext = &x
	}
	return &cp
}

// isInputRoot reports whether a fusion rooted at in is an input fusion:
// a reduction or a scatter.
func isInputRoot(in *hlo.Instruction) bool {
	return in != nil && (in.Opcode == hlo.OpReduce || in.Opcode == hlo.OpScatter)
}
