package hlo

// The printer writes the canonical text of a module: long form with '%'
// names, shapes with layouts, operand names without shapes, computation
// signatures derived from the parameters, and attributes in a fixed order
// (opcode-specific typed ones, then the verbatim ones in their original
// order, then control-predecessors, metadata and backend_config). Parsing
// the printed text and printing again gives the same text.

import (
	"io"
	"strconv"
	"strings"
)

// String returns the module's canonical HLO text.
func (m *Module) String() string {
	var b strings.Builder
	m.write(&b)
	return b.String()
}

// WriteTo writes the module's canonical HLO text to w.
func (m *Module) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, m.String())
	return int64(n), err
}

func (m *Module) write(b *strings.Builder) {
	b.WriteString("HloModule ")
	b.WriteString(m.Name)
	if m.IsScheduled {
		b.WriteString(", is_scheduled=true")
	}
	if len(m.InputOutputAlias) > 0 {
		b.WriteString(", input_output_alias={ ")
		for i, a := range m.InputOutputAlias {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.Output.String())
			b.WriteString(": (")
			b.WriteString(strconv.FormatInt(a.Param, 10))
			b.WriteString(", ")
			b.WriteString(a.ParamIndex.String())
			if a.Kind != AliasDefault {
				b.WriteString(", ")
				b.WriteString(a.Kind.String())
			}
			b.WriteByte(')')
		}
		b.WriteString(" }")
	}
	if len(m.BufferDonors) > 0 {
		b.WriteString(", buffer_donor={ ")
		for i, d := range m.BufferDonors {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			b.WriteString(strconv.FormatInt(d.Param, 10))
			b.WriteString(", ")
			b.WriteString(d.ParamIndex.String())
			b.WriteByte(')')
		}
		b.WriteString(" }")
	}
	writeAttrs(b, m.Attrs)
	b.WriteString("\n\n")
	if sf := m.StackFrames; sf != nil {
		sf.write(b)
		b.WriteByte('\n')
	}
	hidden := m.hiddenComputations()
	first := true
	for _, c := range m.Computations {
		if hidden[c] {
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		first = false
		c.write(b)
	}
}

func writeAttrs(b *strings.Builder, attrs []Attr) {
	for _, a := range attrs {
		b.WriteString(", ")
		b.WriteString(a.Name)
		b.WriteByte('=')
		b.WriteString(a.Value)
	}
}

func (sf *StackFrameIndex) write(b *strings.Builder) {
	strs := func(title string, v []IndexedString) {
		if len(v) == 0 {
			return
		}
		b.WriteString(title)
		b.WriteByte('\n')
		for _, e := range v {
			b.WriteString(strconv.FormatInt(e.ID, 10))
			b.WriteByte(' ')
			b.WriteString(quoteC(e.Text))
			b.WriteByte('\n')
		}
	}
	kv := func(k string, v int64, first bool) {
		if !first {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(v, 10))
	}
	strs("FileNames", sf.FileNames)
	strs("FunctionNames", sf.FunctionNames)
	if len(sf.FileLocations) > 0 {
		b.WriteString("FileLocations\n")
		for _, l := range sf.FileLocations {
			b.WriteString(strconv.FormatInt(l.ID, 10))
			b.WriteString(" {")
			kv("file_name_id", l.FileNameID, true)
			kv("function_name_id", l.FunctionNameID, false)
			kv("line", l.Line, false)
			kv("end_line", l.EndLine, false)
			kv("column", l.Column, false)
			kv("end_column", l.EndColumn, false)
			b.WriteString("}\n")
		}
	}
	if len(sf.StackFrames) > 0 {
		b.WriteString("StackFrames\n")
		for _, f := range sf.StackFrames {
			b.WriteString(strconv.FormatInt(f.ID, 10))
			b.WriteString(" {")
			kv("file_location_id", f.FileLocationID, true)
			kv("parent_frame_id", f.ParentFrameID, false)
			b.WriteString("}\n")
		}
	}
}

// String returns the computation's canonical HLO text.
func (c *Computation) String() string {
	var b strings.Builder
	c.write(&b)
	return b.String()
}

func (c *Computation) write(b *strings.Builder) {
	if c.IsEntry {
		b.WriteString("ENTRY ")
	}
	b.WriteByte('%')
	b.WriteString(c.Name)
	b.WriteString(" (")
	first := true
	for _, p := range c.Params {
		if p == nil {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(p.Name)
		b.WriteString(": ")
		p.Shape.write(b, false)
	}
	b.WriteString(") -> ")
	if c.Root != nil {
		c.Root.Shape.write(b, false)
	}
	b.WriteString(" {\n")
	for _, in := range c.Instructions {
		if in.ImplicitGTE {
			continue
		}
		b.WriteString("  ")
		in.write(b)
		b.WriteByte('\n')
	}
	b.WriteByte('}')
	if c.ExecutionThread != "" {
		b.WriteString(", execution_thread=")
		b.WriteString(quoteC(c.ExecutionThread))
	}
	b.WriteByte('\n')
}

// String returns the instruction's line of HLO text (without indentation).
func (in *Instruction) String() string {
	var b strings.Builder
	in.write(&b)
	return b.String()
}

// PrintOptions changes how StringWith prints an instruction; the zero
// value prints the canonical text, as String does.
type PrintOptions struct {
	// OperandShapes prints each operand's shape before its name, as XLA
	// did before 2024 (HloPrintOptions::print_operand_shape):
	// "add(f32[4]{0} %a, f32[4]{0} %b)". Module.OperandShapes says whether
	// the module's own text did.
	OperandShapes bool
	// IndexComments prints "/*index=N*/" before every fifth operand, as
	// XLA does (HloPrintOptions::print_operand_index_annotation_interval);
	// the parser skips them.
	IndexComments bool
	// Layouts prints every array shape with a layout, the default one
	// where the text gave none, as XLA prints a module once layouts are
	// assigned (and as Shape.StringWithLayout does).
	Layouts bool
	// ElideLargeConstants prints a constant's literal as {...} unless it
	// is an array of at most 10 elements, as XLA's HloInstruction::ToString
	// does by default (HloPrintOptions::print_large_constants false).
	ElideLargeConstants bool
	// AsyncSugar prints every async op whose async computation holds one
	// instruction besides its parameters in the short form
	// (all-to-all-start(...) with the wrapped op's attributes), as XLA's
	// HloInstruction::ToString does by default (HloPrintOptions::
	// syntax_sugar_async_ops). Without it, only the ops the text wrote in
	// that form print in it.
	AsyncSugar bool
}

// largeConstant is how many elements a constant's literal may have for
// XLA to print it when large constants are elided.
const largeConstant = 10

// StringWith returns the instruction's line of HLO text printed as opts
// says.
func (in *Instruction) StringWith(opts PrintOptions) string {
	var b strings.Builder
	in.writeWith(&b, opts)
	return b.String()
}

// writeShape writes s as an instruction's shape, with the layouts opts
// asks for.
func writeShape(b *strings.Builder, s Shape, opts PrintOptions) {
	if opts.Layouts {
		s.writeWithLayout(b)
		return
	}
	s.write(b, true)
}

func writeRef(b *strings.Builder, in *Instruction) {
	if in == nil {
		b.WriteString("%<nil>")
		return
	}
	if in.ImplicitGTE && len(in.Operands) == 1 {
		writeRef(b, in.Operands[0])
		b.WriteByte('#')
		b.WriteString(strconv.FormatInt(in.TupleIndex, 10))
		return
	}
	b.WriteByte('%')
	b.WriteString(in.Name)
}

func writeCompRef(b *strings.Builder, c *Computation) {
	b.WriteByte('%')
	if c == nil {
		b.WriteString("<nil>")
		return
	}
	b.WriteString(c.Name)
}

func writeCompList(b *strings.Builder, cs []*Computation) {
	b.WriteByte('{')
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		writeCompRef(b, c)
	}
	b.WriteByte('}')
}

func writeIntList(b *strings.Builder, v []int64) {
	b.WriteByte('{')
	writeInts(b, v)
	b.WriteByte('}')
}

func (in *Instruction) write(b *strings.Builder) { in.writeWith(b, PrintOptions{}) }

// smallArray reports whether s is an array of at most largeConstant
// elements.
func smallArray(s Shape) bool {
	n, ok := s.Elements()
	return s.IsArray() && ok && n <= largeConstant
}

func (in *Instruction) writeWith(b *strings.Builder, opts PrintOptions) {
	if in.IsRoot() {
		b.WriteString("ROOT ")
	}
	b.WriteByte('%')
	b.WriteString(in.Name)
	b.WriteString(" = ")
	writeShape(b, in.Shape, opts)
	b.WriteByte(' ')
	x := in.ext()
	if wrapped, ok := in.sugarForm(opts.AsyncSugar); ok {
		in.writeSugar(b, wrapped, opts)
	} else {
		b.WriteString(in.OpName())
		b.WriteByte('(')
		in.writeOperands(b, opts)
		b.WriteByte(')')
		in.writeFields(b, x)
		writeAttrs(b, in.Attrs)
	}
	if len(x.ControlPredecessors) > 0 {
		b.WriteString(", control-predecessors={")
		for i, p := range x.ControlPredecessors {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRef(b, p)
		}
		b.WriteByte('}')
	}
	if in.Metadata != nil {
		b.WriteString(", metadata=")
		in.Metadata.write(b)
	}
	if x.BackendConfig != "" {
		b.WriteString(", backend_config=")
		b.WriteString(x.BackendConfig)
	}
}

// writeOperands writes what goes between the parentheses: a parameter's
// number, a constant's literal (elided when opts asks and it is large),
// or the operands (with their shapes and index comments as opts asks).
func (in *Instruction) writeOperands(b *strings.Builder, opts PrintOptions) {
	switch {
	case in.Opcode == OpParameter:
		b.WriteString(strconv.FormatInt(in.ParameterNumber, 10))
	case in.Opcode == OpConstant && opts.ElideLargeConstants && !smallArray(in.Shape):
		b.WriteString("{...}")
	case in.Opcode == OpConstant && in.Literal() != nil:
		b.WriteString(in.Literal().Text)
	default:
		for i, op := range in.Operands {
			if i > 0 {
				b.WriteString(", ")
				if opts.IndexComments && i%5 == 0 {
					b.WriteString("/*index=")
					b.WriteString(strconv.Itoa(i))
					b.WriteString("*/")
				}
			}
			if opts.OperandShapes && op != nil {
				writeShape(b, op.Shape, opts)
				b.WriteByte(' ')
			}
			writeRef(b, op)
		}
	}
}

// writeFields writes the attributes hlomem keeps in fields, in XLA's
// order: fusion kind and calls, tuple index, dimensions, slice, dot
// dimensions, called computations, custom-call target and aliasing.
func (in *Instruction) writeFields(b *strings.Builder, x *Ext) {
	if x.FusionKind != "" {
		b.WriteString(", kind=")
		b.WriteString(string(x.FusionKind))
	}
	if len(x.Calls) == 1 {
		b.WriteString(", calls=")
		writeCompRef(b, x.Calls[0])
	} else if len(x.Calls) > 1 {
		b.WriteString(", calls=")
		writeCompList(b, x.Calls)
	}
	if in.Opcode == OpGetTupleElement {
		b.WriteString(", index=")
		b.WriteString(strconv.FormatInt(in.TupleIndex, 10))
	}
	if in.HasDimensions {
		b.WriteString(", dimensions=")
		writeIntList(b, in.Dimensions)
	}
	if x.Slice != nil {
		b.WriteString(", slice={")
		for i, d := range x.Slice {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('[')
			b.WriteString(strconv.FormatInt(d.Start, 10))
			b.WriteByte(':')
			b.WriteString(strconv.FormatInt(d.Limit, 10))
			if d.Stride != 1 {
				b.WriteByte(':')
				b.WriteString(strconv.FormatInt(d.Stride, 10))
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	if d := x.Dot; d != nil {
		for _, f := range []struct {
			name string
			v    []int64
		}{{"lhs_batch_dims", d.LhsBatch}, {"lhs_contracting_dims", d.LhsContracting}, {"rhs_batch_dims", d.RhsBatch}, {"rhs_contracting_dims", d.RhsContracting}} {
			if f.v != nil {
				b.WriteString(", ")
				b.WriteString(f.name)
				b.WriteByte('=')
				writeIntList(b, f.v)
			}
		}
	}
	if x.Condition != nil {
		b.WriteString(", condition=")
		writeCompRef(b, x.Condition)
	}
	if x.Body != nil {
		b.WriteString(", body=")
		writeCompRef(b, x.Body)
	}
	if x.PredicatedBranches && len(x.Branches) == 2 {
		b.WriteString(", true_computation=")
		writeCompRef(b, x.Branches[0])
		b.WriteString(", false_computation=")
		writeCompRef(b, x.Branches[1])
	} else if x.Branches != nil {
		b.WriteString(", branch_computations=")
		writeCompList(b, x.Branches)
	}
	if x.ToApply != nil {
		b.WriteString(", to_apply=")
		writeCompRef(b, x.ToApply)
	}
	if x.Select != nil {
		b.WriteString(", select=")
		writeCompRef(b, x.Select)
	}
	if x.Scatter != nil {
		b.WriteString(", scatter=")
		writeCompRef(b, x.Scatter)
	}
	if x.HasCustomCallTarget {
		b.WriteString(", custom_call_target=")
		b.WriteString(quoteC(x.CustomCallTarget))
	}
	if x.CalledComputations != nil {
		b.WriteString(", called_computations=")
		writeCompList(b, x.CalledComputations)
	}
	if x.OutputOperandAliasing != nil {
		b.WriteString(", output_to_operand_aliasing={")
		for i, a := range x.OutputOperandAliasing {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.Output.String())
			b.WriteString(": (")
			b.WriteString(strconv.FormatInt(a.Operand, 10))
			b.WriteString(", ")
			b.WriteString(a.OperandIndex.String())
			b.WriteByte(')')
		}
		b.WriteByte('}')
	}
}

// String returns the metadata as HLO prints it: {op_type="..." op_name="..."}.
func (md *Metadata) String() string {
	var b strings.Builder
	md.write(&b)
	return b.String()
}

func (md *Metadata) write(b *strings.Builder) {
	b.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			b.WriteByte(' ')
		}
		first = false
	}
	str := func(k, v string) {
		if v == "" {
			return
		}
		sep()
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(quoteC(v))
	}
	num := func(k string, v int64) {
		if v == 0 {
			return
		}
		sep()
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(v, 10))
	}
	str("op_type", md.OpType)
	str("op_name", md.OpName)
	str("source_file", md.SourceFile)
	num("source_line", md.SourceLine)
	num("source_end_line", md.SourceEndLine)
	num("source_column", md.SourceColumn)
	num("source_end_column", md.SourceEndColumn)
	for _, a := range md.Rest {
		sep()
		b.WriteString(a.Name)
		b.WriteByte('=')
		b.WriteString(a.Value)
	}
	str("deduplicated_name", md.DeduplicatedName)
	str("scheduling_name", md.SchedulingName)
	num("stack_frame_id", md.StackFrameID)
	b.WriteByte('}')
}

// quoteC quotes s with C escapes, as XLA's CEscape does; unescapeC inverts it.
func quoteC(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return `"` + s + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteByte('\\')
				b.WriteByte('0' + c>>6)
				b.WriteByte('0' + c>>3&7)
				b.WriteByte('0' + c&7)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
