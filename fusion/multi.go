package fusion

// Multi-output fusion of siblings: two fusions that read the same operand
// become one fusion with a tuple of both results, so the operand is read
// once. It saves memory traffic, not memory: both results now exist from
// the same step on, which the lower-bound guard weighs.

import (
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// siblings merges pairs of loop (or pairs of input) fusions that share an
// operand, in instruction order, each fusion at most once per round.
func (f *fuser) siblings(c *hlo.Computation) {
	for _, x := range slices.Clone(c.Instructions) {
		if f.full() {
			return
		}
		if x.Parent != c || f.b.gone.has(x.ID) || x.Opcode == hlo.OpConstant || x.Opcode == hlo.OpIota {
			continue
		}
		var cands []*hlo.Instruction
		for _, u := range x.Users {
			if f.singleOutput(c, u) {
				cands = append(cands, u)
			}
		}
		for i := 0; i+1 < len(cands); i += 2 {
			a, b := cands[i], cands[i+1]
			if f.b.gone.has(a.ID) || f.b.gone.has(b.ID) {
				continue
			}
			if why := f.siblingBlocked(a, b); why != "" {
				f.decide(Decision{Computation: c.Name, Kind: "sibling", Producer: a.Name, Consumer: b.Name, Reason: why})
				continue
			}
			if f.forbid[[2]string{a.Name, b.Name}] {
				f.decide(Decision{Computation: c.Name, Kind: "sibling", Producer: a.Name, Consumer: b.Name, Reason: "fusing them raises the lower bound"})
				continue
			}
			an, bn := a.Name, b.Name
			m := f.mergeSiblings(c, a, b)
			f.made++
			f.decide(Decision{Computation: c.Name, Kind: "sibling", Producer: an, Consumer: bn, Fused: true, Fusion: m.Name,
				Reason: fmt.Sprintf("both read %s: one pass over it", x.Name)})
		}
	}
}

// singleOutput reports whether u is a live single-output loop or input
// fusion of c without control edges: one that can take a second output.
func (f *fuser) singleOutput(c *hlo.Computation, u *hlo.Instruction) bool {
	return u.Opcode == hlo.OpFusion && u.Parent == c && !f.b.gone.has(u.ID) &&
		(u.FusionKind() == hlo.FusionLoop || u.FusionKind() == hlo.FusionInput) &&
		u.Calls()[0].Root.Opcode != hlo.OpTuple && !hasControl(u)
}

// ordered returns a and b, the one earlier in their computation first.
func (f *fuser) ordered(a, b *hlo.Instruction) (first, second *hlo.Instruction) {
	if f.b.pos.at(a.ID) > f.b.pos.at(b.ID) {
		return b, a
	}
	return a, b
}

// siblingBlocked says why fusions a and b cannot become one ("" when they
// can).
func (f *fuser) siblingBlocked(a, b *hlo.Instruction) string {
	if a.FusionKind() != b.FusionKind() {
		return fmt.Sprintf("%s is %s and %s is %s", a.Name, a.FusionKind(), b.Name, b.FusionKind())
	}
	ra, rb := a.Calls()[0].Root, b.Calls()[0].Root
	if a.FusionKind() == hlo.FusionLoop && !hlo.SameDims(ra.Shape, rb.Shape) {
		return fmt.Sprintf("their results %s and %s iterate over different shapes", ra.Shape.StringNoLayout(), rb.Shape.StringNoLayout())
	}
	if a.FusionKind() == hlo.FusionInput {
		if ra.Opcode != hlo.OpReduce || rb.Opcode != hlo.OpReduce || !hlo.SameDims(ra.Operands[0].Shape, rb.Operands[0].Shape) ||
			!slices.Equal(ra.Dimensions, rb.Dimensions) {
			return "their reductions differ in input shape or dimensions"
		}
	}
	if inPlaceRoot(ra) || inPlaceRoot(rb) {
		return "one of them updates an operand in place"
	}
	ops := len(a.Operands) + 2
	for _, o := range b.Operands {
		if !slices.Contains(a.Operands, o) {
			ops++
		}
	}
	if ops > f.opts.maxOperands() {
		return fmt.Sprintf("together they would have %d operands and outputs, over the limit of %d", ops, f.opts.maxOperands())
	}
	if n := len(a.Calls()[0].Instructions) + len(b.Calls()[0].Instructions) + 1; n > f.opts.maxInstructions() {
		return fmt.Sprintf("together they would have %d instructions, over the limit of %d", n, f.opts.maxInstructions())
	}
	if f.dependsOn(a, b) || f.dependsOn(b, a) {
		return "one depends on the other: fusing would make a cycle"
	}
	first, second := f.ordered(a, b)
	for _, u := range first.Users {
		if f.b.pos.at(u.ID) <= f.b.pos.at(second.ID) {
			return fmt.Sprintf("%s is read by %s before %s runs", first.Name, u.Name, second.Name)
		}
	}
	return ""
}

// inPlaceRoot reports whether a fused root updates an operand in place.
func inPlaceRoot(r *hlo.Instruction) bool {
	return r.Opcode == hlo.OpDynamicUpdateSlice || r.Opcode == hlo.OpScatter
}

// dependsOn reports whether x depends on y in their computation.
func (f *fuser) dependsOn(x, y *hlo.Instruction) bool {
	py, ok := f.b.pos.get(y.ID)
	if !ok {
		return true
	}
	seen := &f.b.seen
	seen.reset()
	stack := append(slices.Clone(x.Operands), x.ControlPredecessors()...)
	for len(stack) > 0 {
		z := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if z == y {
			return true
		}
		if seen.has(z.ID) {
			continue
		}
		seen.mark(z.ID)
		if q, ok := f.b.pos.get(z.ID); !ok || q <= py {
			continue
		}
		stack = append(stack, z.Operands...)
		stack = append(stack, z.ControlPredecessors()...)
	}
	return false
}

// mergeSiblings replaces fusions a and b of c by one fusion whose root is
// the tuple of their roots; their users read its elements.
func (f *fuser) mergeSiblings(c *hlo.Computation, a, b *hlo.Instruction) *hlo.Instruction {
	bl := f.b
	fc := &hlo.Computation{Name: bl.names.Unique("fused_computation"), Module: bl.m, Pos: a.Pos}
	shape := hlo.TupleShape(a.Shape, b.Shape)
	mf := bl.m.NewInstruction(&hlo.Instruction{Name: bl.names.Unique("multi_output_fusion"), Opcode: hlo.OpFusion, Shape: shape, Parent: c, Pos: a.Pos, Metadata: a.Metadata})
	x := mf.EnsureExt()
	x.FusionKind = a.FusionKind()
	x.Calls = []*hlo.Computation{fc}
	var roots []*hlo.Instruction
	var body []*hlo.Instruction
	for _, s := range []*hlo.Instruction{a, b} {
		root, added := bl.inline(mf, s)
		body = append(body, added...)
		roots = append(roots, root)
	}
	tup := bl.m.NewInstruction(&hlo.Instruction{Name: bl.names.Unique("tuple"), Opcode: hlo.OpTuple, Shape: shape, Parent: fc, Operands: roots})
	body = append(body, tup)
	fc.Instructions = append(fc.Instructions, body...)
	for _, in := range body {
		for _, op := range in.Operands {
			op.AddUser(in)
		}
	}
	fc.Root = tup
	bl.addComputation(fc, c)

	// The merged fusion and its elements follow the later sibling, whose
	// slot it takes over (siblingBlocked made sure that the earlier one's
	// users all come later still).
	first, second := f.ordered(a, b)
	gtes := []*hlo.Instruction{bl.element(c, mf, 0, a.Shape), bl.element(c, mf, 1, b.Shape)}
	bl.after[second] = append(bl.after[second], mf, gtes[0], gtes[1])
	at := f.b.pos.at(second.ID)
	f.b.pos.set(mf.ID, at)
	f.b.pos.set(gtes[0].ID, at)
	f.b.pos.set(gtes[1].ID, at)
	for i, s := range []*hlo.Instruction{a, b} {
		s.ReplaceAllUsesWith(gtes[i])
	}
	for _, s := range []*hlo.Instruction{first, second} {
		bl.drop(s, s.Operands)
	}
	return mf
}

// producerConsumer fuses a producer that the first pass left alone,
// because some of its users cannot take it in, into one of its fusion
// users as a second output: the consumer computes the producer's value
// itself instead of reading it back, and the other users read that
// output. The value still exists in memory; the traffic of reading it
// once is saved.
func (f *fuser) producerConsumer(c *hlo.Computation) {
	for i := len(c.Instructions) - 1; i >= 0; i-- {
		if f.full() {
			return
		}
		p := c.Instructions[i] // c's list changes only in compact
		if p.Parent != c || f.b.gone.has(p.ID) || len(p.Users) < 2 || producerBlocked(p) != "" || p.Opcode == hlo.OpConstant || p.Opcode == hlo.OpIota {
			continue
		}
		if p.Opcode == hlo.OpFusion && p.Calls()[0].Root.Opcode == hlo.OpTuple {
			continue
		}
		var u *hlo.Instruction
		for _, x := range p.Users {
			if f.singleOutput(c, x) {
				u = x
				break
			}
		}
		if u == nil {
			continue
		}
		why := f.consumerBlocked(p, u)
		if why == "" {
			for _, o := range u.Operands {
				if o != p && f.dependsOn(o, p) {
					why = fmt.Sprintf("%s also reads %s through %s: fusing would make a cycle", u.Name, p.Name, o.Name)
					break
				}
			}
		}
		if why == "" {
			for _, x := range p.Users {
				if x != u && f.b.pos.at(x.ID) <= f.b.pos.at(u.ID) {
					why = fmt.Sprintf("%s is read by %s before %s runs", p.Name, x.Name, u.Name)
					break
				}
			}
		}
		if why == "" && f.forbid[[2]string{p.Name, u.Name}] {
			why = "fusing it raises the lower bound"
		}
		if why != "" {
			f.decide(Decision{Computation: c.Name, Kind: "multi-output", Producer: p.Name, Consumer: u.Name, Reason: why})
			continue
		}
		pn, un := p.Name, u.Name
		f.mergeProducer(c, p, u)
		f.made++
		f.decide(Decision{Computation: c.Name, Kind: "multi-output", Producer: pn, Consumer: un, Fused: true, Fusion: u.Name,
			Reason: fmt.Sprintf("%s has users that cannot take it in; %s computes it as a second output instead of reading it", pn, un)})
	}
}

// mergeProducer makes fusion u compute p as a second output: u's root
// becomes tuple(old root, p's value), u's users read element 0 and p's
// other users element 1, and p goes.
func (f *fuser) mergeProducer(c *hlo.Computation, p, u *hlo.Instruction) {
	bl := f.b
	pr := bl.fuseInto(u, p) // p has other users: a copy goes in
	fc := u.Calls()[0]
	old := fc.Root
	tup := bl.m.NewInstruction(&hlo.Instruction{Name: bl.names.Unique("tuple"), Opcode: hlo.OpTuple, Shape: hlo.TupleShape(old.Shape, pr.Shape), Parent: fc, Operands: []*hlo.Instruction{old, pr}})
	fc.Instructions = append(fc.Instructions, tup)
	old.AddUser(tup)
	pr.AddUser(tup)
	fc.Root = tup
	outShape := u.Shape
	u.Shape = hlo.TupleShape(outShape, p.Shape)
	users := slices.Clone(u.Users)
	g0, g1 := bl.element(c, u, 0, outShape), bl.element(c, u, 1, p.Shape)
	for _, x := range users {
		for k, op := range x.Operands {
			if op == u {
				x.Operands[k] = g0
			}
		}
		g0.AddUser(x)
	}
	u.Users = []*hlo.Instruction{g0, g1}
	if c.Root == u {
		c.Root = g0
	}
	bl.after[u] = append(bl.after[u], g0, g1)
	f.b.pos.set(g0.ID, f.b.pos.at(u.ID))
	f.b.pos.set(g1.ID, f.b.pos.at(u.ID))
	p.ReplaceAllUsesWith(g1)
	bl.drop(p, p.Operands)
}
