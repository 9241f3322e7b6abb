package hlo

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// mustParse parses one module and checks that it verifies and round-trips.
func mustParse(t *testing.T, src string) *Module {
	t.Helper()
	m, err := ParseModule("test.hlo", src)
	require.NoError(t, err)
	require.NoError(t, Verify(m))
	once := m.String()
	m2, err := ParseModule("printed.hlo", once)
	require.NoError(t, err, "printed text:\n%s", once)
	require.Empty(t, cmp.Diff(once, m2.String()), "printing is not a fixed point (-once +twice)")
	return m
}

func TestParseLongForm(t *testing.T) {
	m := mustParse(t, `HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[5,5]{1,0})->f32[5,5]{1,0}}

%fused_computation (param_0.2: f32[5,5]) -> f32[5,5] {
  %param_0.2 = f32[5,5]{1,0} parameter(0)
  %sqrt.11 = f32[5,5]{1,0} sqrt(f32[5,5]{1,0} %param_0.2)
  ROOT %sqrt.9 = f32[5,5]{1,0} sqrt(%sqrt.11)
}

ENTRY %main (a: f32[5,5]) -> f32[5,5] {
  %a = f32[5,5]{1,0} parameter(0)
  ROOT %fusion = f32[5,5]{1,0} fusion(%a), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(f)/sqrt" source_file="x.py" source_line=3}, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[]}
}
`)
	require.True(t, m.IsScheduled)
	require.Equal(t, "main", m.Entry.Name)
	f := m.Entry.Root
	require.Equal(t, OpFusion, f.Opcode)
	require.Equal(t, FusionLoop, f.FusionKind())
	require.Equal(t, "fused_computation", f.FusedComputation().Name)
	require.Equal(t, "jit(f)/sqrt", f.Metadata.OpName)
	require.Equal(t, "x.py", f.Metadata.SourceFile)
	require.EqualValues(t, 3, f.Metadata.SourceLine)
	require.Equal(t, `{"operation_queue_id":"0","wait_on_operation_queues":[]}`, f.BackendConfig())
	fc := m.Computation("fused_computation")
	require.Equal(t, fc.Instructions[0], fc.Instructions[1].Operands[0], "operand shape prefix resolves to the operand")
	require.Equal(t, []*Instruction{fc.Instructions[2]}, fc.Instructions[1].Users)
	val, _ := m.Attr("entry_computation_layout")
	require.Equal(t, "{(f32[5,5]{1,0})->f32[5,5]{1,0}}", val)
}

func TestParseShortFormAndQuirks(t *testing.T) {
	// No '%', no ENTRY (the last computation is the entry), no ROOT (the last
	// instruction is the root), /*index=N*/ comments, inline operands,
	// backend_config as a quoted string, an attribute list continued on the
	// next line, and an elided constant.
	m := mustParse(t, `HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
main {
  p = f32[8]{0} parameter(0)
  e = f32[] exponential(f32[] parameter(1))
  big = f32[8]{0} constant({...})
  t = (f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, /*index=5*/f32[8]{0}) tuple(p, p, p, p, p, /*index=5*/big)
  r = f32[] reduce(p, e), dimensions={0},
    to_apply=add, backend_config="{\"x\":1}"
}`)
	require.Equal(t, "main", m.Entry.Name)
	require.Equal(t, "r", m.Entry.Root.Name)
	require.Equal(t, "add", m.Entry.Root.ToApply().Name)
	require.Equal(t, `"{\"x\":1}"`, m.Entry.Root.BackendConfig())
	require.Len(t, m.Entry.Params, 2, "the inline parameter(1) became an instruction")
	big := m.Entry.Instruction("big")
	require.True(t, big.Literal().Elided)
	require.Len(t, m.Entry.Instruction("t").Operands, 6)
}

func TestParseCompactGTE(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  p = (f32[2], (s32[], f32[3])) parameter(0)
  a = f32[3] negate(p#1#1)
  ROOT r = (f32[3], f32[2], f32[3]) tuple(a, p#0, p#1#1)
}`)
	a := m.Entry.Instruction("a")
	g := a.Operands[0]
	require.True(t, g.ImplicitGTE)
	require.Equal(t, OpGetTupleElement, g.Opcode)
	require.EqualValues(t, 1, g.TupleIndex)
	require.Equal(t, "f32[3]", g.Shape.String())
	require.Same(t, g, m.Entry.Root.Operands[2], "p#1#1 is one instruction")
	require.Contains(t, m.String(), "negate(%p#1#1)")
	require.NotContains(t, m.String(), "%p#1 =")
}

func TestParseSplitModulesAndFileCheck(t *testing.T) {
	mods, err := ParseString("split.hlo", `// RUN: hlo-opt %s --split-input-file | FileCheck %s
// CHECK: something

e {
  a = f32[] exponential(f32[] parameter(0))
}

// -----

HloModule second
ENTRY main {
  ROOT p = s32[] parameter(0)
}
`)
	require.NoError(t, err)
	require.Len(t, mods, 2)
	require.Equal(t, "e", mods[0].Name, "a module without header is named after its entry")
	require.Equal(t, "second", mods[1].Name)
}

func TestParseStackFrames(t *testing.T) {
	m := mustParse(t, `HloModule jit_f

FileNames
1 "/home/u/proj/model.py"
FunctionNames
1 "<module>"
FileLocations
1 {file_name_id=1 function_name_id=1 line=19 end_line=19 column=6 end_column=42}
StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY main {
  ROOT p = f32[] parameter(0), metadata={op_name="x" stack_frame_id=1}
}`)
	sf := m.StackFrames
	require.NotNil(t, sf)
	require.Equal(t, []IndexedString{{1, "/home/u/proj/model.py"}}, sf.FileNames)
	require.Equal(t, []FileLocation{{ID: 1, FileNameID: 1, FunctionNameID: 1, Line: 19, EndLine: 19, Column: 6, EndColumn: 42}}, sf.FileLocations)
	require.Equal(t, []StackFrame{{1, 1, 1}}, sf.StackFrames)
	require.EqualValues(t, 1, m.Entry.Root.Metadata.StackFrameID)
}

func TestParseModuleAttributes(t *testing.T) {
	m := mustParse(t, `HloModule m, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {1}, must-alias), {2}: (2, {}) }, buffer_donor={ (3, {}) }
ENTRY e {
  p0 = f32[2] parameter(0)
  p1 = (s32[], f32[4]) parameter(1)
  p2 = f32[] parameter(2)
  p3 = f32[] parameter(3)
  g = f32[4] get-tuple-element(p1), index=1
  ROOT t = (f32[2], f32[4], f32[]) tuple(p0, g, p2)
}`)
	require.Equal(t, []IOAlias{
		{Output: ShapeIndex{0}, Param: 0, ParamIndex: ShapeIndex{}, Kind: MayAlias},
		{Output: ShapeIndex{1}, Param: 1, ParamIndex: ShapeIndex{1}, Kind: MustAlias},
		{Output: ShapeIndex{2}, Param: 2, ParamIndex: ShapeIndex{}, Kind: AliasDefault},
	}, m.InputOutputAlias)
	require.Equal(t, []BufferDonor{{Param: 3, ParamIndex: ShapeIndex{}}}, m.BufferDonors)
}

func TestParseTypedAttributes(t *testing.T) {
	m := mustParse(t, `HloModule m
cond {
  c = (s32[], f32[4,8]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  ROOT b = (s32[], f32[4,8]) parameter(0)
}
br0 {
  ROOT x = f32[] parameter(0)
}
br1 {
  ROOT y = f32[] parameter(0)
}
ENTRY e {
  a = f32[4,8]{1,0} parameter(0)
  i = s32[] parameter(1)
  w = (s32[], f32[4,8]) tuple(i, a)
  loop = (s32[], f32[4,8]) while(w), condition=cond, body=body
  s = f32[2,4]{1,0} slice(a), slice={[0:4:2], [0:4]}
  d = f32[4,4]{1,0} dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  cc = f32[4,8]{1,0} custom-call(a), custom_call_target="my$target", output_to_operand_aliasing={{}: (0, {})}
  pr = pred[] parameter(2)
  f = f32[] parameter(3)
  cd = f32[] conditional(pr, f, f), true_computation=br0, false_computation=br1
  ix = s32[] parameter(4)
  cd2 = f32[] conditional(ix, f, f), branch_computations={br0, br1}
  ROOT out = (f32[2,4], f32[4,4], f32[4,8], f32[], f32[]) tuple(s, d, cc, cd, cd2), control-predecessors={loop}
}`)
	e := m.Entry
	loop := e.Instruction("loop")
	require.Equal(t, "cond", loop.Condition().Name)
	require.Equal(t, "body", loop.Body().Name)
	require.Equal(t, []SliceDim{{0, 4, 2}, {0, 4, 1}}, e.Instruction("s").Slice())
	require.Equal(t, &DotDims{LhsContracting: []int64{1}, RhsContracting: []int64{1}}, e.Instruction("d").Dot())
	cc := e.Instruction("cc")
	require.Equal(t, "my$target", cc.CustomCallTarget())
	require.Equal(t, []OutputOperandAlias{{Output: ShapeIndex{}, Operand: 0, OperandIndex: ShapeIndex{}}}, cc.OutputOperandAliasing())
	require.Equal(t, []string{"br0", "br1"}, names(e.Instruction("cd").Branches()))
	require.True(t, e.Instruction("cd").Ext.PredicatedBranches)
	require.Equal(t, []string{"br0", "br1"}, names(e.Instruction("cd2").Branches()))
	require.Equal(t, []*Instruction{loop}, e.Root.ControlPredecessors())
	require.Equal(t, []*Instruction{e.Root}, loop.ControlSuccessors())
	require.Contains(t, m.String(), "true_computation=%br0, false_computation=%br1")
}

func names(cs []*Computation) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestParseShapesAndLayouts(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  a = f32[8,128]{1,0:T(8,128)} parameter(0)
  b = bf16[16,256]{1,0:T(8,128)(2,1)S(1)} parameter(1)
  c = u4[1024]{0:E(4)} parameter(2)
  d = f32[<=8,3]{1,0} parameter(3)
  s = s32[]{:T(256)} parameter(4)
  k = token[] parameter(5)
  h = f32[4]{0:S(5)} parameter(6)
  ab = (f32[8,128]{1,0:T(8,128)}, bf16[16,256]{1,0:T(8,128)(2,1)S(1)}) tuple(a, b)
  ROOT t = ((f32[8,128], bf16[16,256]), token[]) tuple(ab, k)
}`)
	e := m.Entry
	b := e.Instruction("b").Shape
	require.Equal(t, []Tile{{Dims: []int64{8, 128}}, {Dims: []int64{2, 1}}}, b.Layout.Tiles)
	require.EqualValues(t, 1, b.MemorySpace())
	require.EqualValues(t, 4, e.Instruction("c").Shape.Layout.ElementSizeBits)
	d := e.Instruction("d").Shape
	require.True(t, d.IsDynamic(0))
	require.False(t, d.IsDynamic(1))
	require.Equal(t, "f32[<=8,3]{1,0}", d.String())
	require.Equal(t, "s32[]{:T(256)}", e.Instruction("s").Shape.String())
	require.Equal(t, Token, e.Instruction("k").Shape.Elem)
	require.EqualValues(t, 5, e.Instruction("h").Shape.MemorySpace())
}

func TestParseUnknownOpcode(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT x = f32[4] frobnicate-v2(p, p), some_new_attr={a=1}
}`)
	r := m.Entry.Root
	require.Equal(t, OpUnknown, r.Opcode)
	require.Equal(t, "frobnicate-v2", r.OpName())
	require.Contains(t, m.String(), "frobnicate-v2(%p, %p), some_new_attr={a=1}")
}

func TestParseLiterals(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  a = f32[] constant(-inf)
  b = s32[2,2]{1,0} constant({ {1, 2}, {3, 4} })
  c = pred[3] constant({true, false, true})
  d = c64[] constant((1, -2.5))
  f = u64[] constant(18446744073709551615)
  g = bf16[2] constant({0.5, nan})
  h = s8[4] constant(7)
  ROOT t = (f32[], s32[2,2], pred[3], c64[], u64[], bf16[2], s8[4]) tuple(a, b, c, d, f, g, h)
}`)
	e := m.Entry
	require.True(t, math.IsInf(e.Instruction("a").Literal().Floats[0], -1))
	require.Equal(t, []int64{1, 2, 3, 4}, e.Instruction("b").Literal().Ints)
	require.Equal(t, []int64{1, 0, 1}, e.Instruction("c").Literal().Ints)
	require.Equal(t, []float64{1, -2.5}, e.Instruction("d").Literal().Floats)
	require.Equal(t, uint64(math.MaxUint64), uint64(e.Instruction("f").Literal().Ints[0]))
	require.True(t, math.IsNaN(e.Instruction("g").Literal().Floats[1]))
	require.Equal(t, []int64{7, 7, 7, 7}, e.Instruction("h").Literal().Ints)
	require.Equal(t, "{ {1, 2}, {3, 4} }", e.Instruction("b").Literal().Text)
}

func TestNewLiteralRenders(t *testing.T) {
	l := NewIntLiteral(ArrayShape(S32, 2, 2), 1, 2, 3, 4)
	require.Equal(t, "{{1, 2}, {3, 4}}", l.Text)
	f := NewFloatLiteral(ArrayShape(F32), 0.25)
	require.Equal(t, "0.25", f.Text)
}

func TestParseInferredShapes(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  p0 = f64[3] parameter(0)
  p1 = f64[3] parameter(1)
  s = add(p0, p1)
  c = compare(p0, p1), direction=LT
  ROOT t = tuple(s, c)
}`)
	require.Equal(t, "(f64[3], pred[3])", m.Entry.Root.Shape.String())
}

func TestMetadataKeepsEveryField(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY e {
  ROOT p = f32[] parameter(0), metadata={op_type="Add" op_name="a/b" source_file="f.py" source_line=3 source_end_line=4 source_column=5 source_end_column=6 profile_type={1} deduplicated_name="d" scheduling_name="s" stack_frame_id=7}
}`)
	md := m.Entry.Root.Metadata
	require.Equal(t, &Metadata{OpType: "Add", OpName: "a/b", SourceFile: "f.py", SourceLine: 3, SourceEndLine: 4, SourceColumn: 5,
		SourceEndColumn: 6, StackFrameID: 7, DeduplicatedName: "d", SchedulingName: "s", Rest: []Attr{{"profile_type", "{1}"}}}, md)
	require.Equal(t, `{op_type="Add" op_name="a/b" source_file="f.py" source_line=3 source_end_line=4 source_column=5 source_end_column=6 profile_type={1} deduplicated_name="d" scheduling_name="s" stack_frame_id=7}`, md.String())
}

func TestStringEscapesRoundTrip(t *testing.T) {
	for _, s := range []string{"plain", `a"b`, `back\slash`, "tab\tnl\n", "ctl\x01\x7f", "utf8 ✓"} {
		got, err := unescapeC(strings.Trim(quoteC(s), `"`))
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
}

func TestOpcodeTable(t *testing.T) {
	require.Len(t, Opcodes(), 133, "XLA has 133 opcodes as of 2026")
	for _, op := range Opcodes() {
		got, ok := LookupOpcode(op.String())
		require.True(t, ok, op.String())
		require.Equal(t, op, got)
	}
	require.True(t, OpAdd.Has(Elementwise))
	require.False(t, OpDot.Has(Elementwise))
	require.Equal(t, 2, OpAdd.Arity())
	require.Equal(t, Variadic, OpTuple.Arity())
	require.Equal(t, "count-leading-zeros", OpCountLeadingZeros.String())
}

func TestParseDeepTupleShapes(t *testing.T) {
	nest := func(d int, leaf string) string {
		return strings.Repeat("(", d) + leaf + strings.Repeat(")", d)
	}
	// Beyond the interning height, equal texts still parse to equal shapes.
	d := maxInternHeight + 5
	src := "HloModule m\nENTRY e {\n  p = " + nest(d, "f32[4]") + " parameter(0)\n  ROOT c = " + nest(d, "f32[4]") + " copy(p)\n}\n"
	m := mustParse(t, src)
	root := m.Entry.Root
	require.Equal(t, root.Operands[0].Shape.String(), root.Shape.String())
	sub := root.Shape
	for range d {
		require.Len(t, sub.Tuple, 1)
		sub = sub.Tuple[0]
	}
	require.Equal(t, "f32[4]", sub.String())

	// Nesting past MaxTupleDepth is an error at the tuple that crosses it,
	// not a stack overflow.
	deep := "HloModule m\nENTRY e {\n  ROOT p = " + nest(MaxTupleDepth+1, "f32[4]") + " parameter(0)\n}\n"
	_, err := Parse("deep.hlo", []byte(deep))
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("deep.hlo:3:%d: tuple shape nested more than %d deep", len("  ROOT p = ")+MaxTupleDepth+1, MaxTupleDepth))
	_, err = Parse("ok.hlo", []byte("HloModule m\nENTRY e {\n  ROOT p = "+nest(MaxTupleDepth, "f32[4]")+" parameter(0)\n}\n"))
	require.NoError(t, err)
}

func TestParseDeepInlineOperandsAndLongErrors(t *testing.T) {
	inline := func(d int) string {
		return "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT a = f32[] negate(" +
			strings.Repeat("f32[] negate(", d) + "p" + strings.Repeat(")", d) + ")\n}\n"
	}
	m, err := Parse("ok.hlo", []byte(inline(100)))
	require.NoError(t, err)
	require.Equal(t, 102, m[0].NumInstructions())
	_, err = Parse("deep.hlo", []byte(inline(MaxInlineDepth+1)))
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("more than %d deep", MaxInlineDepth))

	// A 1 MB token in an error is quoted by its head and its length.
	long := strings.Repeat("x", 1<<20)
	_, err = Parse("long.hlo", []byte("HloModule m\nENTRY e {\n  ROOT c = "+long+"[1] parameter(0)\n}\n"))
	require.Error(t, err)
	require.Less(t, len(err.Error()), 300, err.Error())
	require.Contains(t, err.Error(), fmt.Sprintf("(%d bytes)", 1<<20))
}
