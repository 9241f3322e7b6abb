package hlo

import (
	"strconv"
	"strings"
)

// XLA prints an asynchronous op whose async computation holds a single
// instruction in a short form (HloInstruction::PrintWithCanonicalNameMap
// with syntax_sugar_async_ops): the wrapped op's opcode with -start,
// -update or -done in place of async-start, async-update or async-done,
// the start carrying the wrapped op's attributes and no calls=. Its parser
// (hlo_parser.cc, ParseOpcode and the kAsyncStart case of
// ParseInstructionRhs) accepts that form for any opcode: for the start it
// builds the computation "async_wrapped" with one parameter "async_param"
// per operand, shaped as the operand, and the wrapped op "async_op" of the
// start's output shape (element {1}) as its root; the update and done take
// it from their chain. This file does the same.

// asyncSugarSuffixes are the suffixes XLA's ParseOpcode tries, in its
// order, when a word is no opcode of its own.
var asyncSugarSuffixes = [...]struct {
	suffix string
	op     Opcode
}{{"-start", OpAsyncStart}, {"-update", OpAsyncUpdate}, {"-done", OpAsyncDone}}

// asyncSugar splits an opcode word such as reduce-scatter-start into the
// async op it stands for and the opcode it wraps. Words that are opcodes
// of their own (all-reduce-start, copy-done, ...) never reach it.
func asyncSugar(word string) (async, wrapped Opcode, ok bool) {
	for _, s := range asyncSugarSuffixes {
		if base, found := strings.CutSuffix(word, s.suffix); found {
			if op, known := opByName[base]; known {
				return s.op, op, true
			}
			return OpUnknown, OpUnknown, false
		}
	}
	return OpUnknown, OpUnknown, false
}

// wrappable reports whether op may be the wrapped op of the short form: a
// parameter has no operands to bind and an async op cannot wrap another.
func wrappable(op Opcode) bool {
	switch op {
	case OpUnknown, OpParameter, OpAsyncStart, OpAsyncUpdate, OpAsyncDone:
		return false
	}
	return true
}

// startOwnAttribute reports whether an attribute written on a short-form
// start belongs to the async-start rather than to the op it wraps: XLA
// parses the attributes every instruction may carry (ParseInstruction's
// sharding, frontend_attributes, statistics, control-predecessors,
// metadata, backend_config, original_value, result_accuracy) into the
// instruction it returns, the start, and async_execution_thread is the
// start's own. output_to_operand_aliasing is the start's unless the
// wrapped op takes one itself (custom-call, fusion), whose parse then
// claims it.
func startOwnAttribute(name string, wrapped Opcode) bool {
	switch name {
	case "sharding", "frontend_attributes", "statistics", "control-predecessors", "metadata",
		"backend_config", "original_value", "result_accuracy", "async_execution_thread":
		return true
	case "output_to_operand_aliasing":
		return wrapped != OpCustomCall && wrapped != OpFusion
	}
	return false
}

// parseAsyncSugarStart reads the attributes of a short-form start and
// builds its async computation. The call-start form names the async
// computation with to_apply= and builds nothing.
func (p *parser) parseAsyncSugarStart(in *Instruction, inferred bool) {
	wrapped := in.Ext.AsyncSugar
	if inferred {
		p.fail(in.Pos, "%s-start %s needs its shape ((operands), output, context...)", wrapped, in.Name)
	}
	if wrapped == OpCall {
		for p.peek().kind == tokComma {
			p.next()
			nt := p.name("attribute name")
			p.expectAfter(tokEq, "after attribute name ", p.lx.text(nt))
			if p.lx.text(nt) == "to_apply" {
				in.Ext.Calls = make([]*Computation, 1)
				p.computationRef(in, "calls", 0)
				continue
			}
			p.parseAttribute(in, nt)
		}
		return
	}
	s := in.Shape
	if !s.IsTuple() || len(s.Tuple) < 2 || !s.Tuple[0].IsTuple() {
		p.fail(in.Pos, "%s-start %s has shape %s; an async start's shape is ((operands), output, context...)", wrapped, in.Name, s)
	}
	if n, m := len(in.Operands), len(s.Tuple[0].Tuple); n != m {
		p.fail(in.Pos, "%s-start %s has %d operands, but element 0 of its shape lists %d", wrapped, in.Name, n, m)
	}
	c := &Computation{Name: "async_wrapped", Module: p.mod, Pos: in.Pos}
	op := &Instruction{Name: "async_op", Opcode: wrapped, Shape: s.Tuple[1], Pos: in.Pos, Parent: c}
	for i, ps := range s.Tuple[0].Tuple {
		param := &Instruction{Name: "async_param", Opcode: OpParameter, ParameterNumber: int64(i), Shape: ps, Pos: in.Pos, Parent: c}
		c.Params = append(c.Params, param)
		c.Instructions = append(c.Instructions, param)
		op.Operands = append(op.Operands, param)
	}
	c.Instructions = append(c.Instructions, op)
	c.Root = op
	for _, x := range c.Instructions {
		x.ID = p.mod.nextID
		p.mod.nextID++
	}
	for p.peek().kind == tokComma {
		p.next()
		nt := p.name("attribute name")
		p.expectAfter(tokEq, "after attribute name ", p.lx.text(nt))
		if startOwnAttribute(p.lx.text(nt), wrapped) {
			p.parseAttribute(in, nt)
		} else {
			p.parseAttribute(op, nt)
		}
	}
	c.RebuildUsers()
	in.Ext.Calls = []*Computation{c}
	p.sugared = append(p.sugared, c)
	// XLA's parser keeps the computation before the one using it.
	p.mod.Computations = append(p.mod.Computations, c)
}

// nameSugared names the computations and instructions the parser built
// for short-form async ops as XLA's module does when it adds them
// (HloModule::AddComputationAndUnifyNamesAndIds): "async_wrapped",
// "async_param" and "async_op", made unique in the module by a numeric
// suffix.
func (p *parser) nameSugared(m *Module) {
	if len(p.sugared) == 0 {
		return
	}
	built := make(map[*Computation]bool, len(p.sugared))
	for _, c := range p.sugared {
		built[c] = true
	}
	comps := make(map[string]bool, len(m.Computations))
	insts := make(map[string]bool)
	for _, c := range m.Computations {
		if built[c] {
			continue
		}
		comps[c.Name] = true
		for _, in := range c.Instructions {
			insts[in.Name] = true
		}
	}
	unique := func(used map[string]bool, base string) string {
		name := base
		for k := 1; used[name]; k++ {
			name = base + "." + strconv.Itoa(k)
		}
		used[name] = true
		return name
	}
	for _, c := range p.sugared {
		c.Name = unique(comps, "async_wrapped")
		for _, in := range c.Instructions {
			if in.Name == "async_param" || in.Name == "async_op" {
				in.Name = unique(insts, in.Name)
			}
		}
	}
	p.sugared = p.sugared[:0]
}

// AsyncChainStart returns the async-start an async op's chain begins
// with (in itself for a start), or nil.
func AsyncChainStart(in *Instruction) *Instruction {
	for i := 0; in != nil && i < 1<<16; i++ {
		switch in.Opcode {
		case OpAsyncStart:
			return in
		case OpAsyncUpdate, OpAsyncDone:
			if len(in.Operands) == 0 {
				return nil
			}
			in = in.Operands[0]
		default:
			return nil
		}
	}
	return nil
}

// CanExpandIntoSingleInstruction reports whether every instruction of c
// but its root is a parameter (XLA's
// HloComputation::CanExpandIntoSingleInstruction), the condition under
// which XLA prints the async ops running c in the short form.
func (c *Computation) CanExpandIntoSingleInstruction() bool {
	if c == nil || c.Root == nil {
		return false
	}
	for _, in := range c.Instructions {
		if in != c.Root && in.Opcode != OpParameter {
			return false
		}
	}
	return true
}

// reparses reports whether the short form of start would parse back into
// its async computation w: w's root takes w's parameters in order, they
// are shaped as element {0} of the start lists, and the root as element
// {1}. The canonical printer writes the short form only then.
func reparses(start *Instruction, w *Computation) bool {
	if !w.CanExpandIntoSingleInstruction() || !wrappable(w.Root.Opcode) {
		return false
	}
	s := start.Shape
	if !s.IsTuple() || len(s.Tuple) < 2 || !s.Tuple[0].IsTuple() || !SameShape(s.Tuple[1], w.Root.Shape) {
		return false
	}
	if len(w.Params) != len(start.Operands) || len(w.Root.Operands) != len(w.Params) || len(s.Tuple[0].Tuple) != len(w.Params) {
		return false
	}
	for i, p := range w.Params {
		if p == nil || w.Root.Operands[i] != p || !SameShape(p.Shape, s.Tuple[0].Tuple[i]) {
			return false
		}
	}
	return len(w.Root.ControlPredecessors()) == 0
}

// sugarForm says whether in prints in the short form and under which
// opcode: always for the call-start form, for a short form the parser
// built while its computation still reparses, and, when forced (XLA's
// own printing, syntax_sugar_async_ops), for any async op whose
// computation can expand into its root.
func (in *Instruction) sugarForm(forced bool) (Opcode, bool) {
	switch in.Opcode {
	case OpAsyncStart, OpAsyncUpdate, OpAsyncDone:
	default:
		return OpUnknown, false
	}
	start := AsyncChainStart(in)
	if start == nil || len(start.Calls()) != 1 || start.Calls()[0] == nil {
		return OpUnknown, false
	}
	w := start.Calls()[0]
	switch sugar := start.ext().AsyncSugar; {
	case sugar == OpCall:
		return OpCall, true
	case sugar != OpUnknown && reparses(start, w):
		return w.Root.Opcode, true
	case forced && w.CanExpandIntoSingleInstruction():
		return w.Root.Opcode, true
	}
	return OpUnknown, false
}

// hiddenComputations lists the async computations the module's text
// leaves out because their ops print in the short form (HloModule::Print
// skips them too).
func (m *Module) hiddenComputations() map[*Computation]bool {
	var hidden map[*Computation]bool
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode != OpAsyncStart || in.ext().AsyncSugar == OpUnknown || in.ext().AsyncSugar == OpCall {
				continue
			}
			if _, ok := in.sugarForm(false); ok {
				if hidden == nil {
					hidden = make(map[*Computation]bool)
				}
				hidden[in.Calls()[0]] = true
			}
		}
	}
	return hidden
}

// writeSugar writes a short-form async op's opcode, operands and
// attributes: async_execution_thread, then (on the start) the wrapped
// op's attributes, or to_apply= in the call form, then the op's own
// others; never calls=.
func (in *Instruction) writeSugar(b *strings.Builder, wrapped Opcode, opts PrintOptions) {
	b.WriteString(wrapped.String())
	switch in.Opcode {
	case OpAsyncStart:
		b.WriteString("-start(")
	case OpAsyncUpdate:
		b.WriteString("-update(")
	default:
		b.WriteString("-done(")
	}
	in.writeOperands(b, opts)
	b.WriteByte(')')
	var rest []Attr
	for _, a := range in.Attrs {
		if a.Name == "async_execution_thread" {
			writeAttrs(b, []Attr{a})
		} else {
			rest = append(rest, a)
		}
	}
	if in.Opcode == OpAsyncStart {
		w := in.Calls()[0]
		if in.ext().AsyncSugar == OpCall {
			b.WriteString(", to_apply=")
			writeCompRef(b, w)
		} else {
			w.Root.writeFields(b, w.Root.ext())
			writeAttrs(b, w.Root.Attrs)
		}
	}
	x := *in.ext()
	x.Calls = nil
	in.writeFields(b, &x)
	writeAttrs(b, rest)
}
