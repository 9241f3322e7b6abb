package liveness

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// Late-bound async operands and XLA's short form of async ops.

// TestAsyncLateBoundOperand: an operand an async-update binds (its
// operands after the first) fills element {0,k} of the update's tuple
// and the async computation's parameter k, as XLA's AliasInfo::
// GetInPlaceInputOutputPairs aliases it ("AsyncUpdate late operands alias
// with their respective parameter slots", alias_info.cc), and so lives
// until the async-done that consumes the update; the computation is
// flattened at the first fully bound op (hlo_live_range.cc,
// FlattenSchedule with async::IsFirstFullyBound).
func TestAsyncLateBoundOperand(t *testing.T) {
	a := analyze(t, `HloModule m, is_scheduled=true

%async_wrapped (p0: f32[4096], p1: f32[4096]) -> f32[4096] {
  %p0 = f32[4096]{0} parameter(0)
  %p1 = f32[4096]{0} parameter(1)
  ROOT %add = f32[4096]{0} add(%p0, %p1)
}

ENTRY %main (a: f32[4096], b: f32[4096]) -> f32[4096] {
  %a = f32[4096]{0} parameter(0)
  %b = f32[4096]{0} parameter(1)
  %start = ((f32[4096]{0}), (), s32[]) async-start(%a), calls=%async_wrapped
  %neg = f32[4096]{0} negate(%b)
  %update = ((f32[4096]{0}, f32[4096]{0}), (), s32[]) async-update(%start, %neg)
  %c = f32[4096]{0} cosine(%b)
  %done = f32[4096]{0} async-done(%update)
  ROOT %r = f32[4096]{0} add(%done, %c)
}`)
	m := a.Module
	in := func(name string) *hlo.Instruction {
		for _, c := range m.Computations {
			if x := c.Instruction(name); x != nil {
				return x
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	neg := a.ValueAt(in("neg"), nil)
	require.Same(t, neg, a.ValueAt(in("update"), hlo.ShapeIndex{0, 1}))
	require.Same(t, neg, a.ValueAt(in("p1"), nil), "the parameter bound late takes the update's operand")
	require.Same(t, a.ValueAt(in("add"), nil), a.ValueAt(in("done"), nil), "the done returns the computation's root")
	require.Equal(t, a.Time(in("done")), neg.Range.End, "a value bound at an update lives to the done")
	// The update binds the operands but not the output (element {1} is
	// ()): the done is the first fully bound op, the computation is
	// flattened right before it (XLA's DoneBoundLateBoundAsyncCall).
	require.Less(t, a.Time(in("update")), a.Time(in("add")))
	require.Less(t, a.Time(in("add")), a.Time(in("done")), "flattened at the first fully bound op")
	require.True(t, firstFullyBound(in("done")))
	require.False(t, firstFullyBound(in("start")))
	require.False(t, firstFullyBound(in("update")))
	p := checkPair(t, a, "start", "done", "update")
	require.Same(t, in("done"), p.Bound)
}

// TestAsyncFirstFullyBound translates hlo_instruction_utils_test.cc's
// IsFirstFullyBound_* tests (the call-start form, whose to_apply= names
// the async computation).
func TestAsyncFirstFullyBound(t *testing.T) {
	for _, tc := range []struct {
		name, entry string
		want        map[string]bool
	}{
		{"LateBinding", `
  p0 = f32[2,3] parameter(0)
  start = ((), (), s32[]) call-start(), to_apply=async_computation
  update = ((f32[2,3]), f32[2,3], ()) call-update(start, p0)
  ROOT done = f32[2,3] call-done(update)`, map[string]bool{"start": false, "update": true, "done": false}},
		{"EarlyBinding", `
  p0 = f32[2,3] parameter(0)
  start = ((f32[2,3]), f32[2,3], s32[]) call-start(p0), to_apply=async_computation
  ROOT done = f32[2,3] call-done(start)`, map[string]bool{"start": true, "done": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := analyze(t, `HloModule test, is_scheduled=true
async_computation {
  p0 = f32[2,3] parameter(0)
  ROOT abs = f32[2,3] abs(p0)
}
ENTRY main {`+tc.entry+`
}`)
			for name, want := range tc.want {
				require.Equal(t, want, firstFullyBound(a.Module.Entry.Instruction(name)), name)
			}
			abs := a.ValueAt(a.Module.Computation("async_computation").Root, nil)
			require.Same(t, abs, a.ValueAt(a.Module.Entry.Root, nil), "the done returns the root's value")
			require.GreaterOrEqual(t, abs.Range.End, a.Time(a.Module.Entry.Root))
		})
	}
}

// TestAsyncSugarCustomCallInPlace: custom-call-start(...) with
// output_to_operand_aliasing is an async custom-call that updates its
// operand in place (the attribute is the wrapped custom-call's): its
// output joins the operand's buffer through the async computation's
// parameter, and the async ops' own reads of that operand are not reads
// after a foreign write.
func TestAsyncSugarCustomCallInPlace(t *testing.T) {
	a := analyze(t, `HloModule m, is_scheduled=true

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p)
  %cc-start = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(%neg), custom_call_target="foo", output_to_operand_aliasing={{}: (0, {})}
  ROOT %cc-done = f32[4]{0} custom-call-done(%cc-start)
}`)
	start := a.Module.Entry.Instruction("cc-start")
	op := start.Calls()[0].Root
	require.Equal(t, hlo.OpCustomCall, op.Opcode)
	neg := a.ValueAt(a.Module.Entry.Instruction("neg"), nil)
	out := a.ValueAt(op, nil)
	require.Same(t, neg.Buffer, out.Buffer, "the custom-call writes its operand's buffer")
	require.Same(t, out, a.ValueAt(a.Module.Entry.Root, nil))
	require.Empty(t, a.Interference())
}

// TestAsyncStartOwnAliasing: an async-start's own
// output_to_operand_aliasing (alias_info.cc, GetInPlaceInputOutputPairs'
// kAsyncStart case) puts element {1} of its tuple, the computation's
// result, in the operand's buffer.
func TestAsyncStartOwnAliasing(t *testing.T) {
	a := analyze(t, `HloModule m, is_scheduled=true
%w (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %cc = f32[4]{0} custom-call(%x), custom_call_target="foo"
}
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p)
  %s = ((f32[4]{0}), f32[4]{0}, s32[]) async-start(%neg), calls=%w, output_to_operand_aliasing={{1}: (0, {})}
  ROOT %d = f32[4]{0} async-done(%s)
}`)
	s := a.Module.Entry.Instruction("s")
	require.Equal(t, []InPlacePair{{Output: hlo.ShapeIndex{1}, Operand: 0, OperandIndex: hlo.ShapeIndex{}}}, InPlacePairs(s))
	neg := a.ValueAt(a.Module.Entry.Instruction("neg"), nil)
	require.Same(t, neg.Buffer, a.ValueAt(s, hlo.ShapeIndex{1}).Buffer)
	require.Empty(t, a.Interference())
}

// TestXLALateBoundAsyncCalls translates hlo_live_range_test.cc's
// LateBoundAsyncCall, ProgressiveLateBoundAsyncCall and
// DoneBoundLateBoundAsyncCall: the flattened position of every
// instruction, the async computation expanded right before the op that
// binds its last operand and its output.
func TestXLALateBoundAsyncCalls(t *testing.T) {
	const called1 = `
%called_computation (param_0: f32[4096]) -> f32[4096] {
  %param_0 = f32[4096]{0} parameter(0)
  ROOT %negate_2 = f32[4096]{0} negate(%param_0)
}

%async_wrapped (async_param: f32[4096]) -> f32[4096] {
  %async_param = f32[4096]{0} parameter(0)
  ROOT %call = f32[4096]{0} call(%async_param), to_apply=%called_computation
}
`
	for _, tc := range []struct {
		name, hlo string
		want      []string
	}{
		{"LateBoundAsyncCall", `HloModule LateBoundAsyncCall, is_scheduled=true
` + called1 + `
ENTRY %main (a: f32[4096]) -> f32[4096] {
  %a = f32[4096]{0} parameter(0)
  %negate_0 = f32[4096]{0} negate(%a)
  %async-start = ((), (), s32[]) async-start(), calls=%async_wrapped
  %negate_1 = f32[4096]{0} negate(%a)
  %async-update = ((f32[4096]{0}), f32[4096]{0}, s32[]) async-update(
    %async-start, %negate_0), calls=%async_wrapped
  %async-done = f32[4096]{0} async-done(%async-update), calls=%async_wrapped
  ROOT %add_1 = f32[4096]{0} add(%negate_1, %async-done)
}`, []string{"a", "negate_0", "async-start", "negate_1", "async_param", "param_0", "negate_2", "call", "async-update", "async-done", "add_1"}},
		{"ProgressiveLateBoundAsyncCall", `HloModule ProgressiveLateBoundAsyncCall, is_scheduled=true

%called_computation (param_0: f32[4096], param_1: f32[4096]) -> f32[4096] {
  %param_0 = f32[4096]{0} parameter(0)
  %param_1 = f32[4096]{0} parameter(1)
  ROOT %add_0 = f32[4096]{0} add(%param_0, %param_1)
}

%async_wrapped (async_param: f32[4096], async_param.1: f32[4096]) -> f32[4096] {
  %async_param = f32[4096]{0} parameter(0)
  %async_param.1 = f32[4096]{0} parameter(1)
  ROOT %call = f32[4096]{0} call(%async_param, %async_param.1), to_apply=%called_computation
}

ENTRY %main (a: f32[4096], b: f32[4096]) -> f32[4096] {
  %a = f32[4096]{0} parameter(0)
  %b = f32[4096]{0} parameter(1)
  %negate_0 = f32[4096]{0} negate(%a)
  %negate_1 = f32[4096]{0} negate(%b)
  %async-start = ((), (), s32[]) async-start(), calls=%async_wrapped
  %async-update.1 = ((f32[4096]{0}), (), s32[]) async-update(
    %async-start, %negate_0), calls=%async_wrapped
  %async-update.2 = ((f32[4096]{0}, f32[4096]{0}), f32[4096]{0}, s32[])
    async-update(%async-update.1, %negate_1), calls=%async_wrapped
  %async-done = f32[4096]{0} async-done(%async-update.2), calls=%async_wrapped
  ROOT %add_1 = f32[4096]{0} add(%async-done, %async-done)
}`, []string{"a", "b", "negate_0", "negate_1", "async-start", "async-update.1", "async_param", "async_param.1", "param_0", "param_1", "add_0", "call", "async-update.2", "async-done", "add_1"}},
		{"DoneBoundLateBoundAsyncCall", `HloModule DoneBoundLateBoundAsyncCall, is_scheduled=true
` + called1 + `
ENTRY %main (a: f32[4096]) -> f32[4096] {
  %a = f32[4096]{0} parameter(0)
  %negate_0 = f32[4096]{0} negate(%a)
  %async-start = ((), (), s32[]) async-start(), calls=%async_wrapped
  %async-update = ((f32[4096]{0}), (), s32[]) async-update(
    %async-start, %negate_0), calls=%async_wrapped
  %async-done = f32[4096]{0} async-done(%async-update), calls=%async_wrapped
  ROOT %add_1 = f32[4096]{0} add(%async-done, %async-done)
}`, []string{"a", "negate_0", "async-start", "async-update", "async_param", "param_0", "negate_2", "call", "async-done", "add_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rules := range []Rules{Rules2026, Rules2025} {
				m, err := hlo.ParseModule("t.hlo", tc.hlo)
				require.NoError(t, err)
				require.NoError(t, hlo.Verify(m))
				_, err = hlo.FlattenCallGraph(m)
				require.NoError(t, err)
				a, err := Analyze(m, Options{XLARules: rules})
				require.NoError(t, err)
				var got []string
				for _, in := range a.Sequence {
					got = append(got, in.Name)
				}
				require.Equal(t, tc.want, got)
				require.Empty(t, a.Interference())
			}
		})
	}
}
