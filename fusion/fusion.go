package fusion

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// Options configures Run. The zero value fuses as XLA:GPU would, within
// its default bounds, keeps the lower bound from rising and reports
// nothing.
type Options struct {
	// MaxOperands bounds the operands of a fusion (0: DefaultMaxOperands).
	MaxOperands int
	// MaxInstructions bounds the instructions of a fused computation
	// (0: DefaultMaxInstructions).
	MaxInstructions int
	// NoMultiOutput turns multi-output fusion off.
	NoMultiOutput bool
	// NoGuard skips the lower-bound guard: every fusion the rules allow
	// is made, even one that raises the peak.
	NoGuard bool
	// Measure is what the guard keeps from rising: it prepares m (a clone
	// of the module, the guard's own) as buffer assignment would (copies,
	// schedule) and returns its lower bound and, when the guard weighs
	// one, a cost (for example the total of a buffer assignment, which
	// alignment and the packer make differ from the bound). The pipeline
	// (package compile) gives it; it is required unless NoGuard.
	Measure MeasureFunc
	// Probe, when set, is a cheaper stand-in for Measure (the pipeline
	// gives the same preparation under a heuristic scheduler when its own
	// scheduler searches): the guard bisects with it to find which fusion
	// raises the measure, then confirms the answer with Measure, which
	// alone decides what is kept and gives every figure reported.
	Probe MeasureFunc
	// Before, when set, is the module as it came to the passes that ran
	// before fusion (simplification, CSE, dead-code removal): the guard
	// keeps its measure, and when those passes raised it on their own,
	// fusion undoes them (the module goes back to Before) and fuses from
	// there. nil keeps the measure of the module as Run gets it.
	Before *hlo.Module
	// Explain, when set, receives every decision, made or declined, in
	// the order they were taken.
	Explain func(Decision)
}

// MeasureFunc prepares m, a module the guard owns, and measures it.
type MeasureFunc func(ctx context.Context, m *hlo.Module) (Measure, error)

// Measure is a module's figures under the guard (Options.Measure).
type Measure struct {
	LowerBound int64
	// Cost, when HasCost, is kept from rising as the lower bound is.
	Cost    int64
	HasCost bool
}

// ErrNoMeasure: Run with the guard on was given no Options.Measure.
var ErrNoMeasure = errors.New("fusion: the lower-bound guard needs Options.Measure (compile.Compile gives it), or NoGuard")

// DefaultMaxOperands is XLA:GPU's bound on a fusion's operands and outputs
// together (kMaxOperandsAndOutputsPerFusion).
const DefaultMaxOperands = 96

// DefaultMaxInstructions bounds a fused computation's size.
const DefaultMaxInstructions = 500

// Decision is one fusion decision and why it was taken.
type Decision struct {
	// Computation is where the producer and consumer live.
	Computation string
	// Kind is "loop", "input", "multi-output" (producer and consumer) or
	// "sibling" (two consumers of one operand); "simplify" when the guard
	// undid the simplification passes (Options.Before).
	Kind string
	// Producer and Consumer name the instructions as they were when the
	// decision was taken (for "sibling", the two consumers).
	Producer, Consumer string
	// Fused says whether it was made; Fusion names the fusion that holds
	// the result.
	Fused  bool
	Fusion string
	// Reason says why, in a sentence.
	Reason string
}

func (d Decision) String() string {
	verdict := "fused"
	if !d.Fused {
		verdict = "not fused"
	}
	into := ""
	if d.Fused && d.Fusion != "" {
		into = " into " + d.Fusion
	}
	return fmt.Sprintf("%s: %s %s -> %s: %s%s (%s)", d.Computation, d.Kind, d.Producer, d.Consumer, verdict, into, d.Reason)
}

func (o Options) maxOperands() int {
	if o.MaxOperands > 0 {
		return o.MaxOperands
	}
	return DefaultMaxOperands
}

func (o Options) maxInstructions() int {
	if o.MaxInstructions > 0 {
		return o.MaxInstructions
	}
	return DefaultMaxInstructions
}

// sequential returns the computations of m that run in their caller's
// thread (entry, while bodies and conditions, conditional branches, call
// targets), the ones fusion works in, in module order.
func sequential(m *hlo.Module) []*hlo.Computation {
	seen := map[*hlo.Computation]bool{}
	var walk func(c *hlo.Computation)
	walk = func(c *hlo.Computation) {
		if c == nil || seen[c] {
			return
		}
		seen[c] = true
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpWhile, hlo.OpConditional, hlo.OpCall:
				for _, x := range in.Callees() {
					walk(x)
				}
			}
		}
	}
	walk(m.Entry)
	var out []*hlo.Computation
	for _, c := range m.Computations {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// fuser runs the producer-consumer and multi-output passes over a module.
type fuser struct {
	ctx    context.Context
	b      *builder
	opts   Options
	forbid map[[2]string]bool // (producer, consumer) pairs the guard refused
	limit  int                // stop after this many fusions made (<0: none)
	made   int
	log    []Decision
	polled int // full's calls since the context was last looked at
	done   bool
}

// runFuser runs a fuser over m, making at most limit fusions (<0: all the
// rules allow) and none that forbid names, and returns it.
func runFuser(ctx context.Context, m *hlo.Module, opts Options, forbid map[[2]string]bool, limit int) *fuser {
	f := &fuser{ctx: ctx, b: newBuilder(m), opts: opts, forbid: forbid, limit: limit}
	f.run()
	return f
}

func (f *fuser) decide(d Decision) {
	f.log = append(f.log, d)
}

// full reports whether the fuser has made as many fusions as allowed.
// full reports whether the fuser must stop: it made its limit of
// fusions, or its context is done (the caller then returns the context's
// error and drops the module).
func (f *fuser) full() bool {
	if f.polled++; f.polled >= 1024 {
		f.polled = 0
		f.done = f.done || f.ctx.Err() != nil
	}
	return f.done || f.limit >= 0 && f.made >= f.limit
}

// run fuses every sequential computation of the module.
func (f *fuser) run() {
	defer f.b.finish()
	for _, c := range sequential(f.b.m) {
		if f.full() {
			return
		}
		f.computation(c)
	}
}

// computation fuses producers into consumers in c, walking producers
// from the last to the first, so that each producer meets its consumers
// already grown: XLA's fusion order (consumers before producers).
func (f *fuser) computation(c *hlo.Computation) {
	if !f.b.m.IsScheduled {
		c.SortTopologically()
	}
	f.b.pos.reset()
	for i, in := range c.Instructions {
		f.b.pos.set(in.ID, int32(i))
	}
	order := slices.Clone(c.Instructions)
	for i := len(order) - 1; i >= 0 && !f.full(); i-- {
		p := order[i]
		if p.Parent != c {
			continue // fused already
		}
		f.producer(c, p)
	}
	f.b.compact(c)
	for i, in := range c.Instructions {
		f.b.pos.set(in.ID, int32(i))
	}
	if !f.opts.NoMultiOutput {
		f.producerConsumer(c)
		f.siblings(c)
		f.b.compact(c)
	}
}

// producer fuses p into all of its users when the rules allow it.
func (f *fuser) producer(c *hlo.Computation, p *hlo.Instruction) {
	if why := producerBlocked(p); why != "" {
		return // not a candidate at all: nothing to explain
	}
	users := slices.Clone(p.Users)
	if len(users) > 1 {
		what := ""
		switch {
		case p.Opcode.Has(hlo.Expensive):
			what = "is expensive"
		case p.Opcode == hlo.OpFusion && fusionExpensive(p):
			what = "computes an expensive op"
		}
		if what != "" {
			f.decide(Decision{Computation: c.Name, Kind: kindOf(p, users[0]), Producer: p.Name, Consumer: users[0].Name,
				Reason: fmt.Sprintf("producer %s %s and has %d users", p.Name, what, len(users))})
			return
		}
	}
	for _, u := range users {
		if why := f.consumerBlocked(p, u); why != "" {
			f.decide(Decision{Computation: c.Name, Kind: kindOf(p, u), Producer: p.Name, Consumer: u.Name, Reason: why})
			return
		}
	}
	for _, u := range users {
		if f.forbid[[2]string{p.Name, u.Name}] {
			f.decide(Decision{Computation: c.Name, Kind: kindOf(p, u), Producer: p.Name, Consumer: u.Name,
				Reason: "fusing it raises the lower bound"})
			return
		}
	}
	reason := "fuses into its only user"
	if len(users) > 1 {
		reason = fmt.Sprintf("cheap producer duplicated into its %d users", len(users))
	}
	for _, u := range users {
		kind := kindOf(p, u)
		fu := u
		if u.Opcode != hlo.OpFusion {
			k := hlo.FusionLoop
			if isInputRoot(u) {
				k = hlo.FusionInput
			}
			fu = f.b.wrap(u, k)
		}
		pname := p.Name
		f.b.fuseInto(fu, p)
		f.made++
		f.decide(Decision{Computation: c.Name, Kind: kind, Producer: pname, Consumer: u.Name, Fused: true, Fusion: fu.Name, Reason: reason})
	}
}

// kindOf names the fusion a producer and consumer make.
func kindOf(p, u *hlo.Instruction) string {
	if isInputRoot(u) || (u.Opcode == hlo.OpFusion && u.FusionKind() == hlo.FusionInput) {
		return "input"
	}
	return "loop"
}

// fusionExpensive reports whether a fusion computes an expensive op.
func fusionExpensive(f *hlo.Instruction) bool {
	for _, in := range f.Calls()[0].Instructions {
		if in.Opcode.Has(hlo.Expensive) {
			return true
		}
	}
	return false
}

// loopFusible: the ops XLA:GPU fuses into loop fusions, as producer or
// consumer.
func loopFusible(in *hlo.Instruction) bool {
	if in.Opcode.Has(hlo.Elementwise) && len(in.Operands) > 0 {
		return !in.Opcode.Has(hlo.SideEffect)
	}
	switch in.Opcode {
	case hlo.OpBroadcast, hlo.OpReshape, hlo.OpBitcast, hlo.OpTranspose, hlo.OpSlice,
		hlo.OpConcatenate, hlo.OpPad, hlo.OpReverse, hlo.OpDynamicSlice,
		hlo.OpDynamicUpdateSlice, hlo.OpGather, hlo.OpCopy, hlo.OpConvert,
		hlo.OpBitcastConvert, hlo.OpSelect, hlo.OpClamp, hlo.OpCompare:
		return true
	}
	return false
}

// producerBlocked says why p can never be fused into a consumer ("" when
// it can be).
func producerBlocked(p *hlo.Instruction) string {
	if !p.Shape.IsArray() {
		return "its result is not an array"
	}
	if len(p.Users) == 0 || p.IsRoot() {
		return "it is the computation's result"
	}
	if hasControl(p) {
		return "it has control dependencies"
	}
	switch p.Opcode {
	case hlo.OpIota:
		return ""
	case hlo.OpConstant:
		if n, ok := p.Shape.Elements(); ok && n <= 1 {
			return ""
		}
		return "a constant of more than one element stays a constant"
	case hlo.OpFusion:
		if p.FusionKind() == hlo.FusionLoop {
			return ""
		}
		return "only loop fusions are fused into consumers"
	}
	if loopFusible(p) {
		return ""
	}
	return fmt.Sprintf("%s is not fusible", p.OpName())
}

// consumerBlocked says why p cannot be fused into its user u ("" when it
// can).
func (f *fuser) consumerBlocked(p, u *hlo.Instruction) string {
	if hasControl(u) {
		return fmt.Sprintf("consumer %s has control dependencies", u.Name)
	}
	switch {
	case u.Opcode == hlo.OpFusion:
		if k := u.FusionKind(); k != hlo.FusionLoop && k != hlo.FusionInput {
			return fmt.Sprintf("consumer %s is a %s fusion", u.Name, k)
		}
		if u.Calls()[0].Root.Opcode == hlo.OpTuple {
			return fmt.Sprintf("consumer %s is a multi-output fusion", u.Name)
		}
	case u.Opcode == hlo.OpReduce:
		if len(u.Operands) != 2 {
			return fmt.Sprintf("consumer %s is a variadic reduce", u.Name)
		}
	case u.Opcode == hlo.OpScatter, loopFusible(u):
	default:
		return fmt.Sprintf("consumer %s (%s) is not fusible", u.Name, u.OpName())
	}
	// In-place operands stay outside: a dynamic-update-slice or scatter
	// updates its operand 0's buffer.
	if inPlaceOperand(u, p) {
		return fmt.Sprintf("%s updates %s in place", u.Name, p.Name)
	}
	// Bounds.
	ops := len(u.Operands) - 1
	for _, o := range p.Operands {
		if !slices.Contains(u.Operands, o) {
			ops++
		}
	}
	if ops > f.opts.maxOperands() {
		return fmt.Sprintf("the fusion would have %d operands, over the limit of %d", ops, f.opts.maxOperands())
	}
	size := 1
	if u.Opcode == hlo.OpFusion {
		size = len(u.Calls()[0].Instructions)
	}
	if p.Opcode == hlo.OpFusion {
		size += len(p.Calls()[0].Instructions)
	} else {
		size++
	}
	if size > f.opts.maxInstructions() {
		return fmt.Sprintf("the fused computation would have %d instructions, over the limit of %d", size, f.opts.maxInstructions())
	}
	// No cycle check: a producer goes into every one of its users or
	// into none, so it leaves the graph and no path can lead back to it.
	return ""
}

// inPlaceOperand reports whether u updates p's buffer in place: p is
// operand 0 of a dynamic-update-slice or scatter u, or feeds such a root
// of fusion u through its parameter.
func inPlaceOperand(u, p *hlo.Instruction) bool {
	switch u.Opcode {
	case hlo.OpDynamicUpdateSlice, hlo.OpScatter:
		return len(u.Operands) > 0 && u.Operands[0] == p
	case hlo.OpFusion:
		fc := u.Calls()[0]
		for i, o := range u.Operands {
			if o != p {
				continue
			}
			par := fc.Params[i]
			for _, x := range fc.Instructions {
				if (x.Opcode == hlo.OpDynamicUpdateSlice || x.Opcode == hlo.OpScatter) && len(x.Operands) > 0 && through(x.Operands[0]) == par {
					return true
				}
			}
		}
	}
	return false
}

// through looks through bitcasts.
func through(in *hlo.Instruction) *hlo.Instruction {
	for in.Opcode == hlo.OpBitcast && len(in.Operands) == 1 {
		in = in.Operands[0]
	}
	return in
}
