package exec

import (
	"context"
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Options configures Execute.
type Options struct {
	// Reference runs the module with every value in a fresh buffer of its
	// own (eval's plan-free Evaluator: no two values share bytes, whatever
	// the analysis or the plan say), the run to compare a planned run with.
	Reference bool
	// Seed seeds rng (0: eval.DefaultSeed).
	Seed uint64
	// MaxWork bounds the element operations run (eval.InstructionWork
	// each; 0: no bound): a run bounded by what it computes, not by time.
	MaxWork int64
	// MaxSteps bounds the instructions run, loop iterations included
	// (0: DefaultMaxSteps), so that a loop that never ends is an error.
	MaxSteps int64
	// Held, with Reference, has the reference run count the memory it
	// holds at each step of the entry's schedule into Result.Held
	// (referenceHeld). It takes an entry without while, conditional or
	// call.
	Held bool
}

// Mover is a Memory that may move live regions (a compacting allocator).
// Execute registers a callback through OnMove and rebases the addresses it
// holds when a region moves.
type Mover interface {
	// OnMove makes f the callback for every region the memory moves: size
	// bytes based at from now live at to. f replaces any earlier callback;
	// nil removes it.
	OnMove(f func(from, to, size int64))
}

// DefaultMaxSteps is the instruction budget of a run when Options says
// none.
const DefaultMaxSteps = 1 << 30

// Result is what a run computed.
type Result struct {
	// Outputs are the array leaves of the entry's result, in shape-index
	// pre-order.
	Outputs []eval.Literal
	// Steps is the number of instructions run, each loop iteration's
	// counted again.
	Steps int64
	// Held is, with Options.Held, the bytes the reference run holds at
	// each step 0..len(schedule) of the entry (the last one after the
	// last instruction).
	Held []int64
}

// Execute evaluates as's module for real on the bytes of mem: each value is
// read from and written to the address its slot names (allocation base +
// offset), so a plan that puts two live values on the same bytes computes
// wrong numbers. It walks each computation in its schedule: a while runs
// its condition and body computations over and over, a conditional the
// branch its selector picks, a call its callee, each on the slots the plan
// gives their values; no bytes are copied between a caller and a callee
// (the analysis puts a loop's state, a callee's parameters and results in
// the caller's buffers, as XLA's runtime relies on). Fusions and the
// computations of reduce, sort, scatter and the like are evaluated whole,
// their operands read from and their results written to the arena.
//
// args holds one literal per array leaf of the entry parameters, parameter
// by parameter in shape-index pre-order. An instruction it cannot evaluate
// is an error naming it; never a guess. A nil mem runs on a HostArena
// filled with PoisonByte. A SpacedMemory gets the allocations of each
// color other than 0 in that memory space (AllocateIn).
func Execute(ctx context.Context, as *assign.Assignment, args []eval.Literal, mem Memory, opts Options) (*Result, error) {
	if as == nil || as.Analysis == nil || as.Module == nil || as.Module.Entry == nil {
		return nil, errors.New("runtime: no assignment")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if mem == nil {
		h := NewHostArena()
		h.Fill = PoisonByte
		mem = h
	}
	a := as.Analysis
	seed := opts.Seed
	if seed == 0 {
		seed = eval.DefaultSeed
	}
	x := &executor{
		ctx:  ctx,
		a:    a,
		mem:  mem,
		addr: make([]int64, len(a.Values)),
		ev:   eval.NewEvaluator(seed),
	}
	x.ev.Ctx = ctx
	x.ev.MaxSteps = opts.MaxSteps
	x.ev.MaxWork = opts.MaxWork
	if x.ev.MaxSteps <= 0 {
		x.ev.MaxSteps = DefaultMaxSteps
	}
	entry := as.Module.Entry
	if err := x.bindArgs(entry, args); err != nil {
		return nil, err
	}
	if opts.Reference {
		if opts.Held {
			return x.referenceHeld(entry)
		}
		return x.reference(entry)
	}
	if mv, ok := mem.(Mover); ok {
		// Execute takes the callback over for the run and leaves none
		// behind: its addresses mean nothing once it returns.
		mv.OnMove(x.moved)
		defer mv.OnMove(nil)
	}
	if err := x.place(as); err != nil {
		return nil, err
	}
	if err := x.run(entry); err != nil {
		return nil, err
	}
	res := &Result{Steps: x.ev.Steps}
	var err error
	entry.Root.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if sub.IsTuple() || err != nil {
			return
		}
		var l eval.Literal
		l, err = x.loadArray(entry.Root, ix, sub)
		res.Outputs = append(res.Outputs, l)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// executor is one run of Execute.
type executor struct {
	ctx    context.Context
	a      *liveness.Analysis
	mem    Memory
	addr   []int64 // by value ID
	placed []bool  // by value ID
	// tilings caches the tiled order of the values with tiled layouts,
	// by value ID (tiled.go).
	tilings map[int]*tiling
	ev      *eval.Evaluator
	params  []eval.Literal // the entry's arguments, a literal per parameter

	// For a Mover: the allocation (by index) based at each address, and
	// the allocation of each value placed.
	allocAt map[int64]int
	allocOf []int // by value ID, the allocation holding it once placed
}

// reference evaluates the entry with the plan-free eval.Evaluator.
func (x *executor) reference(entry *hlo.Computation) (*Result, error) {
	out, err := x.ev.Computation(entry, x.params)
	if err != nil {
		return nil, err
	}
	return &Result{Outputs: out.Leaves(), Steps: x.ev.Steps}, nil
}

// place gives every value its address: its slot in the plan. A value
// without a slot of its own (a phi) takes its buffer's. Nothing allocates
// after place, so a Mover moves regions only while place runs, each time
// before the Allocate that made room returns; x.moved keeps the addresses
// of the values placed so far right.
func (x *executor) place(as *assign.Assignment) error {
	a := x.a
	x.placed = make([]bool, len(a.Values))
	x.allocAt = make(map[int64]int, len(as.Allocations))
	x.allocOf = make([]int, len(a.Values))
	spaced, _ := x.mem.(SpacedMemory)
	for i, al := range as.Allocations {
		var base int64
		var err error
		if spaced != nil && al.Color != 0 {
			base, err = spaced.AllocateIn(al.Color, max(al.Size, 1), 256)
		} else {
			base, err = x.mem.Allocate(max(al.Size, 1), 256)
		}
		if err != nil {
			return err
		}
		x.allocAt[base] = i
		for _, s := range al.Slots {
			if s.Value != nil && s.Value.ID >= 0 && s.Value.ID < len(x.addr) {
				x.addr[s.Value.ID], x.placed[s.Value.ID] = base+s.Offset, true
				x.allocOf[s.Value.ID] = i
			}
		}
	}
	for _, b := range a.Buffers {
		from := -1
		for _, v := range b.Values {
			if x.placed[v.ID] {
				from = v.ID
				break
			}
		}
		if from < 0 {
			continue
		}
		for _, v := range b.Values {
			if !x.placed[v.ID] {
				x.addr[v.ID], x.placed[v.ID] = x.addr[from], true
				x.allocOf[v.ID] = x.allocOf[from]
			}
		}
	}
	return nil
}

// moved is the Mover callback: it rebases the values of the allocation
// based at from, if it is one of the run's (the memory may hold and move
// regions of others too).
func (x *executor) moved(from, to, size int64) {
	i, ok := x.allocAt[from]
	if !ok {
		return
	}
	delete(x.allocAt, from)
	x.allocAt[to] = i
	// Moves are rare (a compaction): a scan of the values placed so far
	// costs less than keeping each allocation's list on every run.
	for id, placed := range x.placed {
		if placed && x.allocOf[id] == i {
			x.addr[id] += to - from
		}
	}
}

// bindArgs checks args against the entry parameters' leaves and puts
// each parameter's literal together from them.
func (x *executor) bindArgs(entry *hlo.Computation, args []eval.Literal) error {
	next := 0
	var build func(p *hlo.Instruction, s hlo.Shape, ix hlo.ShapeIndex) (eval.Literal, error)
	build = func(p *hlo.Instruction, s hlo.Shape, ix hlo.ShapeIndex) (eval.Literal, error) {
		if s.IsTuple() {
			elems := make([]eval.Literal, len(s.Tuple))
			for i, e := range s.Tuple {
				var err error
				if elems[i], err = build(p, e, append(ix[:len(ix):len(ix)], int64(i))); err != nil {
					return eval.Literal{}, err
				}
			}
			return eval.Literal{Shape: s, Elems: elems}, nil
		}
		if next >= len(args) {
			return eval.Literal{}, fmt.Errorf("runtime: %d arguments given, the entry takes more", len(args))
		}
		a := args[next]
		if !hlo.Compatible(a.Shape, s) {
			return eval.Literal{}, fmt.Errorf("runtime: argument %d is %s, parameter %s%v is %s", next, a.Shape.StringNoLayout(), p.Name, ix, s.StringNoLayout())
		}
		if err := a.Check(); err != nil {
			return eval.Literal{}, fmt.Errorf("runtime: argument %d: %v", next, err)
		}
		next++
		return a, nil
	}
	x.params = make([]eval.Literal, len(entry.Params))
	for i, p := range entry.Params {
		l, err := build(p, p.Shape, nil)
		if err != nil {
			return err
		}
		x.params[i] = l
	}
	if next != len(args) {
		return fmt.Errorf("runtime: %d arguments given, the entry takes %d", len(args), next)
	}
	return nil
}

// valueAt is the placed value at (in, ix).
func (x *executor) valueAt(in *hlo.Instruction, ix hlo.ShapeIndex) (*liveness.Value, error) {
	v := x.a.ValueAt(in, ix)
	if v == nil || !x.placed[v.ID] {
		return nil, fmt.Errorf("runtime: %s%v has no place in the plan", in.Name, ix)
	}
	return v, nil
}

// loadArray reads the array at (in, ix) from the arena.
func (x *executor) loadArray(in *hlo.Instruction, ix hlo.ShapeIndex, shape hlo.Shape) (eval.Literal, error) {
	l, err := eval.NewLiteral(shape)
	if err != nil {
		return eval.Literal{}, fmt.Errorf("runtime: %s%v: %v", in.Name, ix, err)
	}
	if len(l.Data) == 0 {
		return l, nil
	}
	v, err := x.valueAt(in, ix)
	if err != nil {
		return eval.Literal{}, err
	}
	if int64(len(l.Data)) > v.Size {
		return eval.Literal{}, fmt.Errorf("runtime: %s%v: %d bytes read from a %d-byte value", in.Name, ix, len(l.Data), v.Size)
	}
	t, err := x.tilingOf(v.ID, v.Shape)
	if err != nil {
		return eval.Literal{}, fmt.Errorf("runtime: %s%v: %v", in.Name, ix, err)
	}
	if t.order != nil {
		if err := x.readTiled(t, l.Data, x.addr[v.ID], v.Size); err != nil {
			return eval.Literal{}, fmt.Errorf("runtime: %s%v: %w", in.Name, ix, err)
		}
		return l, nil
	}
	return l, x.mem.ReadAt(l.Data, x.addr[v.ID])
}

// load reads the value of (in, ix) of shape shape: an array, or a tuple
// assembled from its leaves.
func (x *executor) load(in *hlo.Instruction, ix hlo.ShapeIndex, shape hlo.Shape) (eval.Literal, error) {
	switch {
	case shape.IsTuple():
		elems := make([]eval.Literal, len(shape.Tuple))
		for i, sub := range shape.Tuple {
			e, err := x.load(in, append(ix[:len(ix):len(ix)], int64(i)), sub)
			if err != nil {
				return eval.Literal{}, err
			}
			elems[i] = e
		}
		return eval.Literal{Shape: shape, Elems: elems}, nil
	case shape.IsArray():
		return x.loadArray(in, ix, shape)
	}
	return eval.Literal{Shape: shape}, nil // a token: no bytes
}

// store writes the leaves of out that in defines (not those it forwards
// from an operand) to their slots.
func (x *executor) store(in *hlo.Instruction, out eval.Literal) error {
	var err error
	var walk func(l eval.Literal, ix hlo.ShapeIndex)
	walk = func(l eval.Literal, ix hlo.ShapeIndex) {
		switch {
		case err != nil:
		case l.IsTuple():
			for i, e := range l.Elems {
				walk(e, append(ix[:len(ix):len(ix)], int64(i)))
			}
		default:
			err = x.storeLeaf(in, ix, l)
		}
	}
	walk(out, nil)
	return err
}

// storeLeaf writes the array l at (in, ix) when in defines the value
// there.
func (x *executor) storeLeaf(in *hlo.Instruction, ix hlo.ShapeIndex, l eval.Literal) error {
	if len(l.Data) == 0 {
		return nil
	}
	if v := x.a.ValueAt(in, ix); v != nil && v.Inst != in {
		return nil // forwarded: the operand's own bytes
	}
	v, err := x.valueAt(in, ix)
	if err != nil {
		return err
	}
	if int64(len(l.Data)) > v.Size {
		return fmt.Errorf("runtime: %s%v: %d bytes computed for a %d-byte value", in.Name, ix, len(l.Data), v.Size)
	}
	t, err := x.tilingOf(v.ID, v.Shape)
	if err != nil {
		return fmt.Errorf("runtime: %s%v: %v", in.Name, ix, err)
	}
	if t.order != nil {
		if err := x.writeTiled(t, l.Data, x.addr[v.ID], v.Size); err != nil {
			return fmt.Errorf("runtime: %s%v: %w", in.Name, ix, err)
		}
		return nil
	}
	return x.mem.WriteAt(l.Data, x.addr[v.ID])
}

// definesArray reports whether in defines a value at some array leaf: an
// instruction that only forwards its operands' values (tuple,
// get-tuple-element, most bitcasts) computes nothing.
func (x *executor) definesArray(in *hlo.Instruction) bool {
	found := false
	in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if found || !sub.IsArray() {
			return
		}
		if v := x.a.ValueAt(in, ix); v == nil || v.Inst == in {
			found = true
		}
	})
	return found
}

// run runs computation c's schedule on the arena.
func (x *executor) run(c *hlo.Computation) error {
	seq := x.a.Schedule.Sequence(c)
	if seq == nil {
		seq = c.Instructions
	}
	for _, in := range seq {
		if err := x.ev.Tick(in); err != nil {
			return err
		}
		if err := x.step(c, in); err != nil {
			return err
		}
	}
	return nil
}

// step runs one instruction of c.
func (x *executor) step(c *hlo.Computation, in *hlo.Instruction) error {
	switch in.Opcode {
	case hlo.OpParameter:
		if c != x.a.Module.Entry {
			return nil // the caller's bytes: the analysis aliases them
		}
		if in.ParameterNumber < 0 || int(in.ParameterNumber) >= len(x.params) {
			return fmt.Errorf("runtime: no argument for %s", in.Name)
		}
		return x.store(in, x.params[in.ParameterNumber])
	case hlo.OpWhile:
		cond, body := in.Condition(), in.Body()
		if cond == nil || body == nil {
			return fmt.Errorf("runtime: %s: while without condition or body", in.Name)
		}
		return x.ev.Loop(func() (bool, error) {
			if err := x.run(cond); err != nil {
				return false, err
			}
			p, err := x.loadArray(cond.Root, nil, cond.Root.Shape)
			if err != nil {
				return false, err
			}
			ok, err := eval.Predicate(p)
			if err != nil {
				return false, fmt.Errorf("runtime: %s: %v", in.Name, err)
			}
			return ok, nil
		}, func() error { return x.run(body) })
	case hlo.OpConditional:
		br := in.Branches()
		if len(br) == 0 || len(in.Operands) != len(br)+1 {
			return fmt.Errorf("runtime: %s: %d branches, %d operands", in.Name, len(br), len(in.Operands))
		}
		sel, err := x.load(in.Operands[0], nil, in.Operands[0].Shape)
		if err != nil {
			return err
		}
		k, err := eval.BranchIndex(sel, len(br))
		if err != nil {
			return fmt.Errorf("runtime: %s: %v", in.Name, err)
		}
		return x.run(br[k])
	case hlo.OpCall:
		if in.ToApply() == nil {
			return fmt.Errorf("runtime: %s: call without a computation", in.Name)
		}
		return x.run(in.ToApply())
	}
	if !x.definesArray(in) {
		return nil
	}
	ops := make([]eval.Literal, len(in.Operands))
	for i, o := range in.Operands {
		l, err := x.load(o, nil, o.Shape)
		if err != nil {
			return err
		}
		ops[i] = l
	}
	out, err := x.ev.Instruction(in, ops)
	if err != nil {
		return err
	}
	return x.store(in, out)
}
