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
// flattened at the update, the first fully bound op
// (hlo_live_range.cc, FlattenSchedule with async::IsFirstFullyBound).
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
	require.Less(t, a.Time(in("start")), a.Time(in("add")))
	require.Less(t, a.Time(in("add")), a.Time(in("update")), "flattened at the first fully bound op")
	require.True(t, firstFullyBound(in("update")))
	require.False(t, firstFullyBound(in("start")))
	require.False(t, firstFullyBound(in("done")))
	p := checkPair(t, a, "start", "done", "update")
	require.Same(t, in("update"), p.Bound, "in flight from the update that binds the last operand")
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
