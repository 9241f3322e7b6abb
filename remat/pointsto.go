package remat

import (
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// logical is one of XLA's LogicalBuffers: a value an instruction defines
// at a shape index.
type logical struct {
	def     *hlo.Instruction
	index   hlo.ShapeIndex
	shape   hlo.Shape
	aliases []alias // the positions holding it
}

// node is a points-to set shaped like the instruction's shape.
type node struct {
	bufs  []*logical
	elems []*node
}

type alias struct {
	in    *hlo.Instruction
	index hlo.ShapeIndex
}

// pointsToSets is the part of XLA's TuplePointsToAnalysis the tracker
// reads, for one computation; each item holds its instruction's set
// (pts) and defined buffers (lbs).
type pointsToSets struct {
	l *list
}

// pointsTo follows TuplePointsToAnalysis: bitcast, add-dependency,
// optimization-barrier and domain pass their operand's set on; a
// get-tuple-element takes an element; a tuple defines its index table
// and holds its operands' sets; every other instruction (while included)
// defines a buffer at every index of its shape.
func pointsTo(l *list) (*pointsToSets, error) {
	p := &pointsToSets{l: l}
	for it := l.first; it != nil; it = it.next {
		in := it.in
		var n *node
		switch in.Opcode {
		case hlo.OpBitcast, hlo.OpAddDependency, hlo.OpOptBarrier, hlo.OpDomain:
			n = p.set(in.Operands[0])
		case hlo.OpGetTupleElement:
			op := p.set(in.Operands[0])
			if op == nil || in.TupleIndex < 0 || int(in.TupleIndex) >= len(op.elems) {
				return nil, fmt.Errorf("%s: get-tuple-element of an operand without element %d", in.Name, in.TupleIndex)
			}
			n = op.elems[in.TupleIndex]
		case hlo.OpTuple:
			lb := &logical{def: in, shape: in.Shape}
			it.lbs = append(it.lbs, lb)
			n = &node{bufs: []*logical{lb}}
			for _, op := range in.Operands {
				n.elems = append(n.elems, p.set(op))
			}
		default:
			n = p.define(it, in.Shape, nil)
		}
		if n == nil {
			return nil, fmt.Errorf("%s: an operand is not before it in the sequence", in.Name)
		}
		it.pts = n
		p.walk(in, n, nil)
	}
	return p, nil
}

// set is in's points-to set, nil when in has none yet.
func (p *pointsToSets) set(in *hlo.Instruction) *node {
	if it := p.l.get(in); it != nil {
		return it.pts
	}
	return nil
}

func (p *pointsToSets) define(it *item, s hlo.Shape, ix hlo.ShapeIndex) *node {
	lb := &logical{def: it.in, index: slices.Clone(ix), shape: s}
	it.lbs = append(it.lbs, lb)
	n := &node{bufs: []*logical{lb}}
	if s.IsTuple() {
		for i, e := range s.Tuple {
			n.elems = append(n.elems, p.define(it, e, append(slices.Clone(ix), int64(i))))
		}
	}
	return n
}

// walk records in's positions as aliases of the buffers they hold.
func (p *pointsToSets) walk(in *hlo.Instruction, n *node, ix hlo.ShapeIndex) {
	for _, lb := range n.bufs {
		lb.aliases = append(lb.aliases, alias{in, slices.Clone(ix)})
	}
	for i, e := range n.elems {
		p.walk(in, e, append(ix, int64(i)))
	}
}

func (p *pointsToSets) at(in *hlo.Instruction, ix hlo.ShapeIndex) []*logical {
	n := p.set(in)
	for _, i := range ix {
		if n == nil || int(i) >= len(n.elems) {
			return nil
		}
		n = n.elems[i]
	}
	if n == nil {
		return nil
	}
	return n.bufs
}

// flat is CreateFlattenedSet: every buffer in's value holds, once.
func (p *pointsToSets) flat(in *hlo.Instruction) []*logical {
	var out []*logical
	seen := map[*logical]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		for _, lb := range n.bufs {
			if !seen[lb] {
				seen[lb] = true
				out = append(out, lb)
			}
		}
		for _, e := range n.elems {
			walk(e)
		}
	}
	if n := p.set(in); n != nil {
		walk(n)
	}
	return out
}

// users is XLA's GetUsers: the uses of lb through all its aliases, and
// whether one is indirect (through an instruction other than its
// definer that is not a bitcast or get-tuple-element).
func (p *pointsToSets) users(l *list, lb *logical) ([]use, bool, error) {
	var us []use
	indirect := false
	for _, a := range lb.aliases {
		for _, u := range uniqueUsers(a.in) {
			if u.Opcode == hlo.OpGetTupleElement && len(a.index) > 0 {
				continue // a GTE reads only the index table
			}
			if a.in != lb.def && !isIndirectUser(a.in) {
				indirect = true
			}
			ui := l.get(u)
			if ui == nil {
				return nil, false, fmt.Errorf("%s: user %s is not in the sequence", lb.def.Name, u.Name)
			}
			idx := int64(-1)
			if len(lb.index) == 1 {
				idx = lb.index[0]
			}
			for k, op := range u.Operands {
				if op != a.in {
					continue
				}
				x := use{ui, k, idx}
				if !slices.Contains(us, x) {
					us = append(us, x)
				}
			}
		}
	}
	return us, indirect, nil
}

func uniqueUsers(in *hlo.Instruction) []*hlo.Instruction {
	var out []*hlo.Instruction
	for _, u := range in.Users {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}
