package exec

// The shadow check's own reading of a module: which bytes each step of
// the flattened schedule reads and writes, and which positions the IR
// makes one storage, worked out from the instructions and XLA's dataflow
// rules (HloDataflowAnalysis, hlo_dataflow_analysis.cc) and never from
// what package liveness concluded: its uses, live ranges and buffers. A
// bug there (a range that ends too early, two buffers merged, an alias
// lost) then shows as a broken plan instead of being mirrored by the
// check of the plan it produced.
//
// Sources. Every position (instruction, shape index) of a scheduled
// instruction resolves to a source, the place its bytes come from:
//
//   - a definition: the instruction writes the position's bytes (most
//     opcodes, every position; tuple and copy only their index table;
//     an entry parameter);
//   - a forward: the position shows an operand's bytes (bitcast,
//     get-tuple-element, a tuple's elements, add-dependency, domain,
//     opt-barrier, all-reduce-done, call results from the callee's root,
//     parameters of called computations from the call site's operands,
//     the asynchronous pairs' in-flight operands and results);
//   - a merge: the position holds one of several sources, all on the same
//     bytes by XLA's rules: a while's state (its init operand, the
//     condition's and body's parameters, the body's root and the while's
//     result, index by index) and a conditional's result (its branches'
//     roots). A merge whose inputs are all one source is that source (the
//     state a loop passes through unchanged).
//
// The plan places values, so a source finds its bytes through the value
// defined at its position (the analysis' value whose defining instruction
// and index it is: identity, not a conclusion). A merge the analysis
// resolved to one value takes its inputs' place.
//
// Accesses. At its step an instruction reads the positions of its
// operands (get-tuple-element and copy only the operand's index table; a
// conditional only its selector; tuple, bitcast and the other forwards,
// parameters, while and call nothing: the called computations read at
// their own steps) and writes the sources it defines. A merge is bound
// where the program enters it: a while's condition and body parameters as
// their computations start (the bytes must hold some source of the loop's
// state), the while's result at the while (they must hold the body's
// result) and a conditional's result at the conditional (they must hold a
// branch's result). In-place operations write their output on the bytes
// of the operand they update (dynamic-update-slice, scatter,
// all-reduce-start, output_to_operand_aliasing, a fusion whose root
// updates a parameter in place), and a donated parameter shares its
// output's bytes; the plan must place each such pair, and each merge's
// inputs, on the same bytes.
//
// Need. A source is needed after step t when a later step reads it (a
// binding included), when it is an output of the module, or when it is
// an entry parameter no output takes over (the caller owns it). An
// instruction may write its output over an operand it reads for the last
// time only where it can run in place (mayOverwrite). Three refinements
// keep correct plans passing:
//
//   - branches exclude each other: each branch of a conditional runs on
//     the memory the conditional found, and a read in another branch does
//     not keep a source from the conditional's result storage (what a
//     branch returns, a loop it runs in place on its operand), nor from a
//     source the IR makes one storage with the writer;
//   - dead code (an instruction whose result reaches no output, which a
//     scheduled module keeps) reads nothing that matters: its reads are
//     neither checked nor kept; a loop's or conditional's result nothing
//     live reads is not bound;
//   - a loop's tuple index tables hold the same addresses in every
//     iteration, so the body's result table may replace the parameter's
//     while get-tuple-elements still read it.
//
// A write over a kept entry parameter is a violation even by what the IR
// makes its own storage (an in-place update of it, a conditional result a
// branch returns it as): the bytes are the caller's, and XLA's copy
// insertion (liveness' repair, for a scheduled module) gives such a
// writer a copy.

import (
	"slices"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// label numbers a source; labels own bytes in the shadow run.
type label = int32

const (
	unresolved label = -1 // not worked out yet
	noSource   label = -2 // the position holds nothing (a missing operand)
)

// source is a definition or a merge (see the essay above).
type source struct {
	in    *hlo.Instruction
	index hlo.ShapeIndex
	size  int64 // byte size of the position's subshape
	merge bool
	// fam is the merge's family (one loop state or conditional result at
	// one index), -1 for a definition.
	fam   int32
	value *liveness.Value // the value defined at (in, index), or nil
}

// family is the merges of one loop state or conditional result at one
// index, and their inputs.
type family struct {
	site   *hlo.Instruction // the while or conditional
	index  hlo.ShapeIndex
	merges []label
	inputs []label // while: init, body root; conditional: branch roots
}

// readAt is one position an instruction reads: its operand number and
// the index in that operand, resolved to a source.
type readAt struct {
	operand int
	index   hlo.ShapeIndex
	src     label
}

// binding is a merge entered at a step: the bytes must hold one of
// accept, and then hold the merge.
type binding struct {
	merge  label
	accept []label
	outer  int // span end of the computation it enters, for ordering
}

// reading is the independent reading of one planned module.
type reading struct {
	a       *liveness.Analysis
	m       *hlo.Module
	srcs    []source
	fams    []family
	famOf   map[[2]int]int // (site ID, ordinal) -> index in fams
	at      []label        // by global position (FirstValue + ordinal)
	rep     []label        // by label: the source a merge collapses to (itself otherwise)
	callers []*hlo.Instruction
	defined []*liveness.Value  // by position (FirstValue + ordinal, as at): the value defined there
	idx     [][]hlo.ShapeIndex // by instruction ID: index of each ordinal
	subs    [][]hlo.Shape      // by instruction ID: subshape of each ordinal

	reads    [][]readAt    // by step
	writes   [][]label     // by step
	bindings [][]binding   // by step, before the step's reads
	readsOf  [][]readStep  // by label: the steps that read it, in order
	tags     [][]branchTag // by step: the conditional branches it runs in
	// branchStart, by step: the conditionals (instruction IDs) whose
	// first branch starts there (fork: keep the bytes' owners) or a later
	// branch (rejoin: start again from those owners). Branches exclude
	// each other, so each runs on the memory as the conditional found it.
	fork, rejoin [][]int
	closure      [][]int                               // by label: the conditionals (IDs) whose result it may be
	group        []label                               // by label: union-find of the sources the IR makes one storage
	dead         []bool                                // by step: its instruction reaches no output (deadSteps)
	liveOut      []bool                                // by label
	pinned       []bool                                // by label: an entry parameter the caller keeps (no output takes it over)
	inPlace      [][]inPlaceAt                         // by step: output source and the operand source it overwrites
	asyncStarts  map[*hlo.Computation]*hlo.Instruction // async computation -> its start (asyncStartAliases)
	ioAlias      [][2]label                            // output source, parameter source
}

// inPlaceAt says that out is written over the bytes of operand (operand
// number k at index ix).
type inPlaceAt struct {
	out, operand label
	k            int
	ix           hlo.ShapeIndex
}

// newReading reads the module of as under its flattened schedule.
func newReading(as *assign.Assignment) *reading {
	a := as.Analysis
	m := a.Module
	r := &reading{a: a, m: m, at: make([]label, m.NumValues()), famOf: map[[2]int]int{}, defined: make([]*liveness.Value, m.NumValues()),
		idx: make([][]hlo.ShapeIndex, m.NumInstructions()), subs: make([][]hlo.Shape, m.NumInstructions())}
	for i := range r.at {
		r.at[i] = unresolved
	}
	for _, v := range a.Values {
		if o, ok := r.ordinal(v.Inst, v.Index); ok {
			if k := v.Inst.FirstValue + o; k >= 0 && k < len(r.defined) {
				r.defined[k] = v
			}
		}
	}
	r.callers = controlCallers(m)
	n := len(a.Sequence)
	r.reads, r.writes, r.bindings, r.inPlace = make([][]readAt, n), make([][]label, n), make([][]binding, n), make([][]inPlaceAt, n)

	// Resolve every position of every step, and what each step reads.
	dead := deadSteps(a.Sequence, r.callers)
	r.dead = dead
	for t, in := range a.Sequence {
		for o := range r.indices(in) {
			r.resolve(in, o)
		}
		if !dead[t] {
			r.reads[t] = r.stepReads(in)
		}
	}
	entry := m.Entry
	if entry != nil && entry.Root != nil {
		for o := range r.indices(entry.Root) {
			r.resolve(entry.Root, o)
		}
	}
	// Merges' inputs may resolve positions nothing read yet, and those
	// may make merges in turn.
	for f := 0; f < len(r.fams); f++ {
		r.fillInputs(f)
	}
	r.collapse()

	r.readsOf = make([][]readStep, len(r.srcs))
	r.branchTags()
	r.liveOut, r.pinned = make([]bool, len(r.srcs)), make([]bool, len(r.srcs))
	for t := range r.reads {
		for i := range r.reads[t] {
			s := r.find(r.reads[t][i].src)
			r.reads[t][i].src = s
			if s >= 0 {
				r.addRead(s, readStep{t: t, via: -1})
			}
		}
	}
	// Writes: the definitions each step makes.
	for id, s := range r.srcs {
		if s.merge || r.rep[id] != label(id) {
			continue
		}
		if t := a.Time(s.in); t >= 0 {
			r.writes[t] = append(r.writes[t], label(id))
		}
	}
	r.asyncReads()
	r.bindMerges()
	r.resultClosure()
	r.findInPlace()
	if entry != nil && entry.Root != nil {
		for o := range r.indices(entry.Root) {
			if s := r.find(r.resolve(entry.Root, o)); s >= 0 {
				r.liveOut[s] = true
			}
		}
		donated := map[[2]int]bool{}
		for _, al := range m.InputOutputAlias {
			if al.Param < 0 || al.Param >= int64(len(entry.Params)) {
				continue
			}
			p := entry.Params[al.Param]
			if p == nil || a.Time(p) < 0 {
				continue
			}
			po, ok1 := r.ordinal(p, al.ParamIndex)
			ro, ok2 := r.ordinal(entry.Root, al.Output)
			if !ok1 || !ok2 {
				continue
			}
			donated[[2]int{p.ID, po}] = true
			r.ioAlias = append(r.ioAlias, [2]label{r.find(r.resolve(entry.Root, ro)), r.find(r.resolve(p, po))})
		}
		for _, p := range entry.Params {
			if p == nil || a.Time(p) < 0 {
				continue
			}
			for o := range r.indices(p) {
				if s := r.find(r.resolve(p, o)); s >= 0 && !donated[[2]int{p.ID, o}] {
					r.pinned[s] = true
				}
			}
		}
	}
	r.groups()
	return r
}

// groups joins the sources the IR makes one storage: a loop state's or a
// conditional result's merges and inputs, an in-place output and the
// operand it updates, a donated parameter and its output.
func (r *reading) groups() {
	r.group = make([]label, len(r.srcs))
	for i := range r.group {
		r.group[i] = label(i)
	}
	union := func(x, y label) {
		if x = r.find(x); x < 0 {
			return
		}
		if y = r.find(y); y < 0 {
			return
		}
		x, y = r.root(x), r.root(y)
		if x != y {
			r.group[max(x, y)] = min(x, y)
		}
	}
	for fi := range r.fams {
		f := &r.fams[fi]
		for _, x := range append(slices.Clone(f.inputs), f.merges...) {
			union(f.merges[0], x)
		}
	}
	for _, ips := range r.inPlace {
		for _, ip := range ips {
			union(ip.out, ip.operand)
		}
	}
	for _, io := range r.ioAlias {
		union(io[0], io[1])
	}
}

// root returns the representative of x's storage group.
func (r *reading) root(x label) label {
	for r.group[x] != x {
		r.group[x] = r.group[r.group[x]]
		x = r.group[x]
	}
	return x
}

// oneStorage reports whether the IR makes x and y one storage.
func (r *reading) oneStorage(x, y label) bool { return r.root(x) == r.root(y) }

// deadSteps marks the steps whose instruction is dead: its result
// reaches no output (no live instruction uses it; a computation's root is
// as live as the instruction calling it) and it has no effect beyond its
// result. What a dead instruction reads cannot reach an output, so its
// reads neither need their bytes kept nor are checked (a scheduled module
// keeps such code, and the analysis may end a value's range before them);
// its writes still happen, and must not clobber anything.
func deadSteps(seq []*hlo.Instruction, callers []*hlo.Instruction) []bool {
	dead := make([]bool, len(seq))
	at := make(map[*hlo.Instruction]int, len(seq))
	for t, in := range seq {
		at[in] = t
	}
	isDead := func(x *hlo.Instruction) bool {
		t, ok := at[x]
		return ok && dead[t]
	}
	// The flattened schedule puts called computations before their call
	// sites and users after their operands: backwards, what decides an
	// instruction is decided before it.
	for t := len(seq) - 1; t >= 0; t-- {
		in := seq[t]
		op := in.Opcode
		if op.Has(hlo.SideEffect) || op.Has(hlo.Collective) || op.Has(hlo.AsyncStart) || op.Has(hlo.AsyncDone) ||
			op == hlo.OpCustomCall || op == hlo.OpAsyncUpdate || hasEffects(in, 0) {
			continue
		}
		if in.IsRoot() {
			if c := in.Parent; c.IsEntry || c.ID >= len(callers) || callers[c.ID] == nil || !isDead(callers[c.ID]) {
				continue
			}
		}
		d := true
		for _, u := range in.Users {
			if !isDead(u) {
				d = false
				break
			}
		}
		dead[t] = d
	}
	return dead
}

// hasEffects reports whether the computations in calls run an
// instruction with an effect beyond its result.
func hasEffects(in *hlo.Instruction, depth int) bool {
	if depth > 64 {
		return true
	}
	for _, c := range in.Callees() {
		if c == nil {
			continue
		}
		for _, x := range c.Instructions {
			op := x.Opcode
			if op.Has(hlo.SideEffect) || op.Has(hlo.Collective) || op.Has(hlo.AsyncStart) || op == hlo.OpCustomCall || hasEffects(x, depth+1) {
				return true
			}
		}
	}
	return false
}

// controlCallers returns, by computation ID, the instruction that calls
// it as control flow (call, while, conditional, an async op), or nil.
func controlCallers(m *hlo.Module) []*hlo.Instruction {
	out := make([]*hlo.Instruction, len(m.Computations))
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpCall, hlo.OpWhile, hlo.OpConditional, hlo.OpAsyncStart:
			default:
				continue
			}
			for _, callee := range in.Callees() {
				if callee != nil && out[callee.ID] == nil {
					out[callee.ID] = in
				}
			}
		}
	}
	return out
}

// indices returns the index of every position of in, in pre-order
// (ordinal order), computed once.
func (r *reading) indices(in *hlo.Instruction) []hlo.ShapeIndex {
	if x := r.idx[in.ID]; x != nil {
		return x
	}
	var ix []hlo.ShapeIndex
	var subs []hlo.Shape
	in.Shape.ForEachSubshape(func(sub hlo.Shape, i hlo.ShapeIndex) {
		ix = append(ix, append(hlo.ShapeIndex{}, i...))
		subs = append(subs, sub)
	})
	r.idx[in.ID], r.subs[in.ID] = ix, subs
	return ix
}

// ordinal returns the pre-order number of index ix in in's shape.
func (r *reading) ordinal(in *hlo.Instruction, ix hlo.ShapeIndex) (int, bool) {
	s, o := in.Shape, 0
	for _, i := range ix {
		if !s.IsTuple() || i < 0 || i >= int64(len(s.Tuple)) {
			return 0, false
		}
		o++
		for j := int64(0); j < i; j++ {
			o += s.Tuple[j].NumSubshapes()
		}
		s = s.Tuple[i]
	}
	return o, true
}

// resolveIndex resolves position (in, ix), or noSource when in has none.
func (r *reading) resolveIndex(in *hlo.Instruction, ix hlo.ShapeIndex) label {
	if in == nil {
		return noSource
	}
	o, ok := r.ordinal(in, ix)
	if !ok {
		return noSource
	}
	return r.resolve(in, o)
}

func cat(a hlo.ShapeIndex, b ...int64) hlo.ShapeIndex {
	return append(append(hlo.ShapeIndex{}, b...), a...)
}

// resolve returns the source of position (in, ordinal o).
func (r *reading) resolve(in *hlo.Instruction, o int) label {
	k := in.FirstValue + o
	if s := r.at[k]; s != unresolved {
		return s
	}
	ixs := r.indices(in)
	ix, sub := ixs[o], r.subs[in.ID][o]
	// Mark the position while it resolves: a cycle through forwards (a
	// malformed module) ends here instead of recursing for ever.
	r.at[k] = noSource
	s := r.rule(in, ix, sub)
	r.at[k] = s
	return s
}

// rule applies XLA's rule for position (in, ix) of subshape sub.
func (r *reading) rule(in *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape) label {
	op := func(i int) *hlo.Instruction {
		if i >= 0 && i < len(in.Operands) {
			return in.Operands[i]
		}
		return nil
	}
	def := func() label { return r.newSource(in, ix, sub, false, -1) }
	switch in.Opcode {
	case hlo.OpBitcast, hlo.OpAddDependency, hlo.OpDomain, hlo.OpOptBarrier, hlo.OpAllReduceDone:
		return r.resolveIndex(op(0), ix)
	case hlo.OpCopy:
		if len(ix) == 0 {
			return def()
		}
		return r.resolveIndex(op(0), ix)
	case hlo.OpTuple:
		if len(ix) == 0 {
			return def()
		}
		return r.resolveIndex(op(int(ix[0])), ix[1:])
	case hlo.OpGetTupleElement:
		return r.resolveIndex(op(0), cat(ix, in.TupleIndex))
	case hlo.OpParameter:
		return r.parameter(in, ix, sub)
	case hlo.OpCall:
		if cs := in.Callees(); len(cs) > 0 && cs[0] != nil {
			return r.resolveIndex(cs[0].Root, ix)
		}
		return noSource
	case hlo.OpWhile, hlo.OpConditional:
		return r.newMerge(in, ix, sub, in)
	case hlo.OpSend:
		if len(ix) > 0 && ix[0] == 0 {
			return r.resolveIndex(op(0), ix[1:])
		}
		if len(ix) <= 1 {
			return def()
		}
		return noSource
	case hlo.OpRecvDone:
		if len(ix) > 0 && ix[0] == 0 {
			return r.resolveIndex(op(0), ix)
		}
		if len(ix) <= 1 {
			return def()
		}
		return noSource
	case hlo.OpCopyStart:
		if len(ix) == 1 && ix[0] == 1 {
			return r.resolveIndex(op(0), nil)
		}
		if len(ix) <= 1 {
			return def()
		}
		return noSource
	case hlo.OpCopyDone:
		if len(ix) == 0 {
			return r.resolveIndex(op(0), hlo.ShapeIndex{0})
		}
		return noSource
	case hlo.OpAllGatherStart:
		if sub.IsTuple() || len(ix) > 0 && ix[0] == 1 {
			return def()
		}
		if len(in.Operands) == 1 && len(ix) == 1 && ix[0] == 0 {
			return r.resolveIndex(op(0), nil)
		}
		if len(ix) == 2 && ix[0] == 0 {
			return r.resolveIndex(op(int(ix[1])), nil)
		}
		return noSource
	case hlo.OpAllGatherDone, hlo.OpCollectivePermuteDone:
		if len(ix) == 0 && in.Shape.IsTuple() {
			return def()
		}
		if !sub.IsArray() {
			return noSource
		}
		return r.resolveIndex(op(0), cat(ix, 1))
	case hlo.OpCollectivePermuteStart:
		return r.collectivePermuteStart(in, ix, sub)
	case hlo.OpAsyncStart:
		if sub.IsTuple() || len(ix) > 0 && ix[0] > 1 {
			return def()
		}
		if !sub.IsArray() {
			return noSource
		}
		switch {
		case len(ix) >= 2 && ix[0] == 0:
			return r.resolveIndex(op(int(ix[1])), ix[2:])
		case len(ix) >= 1 && ix[0] == 1:
			if w := wrapped(in); w != nil {
				return r.resolveIndex(w.Root, ix[1:])
			}
		}
		return noSource
	case hlo.OpAsyncUpdate, hlo.OpAsyncDone:
		if sub.IsTuple() {
			return def()
		}
		if !sub.IsArray() {
			return noSource
		}
		full := ix
		if in.Opcode == hlo.OpAsyncDone {
			full = cat(ix, 1)
		}
		if len(full) > 0 && full[0] == 1 {
			if w := wrapped(in); w != nil {
				return r.resolveIndex(w.Root, full[1:])
			}
		}
		// An update binding operands late holds them at {0,k} past
		// those of the op before it.
		if prev := op(0).Shape; len(full) >= 2 && full[0] == 0 && prev.IsTuple() && len(prev.Tuple) > 0 {
			if before := int64(len(prev.Tuple[0].Tuple)); full[1] >= before {
				if k := int(1 + full[1] - before); k < len(in.Operands) {
					return r.resolveIndex(op(k), full[2:])
				}
				return noSource
			}
		}
		return r.resolveIndex(op(0), full)
	}
	return def()
}

// collectivePermuteStart: XLA defines the top level, {1} and the
// contexts; {0} (or {0,i}) forwards the operands' top levels; with the
// in-place form the output buffers {1,i} are operand 1's.
func (r *reading) collectivePermuteStart(in *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape) label {
	def := func() label { return r.newSource(in, ix, sub, false, -1) }
	inPlace := len(in.Operands) == 4
	if inPlace {
		_, inPlace = in.Attr("slice_sizes")
	}
	switch {
	case len(ix) == 0:
		return def()
	case len(ix) == 1 && ix[0] >= 1:
		return def()
	case len(ix) == 1 && ix[0] == 0:
		if len(in.Operands) > 0 && !in.Operands[0].Shape.IsTuple() && (inPlace || len(in.Operands) == 1) {
			return r.resolveIndex(in.Operands[0], nil)
		}
		return noSource
	case len(ix) == 2 && ix[0] == 0:
		if !inPlace && len(in.Operands) > 1 {
			if int(ix[1]) < len(in.Operands) {
				return r.resolveIndex(in.Operands[ix[1]], nil)
			}
			return noSource
		}
		if len(in.Operands) > 0 && in.Operands[0].Shape.IsTuple() {
			return r.resolveIndex(in.Operands[0], ix[1:])
		}
		return noSource
	case len(ix) == 2 && ix[0] == 1:
		if inPlace && in.Operands[1].Shape.IsTuple() || !inPlace && len(in.Operands) > 1 {
			return def()
		}
	}
	return noSource
}

// wrapped returns the computation an async op runs: its own, or that of
// the async-start its chain begins with.
func wrapped(in *hlo.Instruction) *hlo.Computation {
	for i := 0; in != nil && i < 1<<16; i++ {
		if cs := in.Callees(); len(cs) > 0 {
			return cs[0]
		}
		if len(in.Operands) == 0 {
			return nil
		}
		in = in.Operands[0]
	}
	return nil
}

// parameter resolves a parameter's position: an entry (or uncalled)
// computation's parameter defines it; a called computation's takes the
// call site's operand, or merges with a loop's state.
func (r *reading) parameter(p *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape) label {
	site := r.callers[p.Parent.ID]
	n := int(p.ParameterNumber)
	if site == nil {
		return r.newSource(p, ix, sub, false, -1)
	}
	switch site.Opcode {
	case hlo.OpCall:
		if n < len(site.Operands) {
			return r.resolveIndex(site.Operands[n], ix)
		}
	case hlo.OpWhile:
		return r.newMerge(p, ix, sub, site)
	case hlo.OpConditional:
		for j, b := range site.Branches() {
			if b == p.Parent && j+1 < len(site.Operands) {
				return r.resolveIndex(site.Operands[j+1], ix)
			}
		}
	case hlo.OpAsyncStart:
		// The operands bound along the chain: the start's, then each
		// update's after its first.
		x := site
		for x != nil {
			k := len(x.Operands)
			if x.Opcode != hlo.OpAsyncStart {
				k--
			}
			if n < k {
				if x.Opcode == hlo.OpAsyncStart {
					return r.resolveIndex(x.Operands[n], ix)
				}
				return r.resolveIndex(x.Operands[n+1], ix)
			}
			n -= k
			x = nextAsync(x)
		}
	}
	return noSource
}

// nextAsync returns the async-update or async-done that takes in.
func nextAsync(in *hlo.Instruction) *hlo.Instruction {
	for _, u := range in.Users {
		if (u.Opcode == hlo.OpAsyncUpdate || u.Opcode == hlo.OpAsyncDone) && len(u.Operands) > 0 && u.Operands[0] == in {
			return u
		}
	}
	return nil
}

func (r *reading) newSource(in *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape, merge bool, fam int32) label {
	size, _ := hlo.ByteSize(sub)
	s := source{in: in, index: ix, size: size, merge: merge, fam: fam}
	if o, ok := r.ordinal(in, ix); ok {
		if k := in.FirstValue + o; k >= 0 && k < len(r.defined) {
			s.value = r.defined[k]
		}
	}
	r.srcs = append(r.srcs, s)
	r.rep = append(r.rep, label(len(r.srcs)-1))
	return label(len(r.srcs) - 1)
}

// newMerge makes the merge at (in, ix), a member of the family of site
// (a while or a conditional) at ix.
func (r *reading) newMerge(in *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape, site *hlo.Instruction) label {
	o, _ := r.ordinal(site, ix)
	key := [2]int{site.ID, o}
	f, ok := r.famOf[key]
	if !ok {
		r.fams = append(r.fams, family{site: site, index: ix})
		f = len(r.fams) - 1
		r.famOf[key] = f
	}
	s := r.newSource(in, ix, sub, true, int32(f))
	r.fams[f].merges = append(r.fams[f].merges, s)
	return s
}

// fillInputs resolves the inputs of family f.
func (r *reading) fillInputs(f int) {
	site, ix := r.fams[f].site, r.fams[f].index
	var in []label
	switch site.Opcode {
	case hlo.OpWhile:
		if len(site.Operands) > 0 {
			in = append(in, r.resolveIndex(site.Operands[0], ix))
		}
		if b := site.Body(); b != nil {
			in = append(in, r.resolveIndex(b.Root, ix))
		}
	case hlo.OpConditional:
		for _, b := range site.Branches() {
			if b == nil {
				continue
			}
			in = append(in, r.resolveIndex(b.Root, ix))
		}
	}
	r.fams[f].inputs = in
}

// find returns the source s stands for once merges are collapsed.
func (r *reading) find(s label) label {
	for s >= 0 && r.rep[s] != s {
		s = r.rep[s]
	}
	return s
}

// collapse replaces every merge whose inputs are one source (itself
// aside) by that source, as XLA's phi optimisation does: first merge by
// merge until nothing changes, then closed groups of merges fed by a
// single source from outside.
func (r *reading) collapse() {
	single := func(f *family, self label) (label, bool) {
		one := noSource
		for _, x := range f.inputs {
			x = r.find(x)
			if x == self || x < 0 {
				continue
			}
			if one != noSource && one != x {
				return noSource, false
			}
			one = x
		}
		return one, one != noSource
	}
	for changed := true; changed; {
		changed = false
		for fi := range r.fams {
			f := &r.fams[fi]
			for _, m := range f.merges {
				if r.rep[m] != m {
					continue
				}
				if x, ok := single(f, m); ok {
					r.rep[m] = x
					changed = true
				}
			}
		}
	}
	// Closed groups: the definitions reachable through merges' inputs.
	for fi := range r.fams {
		for _, m := range r.fams[fi].merges {
			if r.rep[m] != m {
				continue
			}
			seen := map[label]bool{}
			one, many := noSource, false
			stack := []label{m}
			for len(stack) > 0 && !many {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if seen[x] {
					continue
				}
				seen[x] = true
				if !r.srcs[x].merge {
					if one != noSource && one != x {
						many = true
					}
					one = x
					continue
				}
				for _, y := range r.fams[r.srcs[x].fam].inputs {
					if y = r.find(y); y >= 0 {
						stack = append(stack, y)
					}
				}
			}
			if !many && one != noSource {
				r.rep[m] = one
			}
		}
	}
}

// stepReads lists the operand positions in reads at its step.
func (r *reading) stepReads(in *hlo.Instruction) []readAt {
	var out []readAt
	add := func(k int, ix hlo.ShapeIndex) {
		if s := r.resolveIndex(in.Operands[k], ix); s >= 0 {
			out = append(out, readAt{operand: k, index: ix, src: s})
		}
	}
	all := func(k int) {
		for _, ix := range r.indices(in.Operands[k]) {
			add(k, ix)
		}
	}
	switch in.Opcode {
	case hlo.OpTuple, hlo.OpBitcast, hlo.OpAddDependency, hlo.OpDomain, hlo.OpOptBarrier,
		hlo.OpParameter, hlo.OpWhile, hlo.OpCall:
		return nil
	case hlo.OpGetTupleElement, hlo.OpCopy:
		if len(in.Operands) > 0 {
			add(0, nil)
		}
		return out
	case hlo.OpConditional:
		if len(in.Operands) > 0 {
			all(0)
		}
		return out
	}
	for k := range in.Operands {
		all(k)
	}
	return out
}

// asyncReads keeps what an async computation defines until its chain's
// async-done: the computation runs between the start and the done,
// although the flattened schedule lays it out before the start.
func (r *reading) asyncReads() {
	for _, in := range r.a.Sequence {
		if in.Opcode != hlo.OpAsyncStart {
			continue
		}
		w, done := wrapped(in), in
		for i := 0; done != nil && done.Opcode != hlo.OpAsyncDone && i < 1<<16; i++ {
			done = nextAsync(done)
		}
		if w == nil || done == nil || r.a.Time(done) < 0 {
			continue
		}
		td := r.a.Time(done)
		for _, x := range w.Instructions {
			if r.a.Time(x) < 0 {
				continue
			}
			for o := range r.indices(x) {
				if s := r.find(r.resolve(x, o)); s >= 0 && r.srcs[s].in == x {
					r.addRead(s, readStep{t: td, via: -1})
				}
			}
		}
	}
}

// bindMerges schedules the binding of every merge that did not collapse:
// a while's condition and body parameters as their computations start,
// the while's and the conditional's results at their own steps.
func (r *reading) bindMerges() {
	spans := r.a.Spans
	consumed := make([]bool, len(r.srcs))
	for x := range r.srcs {
		consumed[x] = len(r.readsOf[x]) > 0
	}
	for fi := range r.fams {
		for _, x := range r.fams[fi].inputs {
			if x = r.find(x); x >= 0 {
				consumed[x] = true
			}
		}
	}
	if e := r.m.Entry; e != nil && e.Root != nil {
		for o := range r.indices(e.Root) {
			if x := r.find(r.resolve(e.Root, o)); x >= 0 {
				consumed[x] = true
			}
		}
	}
	for fi := range r.fams {
		f := &r.fams[fi]
		var accept []label
		addAccept := func(x label) {
			x = r.find(x)
			if x < 0 {
				return
			}
			for _, y := range accept {
				if y == x {
					return
				}
			}
			accept = append(accept, x)
		}
		for _, x := range f.inputs {
			addAccept(x)
		}
		if f.site.Opcode == hlo.OpWhile {
			for _, m := range f.merges {
				addAccept(m)
			}
		}
		for _, m := range f.merges {
			if r.rep[m] != m {
				continue
			}
			in := r.srcs[m].in
			t, outer := r.a.Time(in), 0
			acc := accept
			if in.Opcode == hlo.OpParameter {
				c := in.Parent
				if c.ID >= len(spans) || spans[c.ID].Start < 0 || spans[c.ID].Start >= len(r.bindings) {
					continue
				}
				t, outer = spans[c.ID].Start, spans[c.ID].End
			} else if in.Opcode == hlo.OpWhile {
				// The body's result is what the loop leaves.
				acc = nil
				if len(f.inputs) > 1 {
					if x := r.find(f.inputs[1]); x >= 0 {
						acc = []label{x}
					}
				}
			}
			if ts := r.a.Time(f.site); t < 0 || in.Opcode != hlo.OpParameter && !consumed[m] || ts >= 0 && r.dead[ts] {
				// A result nothing live reads: what the loop or the
				// branch left there does not matter.
				continue
			}
			r.bindings[t] = append(r.bindings[t], binding{merge: m, accept: acc, outer: outer})
			for _, x := range acc {
				rs := readStep{t: t, via: -1}
				if in.Opcode == hlo.OpConditional {
					rs.site, rs.via = in.ID, r.onlyBranch(fi, x)
				}
				r.addRead(x, rs)
			}
		}
	}
	// Outer computations enter first: their parameters are what inner
	// ones starting at the same step take.
	for t := range r.bindings {
		bs := r.bindings[t]
		for i := 1; i < len(bs); i++ {
			for j := i; j > 0 && bs[j].outer > bs[j-1].outer; j-- {
				bs[j], bs[j-1] = bs[j-1], bs[j]
			}
		}
	}
}

// findInPlace lists, for every step, the outputs its instruction writes
// over an operand's bytes.
func (r *reading) findInPlace() {
	for t, in := range r.a.Sequence {
		for _, p := range inPlacePairs(in) {
			if p.operand >= len(in.Operands) {
				continue
			}
			out := r.find(r.resolveIndex(in, p.output))
			opnd := r.find(r.resolveIndex(in.Operands[p.operand], p.operandIndex))
			if out < 0 || opnd < 0 || r.srcs[out].in != in {
				continue
			}
			r.inPlace[t] = append(r.inPlace[t], inPlaceAt{out: out, operand: opnd, k: p.operand, ix: p.operandIndex})
		}
	}
}

// inPlacePair: output index output of an instruction is written over its
// operand's bytes at operandIndex (XLA's GetInPlaceInputOutputPairs).
type inPlacePair struct {
	output       hlo.ShapeIndex
	operand      int
	operandIndex hlo.ShapeIndex
}

// inPlacePairs returns in's in-place pairs: dynamic-update-slice on
// operand 0, scatter and all-reduce-start on their inputs, an explicit
// output_to_operand_aliasing, and a fusion whose root (through tuples and
// bitcasts) updates one of its parameters in place.
func inPlacePairs(in *hlo.Instruction) []inPlacePair {
	switch in.Opcode {
	case hlo.OpDynamicUpdateSlice:
		return []inPlacePair{{nil, 0, nil}}
	case hlo.OpScatter, hlo.OpAllReduceStart:
		if !in.Shape.IsTuple() {
			return []inPlacePair{{nil, 0, nil}}
		}
		n := len(in.Operands)
		if in.Opcode == hlo.OpScatter {
			n = (n - 1) / 2
		}
		var ps []inPlacePair
		for i := 0; i < n && i < len(in.Shape.Tuple); i++ {
			ps = append(ps, inPlacePair{hlo.ShapeIndex{int64(i)}, i, nil})
		}
		return ps
	case hlo.OpCustomCall, hlo.OpFusion, hlo.OpAsyncStart:
		if oa := in.OutputOperandAliasing(); len(oa) > 0 {
			ps := make([]inPlacePair, len(oa))
			for i, p := range oa {
				ps[i] = inPlacePair{p.Output, int(p.Operand), p.OperandIndex}
			}
			return ps
		}
		if in.Opcode != hlo.OpFusion {
			return nil
		}
		fc := in.FusedComputation()
		if fc == nil || fc.Root == nil {
			return nil
		}
		var ps []inPlacePair
		var walk func(n *hlo.Instruction, out hlo.ShapeIndex)
		walk = func(n *hlo.Instruction, out hlo.ShapeIndex) {
			n = throughBitcasts(n)
			if n.Opcode == hlo.OpTuple {
				for k, o := range n.Operands {
					walk(o, append(append(hlo.ShapeIndex{}, out...), int64(k)))
				}
				return
			}
			for _, p := range inPlacePairs(n) {
				if len(p.output) != 0 || p.operand >= len(n.Operands) {
					continue
				}
				if x := throughBitcasts(n.Operands[p.operand]); x.Opcode == hlo.OpParameter {
					ps = append(ps, inPlacePair{out, int(x.ParameterNumber), p.operandIndex})
				}
			}
		}
		walk(fc.Root, nil)
		return ps
	}
	return nil
}

func throughBitcasts(x *hlo.Instruction) *hlo.Instruction {
	for x.Opcode == hlo.OpBitcast && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	return x
}

// mayOverwrite reports whether in may write its output at outIx over the
// bytes of its operand k at index ix, which it reads for the last time
// at the same step: an in-place pair, or XLA's
// CanShareOperandBufferWithUser for the plan's target (element-wise on
// that operand, and the like). Which ops can run in place is a property
// of the ops and the backend, not of the analysis, so the check takes
// the rule the target states.
func mayOverwrite(as *assign.Assignment, in *hlo.Instruction, outIx hlo.ShapeIndex, k int, ix hlo.ShapeIndex) bool {
	for _, p := range inPlacePairs(in) {
		if p.operand == k && p.output.Equal(outIx) && p.operandIndex.Equal(ix) {
			return true
		}
	}
	operand := in.Operands[k]
	if in.Opcode == hlo.OpCustomCall && len(outIx) == 1 && outIx[0] == 1 {
		if t := in.CustomCallTarget(); t == "__cublas$lt$matmul" || t == "__cublas$lt$matmul$f8" {
			return false
		}
	}
	if fc := as.Options.Target.FusionCanShare; fc != nil && in.Opcode == hlo.OpFusion && operand.Opcode != hlo.OpConstant {
		return fc(operand, ix, in, outIx)
	}
	return liveness.CanShareOperandBufferWithUser(operand, ix, in, outIx)
}

// places returns the place of every source, by label, and the value that
// stands for it in reports: a definition's value; a merge's own (a phi)
// or, when the analysis resolved the merge to one value, its inputs'.
func (r *reading) places(byValue []shadowPlace) ([]shadowPlace, []*liveness.Value) {
	lp := make([]shadowPlace, len(r.srcs))
	repr := make([]*liveness.Value, len(r.srcs))
	done := make([]bool, len(r.srcs))
	var place func(l label) (shadowPlace, *liveness.Value)
	place = func(l label) (shadowPlace, *liveness.Value) {
		if done[l] {
			return lp[l], repr[l]
		}
		done[l] = true // a cycle of merges ends here, placeless
		s := &r.srcs[l]
		if v := s.value; v != nil {
			lp[l], repr[l] = byValue[v.ID], v
			return lp[l], repr[l]
		}
		if s.merge {
			for _, x := range r.fams[s.fam].inputs {
				if x = r.find(x); x >= 0 && x != l {
					if p, v := place(x); p.ok {
						lp[l], repr[l] = p, v
						break
					}
				}
			}
		}
		return lp[l], repr[l]
	}
	for l := range r.srcs {
		place(label(l))
	}
	return lp, repr
}

// name returns source l as name{index}.
func (r *reading) name(l label) string {
	s := &r.srcs[l]
	return s.in.Name + s.index.String()
}

// readStep is a step that reads a source. A conditional reads its
// result from the branch via of conditional site (-1: from no one branch).
type readStep struct {
	t    int
	site int // instruction ID of the conditional, when via >= 0
	via  int
}

// branchTag says that a step runs in branch branch of the conditional
// whose instruction ID is site.
type branchTag struct{ site, branch int }

// branchTags tags every step with the conditional branches it runs in.
func (r *reading) branchTags() {
	n := len(r.a.Sequence)
	r.tags, r.fork, r.rejoin = make([][]branchTag, n), make([][]int, n), make([][]int, n)
	for _, in := range r.a.Sequence {
		if in.Opcode != hlo.OpConditional {
			continue
		}
		first := true
		for bi, b := range in.Branches() {
			if b == nil || b.ID >= len(r.a.Spans) {
				continue
			}
			sp := r.a.Spans[b.ID]
			if sp.Start >= 0 && sp.Start < sp.End && sp.Start < n {
				if first {
					r.fork[sp.Start] = append(r.fork[sp.Start], in.ID)
				} else {
					r.rejoin[sp.Start] = append(r.rejoin[sp.Start], in.ID)
				}
				first = false
			}
			for t := max(sp.Start, 0); t < sp.End && t < len(r.tags); t++ {
				r.tags[t] = append(r.tags[t], branchTag{in.ID, bi})
			}
		}
	}
}

// onlyBranch returns the branch of conditional family f whose result is
// x, or -1 when x is the result of several branches (or none).
func (r *reading) onlyBranch(f int, x label) int {
	via := -1
	for bi, y := range r.fams[f].inputs {
		if r.find(y) == x {
			if via >= 0 {
				return -1
			}
			via = bi
		}
	}
	return via
}

func (r *reading) addRead(x label, rs readStep) {
	l := r.readsOf[x]
	i := len(l)
	for i > 0 && l[i-1].t > rs.t {
		i--
	}
	r.readsOf[x] = append(l[:i], append([]readStep{rs}, l[i:]...)...)
}

// resultClosure records, for every conditional, the sources its result
// may be (through branch roots, loop states and nested conditionals):
// the sources that share the result's bytes by the IR's rules.
func (r *reading) resultClosure() {
	r.closure = make([][]int, len(r.srcs))
	for fi := range r.fams {
		site := r.fams[fi].site
		if site.Opcode != hlo.OpConditional {
			continue
		}
		seen := map[label]bool{}
		stack := append([]label(nil), r.fams[fi].merges...)
		stack = append(stack, r.fams[fi].inputs...)
		for len(stack) > 0 {
			x := r.find(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			if x < 0 || seen[x] {
				continue
			}
			seen[x] = true
			if !slices.Contains(r.closure[x], site.ID) {
				r.closure[x] = append(r.closure[x], site.ID)
			}
			if r.srcs[x].merge {
				f := &r.fams[r.srcs[x].fam]
				stack = append(append(stack, f.inputs...), f.merges...)
			}
		}
	}
}

// exclusive reports whether a write of l at step t over q and the read rs
// of q can never both run: they lie in different branches of one
// conditional (its read of a branch's result counting as in that
// branch), and l is what that conditional's result may be (a branch's
// result, a loop's state in place on a branch operand), the storage the
// branches take turns on, or is one storage with q by the IR. A branch's
// other values (its temps) keep off what another branch reads, as the
// analysis' ranges have them do, although only one branch runs.
func (r *reading) exclusive(t int, rs readStep, q, l label) bool {
	for _, w := range r.tags[t] {
		if !slices.Contains(r.closure[l], w.site) && !r.oneStorage(q, l) {
			continue
		}
		if rs.via >= 0 && rs.site == w.site && rs.via != w.branch {
			return true
		}
		for _, x := range r.tags[rs.t] {
			if x.site == w.site && x.branch != w.branch {
				return true
			}
		}
	}
	return false
}

// needed reports whether source q is still needed once step t has read
// its operands, to a write of by: an output, an entry parameter the
// caller keeps (whatever writes over it), or read by a later step that
// can run with t.
func (r *reading) needed(q label, t int, by label) bool {
	if r.liveOut[q] || r.pinned[q] {
		return true
	}
	l := r.readsOf[q]
	for i := len(l) - 1; i >= 0 && l[i].t > t; i-- {
		if !r.exclusive(t, l[i], q, by) && !r.asyncOwnWrite(l[i].t, by) {
			return true
		}
	}
	return false
}

// asyncOwnWrite reports whether the step t reading a source is an async
// op (start, update or done) whose own async computation writes by: the
// op hands its operand to that computation, which may update it in place
// (an async custom-call's output_to_operand_aliasing), so its later read
// of the operand is the computation's, not a read after a foreign write.
func (r *reading) asyncOwnWrite(t int, by label) bool {
	in := r.a.Sequence[t]
	switch in.Opcode {
	case hlo.OpAsyncStart, hlo.OpAsyncUpdate, hlo.OpAsyncDone:
	default:
		return false
	}
	c, w := wrapped(in), r.srcs[by].in
	return c != nil && w != nil && hlo.Reaches(c, w.Parent)
}

// tableTwin returns, for a loop state's merge q at a tuple index, the
// body's result there (-1 otherwise): both are index tables of the same
// addresses, since the state's elements keep their places from one
// iteration to the next. The analysis ends the parameter's table where
// the result's begins, even when get-tuple-elements read it later, and
// the result's table may be written over it.
func (r *reading) tableTwin(q label) label {
	s := &r.srcs[q]
	if !s.merge || r.fams[s.fam].site.Opcode != hlo.OpWhile {
		return -1
	}
	f := &r.fams[s.fam]
	if sub, ok := f.site.Shape.Subshape(f.index); !ok || !sub.IsTuple() || len(f.inputs) < 2 {
		return -1
	}
	return r.find(f.inputs[1])
}

// readHere reports whether step t's instruction itself reads q.
func (r *reading) readHere(q label, t int) bool {
	for _, x := range r.reads[t] {
		if x.src == q {
			return true
		}
	}
	return false
}

// overwrites reports whether in, the instruction of step t, reads q
// through an operand it may write its output at outIx over.
func (r *reading) overwrites(as *assign.Assignment, t int, in *hlo.Instruction, outIx hlo.ShapeIndex, q label) bool {
	for _, x := range r.reads[t] {
		if x.src == q && mayOverwrite(as, in, outIx, x.operand, x.index) {
			return true
		}
	}
	return r.asyncStartAliases(in, outIx, q)
}

// asyncStartAliases reports whether in is the root of an async
// computation whose async-start's own output_to_operand_aliasing puts
// the output at outIx ({1}+outIx of the start) over the operand whose
// bytes q holds: the async op as a whole updates that operand in place
// (alias_info.cc's kAsyncStart pairs), and its computation's root is
// where the bytes are written.
func (r *reading) asyncStartAliases(in *hlo.Instruction, outIx hlo.ShapeIndex, q label) bool {
	c := in.Parent
	if c == nil || c.Root != in {
		return false
	}
	if r.asyncStarts == nil {
		r.asyncStarts = make(map[*hlo.Computation]*hlo.Instruction)
		for _, x := range r.a.Sequence {
			if x.Opcode == hlo.OpAsyncStart && len(x.Calls()) == 1 && x.Calls()[0] != nil {
				r.asyncStarts[x.Calls()[0]] = x
			}
		}
	}
	start := r.asyncStarts[c]
	if start == nil {
		return false
	}
	out := append(hlo.ShapeIndex{1}, outIx...)
	for _, p := range start.OutputOperandAliasing() {
		if p.Output.Equal(out) && int(p.Operand) < len(start.Operands) && r.find(r.resolveIndex(start.Operands[p.Operand], p.OperandIndex)) == q {
			return true
		}
	}
	return false
}
