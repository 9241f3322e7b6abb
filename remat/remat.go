package remat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
)

// Options configures Rematerialize.
type Options struct {
	// MinRematSize is XLA's min_remat_size: only instructions defining at
	// least this many (allocated) bytes start a candidate block. The GPU
	// passes 0, the zero value.
	MinRematSize int64
}

// Recomputed is one rematerialization: the instruction recomputed, its
// clone, the bytes the clone defines, and how many instructions of the
// final sequence lie strictly between the original's last remaining use
// (or its definition) and the clone: the steps the value no longer
// occupies.
type Recomputed struct {
	Computation string
	Original    string
	Clone       string
	Bytes       int64
	StepsFreed  int
}

// Result is what Rematerialize did.
type Result struct {
	// Module is the rewritten module, a clone of the input.
	Module *hlo.Module
	// PeakBefore and PeakAfter are the tracker's module peaks (entry peak
	// plus the output size), before and after.
	PeakBefore, PeakAfter int64
	// Limit is the limit asked for; Fits reports PeakAfter <= Limit.
	Limit int64
	Fits  bool
	// Changed reports whether the module was rewritten (dead code XLA's
	// HloDCE removes afterwards counts).
	Changed bool
	// Recomputed lists the clones in the order they were made.
	Recomputed []Recomputed
	// Message is XLA's warning when the limit was not reached, else "".
	Message string
}

// ErrUnsupported is returned for modules the pass refuses.
var ErrUnsupported = errors.New("remat: unsupported module")

// Rematerialize runs XLA's rematerialization on a clone of the scheduled
// module m toward limit bytes. m is left untouched.
func Rematerialize(ctx context.Context, m *hlo.Module, limit int64, opts Options) (res *Result, err error) {
	if err := checkInput(ctx, m, limit); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("remat: internal error: %v", r)
		}
	}()
	nm := m.Clone()
	nm.Renumber()
	p := &pass{ix: &itemIndex{}, ctx: ctx, m: nm, opts: opts, peak: map[*hlo.Computation]int64{}, done: map[*hlo.Computation]bool{},
		names: hlo.NewNameUniquer(nm)}
	if err := p.checkCalls(nm.Entry, map[*hlo.Computation]bool{}); err != nil {
		return nil, err
	}
	var outSize int64
	var serr error
	nm.Entry.Root.Shape.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
		n, err := hlo.BufferSize(s)
		if err != nil && serr == nil {
			serr = err
		}
		outSize += n
	})
	if serr != nil {
		return nil, serr
	}
	adjusted := max(0, limit-outSize)
	if err := p.computePeaks(nm.Entry, map[*hlo.Computation]bool{}); err != nil {
		return nil, err
	}
	before := p.peak[nm.Entry] + outSize
	changed, err := p.rematerializeComputation(nm.Entry, adjusted)
	if err != nil {
		return nil, err
	}
	removed, err := fusion.DCE(nm)
	if err != nil {
		return nil, err
	}
	nm.Renumber()
	after := p.peak[nm.Entry] + outSize
	res = &Result{Module: nm, PeakBefore: before, PeakAfter: after, Limit: limit, Fits: after <= limit,
		Changed: changed || removed, Recomputed: p.stepsFreed()}
	if after > limit {
		res.Message = fmt.Sprintf("Can't reduce memory use below %s (%d bytes) by rematerialization; only reduced to %s (%d bytes), down from %s (%d bytes) originally",
			assign.HumanBytes(limit), limit, assign.HumanBytes(after), after, assign.HumanBytes(before), before)
	}
	return res, nil
}

// checkInput refuses what neither algorithm takes: no module, one not
// scheduled (its order is no sequence), a negative limit, and a module
// that does not verify (a rewrite would come out as invalid as it went
// in).
func checkInput(ctx context.Context, m *hlo.Module, limit int64) error {
	if m == nil || m.Entry == nil {
		return fmt.Errorf("%w: no entry computation", ErrUnsupported)
	}
	if !m.IsScheduled {
		return fmt.Errorf("%s:%d:%d: %w: the module is not scheduled (is_scheduled=true): its order is not a sequence", m.File, m.Pos.Line, m.Pos.Col, ErrUnsupported)
	}
	if limit < 0 {
		return fmt.Errorf("remat: negative limit %d", limit)
	}
	return hlo.VerifyContext(ctx, m)
}

// pass is HloRematerialization's state.
type pass struct {
	ctx    context.Context
	m      *hlo.Module
	opts   Options
	peak   map[*hlo.Computation]int64 // computation_peak_memory_
	done   map[*hlo.Computation]bool  // rematerialized_computations_
	names  *hlo.NameUniquer
	events []event
	ix     *itemIndex
}

type event struct {
	c           *hlo.Computation
	orig, clone *hlo.Instruction
	bytes       int64
}

// controlFlow reports whether in runs its computations in sequence with
// its caller (XLA's CallContext::kControlFlow) among the ops the pass
// handles.
func controlFlow(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpWhile, hlo.OpCall, hlo.OpConditional:
		return true
	}
	return false
}

// checkCalls refuses calls whose memory the pass does not account for:
// asynchronous computations (XLA adds them per execution thread).
func (p *pass) checkCalls(c *hlo.Computation, seen map[*hlo.Computation]bool) error {
	if seen[c] {
		return nil
	}
	seen[c] = true
	for _, in := range c.Instructions {
		switch {
		case in.Opcode.Has(hlo.AsyncStart) && len(in.Callees()) > 0,
			in.Opcode == hlo.OpAsyncStart, in.Opcode == hlo.OpAsyncUpdate, in.Opcode == hlo.OpAsyncDone:
			return fmt.Errorf("%s:%d:%d: %w: %s %s runs a computation asynchronously; its memory is not modeled",
				p.m.File, in.Pos.Line, in.Pos.Col, ErrUnsupported, in.Opcode, in.Name)
		case controlFlow(in):
			for _, callee := range in.Callees() {
				if err := p.checkCalls(callee, seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// computePeaks fills p.peak for c and the computations it runs in
// sequence, callees first (ComputePeakMemory over the call graph).
func (p *pass) computePeaks(c *hlo.Computation, seen map[*hlo.Computation]bool) error {
	if seen[c] {
		return nil
	}
	seen[c] = true
	for _, in := range c.Instructions {
		if controlFlow(in) {
			for _, callee := range in.Callees() {
				if err := p.computePeaks(callee, seen); err != nil {
					return err
				}
			}
		}
	}
	l := newList(c.Instructions, p.ix)
	t, err := newTracker(c, l)
	if err != nil {
		return err
	}
	peak := t.usage
	for it := l.first; it != nil; it = it.next {
		if err := t.begin(it); err != nil {
			return err
		}
		peak = max(peak, t.usage+p.calleeUsage(it.in))
		if err := t.end(); err != nil {
			return err
		}
	}
	p.peak[c] = peak
	return nil
}

// calleeUsage is CalledComputationsMemoryUsage.
func (p *pass) calleeUsage(in *hlo.Instruction) int64 {
	if !controlFlow(in) {
		return 0
	}
	var n int64
	for _, c := range in.Callees() {
		n += p.peak[c]
	}
	return n
}

// stepsFreed turns the events into Recomputed entries measured on the
// final sequences.
func (p *pass) stepsFreed() []Recomputed {
	var out []Recomputed
	positions := map[*hlo.Computation]map[*hlo.Instruction]int{}
	for _, e := range p.events {
		r := Recomputed{Computation: e.c.Name, Original: e.orig.Name, Clone: e.clone.Name, Bytes: e.bytes}
		pos := positions[e.c]
		if pos == nil {
			pos = make(map[*hlo.Instruction]int, len(e.c.Instructions))
			for i, in := range e.c.Instructions {
				pos[in] = i
			}
			positions[e.c] = pos
		}
		if cp, ok := pos[e.clone]; ok {
			last, ok := pos[e.orig]
			if !ok {
				last = -1
			}
			for _, u := range e.orig.Users {
				if q, ok := pos[u]; ok && q < cp {
					last = max(last, q)
				}
			}
			if last >= 0 {
				r.StepsFreed = max(0, cp-last-1)
			}
		}
		out = append(out, r)
	}
	return out
}

func hasSideEffect(in *hlo.Instruction) bool {
	return anyInside(in, func(x *hlo.Instruction) bool {
		op := x.Opcode
		if op.Has(hlo.SideEffect) || op == hlo.OpUnknown || op.Has(hlo.AsyncStart) || op.Has(hlo.AsyncDone) {
			return true
		}
		v, ok := x.Attr("custom_call_has_side_effect")
		return op == hlo.OpCustomCall && ok && v == "true"
	})
}

// anyInside reports whether f holds for in or any instruction of the
// computations it calls, through nested calls (each computation once).
func anyInside(in *hlo.Instruction, f func(*hlo.Instruction) bool) bool {
	seen := map[*hlo.Computation]bool{}
	var walk func(*hlo.Instruction) bool
	walk = func(x *hlo.Instruction) bool {
		if f(x) {
			return true
		}
		for _, c := range x.Callees() {
			if seen[c] {
				continue
			}
			seen[c] = true
			for _, y := range c.Instructions {
				if walk(y) {
					return true
				}
			}
		}
		return false
	}
	return walk(in)
}

// rematerializable is XLA's IsRematerializable.
func rematerializable(in *hlo.Instruction) bool {
	if in.Opcode == hlo.OpCopy && sameLayout(in.Shape, in.Operands[0].Shape) {
		return false // a copy copy insertion added
	}
	if in.Opcode.Has(hlo.Collective) && !in.Opcode.Has(hlo.AsyncStart) && !in.Opcode.Has(hlo.AsyncDone) {
		v, _ := in.Attr("constrain_layout")
		return v != "true"
	}
	switch in.Opcode {
	case hlo.OpCall, hlo.OpConstant, hlo.OpConditional, hlo.OpCustomCall, hlo.OpParameter, hlo.OpWhile:
		return false
	}
	return !hasSideEffect(in)
}

func sameLayout(a, b hlo.Shape) bool {
	return layoutText(a) == layoutText(b)
}

func layoutText(s hlo.Shape) string {
	if s.Layout == nil {
		var b strings.Builder
		for i := len(s.Dims) - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "%d,", i)
		}
		return b.String() + "T[] S0 E0"
	}
	var b strings.Builder
	for _, d := range s.Layout.MinorToMajor {
		fmt.Fprintf(&b, "%d,", d)
	}
	fmt.Fprintf(&b, "T%v S%d E%d", s.Layout.Tiles, s.Layout.MemorySpace, s.Layout.ElementSizeBits)
	return b.String()
}
