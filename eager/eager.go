// Package eager models what a JAX program costs in device memory when it
// runs without jax.jit, op by op, and sets it beside the same program
// compiled whole.
//
// Without jit, JAX dispatches every primitive of a function on its own: it
// compiles the one op, allocates its result from the client allocator
// when it runs and frees it when the last Python reference goes. A nested
// jit (jnp.einsum, jax.nn.softmax; a `call` in the traced HLO) runs as one
// compiled program, with XLA's fusion and buffer reuse inside it. Neither
// fusion nor dead-code elimination crosses top-level ops, so every
// intermediate the function names is materialised in full. An HLO module
// does not record Python's references, so the release rule is the user's
// choice: Held (every result lives until the function returns, as named
// locals do) or LastUse (a result is freed right after its last use, as
// an expression's temporaries are). Parameters are held throughout.
//
// Run dispatches a module's entry computation that way on a modelled GPU
// (gpu.Client: the BFC pool JAX preallocates, or the platform allocator):
// each op, or called computation, is planned by hlomem's own pipeline
// (compile.Compile) and run as a gpu.Program. Jit plans the whole module
// through the same pipeline, fusion and dead-code elimination included,
// and runs it on a fresh client of the same configuration; both report
// the allocator's peak bytes in use, one definition for both.
package eager

import (
	"context"
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// Release is when an op-by-op run frees a result.
type Release int

const (
	// Held keeps every result until the function returns: Python locals
	// bound to names, as in the published cases.
	Held Release = iota
	// LastUse frees a result right after the last op that reads it:
	// temporaries of expressions.
	LastUse
)

func (r Release) String() string {
	if r == LastUse {
		return "last-use"
	}
	return "held"
}

// ParseRelease reads "held" or "last-use".
func ParseRelease(s string) (Release, error) {
	switch s {
	case "held":
		return Held, nil
	case "last-use", "lastuse", "last_use":
		return LastUse, nil
	}
	return Held, fmt.Errorf("eager release rule %q: want held or last-use", s)
}

// Options configure an op-by-op run.
type Options struct {
	Release Release
	// Compile plans each dispatched op or called computation (and, in
	// Jit, the whole module); Fuse should be set, as XLA fuses inside a
	// jitted program.
	Compile compile.Options
	// LiveAt is the step whose live arrays Result.Live lists; negative:
	// the peak's step (or the failing step on an out-of-memory).
	LiveAt int
	// Inputs, when set, are the function's arguments (one literal per
	// array leaf of the entry parameters, eval.EntryLeaves' order): each
	// op's program is also evaluated on its plan (exec.Execute), the
	// numbers flowing op to op, and Result.Outputs holds the function's
	// results. Seed seeds the ops that draw random numbers.
	Inputs []eval.Literal
	Seed   uint64
}

// Step is one top-level op of the run.
type Step struct {
	// Index counts from 1; step 0 puts the parameters.
	Index int
	Inst  *hlo.Instruction
	// Dispatched is false for ops that make no array of their own (tuple,
	// get-tuple-element: Python tuples and indexing).
	Dispatched bool
	// Allocated is what the op asked of the allocator (outputs and
	// temps), Freed what the release rule gave back after it.
	Allocated, Freed int64
	// InUse and Peak are the allocator's bytes in use after the step and
	// the peak so far; Live counts the arrays alive after it.
	InUse, Peak int64
	Live        int
}

// LiveArray is one array alive at a step, as jax.live_arrays() lists them.
type LiveArray struct {
	Name  string
	Shape hlo.Shape
	Bytes int64
	// Inst is the op that made it (a parameter for an argument); Source
	// its file:line from the metadata and OpName its op_name, when known.
	Inst   *hlo.Instruction
	Source string
	OpName string
}

// Result is an op-by-op run.
type Result struct {
	Module  *hlo.Module
	Release Release
	Device  gpu.Device
	// Allocator names the client's allocator and Limit the most it may
	// hold (gpu.Stats.BytesLimit).
	Allocator string
	Limit     int64
	Steps     []Step
	// Peak is the allocator's peak bytes in use over the run, reached
	// first at step PeakStep.
	Peak     int64
	PeakStep int
	// LiveStep is the step Live lists the arrays of (after it ran; the
	// failing step's arrays before it on an out-of-memory).
	LiveStep int
	Live     []LiveArray
	// OOM is the out-of-memory that stopped the run at step FailedStep
	// (0: putting the parameters), nil when it ran to the end.
	OOM        *gpu.OOMError
	FailedStep int
	// Outputs are, with Options.Inputs, the function's results computed
	// op by op (array leaves of the root, in shape-index pre-order).
	Outputs []eval.Literal
}

// Fits reports whether the run ended without running out of memory.
func (r *Result) Fits() bool { return r.OOM == nil }

// FailedInst returns the op that ran out of memory, or nil.
func (r *Result) FailedInst() *hlo.Instruction {
	if r.OOM == nil || r.FailedStep < 1 || r.FailedStep > len(r.Steps) {
		return nil
	}
	return r.Steps[r.FailedStep-1].Inst
}

// session is one run in progress.
type session struct {
	ctx    context.Context
	m      *hlo.Module
	c      *gpu.Client
	opts   Options
	leaves map[*hlo.Instruction][]leaf // every entry instruction's arrays
	arrays map[string]*LiveArray       // alive, by name
	last   map[string]int              // last step reading each array
	keep   map[string]bool             // parameters and the function's outputs
	// programs caches the plan of each distinct op program by its text.
	programs map[string]*gpu.Program
	// vals holds, with Options.Inputs, every live array's value.
	vals map[string]eval.Literal
	res  *Result
}

// leaf is one array of an instruction's value: a name on the client (""
// for a leaf without bytes) and its shape.
type leaf struct {
	name  string
	shape hlo.Shape
	index hlo.ShapeIndex // in the instruction's shape
}

// Run dispatches m's entry computation op by op on c, which should be
// fresh (its arrays are the run's). An out-of-memory ends the run and is
// reported in the Result, not as an error; an error is a module the
// pipeline cannot plan, or ctx ending.
func Run(ctx context.Context, m *hlo.Module, c *gpu.Client, opts Options) (*Result, error) {
	if m == nil || m.Entry == nil {
		return nil, errors.New("eager: no module")
	}
	if c == nil {
		return nil, errors.New("eager: no device client")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	s := &session{ctx: ctx, m: m, c: c, opts: opts,
		leaves: map[*hlo.Instruction][]leaf{}, arrays: map[string]*LiveArray{},
		last: map[string]int{}, keep: map[string]bool{}, programs: map[string]*gpu.Program{}, vals: map[string]eval.Literal{},
		res: &Result{Module: m, Release: opts.Release, Device: c.Device, Allocator: c.Alloc.Name(), Limit: c.Stats().BytesLimit, LiveStep: -1}}
	order := entryOrder(m.Entry)
	s.name(order)
	s.lastUses(order)
	if err := s.putParams(); err != nil {
		return s.res, err
	}
	for _, in := range order {
		if in.Opcode == hlo.OpParameter {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if stop, err := s.dispatch(len(s.res.Steps)+1, in); err != nil || stop {
			return s.res, err
		}
	}
	if opts.Inputs != nil {
		for _, l := range s.leaves[m.Entry.Root] {
			s.res.Outputs = append(s.res.Outputs, s.vals[l.name])
		}
	}
	if s.res.LiveStep < 0 {
		s.res.LiveStep = s.res.PeakStep
		if s.opts.LiveAt >= 0 {
			s.res.LiveStep = s.opts.LiveAt
		}
	}
	return s.res, nil
}
