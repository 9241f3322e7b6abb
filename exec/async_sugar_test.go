package exec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShadowAsyncInPlaceAndLateBound: the shadow check runs the plans of
// an async custom-call that updates its operand in place (the short form
// custom-call-start with output_to_operand_aliasing, which XLA's parser
// gives to the wrapped custom-call; and an async-start's own aliasing of
// its output {1} to an operand, alias_info.cc's kAsyncStart pairs) and of
// an async op whose update binds an operand late; the plan keeps the
// late operand until the done.
func TestShadowAsyncInPlaceAndLateBound(t *testing.T) {
	for name, src := range map[string]string{
		"in place": `HloModule m, is_scheduled=true
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p)
  %cc-start = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(%neg), custom_call_target="foo", output_to_operand_aliasing={{}: (0, {})}
  ROOT %cc-done = f32[4]{0} custom-call-done(%cc-start)
}`,
		"start aliasing": `HloModule m, is_scheduled=true
%w (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %cc = f32[4]{0} custom-call(%x), custom_call_target="foo"
}
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %neg = f32[4]{0} negate(%p)
  %s = ((f32[4]{0}), f32[4]{0}, s32[]) async-start(%neg), calls=%w, output_to_operand_aliasing={{1}: (0, {})}
  ROOT %d = f32[4]{0} async-done(%s)
}`,
		"late bound": `HloModule m, is_scheduled=true
%w (p0: f32[64], p1: f32[64]) -> f32[64] {
  %p0 = f32[64]{0} parameter(0)
  %p1 = f32[64]{0} parameter(1)
  ROOT %add = f32[64]{0} add(%p0, %p1)
}
ENTRY %main (a: f32[64], b: f32[64]) -> f32[64] {
  %a = f32[64]{0} parameter(0)
  %b = f32[64]{0} parameter(1)
  %start = ((f32[64]{0}), (), s32[]) async-start(%a), calls=%w
  %neg = f32[64]{0} negate(%b)
  %update = ((f32[64]{0}, f32[64]{0}), (), s32[]) async-update(%start, %neg)
  %c = f32[64]{0} cosine(%b)
  %e = f32[64]{0} exponential(%c)
  %done = f32[64]{0} async-done(%update)
  ROOT %r = f32[64]{0} add(%done, %e)
}`,
	} {
		t.Run(name, func(t *testing.T) {
			as := planText(t, src)
			rep, err := Shadow(context.Background(), as)
			require.NoError(t, err)
			require.Nil(t, rep.Violation, "%v", rep.Violation)
			require.Positive(t, rep.Reads)
		})
	}
}
