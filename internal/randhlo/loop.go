package randhlo

import "strings"

// CountedLoop returns the text of a while loop's two computations, %cond
// and %body, over the state (s32[], elem): the condition runs three trips,
// and the body counts one and makes the next element as `%name = elem
// step` from the current one, %x (for example "neg", "negate(%x)"). Tests
// write modules around it whose loops work in place on their state.
func CountedLoop(elem, name, step string) string {
	return strings.NewReplacer("ELEM", elem, "NAME", name, "STEP", step).Replace(`%cond {
  %s = (s32[], ELEM) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body {
  %s = (s32[], ELEM) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = ELEM get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %ni = s32[] add(%i, %one)
  %NAME = ELEM STEP
  ROOT %t = (s32[], ELEM) tuple(%ni, %NAME)
}
`)
}
