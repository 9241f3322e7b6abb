package hlo

// Building a module in Go, for a compiler whose own IR is not HLO: a
// Builder makes computations, a ComputationBuilder adds instructions to
// one, each with its shape inferred from its operands as XLA's
// ShapeInference does for the opcodes it covers, its users, ID and a
// module-unique name set as it is added. Build returns the module
// renumbered and verified.
//
// Errors are collected, not panicked: a method given operands that do not
// fit (wrong count, mismatched shapes, an operand of another computation)
// records an error and returns nil; a method given a nil operand after an
// earlier error returns nil without a second error, so a chain of calls
// reports its first mistake once. Build returns every error recorded.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrBuild is the kind (for errors.Is) of every error a Builder records.
var ErrBuild = errors.New("hlo: invalid build")

// Builder builds a module. The zero Builder is not usable; call NewBuilder.
type Builder struct {
	m     *Module
	names NameUniquer
	comps []*ComputationBuilder
	entry *ComputationBuilder
	errs  ErrorList
	built bool
}

// NewBuilder returns a builder of a module with the given name.
func NewBuilder(name string) *Builder {
	return &Builder{m: &Module{Name: name}}
}

// ComputationBuilder adds instructions to one computation of a Builder's
// module. Its root is the last instruction added unless SetRoot says
// otherwise.
type ComputationBuilder struct {
	b *Builder
	c *Computation
}

// Computation starts a computation named name (made unique in the module)
// that other computations may call.
func (b *Builder) Computation(name string) *ComputationBuilder {
	if b == nil || b.m == nil {
		return nil
	}
	if !b.usable("computation " + name) {
		return nil
	}
	if !validName(name) {
		b.errorf("computation %q: not a valid HLO name", name)
		name = "computation"
	}
	c := &Computation{Name: b.names.Unique(name), Module: b.m, ID: len(b.comps)}
	cb := &ComputationBuilder{b: b, c: c}
	b.comps = append(b.comps, cb)
	return cb
}

// Entry starts the module's entry computation (there is one).
func (b *Builder) Entry(name string) *ComputationBuilder {
	cb := b.Computation(name)
	if cb == nil {
		return nil
	}
	if b.entry != nil {
		b.errorf("computation %s: the module already has an entry, %s", cb.c.Name, b.entry.c.Name)
		return cb
	}
	b.entry = cb
	return cb
}

// Err returns the errors recorded so far, or nil.
func (b *Builder) Err() error {
	if b == nil {
		return fmt.Errorf("%w: nil Builder", ErrBuild)
	}
	return b.errs.Err()
}

// Build returns the module: its computations ordered so that each comes
// after those it calls (XLA's order), renumbered, and verified. It returns
// the recorded errors instead when there are any, or Verify's. A Builder
// builds once; it may not be used afterwards.
func (b *Builder) Build() (*Module, error) {
	if b == nil || b.m == nil {
		return nil, fmt.Errorf("%w: nil Builder", ErrBuild)
	}
	if !b.usable("Build") || len(b.errs) > 0 {
		return nil, b.errs.Err()
	}
	if b.entry == nil {
		b.errorf("module %s has no entry computation (Builder.Entry)", b.m.Name)
	}
	for _, cb := range b.comps {
		if len(cb.c.Instructions) == 0 {
			b.errorf("computation %s has no instructions", cb.c.Name)
		}
	}
	if len(b.errs) > 0 {
		return nil, b.errs.Err()
	}
	b.built = true
	m := b.m
	m.Computations = calleesFirst(b.comps)
	for _, c := range m.Computations {
		c.Root = rootOf(c)
	}
	m.Entry = b.entry.c
	m.Entry.IsEntry = true
	m.Renumber()
	if err := Verify(m); err != nil {
		return nil, err
	}
	return m, nil
}

// calleesFirst orders the computations so that each follows the ones it
// calls, keeping the order they were started in where calls allow.
func calleesFirst(comps []*ComputationBuilder) []*Computation {
	done := make([]bool, len(comps)) // by the index the builder gave (Computation.ID)
	out := make([]*Computation, 0, len(comps))
	var visit func(c *Computation)
	visit = func(c *Computation) {
		if c == nil || c.ID < 0 || c.ID >= len(comps) || comps[c.ID].c != c || done[c.ID] {
			return
		}
		done[c.ID] = true // before the callees: a call cycle stops here, and Verify reports it
		for _, in := range c.Instructions {
			for _, callee := range in.Callees() {
				visit(callee)
			}
		}
		out = append(out, c)
	}
	for _, cb := range comps {
		visit(cb.c)
	}
	return out
}

func (b *Builder) errorf(format string, args ...any) {
	b.errs = append(b.errs, &Error{Msg: "build " + b.m.Name + ": " + fmt.Sprintf(format, args...), Err: ErrBuild})
}

// usable records an error for use after Build.
func (b *Builder) usable(what string) bool {
	if b.built {
		b.errorf("%s: the module is already built", what)
		return false
	}
	return true
}

// validName reports whether name prints as one word of HLO text.
func validName(name string) bool {
	if name == "" || strings.Contains(name, "->") {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isWordByte(name[i]) {
			return false
		}
	}
	return true
}

// Computation returns the computation being built (its Root is set by
// Build).
func (cb *ComputationBuilder) Computation() *Computation {
	if cb == nil {
		return nil
	}
	return cb.c
}

// SetRoot makes in the computation's root.
func (cb *ComputationBuilder) SetRoot(in *Instruction) {
	if _, ok := cb.operands("root", in); ok {
		cb.c.Root = in
	}
}

// rootOf is the root of a computation being built: the one SetRoot
// chose, else the last instruction (nil when there is none).
func rootOf(c *Computation) *Instruction {
	if c.Root != nil {
		return c.Root
	}
	if n := len(c.Instructions); n > 0 {
		return c.Instructions[n-1]
	}
	return nil
}

// Name renames in, an instruction of this computation, to name (made
// unique in the module), and returns it.
func (cb *ComputationBuilder) Name(in *Instruction, name string) *Instruction {
	if _, ok := cb.operands("name "+name, in); !ok {
		return nil
	}
	if !validName(name) {
		cb.b.errorf("computation %s: %q is not a valid HLO name", cb.c.Name, name)
		return in
	}
	if in.Name != name {
		in.Name = cb.b.names.Unique(name)
	}
	return in
}

// errorf records an error about the instruction what being built.
func (cb *ComputationBuilder) errorf(what string, format string, args ...any) *Instruction {
	cb.b.errorf("computation %s: %s: %s", cb.c.Name, what, fmt.Sprintf(format, args...))
	return nil
}

// operands checks that the builder is usable and that each operand is an
// instruction of this computation. It reports false, having recorded an
// error unless an operand is nil after an earlier error, when they are not.
func (cb *ComputationBuilder) operands(what string, ops ...*Instruction) ([]*Instruction, bool) {
	if cb == nil || cb.b == nil || cb.c == nil {
		return nil, false
	}
	if !cb.b.usable("computation " + cb.c.Name + ": " + what) {
		return nil, false
	}
	for i, op := range ops {
		switch {
		case op == nil:
			if len(cb.b.errs) == 0 {
				cb.errorf(what, "operand %d is nil", i)
			}
			return nil, false
		case op.Parent != cb.c:
			cb.errorf(what, "operand %d (%s) is not an instruction of this computation", i, op.Name)
			return nil, false
		}
	}
	return ops, true
}

// callee checks that f is a computation of the same module with a root.
func (cb *ComputationBuilder) callee(what string, f *ComputationBuilder) (*Computation, bool) {
	switch {
	case f == nil || f.c == nil:
		if len(cb.b.errs) == 0 {
			cb.errorf(what, "called computation is nil")
		}
		return nil, false
	case f.b != cb.b:
		cb.errorf(what, "called computation %s belongs to another Builder", f.c.Name)
		return nil, false
	case f == cb:
		cb.errorf(what, "computation %s cannot call itself", f.c.Name)
		return nil, false
	case rootOf(f.c) == nil:
		cb.errorf(what, "called computation %s has no instructions yet", f.c.Name)
		return nil, false
	}
	return f.c, true
}

// add appends in to the computation: an ID, a unique name (the opcode's
// when it has none), its parent and the users of its operands.
func (cb *ComputationBuilder) add(in *Instruction) *Instruction {
	if in.Name == "" {
		in.Name = in.OpName()
	}
	in.Name = cb.b.names.Unique(in.Name)
	in.Parent = cb.c
	cb.b.m.NewInstruction(in)
	cb.c.Instructions = append(cb.c.Instructions, in)
	for _, op := range in.Operands {
		op.AddUser(in)
	}
	for _, p := range in.ControlPredecessors() {
		x := p.EnsureExt()
		if !slices.Contains(x.ControlSuccessors, in) {
			x.ControlSuccessors = append(x.ControlSuccessors, in)
		}
	}
	return in
}

// Add adds an instruction the other methods do not make: in has its
// Opcode, Operands (instructions of this computation), attributes and
// called computations (of this module) set, and its Shape unless the
// opcode's shape follows from the operands as the named methods infer it
// (element-wise, tuple, get-tuple-element, call, fusion, while,
// conditional). Add sets its ID, Parent, users and, when Name is empty or
// taken, a unique name. It checks the operand count against the opcode
// table; Build verifies the rest.
func (cb *ComputationBuilder) Add(in *Instruction) *Instruction {
	if in == nil {
		if cb != nil && cb.b != nil && len(cb.b.errs) == 0 {
			cb.errorf("Add", "nil instruction")
		}
		return nil
	}
	what := in.OpName()
	if _, ok := cb.operands(what, in.Operands...); !ok {
		return nil
	}
	if in.Parent != nil {
		return cb.errorf(what, "%s is already an instruction of a computation", in.Name)
	}
	if in.Name != "" && !validName(in.Name) {
		return cb.errorf(what, "%q is not a valid HLO name", in.Name)
	}
	if a := in.Opcode.Arity(); a != Variadic && len(in.Operands) != a {
		return cb.errorf(what, "takes %d operands, got %d", a, len(in.Operands))
	}
	for _, p := range in.ControlPredecessors() {
		if p == nil || p.Parent != cb.c {
			return cb.errorf(what, "a control predecessor is not an instruction of this computation")
		}
	}
	for _, c := range in.Callees() {
		if c == nil || c.Module != cb.b.m {
			return cb.errorf(what, "calls a computation that is not one of this module's")
		}
	}
	if in.Shape.Elem == InvalidType {
		s, err := inferredShape(in)
		if err != nil {
			return cb.errorf(what, "%v", err)
		}
		in.Shape = s
	} else if err := checkShape(in.Shape); err != nil {
		return cb.errorf(what, "%v", err)
	}
	if in.Opcode == OpParameter {
		if in.ParameterNumber != int64(len(cb.c.Params)) {
			return cb.errorf(what, "parameter number %d, want %d (parameters are numbered in the order they are added)", in.ParameterNumber, len(cb.c.Params))
		}
		cb.c.Params = append(cb.c.Params, in)
	}
	return cb.add(in)
}

// inferredShape is the shape of an instruction Add was given without one.
func inferredShape(in *Instruction) (Shape, error) {
	ops := in.Operands
	switch {
	case in.Opcode == OpTuple:
		return tupleOf(ops), nil
	case in.Opcode == OpGetTupleElement && len(ops) == 1:
		return elementOf(ops[0], in.TupleIndex)
	case in.Opcode == OpCall || in.Opcode == OpFusion:
		c := in.ToApply()
		if len(in.Calls()) > 0 {
			c = in.Calls()[0]
		}
		if c != nil && rootOf(c) != nil {
			return rootOf(c).Shape, nil
		}
	case in.Opcode == OpConditional && len(in.Branches()) > 0:
		if c := in.Branches()[0]; c != nil && rootOf(c) != nil {
			return rootOf(c).Shape, nil
		}
	case in.Opcode == OpWhile && len(ops) == 1:
		return ops[0].Shape, nil
	case in.Opcode == OpCompare && len(ops) == 2:
		return elementwise(ops, PRED)
	case in.IsElementwise() && in.Opcode != OpConvert && in.Opcode != OpBitcastConvert && in.Opcode != OpStochasticConvert && in.Opcode != OpComplex && len(ops) > 0:
		return elementwise(ops, InvalidType)
	}
	return Shape{}, fmt.Errorf("cannot infer the shape of %s; give it a Shape", in.OpName())
}

// checkShape checks a shape given by the caller: element types set, no
// negative dimension, a byte size that fits in int64.
func checkShape(s Shape) error {
	if s.IsTuple() {
		for _, e := range s.Tuple {
			if err := checkShape(e); err != nil {
				return err
			}
		}
		return nil
	}
	if s.Elem == InvalidType || s.Elem >= numElementTypes {
		return fmt.Errorf("shape has no valid element type")
	}
	for i, d := range s.Dims {
		if d < 0 && !(d == UnboundedDim && s.IsDynamic(i)) {
			return fmt.Errorf("shape %s has a negative dimension", s)
		}
	}
	if s.Dynamic != nil && len(s.Dynamic) != len(s.Dims) {
		return fmt.Errorf("shape has %d dynamic markers for %d dimensions", len(s.Dynamic), len(s.Dims))
	}
	if s.Layout != nil && s.Layout.MinorToMajor != nil && !isPermutation(s.Layout.MinorToMajor, len(s.Dims)) {
		return fmt.Errorf("shape %s: minor-to-major is not a permutation of its dimensions", s)
	}
	if _, err := ByteSize(s); err != nil && strings.Contains(err.Error(), "overflows") {
		return err
	}
	return nil
}

func isPermutation(p []int64, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, d := range p {
		if d < 0 || d >= int64(n) || seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}

func tupleOf(ops []*Instruction) Shape {
	elems := make([]Shape, len(ops))
	for i, op := range ops {
		elems[i] = op.Shape
	}
	return Shape{Elem: Tuple, Tuple: elems}
}

func elementOf(t *Instruction, i int64) (Shape, error) {
	if !t.Shape.IsTuple() {
		return Shape{}, fmt.Errorf("operand %s is not a tuple (shape %s)", t.Name, t.Shape)
	}
	if i < 0 || i >= int64(len(t.Shape.Tuple)) {
		return Shape{}, fmt.Errorf("index %d out of range for %s, a tuple of %d elements", i, t.Name, len(t.Shape.Tuple))
	}
	return t.Shape.Tuple[i], nil
}

// elementwise is the shape of an element-wise op on ops: the first
// operand's, with element type elem unless that is InvalidType, every
// operand an array of the same dimensions and, but for compare's result,
// element type.
func elementwise(ops []*Instruction, elem ElementType) (Shape, error) {
	first := ops[0].Shape
	for i, op := range ops {
		if !op.Shape.IsArray() {
			return Shape{}, fmt.Errorf("operand %d (%s) is not an array (shape %s)", i, op.Name, op.Shape)
		}
		if !SameDims(op.Shape, first) {
			return Shape{}, fmt.Errorf("operand %d (%s) has shape %s, operand 0 (%s) has %s; broadcast one of them first", i, op.Name, op.Shape, ops[0].Name, first)
		}
		if op.Shape.Elem != first.Elem {
			return Shape{}, fmt.Errorf("operand %d (%s) has element type %s, operand 0 (%s) has %s; convert one of them first", i, op.Name, op.Shape.Elem, ops[0].Name, first.Elem)
		}
	}
	if elem == InvalidType {
		return first, nil
	}
	return Shape{Elem: elem, Dims: first.Dims, Dynamic: first.Dynamic, Layout: first.Layout}, nil
}

// array checks that op is an array and returns its shape.
func (cb *ComputationBuilder) array(what string, i int, op *Instruction) (Shape, bool) {
	if !op.Shape.IsArray() {
		cb.errorf(what, "operand %d (%s) is not an array (shape %s)", i, op.Name, op.Shape)
		return Shape{}, false
	}
	return op.Shape, true
}

// Parameter adds the computation's next parameter (parameter(0), (1), ...)
// named name, of shape s.
func (cb *ComputationBuilder) Parameter(name string, s Shape) *Instruction {
	if _, ok := cb.operands("parameter " + name); !ok {
		return nil
	}
	if name == "" {
		name = "parameter"
	}
	return cb.Add(&Instruction{Name: name, Opcode: OpParameter, Shape: s, ParameterNumber: int64(len(cb.c.Params))})
}

// Constant adds a constant of array shape s holding values in row-major
// order: one per element, or one for every element. Values are converted
// to s's element type (pred: non-zero is true).
func (cb *ComputationBuilder) Constant(s Shape, values ...float64) *Instruction {
	if _, ok := cb.operands("constant"); !ok {
		return nil
	}
	if err := checkShape(s); err != nil {
		return cb.errorf("constant", "%v", err)
	}
	if !s.IsArray() {
		return cb.errorf("constant", "shape %s is not an array", s)
	}
	n, ok := s.Elements()
	if !ok || n > maxExpandedLiteral {
		return cb.errorf("constant", "shape %s has too many elements for a literal", s)
	}
	switch {
	case len(values) == 1 && n != 1:
		v := values[0]
		values = make([]float64, n)
		for i := range values {
			values[i] = v
		}
	case int64(len(values)) != n:
		return cb.errorf("constant", "%d values for shape %s, which has %d elements", len(values), s, n)
	}
	var lit *Literal
	switch {
	case s.Elem.IsComplex():
		return cb.errorf("constant", "complex constants are not supported; use Add with a Literal")
	case s.Elem.IsFloat():
		lit = NewFloatLiteral(s, values...)
	default:
		ints := make([]int64, len(values))
		for i, v := range values {
			ints[i] = int64(v)
			if s.Elem == PRED && v != 0 {
				ints[i] = 1
			}
		}
		lit = NewIntLiteral(s, ints...)
	}
	return cb.Add(&Instruction{Opcode: OpConstant, Shape: s, Ext: &Ext{Literal: lit}})
}

// Unary adds an element-wise op of one operand (negate, exponential,
// tanh, ...): its shape is the operand's; real, imag and abs of a complex
// operand have the real type, is-finite has pred.
func (cb *ComputationBuilder) Unary(op Opcode, x *Instruction) *Instruction {
	what := op.String()
	if _, ok := cb.operands(what, x); !ok {
		return nil
	}
	if !op.Has(Elementwise) || op.Arity() != 1 || op == OpConvert || op == OpBitcastConvert {
		return cb.errorf(what, "not an element-wise op of one operand (use Convert to convert)")
	}
	s, ok := cb.array(what, 0, x)
	if !ok {
		return nil
	}
	switch {
	case op == OpIsFinite:
		s = Shape{Elem: PRED, Dims: s.Dims, Dynamic: s.Dynamic, Layout: s.Layout}
	case (op == OpReal || op == OpImag || op == OpAbs) && s.Elem.IsComplex():
		t := F32
		if s.Elem == C128 {
			t = F64
		}
		s = Shape{Elem: t, Dims: s.Dims, Dynamic: s.Dynamic, Layout: s.Layout}
	}
	return cb.add(&Instruction{Opcode: op, Shape: s, Operands: []*Instruction{x}})
}

// Binary adds an element-wise op of two operands (add, multiply,
// maximum, ...) of the same shape, which it has.
func (cb *ComputationBuilder) Binary(op Opcode, x, y *Instruction) *Instruction {
	what := op.String()
	ops, ok := cb.operands(what, x, y)
	if !ok {
		return nil
	}
	if !op.Has(Elementwise) || op.Arity() != 2 || op == OpCompare || op == OpStochasticConvert || op == OpComplex {
		return cb.errorf(what, "not an element-wise op of two operands of one type (use Compare to compare)")
	}
	s, err := elementwise(ops, InvalidType)
	if err != nil {
		return cb.errorf(what, "%v", err)
	}
	return cb.add(&Instruction{Opcode: op, Shape: s, Operands: []*Instruction{x, y}})
}

// Compare adds compare(x, y), direction=dir (EQ, NE, LT, LE, GT or GE),
// of shape pred with the operands' dimensions.
func (cb *ComputationBuilder) Compare(dir string, x, y *Instruction) *Instruction {
	ops, ok := cb.operands("compare", x, y)
	if !ok {
		return nil
	}
	switch dir {
	case "EQ", "NE", "LT", "LE", "GT", "GE":
	default:
		return cb.errorf("compare", "direction %q is not one of EQ, NE, LT, LE, GT, GE", dir)
	}
	s, err := elementwise(ops, PRED)
	if err != nil {
		return cb.errorf("compare", "%v", err)
	}
	return cb.add(&Instruction{Opcode: OpCompare, Shape: s, Operands: []*Instruction{x, y}, Attrs: []Attr{{"direction", dir}}})
}

// Select adds select(pred, onTrue, onFalse): pred is a pred array of the
// branches' dimensions, or a pred scalar.
func (cb *ComputationBuilder) Select(pred, onTrue, onFalse *Instruction) *Instruction {
	ops, ok := cb.operands("select", pred, onTrue, onFalse)
	if !ok {
		return nil
	}
	s, err := elementwise(ops[1:], InvalidType)
	if err != nil {
		return cb.errorf("select", "%v", err)
	}
	if p := pred.Shape; p.Elem != PRED || !(p.Rank() == 0 || SameDims(p, s)) {
		return cb.errorf("select", "predicate %s has shape %s, want pred with the dimensions of %s, or pred[]", pred.Name, p, s)
	}
	return cb.add(&Instruction{Opcode: OpSelect, Shape: s, Operands: ops})
}

// Convert adds convert(x) to element type t.
func (cb *ComputationBuilder) Convert(x *Instruction, t ElementType) *Instruction {
	if _, ok := cb.operands("convert", x); !ok {
		return nil
	}
	s, ok := cb.array("convert", 0, x)
	if !ok {
		return nil
	}
	if !t.IsArray() {
		return cb.errorf("convert", "%s is not an array element type", t)
	}
	return cb.add(&Instruction{Opcode: OpConvert, Shape: withElem(s, t), Operands: []*Instruction{x}})
}

// withElem is s with element type t and a layout without the old type's
// element size.
func withElem(s Shape, t ElementType) Shape {
	out := Shape{Elem: t, Dims: s.Dims, Dynamic: s.Dynamic}
	if s.Layout != nil {
		out.Layout = &Layout{MinorToMajor: s.Layout.MinorToMajor}
	}
	return out
}

// Broadcast adds a broadcast of x to an array of dimensions shape, x's
// dimension i becoming dimension dims[i] of the result (dims increasing,
// as XLA requires). A scalar x takes no dims.
func (cb *ComputationBuilder) Broadcast(x *Instruction, shape []int64, dims ...int64) *Instruction {
	if _, ok := cb.operands("broadcast", x); !ok {
		return nil
	}
	s, ok := cb.array("broadcast", 0, x)
	if !ok {
		return nil
	}
	if len(dims) != s.Rank() {
		return cb.errorf("broadcast", "%d dimensions for an operand of rank %d (%s)", len(dims), s.Rank(), s)
	}
	for i, d := range dims {
		switch {
		case d < 0 || d >= int64(len(shape)):
			return cb.errorf("broadcast", "dimension %d is not one of the result's %d", d, len(shape))
		case i > 0 && d <= dims[i-1]:
			return cb.errorf("broadcast", "dimensions {%s} are not increasing", joinInts(dims))
		case shape[d] != s.Dims[i]:
			return cb.errorf("broadcast", "operand dimension %d has size %d, result dimension %d has %d", i, s.Dims[i], d, shape[d])
		}
	}
	out := ArrayShape(s.Elem, shape...)
	if err := checkShape(out); err != nil {
		return cb.errorf("broadcast", "%v", err)
	}
	return cb.add(&Instruction{Opcode: OpBroadcast, Shape: out, Operands: []*Instruction{x}, Dimensions: slices.Clone(dims), HasDimensions: true})
}

// Reshape adds a reshape of x to dimensions dims, of as many elements.
func (cb *ComputationBuilder) Reshape(x *Instruction, dims ...int64) *Instruction {
	if _, ok := cb.operands("reshape", x); !ok {
		return nil
	}
	s, ok := cb.array("reshape", 0, x)
	if !ok {
		return nil
	}
	out := ArrayShape(s.Elem, dims...)
	if err := checkShape(out); err != nil {
		return cb.errorf("reshape", "%v", err)
	}
	a, okA := s.Elements()
	b, okB := out.Elements()
	if !okA || !okB || a != b {
		return cb.errorf("reshape", "%s and %s do not have the same number of elements", s, out)
	}
	return cb.add(&Instruction{Opcode: OpReshape, Shape: out, Operands: []*Instruction{x}})
}

// Transpose adds a transpose of x: result dimension i is x's dimension
// perm[i].
func (cb *ComputationBuilder) Transpose(x *Instruction, perm ...int64) *Instruction {
	if _, ok := cb.operands("transpose", x); !ok {
		return nil
	}
	s, ok := cb.array("transpose", 0, x)
	if !ok {
		return nil
	}
	if !isPermutation(perm, s.Rank()) {
		return cb.errorf("transpose", "{%s} is not a permutation of the dimensions of %s", joinInts(perm), s)
	}
	dims := make([]int64, len(perm))
	for i, p := range perm {
		dims[i] = s.Dims[p]
	}
	return cb.add(&Instruction{Opcode: OpTranspose, Shape: ArrayShape(s.Elem, dims...), Operands: []*Instruction{x}, Dimensions: slices.Clone(perm), HasDimensions: true})
}

// Dot adds dot(x, y) with dimension numbers d. The result's dimensions
// are the batch dimensions, then x's and y's others (neither batch nor
// contracting), in order, as XLA's ShapeInference::InferDotOpShape.
func (cb *ComputationBuilder) Dot(x, y *Instruction, d DotDims) *Instruction {
	if _, ok := cb.operands("dot", x, y); !ok {
		return nil
	}
	xs, ok := cb.array("dot", 0, x)
	if !ok {
		return nil
	}
	ys, ok := cb.array("dot", 1, y)
	if !ok {
		return nil
	}
	if xs.Elem != ys.Elem {
		return cb.errorf("dot", "operands have element types %s and %s; convert one of them first", xs.Elem, ys.Elem)
	}
	if len(d.LhsBatch) != len(d.RhsBatch) || len(d.LhsContracting) != len(d.RhsContracting) {
		return cb.errorf("dot", "%d lhs and %d rhs batch dimensions, %d lhs and %d rhs contracting dimensions", len(d.LhsBatch), len(d.RhsBatch), len(d.LhsContracting), len(d.RhsContracting))
	}
	used := func(s Shape, side string, lists ...[]int64) ([]bool, bool) {
		u := make([]bool, s.Rank())
		for _, l := range lists {
			for _, k := range l {
				if k < 0 || k >= int64(s.Rank()) || u[k] {
					cb.errorf("dot", "%s dimension %d is out of range or named twice for %s", side, k, s)
					return nil, false
				}
				u[k] = true
			}
		}
		return u, true
	}
	xu, ok := used(xs, "lhs", d.LhsBatch, d.LhsContracting)
	if !ok {
		return nil
	}
	yu, ok := used(ys, "rhs", d.RhsBatch, d.RhsContracting)
	if !ok {
		return nil
	}
	for _, pair := range [][2][]int64{{d.LhsBatch, d.RhsBatch}, {d.LhsContracting, d.RhsContracting}} {
		for i := range pair[0] {
			if a, b := xs.Dims[pair[0][i]], ys.Dims[pair[1][i]]; a != b {
				return cb.errorf("dot", "lhs dimension %d has size %d, rhs dimension %d has %d", pair[0][i], a, pair[1][i], b)
			}
		}
	}
	var dims []int64
	for _, k := range d.LhsBatch {
		dims = append(dims, xs.Dims[k])
	}
	for k, u := range xu {
		if !u {
			dims = append(dims, xs.Dims[k])
		}
	}
	for k, u := range yu {
		if !u {
			dims = append(dims, ys.Dims[k])
		}
	}
	dd := &DotDims{LhsBatch: slices.Clone(d.LhsBatch), LhsContracting: slices.Clone(d.LhsContracting), RhsBatch: slices.Clone(d.RhsBatch), RhsContracting: slices.Clone(d.RhsContracting)}
	return cb.add(&Instruction{Opcode: OpDot, Shape: ArrayShape(xs.Elem, dims...), Operands: []*Instruction{x, y}, Ext: &Ext{Dot: dd}})
}

// Reduce adds reduce(x, init) over dimensions dims with the reduction f,
// a computation of two scalar parameters of x's element type returning
// one. The result has x's other dimensions.
func (cb *ComputationBuilder) Reduce(x, init *Instruction, dims []int64, f *ComputationBuilder) *Instruction {
	if _, ok := cb.operands("reduce", x, init); !ok {
		return nil
	}
	c, ok := cb.callee("reduce", f)
	if !ok {
		return nil
	}
	s, ok := cb.array("reduce", 0, x)
	if !ok {
		return nil
	}
	scalar := Shape{Elem: s.Elem}
	if !Compatible(init.Shape, scalar) {
		return cb.errorf("reduce", "init %s has shape %s, want %s", init.Name, init.Shape, scalar)
	}
	if len(c.Params) != 2 || !Compatible(c.Params[0].Shape, scalar) || !Compatible(c.Params[1].Shape, scalar) || !Compatible(rootOf(f.c).Shape, scalar) {
		return cb.errorf("reduce", "reduction %s must take two %s parameters and return %s", c.Name, scalar, scalar)
	}
	gone := make([]bool, s.Rank())
	for _, d := range dims {
		if d < 0 || d >= int64(s.Rank()) || gone[d] {
			return cb.errorf("reduce", "dimension %d is out of range or named twice for %s", d, s)
		}
		gone[d] = true
	}
	var out []int64
	for k, g := range gone {
		if !g {
			out = append(out, s.Dims[k])
		}
	}
	return cb.add(&Instruction{Opcode: OpReduce, Shape: ArrayShape(s.Elem, out...), Operands: []*Instruction{x, init}, Dimensions: slices.Clone(dims), HasDimensions: true, Ext: &Ext{ToApply: c}})
}

// Tuple adds a tuple of xs.
func (cb *ComputationBuilder) Tuple(xs ...*Instruction) *Instruction {
	ops, ok := cb.operands("tuple", xs...)
	if !ok {
		return nil
	}
	return cb.add(&Instruction{Opcode: OpTuple, Shape: tupleOf(ops), Operands: slices.Clone(ops)})
}

// GetTupleElement adds element i of the tuple t.
func (cb *ComputationBuilder) GetTupleElement(t *Instruction, i int64) *Instruction {
	if _, ok := cb.operands("get-tuple-element", t); !ok {
		return nil
	}
	s, err := elementOf(t, i)
	if err != nil {
		return cb.errorf("get-tuple-element", "%v", err)
	}
	return cb.add(&Instruction{Opcode: OpGetTupleElement, Shape: s, Operands: []*Instruction{t}, TupleIndex: i})
}

// Slice adds a slice of x, one SliceDim per dimension.
func (cb *ComputationBuilder) Slice(x *Instruction, dims ...SliceDim) *Instruction {
	if _, ok := cb.operands("slice", x); !ok {
		return nil
	}
	s, ok := cb.array("slice", 0, x)
	if !ok {
		return nil
	}
	if len(dims) != s.Rank() {
		return cb.errorf("slice", "%d slice dimensions for an operand of rank %d (%s)", len(dims), s.Rank(), s)
	}
	out := make([]int64, len(dims))
	for i, d := range dims {
		if d.Start < 0 || d.Start > d.Limit || d.Limit > s.Dims[i] || d.Stride < 1 {
			return cb.errorf("slice", "[%d:%d:%d] is not a slice of dimension %d of %s", d.Start, d.Limit, d.Stride, i, s)
		}
		out[i] = (d.Limit - d.Start + d.Stride - 1) / d.Stride
	}
	return cb.add(&Instruction{Opcode: OpSlice, Shape: ArrayShape(s.Elem, out...), Operands: []*Instruction{x}, Ext: &Ext{Slice: slices.Clone(dims)}})
}

// Concatenate adds the concatenation of xs along dimension dim: arrays of
// one element type whose other dimensions agree.
func (cb *ComputationBuilder) Concatenate(dim int64, xs ...*Instruction) *Instruction {
	ops, ok := cb.operands("concatenate", xs...)
	if !ok {
		return nil
	}
	if len(ops) == 0 {
		return cb.errorf("concatenate", "no operands")
	}
	first, ok := cb.array("concatenate", 0, ops[0])
	if !ok {
		return nil
	}
	if dim < 0 || dim >= int64(first.Rank()) {
		return cb.errorf("concatenate", "dimension %d is out of range for %s", dim, first)
	}
	dims := slices.Clone(first.Dims)
	dims[dim] = 0
	for i, op := range ops {
		s, ok := cb.array("concatenate", i, op)
		if !ok {
			return nil
		}
		if s.Elem != first.Elem || s.Rank() != first.Rank() {
			return cb.errorf("concatenate", "operand %d (%s) has shape %s, operand 0 has %s", i, op.Name, s, first)
		}
		for k := range s.Dims {
			if int64(k) != dim && s.Dims[k] != first.Dims[k] {
				return cb.errorf("concatenate", "operand %d (%s) has shape %s, operand 0 has %s, which differ outside dimension %d", i, op.Name, s, first, dim)
			}
		}
		if dims[dim] += s.Dims[dim]; dims[dim] < 0 {
			return cb.errorf("concatenate", "dimension %d overflows", dim)
		}
	}
	out := ArrayShape(first.Elem, dims...)
	if err := checkShape(out); err != nil {
		return cb.errorf("concatenate", "%v", err)
	}
	return cb.add(&Instruction{Opcode: OpConcatenate, Shape: out, Operands: slices.Clone(ops), Dimensions: []int64{dim}, HasDimensions: true})
}

// params checks args against the parameters of c.
func (cb *ComputationBuilder) params(what string, c *Computation, args []*Instruction) bool {
	if len(c.Params) != len(args) {
		cb.errorf(what, "%d arguments for %s, which takes %d parameters", len(args), c.Name, len(c.Params))
		return false
	}
	for i, a := range args {
		if !Compatible(a.Shape, c.Params[i].Shape) {
			cb.errorf(what, "argument %d (%s) has shape %s, but parameter %d of %s has %s", i, a.Name, a.Shape, i, c.Name, c.Params[i].Shape)
			return false
		}
	}
	return true
}

// Call adds call(args...) of f; it has the shape f returns.
func (cb *ComputationBuilder) Call(f *ComputationBuilder, args ...*Instruction) *Instruction {
	ops, ok := cb.operands("call", args...)
	if !ok {
		return nil
	}
	c, ok := cb.callee("call", f)
	if !ok || !cb.params("call", c, ops) {
		return nil
	}
	return cb.add(&Instruction{Opcode: OpCall, Shape: rootOf(f.c).Shape, Operands: slices.Clone(ops), Ext: &Ext{ToApply: c}})
}

// Fusion adds a fusion of the given kind (FusionLoop when "") whose fused
// computation is f, taking args; it has the shape f returns. Only fusions
// may call f.
func (cb *ComputationBuilder) Fusion(kind FusionKind, f *ComputationBuilder, args ...*Instruction) *Instruction {
	ops, ok := cb.operands("fusion", args...)
	if !ok {
		return nil
	}
	c, ok := cb.callee("fusion", f)
	if !ok || !cb.params("fusion", c, ops) {
		return nil
	}
	if kind == "" {
		kind = FusionLoop
	}
	return cb.add(&Instruction{Opcode: OpFusion, Shape: rootOf(f.c).Shape, Operands: slices.Clone(ops), Ext: &Ext{Calls: []*Computation{c}, FusionKind: kind}})
}

// While adds a while loop over the state init: cond takes the state and
// returns pred[], body takes it and returns the next state.
func (cb *ComputationBuilder) While(cond, body *ComputationBuilder, init *Instruction) *Instruction {
	if _, ok := cb.operands("while", init); !ok {
		return nil
	}
	cc, ok := cb.callee("while", cond)
	if !ok {
		return nil
	}
	bc, ok := cb.callee("while", body)
	if !ok || !cb.params("while", cc, []*Instruction{init}) || !cb.params("while", bc, []*Instruction{init}) {
		return nil
	}
	if r := rootOf(cc).Shape; !isPredScalar(r) {
		return cb.errorf("while", "condition %s returns %s, want pred[]", cc.Name, r)
	}
	if r := rootOf(bc).Shape; !Compatible(r, init.Shape) {
		return cb.errorf("while", "body %s returns %s, but the state is %s", bc.Name, r, init.Shape)
	}
	return cb.add(&Instruction{Opcode: OpWhile, Shape: init.Shape, Operands: []*Instruction{init}, Ext: &Ext{Condition: cc, Body: bc}})
}

// Conditional adds a conditional: selector is pred[] (two branches, the
// first taken when true) or s32[] (the branch of that index, the last when
// out of range); branch i takes args[i]. Every branch returns the same
// shape, the conditional's.
func (cb *ComputationBuilder) Conditional(selector *Instruction, branches []*ComputationBuilder, args ...*Instruction) *Instruction {
	ops, ok := cb.operands("conditional", append([]*Instruction{selector}, args...)...)
	if !ok {
		return nil
	}
	if len(branches) == 0 || len(branches) != len(args) {
		return cb.errorf("conditional", "%d branches and %d arguments, want as many of each and at least one", len(branches), len(args))
	}
	switch s := selector.Shape; {
	case s.Rank() != 0 || s.Elem != PRED && s.Elem != S32:
		return cb.errorf("conditional", "selector %s has shape %s, want pred[] or s32[]", selector.Name, s)
	case s.Elem == PRED && len(branches) != 2:
		return cb.errorf("conditional", "a pred[] selector takes 2 branches, got %d", len(branches))
	}
	cs := make([]*Computation, len(branches))
	var out Shape
	for i, f := range branches {
		c, ok := cb.callee("conditional", f)
		if !ok || !cb.params("conditional", c, args[i:i+1]) {
			return nil
		}
		r := rootOf(f.c).Shape
		if i == 0 {
			out = r
		} else if !Compatible(r, out) {
			return cb.errorf("conditional", "branch %s returns %s, branch %s returns %s", c.Name, r, cs[0].Name, out)
		}
		cs[i] = c
	}
	return cb.add(&Instruction{Opcode: OpConditional, Shape: out, Operands: ops, Ext: &Ext{Branches: cs}})
}
