package hlo

// Pos is a position in the source text: 1-based line and column (in bytes).
// The zero Pos means "not from text" (built by code).
type Pos struct {
	Line, Col int32
}

// IsValid reports whether p refers to a source position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Module is an HLO module: a set of computations, one of them the entry.
type Module struct {
	Name string
	// File is the name of the source file, used in error messages.
	File string
	Pos  Pos

	// IsScheduled is true when the instruction order of every sequential
	// computation is its schedule (is_scheduled=true).
	IsScheduled bool
	// InputOutputAlias lists the entry's output/parameter aliases (donation).
	InputOutputAlias []IOAlias
	// BufferDonors lists the parameters whose buffers may be donated.
	BufferDonors []BufferDonor
	// Attrs holds the header attributes the IR does not model, in order,
	// verbatim (entry_computation_layout, frontend_attributes, ...).
	Attrs []Attr
	// OperandShapes is true when the text the module was parsed from
	// printed operands with their shapes ("add(f32[4]{0} %a, ...)"), as
	// XLA did before 2024. The canonical text leaves them out; dumps in
	// XLA's formats that quote instructions follow the source
	// (PrintOptions.OperandShapes).
	OperandShapes bool

	// Computations in text order. Entry is one of them.
	Computations []*Computation
	Entry        *Computation

	// StackFrames holds JAX's FileNames/FunctionNames/FileLocations/StackFrames
	// tables, or nil.
	StackFrames *StackFrameIndex

	numValues int // set by Renumber
	// nextID is the ID NewInstruction gives next: every instruction of
	// the module has an ID below it. Renumber resets it to the count.
	nextID int
}

// Attr is an attribute kept as text: name=value.
type Attr struct {
	Name  string
	Value string
}

// AliasKind says whether an input/output alias may or must hold.
type AliasKind uint8

// Alias kinds; AliasDefault is printed without a kind.
const (
	AliasDefault AliasKind = iota
	MayAlias
	MustAlias
)

func (k AliasKind) String() string {
	switch k {
	case MayAlias:
		return "may-alias"
	case MustAlias:
		return "must-alias"
	}
	return ""
}

// IOAlias says that entry output index Output shares its buffer with entry
// parameter Param at index ParamIndex.
type IOAlias struct {
	Output     ShapeIndex
	Param      int64
	ParamIndex ShapeIndex
	Kind       AliasKind
}

// BufferDonor names a parameter subshape whose buffer may be reused.
type BufferDonor struct {
	Param      int64
	ParamIndex ShapeIndex
}

// Computation is a named list of instructions with one root.
type Computation struct {
	// ID is dense over the module (0..len(Module.Computations)-1, the
	// computation's place in Module.Computations), set by Renumber, so
	// analyses keep per-computation tables as slices.
	ID     int
	Name   string
	Module *Module
	Pos    Pos
	// Instructions in text order; for a scheduled module, the schedule.
	Instructions []*Instruction
	Root         *Instruction
	// Params[i] is parameter(i); nil entries only in invalid modules.
	Params []*Instruction
	// IsEntry is true for the module's entry computation.
	IsEntry bool
	// ExecutionThread is the execution_thread attribute ("" when absent).
	ExecutionThread string
}

// FusionKind is the kind= of a fusion: kLoop, kInput, kOutput, kCustom.
type FusionKind string

// The fusion kinds XLA prints.
const (
	FusionLoop   FusionKind = "kLoop"
	FusionInput  FusionKind = "kInput"
	FusionOutput FusionKind = "kOutput"
	FusionCustom FusionKind = "kCustom"
)

// Instruction is one HLO instruction. The attributes the pipeline needs are
// typed: the common ones are fields here, the rarer ones live in Ext (nil
// when the instruction has none of them) and are read through accessor
// methods that return zero values without it. Every other attribute is kept
// verbatim in Attrs so that printing loses nothing.
type Instruction struct {
	// ID is unique in the module and below Module.NumIDs: the parser, the
	// Builder, Computation.Clone and Module.NewInstruction give every
	// instruction an ID when they make it. Renumber makes the IDs dense
	// again (0..NumInstructions-1, computations in order, instructions in
	// order) after instructions were removed or reordered.
	ID int
	// FirstValue is the dense number of this instruction's first subshape
	// position; its subshapes (pre-order) are FirstValue, FirstValue+1, ...
	FirstValue int

	Name   string
	Opcode Opcode
	// ImplicitGTE marks a get-tuple-element written compactly as %t#1 in an
	// operand; it prints that way and not as its own line.
	ImplicitGTE bool
	// HasDimensions is true when dimensions= was given (possibly empty).
	HasDimensions bool
	Shape         Shape
	Operands      []*Instruction
	// Users lists the instructions that take this one as an operand, in
	// the order they appear, once per user.
	Users  []*Instruction
	Parent *Computation
	Pos    Pos

	// ParameterNumber is N in parameter(N).
	ParameterNumber int64
	// TupleIndex is index= of get-tuple-element.
	TupleIndex int64
	// Dimensions is dimensions={...}.
	Dimensions []int64
	// Metadata is metadata={...}, nil when absent.
	Metadata *Metadata
	// Attrs holds the attributes the IR does not model, in order, verbatim.
	Attrs []Attr
	// Ext holds the rarer typed attributes; nil when there are none.
	Ext *Ext
}

// Ext holds the typed attributes that most instructions lack.
type Ext struct {
	// UnknownOpcode is the opcode's name when Opcode is OpUnknown.
	UnknownOpcode string
	// Literal is the value of a constant.
	Literal *Literal

	// Called computations, by role.
	Calls              []*Computation // calls= (fusion, async-start)
	ToApply            *Computation   // to_apply=
	Condition, Body    *Computation   // while
	Branches           []*Computation // conditional: branch_computations or true/false
	PredicatedBranches bool           // printed as true_computation/false_computation
	CalledComputations []*Computation // custom-call called_computations=
	Select, Scatter    *Computation   // select-and-scatter

	FusionKind FusionKind
	// Slice is slice={[start:limit:stride], ...}.
	Slice []SliceDim
	// Dot holds the dot dimension numbers.
	Dot *DotDims
	// CustomCallTarget is custom_call_target= (unquoted).
	CustomCallTarget    string
	HasCustomCallTarget bool
	// OutputOperandAliasing is output_to_operand_aliasing=.
	OutputOperandAliasing []OutputOperandAlias
	// ControlPredecessors must run before this instruction; ControlSuccessors
	// is the inverse relation (derived).
	ControlPredecessors, ControlSuccessors []*Instruction
	// BackendConfig is backend_config= verbatim (a quoted string or raw
	// JSON), "" when absent.
	BackendConfig string
	// AsyncSugar is, on an async-start, -update or -done written in XLA's
	// short form <opcode>-start / -update / -done, the opcode it names
	// (OpUnknown when the op was written as async-start and so on). The
	// parser builds the async computation for it, as XLA's does: one
	// parameter per operand of the start and the named op as its root,
	// with the start's attributes; the printer writes it back in the short
	// form while that computation still holds that one op. OpCall is the
	// form whose to_apply= names the async computation itself
	// (call-start(...), to_apply=%c), which binds operands late.
	AsyncSugar Opcode
}

// EnsureExt returns in.Ext, allocating it first if needed.
func (in *Instruction) EnsureExt() *Ext {
	if in.Ext == nil {
		in.Ext = &Ext{}
	}
	return in.Ext
}

var noExt Ext

func (in *Instruction) ext() *Ext {
	if in.Ext == nil {
		return &noExt
	}
	return in.Ext
}

// Literal returns a constant's value, or nil.
func (in *Instruction) Literal() *Literal { return in.ext().Literal }

// Calls returns the computations of calls= (a fusion's body, an async op's wrapped computation).
func (in *Instruction) Calls() []*Computation { return in.ext().Calls }

// ToApply returns the computation of to_apply=, or nil.
func (in *Instruction) ToApply() *Computation { return in.ext().ToApply }

// Condition returns a while's condition computation, or nil.
func (in *Instruction) Condition() *Computation { return in.ext().Condition }

// Body returns a while's body computation, or nil.
func (in *Instruction) Body() *Computation { return in.ext().Body }

// Branches returns a conditional's branch computations (true then false for a predicated one).
func (in *Instruction) Branches() []*Computation { return in.ext().Branches }

// FusionKind returns a fusion's kind=, or "".
func (in *Instruction) FusionKind() FusionKind { return in.ext().FusionKind }

// Slice returns slice= of a slice instruction.
func (in *Instruction) Slice() []SliceDim { return in.ext().Slice }

// Dot returns the dot dimension numbers, or nil.
func (in *Instruction) Dot() *DotDims { return in.ext().Dot }

// CustomCallTarget returns custom_call_target=, or "".
func (in *Instruction) CustomCallTarget() string { return in.ext().CustomCallTarget }

// OutputOperandAliasing returns output_to_operand_aliasing=.
func (in *Instruction) OutputOperandAliasing() []OutputOperandAlias {
	return in.ext().OutputOperandAliasing
}

// ControlPredecessors returns the instructions that must run before this one.
func (in *Instruction) ControlPredecessors() []*Instruction { return in.ext().ControlPredecessors }

// ControlSuccessors returns the instructions that list this one as a control predecessor.
func (in *Instruction) ControlSuccessors() []*Instruction { return in.ext().ControlSuccessors }

// BackendConfig returns backend_config= verbatim, or "".
func (in *Instruction) BackendConfig() string { return in.ext().BackendConfig }

// SliceDim is one dimension of slice={[start:limit:stride]}.
type SliceDim struct {
	Start, Limit, Stride int64
}

// DotDims are a dot's dimension numbers.
type DotDims struct {
	LhsBatch, LhsContracting, RhsBatch, RhsContracting []int64
}

// OutputOperandAlias says output Output of a custom-call or fusion shares a
// buffer with operand Operand at OperandIndex.
type OutputOperandAlias struct {
	Output       ShapeIndex
	Operand      int64
	OperandIndex ShapeIndex
}

// Metadata is an instruction's metadata={...}. Fields the pipeline reads are
// typed; others are kept verbatim in Rest.
type Metadata struct {
	OpType     string
	OpName     string
	SourceFile string
	// SourceLine and friends are 0 when absent.
	SourceLine, SourceEndLine, SourceColumn, SourceEndColumn int64
	StackFrameID                                             int64
	DeduplicatedName                                         string
	SchedulingName                                           string
	// Rest holds other fields (profile_type={...}, ...) verbatim, in order.
	Rest []Attr
}

// StackFrameIndex is the stack-frame table JAX appends to its dumps.
type StackFrameIndex struct {
	FileNames     []IndexedString
	FunctionNames []IndexedString
	FileLocations []FileLocation
	StackFrames   []StackFrame
}

// IndexedString is one "N \"text\"" entry of FileNames or FunctionNames.
type IndexedString struct {
	ID   int64
	Text string
}

// FileLocation is one FileLocations entry.
type FileLocation struct {
	ID                               int64
	FileNameID, FunctionNameID       int64
	Line, EndLine, Column, EndColumn int64
}

// StackFrame is one StackFrames entry.
type StackFrame struct {
	ID, FileLocationID, ParentFrameID int64
}

// OpName returns the instruction's opcode name, for unknown opcodes too.
func (in *Instruction) OpName() string {
	if in.Opcode == OpUnknown {
		return in.ext().UnknownOpcode
	}
	return in.Opcode.String()
}

// IsRoot reports whether the instruction is its computation's root.
func (in *Instruction) IsRoot() bool { return in.Parent != nil && in.Parent.Root == in }

// Callees returns every computation the instruction calls, in the order
// Calls, ToApply, Condition, Body, Branches, CalledComputations, Select, Scatter.
func (in *Instruction) Callees() []*Computation {
	x := in.Ext
	if x == nil {
		return nil
	}
	var cs []*Computation
	cs = append(cs, x.Calls...)
	for _, c := range []*Computation{x.ToApply, x.Condition, x.Body} {
		if c != nil {
			cs = append(cs, c)
		}
	}
	cs = append(cs, x.Branches...)
	cs = append(cs, x.CalledComputations...)
	for _, c := range []*Computation{x.Select, x.Scatter} {
		if c != nil {
			cs = append(cs, c)
		}
	}
	return cs
}

// FusedComputation returns the computation a fusion calls, or nil.
func (in *Instruction) FusedComputation() *Computation {
	if in.Opcode != OpFusion || in.Ext == nil || len(in.Ext.Calls) == 0 {
		return nil
	}
	return in.Ext.Calls[0]
}

// Attr returns the verbatim value of an unmodelled attribute.
func (in *Instruction) Attr(name string) (string, bool) {
	for _, a := range in.Attrs {
		if a.Name == name {
			return a.Value, true
		}
	}
	return "", false
}

// IsElementwise reports whether the instruction is element-wise on all of
// its operands (XLA's IsElementwise): elementwise opcodes, bitcast-convert
// between types of equal width, and loop fusions whose root is elementwise
// are not included here (see IsElementwiseOnOperand in later passes).
func (in *Instruction) IsElementwise() bool {
	if in.Opcode == OpBitcastConvert && len(in.Operands) == 1 {
		return in.Operands[0].Shape.Elem.BitWidth() == in.Shape.Elem.BitWidth()
	}
	return in.Opcode.Has(Elementwise)
}

// Instruction returns the instruction of c with the given name, or nil.
func (c *Computation) Instruction(name string) *Instruction {
	for _, in := range c.Instructions {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// Computation returns the module's computation with the given name, or nil.
func (m *Module) Computation(name string) *Computation {
	for _, c := range m.Computations {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Renumber gives every computation its place in Computations as ID, every
// instruction a dense ID (computations in order, instructions in order) and
// a dense FirstValue for its subshape positions.
func (m *Module) Renumber() {
	id, v := 0, 0
	var memo map[tupleKey]int
	for ci, c := range m.Computations {
		c.ID = ci
		for _, in := range c.Instructions {
			in.ID = id
			in.FirstValue = v
			id++
			if in.Shape.IsTuple() {
				if memo == nil {
					memo = map[tupleKey]int{}
				}
				v += countSubshapes(in.Shape, memo)
			} else {
				v++
			}
		}
	}
	m.numValues = v
	m.nextID = id
}

// NewInstruction gives in, a new instruction a pass is adding to m, an ID
// no other instruction of m has, and returns it. It sets nothing else:
// the caller inserts in (Computation.InsertBefore) and names it (a
// NameUniquer). Until the next Renumber the IDs are unique but not dense;
// tables indexed by ID take NumIDs entries.
func (m *Module) NewInstruction(in *Instruction) *Instruction {
	if m == nil || in == nil {
		return in
	}
	if m.nextID == 0 {
		// A module put together by hand, never renumbered: number from
		// the count.
		m.nextID = m.NumInstructions()
	}
	in.ID = m.nextID
	m.nextID++
	return in
}

// NumIDs returns a bound on the module's instruction IDs: each is in
// [0, NumIDs()). It is NumInstructions after Renumber, and grows by one
// with each NewInstruction.
func (m *Module) NumIDs() int {
	return max(m.nextID, m.NumInstructions())
}

// tupleKey names a tuple's element array.
type tupleKey struct {
	first *Shape
	n     int
}

// countSubshapes is NumSubshapes remembering each tuple's count by its
// elements' array: the shapes of get-tuple-elements and tuples share
// their operands' arrays, and a tuple nested d deep that is taken apart
// level by level would otherwise be counted in time quadratic in d.
func countSubshapes(s Shape, memo map[tupleKey]int) int {
	if !s.IsTuple() {
		return 1
	}
	if len(s.Tuple) == 0 {
		return 1
	}
	key := tupleKey{&s.Tuple[0], len(s.Tuple)}
	if n, ok := memo[key]; ok {
		return n
	}
	n := 1
	for _, e := range s.Tuple {
		n += countSubshapes(e, memo)
	}
	memo[key] = n
	return n
}

// NumInstructions returns the number of instructions in the module.
func (m *Module) NumInstructions() int {
	n := 0
	for _, c := range m.Computations {
		n += len(c.Instructions)
	}
	return n
}

// NumValues returns the number of subshape positions numbered by Renumber.
func (m *Module) NumValues() int { return m.numValues }

// Instructions calls f for every instruction of the module in ID order.
func (m *Module) Instructions(f func(*Instruction)) {
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			f(in)
		}
	}
}

// RebuildUsers recomputes Users and ControlSuccessors from operands and
// control predecessors, in the order the parser gives them (readers in
// instruction order, each once). Schedulers follow Users, so a pass that
// edited a computation calls it to be scheduled as its printed text would.
func (c *Computation) RebuildUsers() {
	for _, in := range c.Instructions {
		in.Users = in.Users[:0]
		if in.Ext != nil {
			in.Ext.ControlSuccessors = in.Ext.ControlSuccessors[:0]
		}
	}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			if n := len(op.Users); n == 0 || op.Users[n-1] != in {
				op.Users = append(op.Users, in)
			}
		}
		for _, p := range in.ControlPredecessors() {
			x := p.EnsureExt()
			x.ControlSuccessors = append(x.ControlSuccessors, in)
		}
	}
}

// Attr returns the verbatim value of an unmodelled module header attribute.
func (m *Module) Attr(name string) (string, bool) {
	for _, a := range m.Attrs {
		if a.Name == name {
			return a.Value, true
		}
	}
	return "", false
}
