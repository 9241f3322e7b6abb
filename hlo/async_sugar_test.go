package hlo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The short form of async ops. Expectations follow XLA's parser
// (hlo_parser.cc: ParseOpcode's "-start"/"-update"/"-done" suffixes and the
// kAsyncStart case of ParseInstructionRhs, which builds "async_wrapped"
// with "async_param" parameters and the "async_op" root), its printer
// (hlo_instruction.cc: PrintWithCanonicalNameMap prints
// <wrapped opcode>-start when syntax_sugar_async_ops and the computation
// CanExpandIntoSingleInstruction; HloAsyncStartInstruction::
// PrintExtraAttributesImpl prints async_execution_thread and then the
// wrapped instruction's attributes; HloModule::Print leaves such
// computations out) and the late-binding tests of
// hlo_instruction_utils_test.cc.

const addComputation = `
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
`

func TestAsyncSugarReduceScatter(t *testing.T) {
	src := `HloModule m, is_scheduled=true
` + addComputation + `
ENTRY %main (p: f32[8]) -> f32[4] {
  %p = f32[8]{0} parameter(0)
  %rs-start = ((f32[8]{0}), f32[4]{0}) reduce-scatter-start(%p), async_execution_thread="main", replica_groups={{0,1}}, dimensions={0}, to_apply=%add, metadata={op_name="jit(f)/reduce_scatter"}
  ROOT %rs-done = f32[4]{0} reduce-scatter-done(%rs-start)
}
`
	m := mustParse(t, src)
	start := m.Entry.Instructions[1]
	require.Equal(t, OpAsyncStart, start.Opcode)
	require.Equal(t, OpReduceScatter, start.Ext.AsyncSugar)
	w := start.Calls()[0]
	require.Equal(t, "async_wrapped", w.Name)
	require.Len(t, w.Instructions, 2)
	require.Equal(t, "async_param", w.Params[0].Name)
	require.Equal(t, "f32[8]{0}", w.Params[0].Shape.String())
	op := w.Root
	require.Equal(t, "async_op", op.Name)
	require.Equal(t, OpReduceScatter, op.Opcode)
	require.Equal(t, "f32[4]{0}", op.Shape.String(), "the root's shape is element {1} of the start's")
	require.Equal(t, []*Instruction{w.Params[0]}, op.Operands)
	require.Equal(t, "add", op.ToApply().Name, "to_apply belongs to the wrapped op")
	require.Equal(t, []int64{0}, op.Dimensions)
	rg, ok := op.Attr("replica_groups")
	require.True(t, ok)
	require.Equal(t, "{{0,1}}", rg)
	require.NotNil(t, start.Metadata, "metadata belongs to the start (ParseInstruction sets it on the instruction it returns)")
	require.Nil(t, op.Metadata)
	thread, ok := start.Attr("async_execution_thread")
	require.True(t, ok)
	require.Equal(t, `"main"`, thread)
	done := m.Entry.Root
	require.Equal(t, OpAsyncDone, done.Opcode)
	require.Equal(t, w, AsyncChainStart(done).Calls()[0])
	require.Equal(t, OpReduceScatter, AsyncWrappedOpcode(done))

	text := m.String()
	require.NotContains(t, text, "async_wrapped", "the async computation is not printed (HloModule::Print)")
	require.Contains(t, text, `%rs-start = ((f32[8]{0}), f32[4]{0}) reduce-scatter-start(%p), async_execution_thread="main", dimensions={0}, to_apply=%add, replica_groups={{0,1}}, metadata={op_name="jit(f)/reduce_scatter"}`)
	require.Contains(t, text, "ROOT %rs-done = f32[4]{0} reduce-scatter-done(%rs-start)\n")
}

// TestAsyncSugarEveryWrappedKind: custom-call-start, all-to-all-start,
// fusion-start and a plain op all parse into the same structure; an
// async custom-call's output_to_operand_aliasing is the wrapped
// custom-call's (XLA's nested CreateInstruction for kCustomCall claims
// the attribute), so it aliases the custom-call's own output to its
// operand, not an element of the start's tuple.
func TestAsyncSugarEveryWrappedKind(t *testing.T) {
	m := mustParse(t, `HloModule m, is_scheduled=true

%fused (fp: f32[4]) -> f32[4] {
  %fp = f32[4]{0} parameter(0)
  ROOT %e = f32[4]{0} exponential(%fp)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p)
  %cc-start = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(%neg), custom_call_target="foo", output_to_operand_aliasing={{}: (0, {})}
  %cc-done = f32[4]{0} custom-call-done(%cc-start)
  %a2a-start = ((f32[4]{0}), f32[4]{0}) all-to-all-start(%cc-done), channel_id=3, replica_groups={{0,1}}, dimensions={0}
  %a2a-done = f32[4]{0} all-to-all-done(%a2a-start)
  %f-start = ((f32[4]{0}), f32[4]{0}, s32[]) fusion-start(%a2a-done), kind=kLoop, calls=%fused
  %f-update = ((f32[4]{0}), f32[4]{0}, s32[]) fusion-update(%f-start)
  %f-done = f32[4]{0} fusion-done(%f-update)
  %n-start = ((f32[4]{0}), f32[4]{0}, u32[]) negate-start(%f-done)
  ROOT %n-done = f32[4]{0} negate-done(%n-start)
}
`)
	byName := func(name string) *Instruction {
		for _, in := range m.Entry.Instructions {
			if in.Name == name {
				return in
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	cc := byName("cc-start").Calls()[0].Root
	require.Equal(t, OpCustomCall, cc.Opcode)
	require.Equal(t, "foo", cc.CustomCallTarget())
	require.Equal(t, []OutputOperandAlias{{Output: ShapeIndex{}, Operand: 0, OperandIndex: ShapeIndex{}}}, cc.OutputOperandAliasing())
	require.Empty(t, byName("cc-start").OutputOperandAliasing())
	fu := byName("f-start").Calls()[0].Root
	require.Equal(t, OpFusion, fu.Opcode)
	require.Equal(t, "fused", fu.FusedComputation().Name)
	require.Equal(t, FusionLoop, fu.FusionKind())
	require.Equal(t, OpNegate, byName("n-start").Calls()[0].Root.Opcode)
	require.Equal(t, OpAsyncUpdate, byName("f-update").Opcode)
	// Four computations built, named uniquely in the module as XLA's
	// AddComputationAndUnifyNamesAndIds does.
	var names []string
	for _, c := range m.Computations {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"fused", "async_wrapped", "async_wrapped.1", "async_wrapped.2", "async_wrapped.3", "main"}, names)
	require.Equal(t, "async_op.3", byName("n-start").Calls()[0].Root.Name)
	require.Equal(t, "async_param.3", byName("n-start").Calls()[0].Params[0].Name)
	text := m.String()
	require.Contains(t, text, `custom-call-start(%neg), custom_call_target="foo", output_to_operand_aliasing={{}: (0, {})}`)
	require.Contains(t, text, "fusion-update(%f-start)")
	require.Equal(t, 2, strings.Count(text, "{\n"), "only the fusion body and the entry are printed")
}

// TestAsyncSugarNamesAvoidTheModules: a computation or instruction of the
// text that already has the name the parser would give keeps it.
func TestAsyncSugarNamesAvoidTheModules(t *testing.T) {
	m := mustParse(t, `HloModule m
%async_wrapped (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  ROOT %async_op = f32[2]{0} abs(%x)
}
ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %c = f32[2]{0} call(%p), to_apply=%async_wrapped
  %s = ((f32[2]{0}), f32[2]{0}) sqrt-start(%c)
  ROOT %d = f32[2]{0} sqrt-done(%s)
}`)
	w := m.Entry.Instructions[2].Calls()[0]
	require.Equal(t, "async_wrapped.1", w.Name)
	require.Equal(t, "async_op.1", w.Root.Name)
	require.Equal(t, "async_param", w.Params[0].Name)
}

// TestAsyncSugarForcedPrinting: XLA's default printing (HloPrintOptions::
// syntax_sugar_async_ops, used for the "from instruction:" lines of its
// buffer assignment) writes an async-start whose computation is its root
// and parameters in the short form, though the text used async-start.
func TestAsyncSugarForcedPrinting(t *testing.T) {
	m := mustParse(t, `HloModule m
%comp (p0: f32[2]) -> f32[2] {
  %p0 = f32[2]{0} parameter(0)
  ROOT %a2a = f32[2]{0} all-to-all(%p0), channel_id=1, replica_groups={{0,1}}, dimensions={0}
}
%two (q: f32[2]) -> f32[2] {
  %q = f32[2]{0} parameter(0)
  %n = f32[2]{0} negate(%q)
  ROOT %m = f32[2]{0} abs(%n)
}
ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %s = ((f32[2]{0}), f32[2]{0}) async-start(%p), calls=%comp, metadata={op_name="x"}
  %d = f32[2]{0} async-done(%s)
  %s2 = ((f32[2]{0}), f32[2]{0}) async-start(%d), calls=%two
  ROOT %d2 = f32[2]{0} async-done(%s2)
}`)
	s, d, s2 := m.Entry.Instructions[1], m.Entry.Instructions[2], m.Entry.Instructions[3]
	require.Equal(t, `%s = ((f32[2]{0}), f32[2]{0}) async-start(%p), calls=%comp, metadata={op_name="x"}`, s.String(), "canonical text keeps the form it was given")
	forced := PrintOptions{AsyncSugar: true}
	require.Equal(t, `%s = ((f32[2]{0}), f32[2]{0}) all-to-all-start(%p), dimensions={0}, channel_id=1, replica_groups={{0,1}}, metadata={op_name="x"}`, s.StringWith(forced))
	require.Equal(t, `%d = f32[2]{0} all-to-all-done(%s)`, d.StringWith(forced))
	require.Equal(t, `%s2 = ((f32[2]{0}), f32[2]{0}) async-start(%d), calls=%two`, s2.StringWith(forced), "a computation of two instructions cannot expand into one")
}

// TestAsyncSugarBackToLongForm: once a pass changes the async computation
// so that the short form would no longer parse back into it, the printer
// writes the long form and the computation.
func TestAsyncSugarBackToLongForm(t *testing.T) {
	m := mustParse(t, `HloModule m
ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %s = ((f32[2]{0}), f32[2]{0}) sqrt-start(%p)
  ROOT %d = f32[2]{0} sqrt-done(%s)
}`)
	w := m.Entry.Instructions[1].Calls()[0]
	w.Root.Opcode = OpRsqrt
	text := m.String()
	require.Contains(t, text, "rsqrt-start(%p)", "still one wrapped op: short form under its new opcode")
	neg := &Instruction{Name: "neg", Opcode: OpNegate, Shape: w.Params[0].Shape, Operands: []*Instruction{w.Params[0]}, Parent: w}
	w.Instructions = append([]*Instruction{w.Params[0], neg}, w.Root)
	w.Root.Operands = []*Instruction{neg}
	w.RebuildUsers()
	text = m.String()
	require.Contains(t, text, "async-start(%p), calls=%async_wrapped")
	require.Contains(t, text, "%async_wrapped (async_param: f32[2]) -> f32[2] {")
	_, err := ParseModule("again.hlo", text)
	require.NoError(t, err)
}

// TestAsyncLateBinding translates hlo_instruction_utils_test.cc's
// GetAsyncBoundOperandsTest, IsFirstFullyBound_LateBinding,
// IsFirstFullyBound_LateBinding_MultipleUpdates and
// IsFirstFullyBound_Parameterless: the call-start form names the async
// computation with to_apply=, an async-update binds its operands after
// the first, and the output element stays () until bound.
func TestAsyncLateBinding(t *testing.T) {
	for _, tc := range []struct {
		name, hlo string
		bound     map[string][]string
	}{
		{"GetAsyncBoundOperandsTest", `HloModule test
async_computation {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  ROOT abs = f32[2,3] abs(p0)
}
ENTRY main {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  start = ((f32[2,3]), f32[2,3], s32[]) call-start(p0), to_apply=async_computation
  update = ((f32[2,3], f32[2,3]), f32[2,3], ()) call-update(start, p1)
  ROOT done = f32[2,3] call-done(update)
}`, map[string][]string{"start": {"p0"}, "update": {"p0", "p1"}, "done": {"p0", "p1"}}},
		{"IsFirstFullyBound_LateBinding", `HloModule test
async_computation {
  p0 = f32[2,3] parameter(0)
  ROOT abs = f32[2,3] abs(p0)
}
ENTRY main {
  p0 = f32[2,3] parameter(0)
  start = ((), (), s32[]) call-start(), to_apply=async_computation
  update = ((f32[2,3]), f32[2,3], ()) call-update(start, p0)
  ROOT done = f32[2,3] call-done(update)
}`, map[string][]string{"start": nil, "update": {"p0"}, "done": {"p0"}}},
		{"IsFirstFullyBound_LateBinding_MultipleUpdates", `HloModule test
async_computation {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  ROOT abs = f32[2,3] abs(p0)
}
ENTRY main {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  start = ((), (), s32[]) call-start(), to_apply=async_computation
  update1 = ((f32[2,3]), (), s32[]) call-update(start, p0)
  update2 = ((f32[2,3], f32[2,3]), f32[2,3], ()) call-update(update1, p1)
  ROOT done = f32[2,3] call-done(update2)
}`, map[string][]string{"start": nil, "update1": {"p0"}, "update2": {"p0", "p1"}, "done": {"p0", "p1"}}},
		{"IsFirstFullyBound_Parameterless", `HloModule test
async_computation {
  constant = f32[2,3] constant(1.0)
  ROOT abs = f32[2,3] abs(constant)
}
ENTRY main {
  start = ((), f32[2,3], s32[]) call-start(), to_apply=async_computation
  ROOT done = f32[2,3] call-done(start)
}`, map[string][]string{"start": nil, "done": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, tc.hlo)
			w := m.Computation("async_computation")
			for _, in := range m.Entry.Instructions {
				want, ok := tc.bound[in.Name]
				if !ok {
					continue
				}
				require.Equal(t, w, AsyncChainStart(in).Calls()[0], "%s: to_apply= is the async computation", in.Name)
				require.Equal(t, OpCall, AsyncWrappedOpcode(in))
				got, ok := asyncBoundOperands(in)
				require.True(t, ok)
				var names []string
				for _, o := range got {
					names = append(names, o.Name)
				}
				require.Equal(t, want, names, in.Name)
			}
			require.Contains(t, m.String(), "call-start(", "printed back in the call-start form")
		})
	}
}

// TestAsyncChainErrors: what XLA's parser refuses about a chain, and the
// binding hlomem requires before it can plan one (every parameter bound by
// the done, each bound operand of its parameter's shape).
func TestAsyncChainErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"wrapped opcode", `%s = ((f32[2]{0}), f32[2]{0}) sqrt-start(%p)
  ROOT %d = f32[2]{0} abs-done(%s)`, "d: expect async wrapped opcode to be sqrt, but got abs"},
		{"done of a plain op", `%n = f32[2]{0} negate(%p)
  ROOT %d = f32[2]{0} sqrt-done(%n)`, "operand 0 (n) is a negate, not the async-start or async-update before it"},
		{"shape", `%s = f32[2]{0} sqrt-start(%p)
  ROOT %d = f32[2]{0} sqrt-done(%s)`, "an async start's shape is ((operands), output, context...)"},
		{"unbound at the done", `%s = ((), (), s32[]) call-start(), to_apply=%c
  ROOT %d = f32[2]{0} call-done(%s)`, "ends an async chain that binds 0 of the 1 parameters of c"},
		{"bound operand shape", `%q = f32[3]{0} parameter(1)
  %s = ((), (), s32[]) call-start(), to_apply=%c
  %u = ((f32[3]{0}), f32[2]{0}, s32[]) call-update(%s, %q)
  ROOT %d = f32[2]{0} call-done(%u)`, "bound operand 0 (q) has shape f32[3]{0}, but parameter 0 of c has f32[2]{0}"},
		{"listed operands", `%s = ((), (), s32[]) call-start(), to_apply=%c
  %u = ((), f32[2]{0}, s32[]) call-update(%s, %p)
  ROOT %d = f32[2]{0} call-done(%u)`, "element 0 of its shape lists 0 operands, but its chain binds 1"},
		{"done shape", `%s = ((f32[2]{0}), (), s32[]) call-start(%p), to_apply=%c
  ROOT %d = f32[3]{0} call-done(%s)`, "d has shape f32[3]{0}, but c returns f32[2]{0}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `HloModule m
%c (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  ROOT %r = f32[2]{0} abs(%x)
}
ENTRY %main (p: f32[2], p1: f32[3]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ` + tc.body + `
}`
			m, err := ParseModule("bad.hlo", src)
			if err == nil {
				err = Verify(m)
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "bad.hlo:")
		})
	}
}
