package eager

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// entryOrder returns the entry's instructions in the order a Python
// function would run them: the text order, each operand first when the
// text names it later (a schedule, or a dump's order, already is one).
func entryOrder(c *hlo.Computation) []*hlo.Instruction {
	placed := make(map[*hlo.Instruction]bool, len(c.Instructions))
	order := make([]*hlo.Instruction, 0, len(c.Instructions))
	var place func(in *hlo.Instruction, depth int)
	place = func(in *hlo.Instruction, depth int) {
		if in == nil || placed[in] || in.Parent != c || depth > len(c.Instructions) {
			return
		}
		placed[in] = true
		for _, op := range in.Operands {
			place(op, depth+1)
		}
		order = append(order, in)
	}
	for _, in := range c.Instructions {
		place(in, 0)
	}
	return order
}

// aliasOnly reports whether in makes no array of its own: a tuple groups
// its operands' arrays, a get-tuple-element picks some (Python tuples and
// indexing).
func aliasOnly(in *hlo.Instruction) bool {
	return in.Opcode == hlo.OpTuple || in.Opcode == hlo.OpGetTupleElement
}

// name gives every leaf of every entry instruction its array name: its
// own (instruction name, with the shape index for a tuple) or, for a
// tuple or get-tuple-element, its operands'.
func (s *session) name(order []*hlo.Instruction) {
	own := func(in *hlo.Instruction) []leaf {
		var ls []leaf
		in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			if sub.IsTuple() {
				return
			}
			n := in.Name
			if in.Shape.IsTuple() {
				n += ix.String()
			}
			ls = append(ls, leaf{name: n, shape: sub, index: append(hlo.ShapeIndex(nil), ix...)})
		})
		return ls
	}
	for _, in := range order {
		switch in.Opcode {
		case hlo.OpTuple:
			var ls []leaf
			for k, op := range in.Operands {
				for _, l := range s.leaves[op] {
					l.index = append(hlo.ShapeIndex{int64(k)}, l.index...)
					ls = append(ls, l)
				}
			}
			s.leaves[in] = ls
		case hlo.OpGetTupleElement:
			var ls []leaf
			if len(in.Operands) == 1 {
				for _, l := range s.leaves[in.Operands[0]] {
					if len(l.index) > 0 && l.index[0] == in.TupleIndex {
						l.index = l.index[1:]
						ls = append(ls, l)
					}
				}
			}
			s.leaves[in] = ls
		default:
			s.leaves[in] = own(in)
		}
	}
}

// lastUses records, for every array, the last step whose op reads it,
// and keeps the parameters and the function's outputs.
func (s *session) lastUses(order []*hlo.Instruction) {
	step := 0
	for _, in := range order {
		switch {
		case in.Opcode == hlo.OpParameter:
			for _, l := range s.leaves[in] {
				s.keep[l.name] = true
			}
			continue
		case !aliasOnly(in):
			for _, op := range in.Operands {
				for _, l := range s.leaves[op] {
					s.last[l.name] = step + 1
				}
			}
		}
		step++
	}
	for _, l := range s.leaves[s.m.Entry.Root] {
		s.keep[l.name] = true
	}
}

// putParams puts the function's arguments on the device (step 0).
func (s *session) putParams() error {
	k := 0
	for _, p := range s.m.Entry.Params {
		if p == nil {
			continue
		}
		for _, l := range s.leaves[p] {
			if err := s.put(l, p); err != nil {
				return s.failed(0, p, err)
			}
			if s.opts.Inputs != nil {
				if k >= len(s.opts.Inputs) {
					return fmt.Errorf("eager: %d arguments for more parameter leaves", len(s.opts.Inputs))
				}
				s.vals[l.name] = s.opts.Inputs[k]
			}
			k++
		}
	}
	if s.opts.Inputs != nil && k != len(s.opts.Inputs) {
		return fmt.Errorf("eager: %d arguments for %d parameter leaves", len(s.opts.Inputs), k)
	}
	s.record(Step{Index: 0}, s.maybeSnapshot(0))
	return nil
}

// put allocates one array of in's on the device.
func (s *session) put(l leaf, in *hlo.Instruction) error {
	n, err := hlo.BufferSize(l.shape)
	if err != nil {
		return fmt.Errorf("eager: %s: %w", in.Name, err)
	}
	if _, err := s.c.Put(l.name, n, l.shape.String()); err != nil {
		return err
	}
	s.born(l, n, in)
	return nil
}

// born records an array made by in.
func (s *session) born(l leaf, n int64, in *hlo.Instruction) {
	a := liveArray(s.m, l.name, l.shape, n, in)
	s.arrays[l.name] = &a
}

// failed turns an out-of-memory at step into the result (the arrays alive
// when it failed are the listing) and passes other errors on.
func (s *session) failed(step int, in *hlo.Instruction, err error) error {
	var oom *gpu.OOMError
	if !errors.As(err, &oom) {
		return err
	}
	s.res.OOM, s.res.FailedStep = oom, step
	s.res.LiveStep, s.res.Live = step, s.snapshot()
	st := s.c.Stats()
	s.res.Peak = st.PeakBytesInUse
	if step > 0 {
		s.res.Steps = append(s.res.Steps, Step{Index: step, Inst: in, Dispatched: true, InUse: st.BytesInUse, Peak: st.PeakBytesInUse, Live: len(s.arrays)})
	}
	return nil
}

// dispatch runs one top-level op: an alias op makes nothing; a constant is
// put on the device; anything else (a call: its callee) is planned by the
// pipeline and run as one program. Then the release rule frees what it
// frees. stop is set on an out-of-memory.
func (s *session) dispatch(step int, in *hlo.Instruction) (stop bool, err error) {
	st := Step{Index: step, Inst: in, Dispatched: !aliasOnly(in)}
	before := s.c.Stats()
	switch {
	case aliasOnly(in):
	case in.Opcode == hlo.OpConstant:
		for _, l := range s.leaves[in] {
			if err := s.put(l, in); err != nil {
				return true, s.failed(step, in, err)
			}
		}
		st.Allocated = s.c.Stats().BytesInUse - before.BytesInUse
		if s.opts.Inputs != nil {
			v, err := eval.Instruction(in, nil)
			if err != nil {
				return true, fmt.Errorf("eager: %s: %w", in.Name, err)
			}
			s.setValues(in, v)
		}
	default:
		allocated, err := s.runOp(in)
		if err != nil {
			if ferr := s.failed(step, in, err); ferr != nil {
				return true, ferr
			}
			return true, nil
		}
		st.Allocated = allocated
	}
	s.record(st, s.release(step, in, &st))
	return false, nil
}

// runOp plans in as a program of its own and runs it on its operands'
// arrays.
func (s *session) runOp(in *hlo.Instruction) (int64, error) {
	text, err := opModuleText(s.m, in)
	if err != nil {
		return 0, err
	}
	p := s.programs[text]
	if p == nil {
		mod, err := hlo.ParseModule(s.m.Name+"."+in.Name+".hlo", text)
		if err != nil {
			return 0, fmt.Errorf("eager: the program of %s does not parse: %w", in.Name, err)
		}
		r, err := compile.Compile(s.ctx, mod, s.opts.Compile)
		if err != nil {
			return 0, fmt.Errorf("eager: %s: %w", in.Name, err)
		}
		if p, err = gpu.NewProgram(s.m.Name+"."+in.Name, r.Assignment); err != nil {
			return 0, fmt.Errorf("eager: %s: %w", in.Name, err)
		}
		s.programs[text] = p
	}
	var args []string
	seen := map[*hlo.Instruction]bool{}
	for _, op := range in.Operands {
		if seen[op] {
			continue
		}
		seen[op] = true
		for _, l := range s.leaves[op] {
			args = append(args, l.name)
		}
	}
	outs := make([]string, 0, len(s.leaves[in]))
	for _, l := range s.leaves[in] {
		outs = append(outs, l.name)
	}
	res, err := s.c.Run(s.ctx, p, args, outs)
	if err != nil {
		return 0, err
	}
	if s.opts.Inputs != nil {
		if err := s.evaluate(in, p, args); err != nil {
			return 0, err
		}
	}
	for i, l := range s.leaves[in] {
		n := int64(0)
		if i < len(res.Outputs) && res.Outputs[i] != nil {
			n = res.Outputs[i].Bytes
		}
		s.born(l, n, in)
	}
	return res.Allocated, nil
}

// release frees, under LastUse, the arrays whose last reader was step (and
// the op's own results no one reads), and returns the arrays alive while
// the op ran, before those frees.
func (s *session) release(step int, in *hlo.Instruction, st *Step) []LiveArray {
	during := s.maybeSnapshot(step)
	if s.opts.Release != LastUse {
		return during
	}
	var names []string
	for _, op := range in.Operands {
		for _, l := range s.leaves[op] {
			if s.last[l.name] == step && !s.keep[l.name] {
				names = append(names, l.name)
			}
		}
	}
	if !aliasOnly(in) {
		for _, l := range s.leaves[in] {
			if _, used := s.last[l.name]; !used && !s.keep[l.name] {
				names = append(names, l.name)
			}
		}
	}
	for _, n := range names {
		a, ok := s.arrays[n]
		if !ok {
			continue
		}
		if err := s.c.Delete(n); err == nil {
			st.Freed += a.Bytes
			delete(s.arrays, n)
			delete(s.vals, n)
		}
	}
	return during
}

// maybeSnapshot lists the arrays alive now, while the op's arrays are
// all there, when step is the one asked for or the op took the peak
// higher.
func (s *session) maybeSnapshot(step int) []LiveArray {
	if s.opts.LiveAt == step || s.opts.LiveAt < 0 && s.c.Stats().PeakBytesInUse > s.res.Peak {
		return s.snapshot()
	}
	return nil
}

// record appends a step with the allocator's figures after it, and keeps
// the live arrays of the peak's step.
func (s *session) record(st Step, during []LiveArray) {
	stats := s.c.Stats()
	st.InUse, st.Peak, st.Live = stats.BytesInUse, stats.PeakBytesInUse, len(s.arrays)
	if st.Index > 0 {
		s.res.Steps = append(s.res.Steps, st)
	}
	if stats.PeakBytesInUse > s.res.Peak || st.Index == 0 {
		s.res.Peak, s.res.PeakStep = stats.PeakBytesInUse, st.Index
		if s.opts.LiveAt < 0 {
			if during == nil {
				during = s.snapshot() // step 0: nothing was released
			}
			s.res.Live, s.res.LiveStep = during, st.Index
		}
	}
	if during != nil && s.opts.LiveAt == st.Index {
		s.res.Live, s.res.LiveStep = during, st.Index
	}
}

// snapshot lists the arrays alive now, largest first (then by name).
func (s *session) snapshot() []LiveArray {
	out := make([]LiveArray, 0, len(s.arrays))
	for _, a := range s.arrays {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// opModuleText is the program JAX compiles for one op of the function:
// the op over parameters standing for its distinct operands, with the
// computations it calls (a call's callee is the nested jit). Its text
// leaves out the op's name and metadata, which do not change the plan,
// so that ops alike share one program (JAX's compilation cache).
func opModuleText(m *hlo.Module, in *hlo.Instruction) (string, error) {
	var b strings.Builder
	b.WriteString("HloModule eager\n\n")
	for _, c := range reachable(m, in) {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	params := map[*hlo.Instruction]*hlo.Instruction{}
	var plist []*hlo.Instruction
	for _, op := range in.Operands {
		if op == nil {
			return "", fmt.Errorf("eager: %s: an operand is undefined", in.Name)
		}
		if params[op] != nil {
			continue
		}
		p := &hlo.Instruction{Name: fmt.Sprintf("eager.arg.%d", len(plist)), Opcode: hlo.OpParameter, ParameterNumber: int64(len(plist)), Shape: op.Shape}
		params[op] = p
		plist = append(plist, p)
	}
	x := *in
	x.Name, x.Metadata = "eager.op", nil
	x.Parent, x.Users, x.ImplicitGTE = nil, nil, false
	x.Operands = make([]*hlo.Instruction, len(in.Operands))
	for i, op := range in.Operands {
		x.Operands[i] = params[op]
	}
	if in.Ext != nil {
		ext := *in.Ext
		ext.ControlPredecessors, ext.ControlSuccessors = nil, nil
		x.Ext = &ext
	}
	b.WriteString("ENTRY %eager {\n")
	for _, p := range plist {
		fmt.Fprintf(&b, "  %s\n", p.String())
	}
	fmt.Fprintf(&b, "  ROOT %s\n}\n", x.String())
	return b.String(), nil
}

// reachable returns the computations in calls, directly or not, in m's
// order (callees before callers in a module the parser read).
func reachable(m *hlo.Module, in *hlo.Instruction) []*hlo.Computation {
	seen := map[*hlo.Computation]bool{}
	var visit func(c *hlo.Computation, depth int)
	visit = func(c *hlo.Computation, depth int) {
		if c == nil || seen[c] || depth > hlo.MaxInlineDepth {
			return
		}
		seen[c] = true
		for _, x := range c.Instructions {
			for _, cc := range x.Callees() {
				visit(cc, depth+1)
			}
		}
	}
	for _, c := range in.Callees() {
		visit(c, 0)
	}
	var out []*hlo.Computation
	for _, c := range m.Computations {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// evaluate runs in's program on its plan with its operands' values
// (exec.Execute) and keeps the results.
func (s *session) evaluate(in *hlo.Instruction, p *gpu.Program, args []string) error {
	lits := make([]eval.Literal, len(args))
	for i, n := range args {
		v, ok := s.vals[n]
		if !ok {
			return fmt.Errorf("eager: %s: operand %s has no value", in.Name, n)
		}
		lits[i] = v
	}
	r, err := exec.Execute(s.ctx, p.Assignment, lits, nil, exec.Options{Seed: s.opts.Seed})
	if err != nil {
		return fmt.Errorf("eager: %s: %w", in.Name, err)
	}
	ls := s.leaves[in]
	if len(r.Outputs) != len(ls) {
		return fmt.Errorf("eager: %s: %d outputs for %d arrays", in.Name, len(r.Outputs), len(ls))
	}
	for i, l := range ls {
		s.vals[l.name] = r.Outputs[i]
	}
	return nil
}

// setValues keeps the leaves of a value computed outside a program.
func (s *session) setValues(in *hlo.Instruction, v eval.Literal) {
	leaves := v.Leaves()
	for i, l := range s.leaves[in] {
		if i < len(leaves) {
			s.vals[l.name] = leaves[i]
		}
	}
}
