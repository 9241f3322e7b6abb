package hlo

import (
	"context"
	"slices"
	"strconv"
)

// NameUniquer hands out names not yet used in a module: a taken name gets
// a ".N" suffix, as XLA's NameUniquer does.
type NameUniquer struct {
	m    *Module // whose names are loaded on first use, when used is nil
	used map[string]bool
	next map[string]int // per base name, no suffix below it is free
}

// NewNameUniquer returns a uniquer that knows every computation and
// instruction name of m as m is when the first name is asked for (many
// uniquers are made for edits that turn out to need none).
func NewNameUniquer(m *Module) *NameUniquer {
	return &NameUniquer{m: m}
}

// load reads the names of u.m.
func (u *NameUniquer) load() {
	n := 0
	if u.m != nil {
		for _, c := range u.m.Computations {
			n += 1 + len(c.Instructions)
		}
	}
	u.used = make(map[string]bool, n+n/4)
	if u.m != nil {
		for _, c := range u.m.Computations {
			u.used[c.Name] = true
			for _, in := range c.Instructions {
				u.used[in.Name] = true
			}
		}
	}
	u.m = nil
}

// Unique returns name, or name.N for the smallest N that is free, and
// records it as used. The zero NameUniquer knows no names.
func (u *NameUniquer) Unique(name string) string {
	if u.used == nil {
		u.load()
	}
	if !u.used[name] {
		u.used[name] = true
		return name
	}
	// Names are only ever added, so the smallest free suffix never
	// decreases: starting from the last one keeps a name handed out
	// many times linear instead of quadratic.
	if u.next == nil {
		u.next = map[string]int{}
	}
	for i := max(u.next[name], 1); ; i++ {
		n := name + "." + strconv.Itoa(i)
		if !u.used[n] {
			u.used[n] = true
			u.next[name] = i + 1
			return n
		}
	}
}

// Clone returns a copy of c named after it with the given suffix
// ("body" -> "body.clone"), whose instructions are copies with suffixed
// unique names. The copy calls the same computations as c and is not yet
// part of any module's Computations list; its Module is c's.
func (c *Computation) Clone(suffix string, names *NameUniquer) *Computation {
	nc := &Computation{Name: names.Unique(c.Name + "." + suffix), Module: c.Module, Pos: c.Pos, ExecutionThread: c.ExecutionThread}
	// remap[i] is the copy of c.Instructions[i]; pos finds i by ID.
	pos := NewInstructionIndex(c)
	remap := make([]*Instruction, len(c.Instructions))
	copyOf := func(in *Instruction) *Instruction {
		if i := pos.Of(in); i >= 0 {
			return remap[i]
		}
		return nil
	}
	nc.Instructions = make([]*Instruction, len(c.Instructions))
	for i, in := range c.Instructions {
		cp := *in
		cp.Name = in.Name
		if !in.ImplicitGTE {
			cp.Name = names.Unique(in.Name + "." + suffix)
		}
		cp.Parent = nc
		c.Module.NewInstruction(&cp)
		cp.Users = nil
		cp.Operands = append([]*Instruction(nil), in.Operands...)
		cp.Dimensions = append([]int64(nil), in.Dimensions...)
		cp.Attrs = append([]Attr(nil), in.Attrs...)
		if in.Metadata != nil {
			md := *in.Metadata
			cp.Metadata = &md
		}
		if in.Ext != nil {
			x := *in.Ext
			x.Calls = append([]*Computation(nil), x.Calls...)
			x.Branches = append([]*Computation(nil), x.Branches...)
			x.CalledComputations = append([]*Computation(nil), x.CalledComputations...)
			x.ControlPredecessors = append([]*Instruction(nil), x.ControlPredecessors...)
			x.ControlSuccessors = nil
			cp.Ext = &x
		}
		nc.Instructions[i] = &cp
		remap[i] = &cp
	}
	for _, in := range nc.Instructions {
		for k, op := range in.Operands {
			if r := copyOf(op); r != nil {
				in.Operands[k] = r
			}
		}
		if in.Ext != nil {
			for k, p := range in.Ext.ControlPredecessors {
				if r := copyOf(p); r != nil {
					in.Ext.ControlPredecessors[k] = r
				}
			}
		}
	}
	nc.Root = copyOf(c.Root)
	if c.Params != nil {
		nc.Params = make([]*Instruction, len(c.Params))
		for i, p := range c.Params {
			nc.Params[i] = copyOf(p)
		}
	}
	nc.RebuildUsers()
	return nc
}

// FlattenCallGraph gives every computation that runs in its caller's
// thread (the bodies of call, while, conditional and async-start) exactly
// one call site, cloning it for each further site, as XLA's
// FlattenCallGraph pass does before buffer assignment. Computations called
// from fusions or in a parallel context (reduce's to_apply and the like)
// stay shared. It reports whether it changed the module.
//
// It verifies m first and refuses an invalid module with Verify's errors,
// leaving it unchanged: among them a call cycle (cloning a computation
// that calls itself would never end) and operands outside their
// computation, which cloning cannot map.
func FlattenCallGraph(m *Module) (changed bool, err error) {
	return FlattenCallGraphContext(context.Background(), m)
}

// FlattenCallGraphContext is FlattenCallGraph whose verification of m
// stops, returning ctx's error, once ctx is done.
func FlattenCallGraphContext(ctx context.Context, m *Module) (changed bool, err error) {
	if m == nil {
		return false, nil
	}
	if err := VerifyContext(ctx, m); err != nil {
		return false, err
	}
	names := NewNameUniquer(m)
	seen := map[*Computation]bool{m.Entry: true}
	// A computation that runs both in its caller's thread and embedded (a
	// fusion body, a reduction function, or called from one) gets a clone
	// at every sequential call site, the first one too, as XLA's
	// FlattenNode does for CallContext::kBoth; the original stays embedded.
	for c := range bothContexts(m) {
		seen[c] = true
	}
	var visit func(c *Computation)
	visit = func(c *Computation) {
		for _, in := range c.Instructions {
			if in.Ext == nil || !isSequentialCall(in.Opcode) {
				continue
			}
			x := in.Ext
			for _, slot := range []*[]*Computation{&x.Calls, &x.Branches, &x.CalledComputations} {
				for i, callee := range *slot {
					(*slot)[i] = flattenOne(m, callee, seen, names, &changed, visit)
				}
			}
			for _, p := range []**Computation{&x.ToApply, &x.Condition, &x.Body} {
				*p = flattenOne(m, *p, seen, names, &changed, visit)
			}
		}
		// An async-update or async-done that repeats its chain's calls=
		// calls what its async-start calls, clone or not.
		for _, in := range c.Instructions {
			if (in.Opcode == OpAsyncUpdate || in.Opcode == OpAsyncDone) && in.Ext != nil && len(in.Ext.Calls) > 0 {
				if start := AsyncChainStart(in); start != nil && len(start.Calls()) > 0 && start.Calls()[0] != nil {
					in.Ext.Calls[0] = start.Calls()[0]
				}
			}
		}
	}
	visit(m.Entry)
	if changed {
		m.Renumber()
	}
	return changed, nil
}

// bothContexts returns the computations reachable from the entry both
// through sequential calls only and through an embedded call (fusion,
// to_apply of reduce and the like, custom-call).
func bothContexts(m *Module) map[*Computation]bool {
	const (
		sequential = 1 << iota
		embedded
	)
	reached := map[*Computation]uint8{}
	var walk func(c *Computation, ctx uint8)
	walk = func(c *Computation, ctx uint8) {
		if c == nil || reached[c]&ctx != 0 {
			return
		}
		reached[c] |= ctx
		for _, in := range c.Instructions {
			calleeCtx := ctx
			if !isSequentialCall(in.Opcode) && in.Opcode != OpAsyncUpdate && in.Opcode != OpAsyncDone {
				calleeCtx = embedded
			}
			for _, callee := range in.Callees() {
				walk(callee, calleeCtx)
			}
		}
	}
	walk(m.Entry, sequential)
	both := map[*Computation]bool{}
	for c, ctx := range reached {
		if ctx == sequential|embedded {
			both[c] = true
		}
	}
	return both
}

func isSequentialCall(op Opcode) bool {
	return op == OpCall || op == OpWhile || op == OpConditional || op == OpAsyncStart
}

func flattenOne(m *Module, c *Computation, seen map[*Computation]bool, names *NameUniquer, changed *bool, visit func(*Computation)) *Computation {
	if c == nil {
		return nil
	}
	if seen[c] {
		c = c.Clone("clone", names)
		m.Computations = append(m.Computations, c)
		*changed = true
	}
	seen[c] = true
	visit(c)
	return c
}

// InsertBefore adds in to c just before the instruction before (at the end
// when before is nil), sets its parent and records it as a user of its
// operands. It does not check names; use a NameUniquer.
func (c *Computation) InsertBefore(in, before *Instruction) {
	in.Parent = c
	pos := len(c.Instructions)
	if before != nil {
		for i, x := range c.Instructions {
			if x == before {
				pos = i
				break
			}
		}
	}
	c.Instructions = append(c.Instructions, nil)
	copy(c.Instructions[pos+1:], c.Instructions[pos:])
	c.Instructions[pos] = in
	for _, op := range in.Operands {
		if n := len(op.Users); n == 0 || op.Users[n-1] != in {
			op.Users = append(op.Users, in)
		}
	}
}

// ReplaceOperand makes in take op as operand k, keeping the users lists of
// the old and new operand right.
func (in *Instruction) ReplaceOperand(k int, op *Instruction) {
	old := in.Operands[k]
	in.Operands[k] = op
	stillUsed := false
	for _, o := range in.Operands {
		if o == old {
			stillUsed = true
		}
	}
	if !stillUsed {
		for i, u := range old.Users {
			if u == in {
				old.Users = append(old.Users[:i], old.Users[i+1:]...)
				break
			}
		}
	}
	for _, u := range op.Users {
		if u == in {
			return
		}
	}
	op.Users = append(op.Users, in)
}

// Clone returns a deep copy of m: new computations and instructions, with
// the same names, IDs, order and attributes, that call and read each other
// as m's do, so that editing one leaves the other as it was. Shapes,
// literals, metadata, stack frames and backend configs, which the IR
// never edits in place, are shared. Clone is much cheaper than printing m
// and parsing the text back, and gives the same module.
func (m *Module) Clone() *Module {
	if m == nil {
		return nil
	}
	nm := *m
	n := 0
	for _, c := range m.Computations {
		n += len(c.Instructions)
	}
	cmap := make(map[*Computation]*Computation, len(m.Computations))
	// The copy of an instruction of m: by ID when the IDs are a
	// numbering of m's instructions (as Renumber and the parser leave
	// them), through a map otherwise.
	orig := make([]*Instruction, m.NumIDs())
	byID := make([]*Instruction, m.NumIDs())
	var imap map[*Instruction]*Instruction
	m.Instructions(func(in *Instruction) {
		if imap == nil && in != nil && in.ID >= 0 && in.ID < len(orig) && orig[in.ID] == nil {
			orig[in.ID] = in
			return
		}
		if imap == nil {
			imap = make(map[*Instruction]*Instruction, n)
		}
	})
	nm.Computations = make([]*Computation, len(m.Computations))
	insts := make([]Instruction, n) // one allocation for every instruction
	k := 0
	for i, c := range m.Computations {
		nc := *c
		nc.Module = &nm
		nc.Instructions = make([]*Instruction, len(c.Instructions))
		for j, in := range c.Instructions {
			ni := &insts[k]
			k++
			*ni = *in
			ni.Parent = &nc
			if imap != nil {
				imap[in] = ni
			} else {
				byID[in.ID] = ni
			}
			nc.Instructions[j] = ni
		}
		cmap[c] = &nc
		nm.Computations[i] = &nc
	}
	inst := func(in *Instruction) *Instruction {
		if imap != nil {
			if x, ok := imap[in]; ok {
				return x
			}
		} else if in != nil && in.ID >= 0 && in.ID < len(orig) && orig[in.ID] == in {
			return byID[in.ID]
		}
		return in // not in m: a malformed module keeps its stray pointer
	}
	insts1 := func(xs []*Instruction) []*Instruction {
		if xs == nil {
			return nil
		}
		out := make([]*Instruction, len(xs))
		for i, x := range xs {
			out[i] = inst(x)
		}
		return out
	}
	comp := func(c *Computation) *Computation {
		if x, ok := cmap[c]; ok {
			return x
		}
		return c
	}
	comps := func(cs []*Computation) []*Computation {
		if cs == nil {
			return nil
		}
		out := make([]*Computation, len(cs))
		for i, c := range cs {
			out[i] = comp(c)
		}
		return out
	}
	for _, nc := range nm.Computations {
		nc.Root = inst(nc.Root)
		nc.Params = insts1(nc.Params)
		for _, ni := range nc.Instructions {
			ni.Operands = insts1(ni.Operands)
			ni.Users = insts1(ni.Users)
			ni.Dimensions = slices.Clone(ni.Dimensions)
			ni.Attrs = slices.Clone(ni.Attrs)
			if ni.Ext != nil {
				x := *ni.Ext
				x.Calls = comps(x.Calls)
				x.ToApply, x.Condition, x.Body = comp(x.ToApply), comp(x.Condition), comp(x.Body)
				x.Branches = comps(x.Branches)
				x.CalledComputations = comps(x.CalledComputations)
				x.Select, x.Scatter = comp(x.Select), comp(x.Scatter)
				x.Slice = slices.Clone(x.Slice)
				x.OutputOperandAliasing = slices.Clone(x.OutputOperandAliasing)
				x.ControlPredecessors = insts1(x.ControlPredecessors)
				x.ControlSuccessors = insts1(x.ControlSuccessors)
				ni.Ext = &x
			}
		}
	}
	nm.Entry = comp(m.Entry)
	nm.InputOutputAlias = slices.Clone(m.InputOutputAlias)
	nm.BufferDonors = slices.Clone(m.BufferDonors)
	nm.Attrs = slices.Clone(m.Attrs)
	return &nm
}

// Reaches reports whether computation from is target or calls it,
// directly or not (call chains deeper than MaxInlineDepth count as not).
func Reaches(from, target *Computation) bool { return reaches(from, target, 0) }

func reaches(from, target *Computation, depth int) bool {
	if from == target {
		return true
	}
	if from == nil || depth > MaxInlineDepth {
		return false
	}
	for _, in := range from.Instructions {
		for _, c := range in.Callees() {
			if reaches(c, target, depth+1) {
				return true
			}
		}
	}
	return false
}
