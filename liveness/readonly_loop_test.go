package liveness

import (
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// Read-only loop state: a constant or an undonated entry parameter that
// initialises a while element. The expectations follow XLA's
// xla/service/copy_insertion.cc:
//
//   - IndicesToCopyForWhile copies an element only where the while's value
//     differs from the init's (or either is ambiguous): an element the body
//     passes through unchanged gets no copy, at the init or the body root;
//   - AddSpecialCaseCopies copies a read-only value (ValueIsReadOnly: a
//     constant or an entry parameter with no alias) only when its HloBuffer
//     holds more than one value, which a passed-through element does not,
//     and copies at the entry root every read-only value there
//     (ShouldCopyRootValue under the entry's SpecialCaseCopyPolicy,
//     copy_parameters_and_constants).

// readOnlyLoopCond and readOnlyLoopBody are the loop the tests share: the
// counter at index 0 counts, index 1 is passed through (BODY1 = "x") or
// written (BODY1 = "nx").
const readOnlyLoopCond = `
cond {
  cs = (s32[], f32[8]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  bs = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(bs), index=0
  x = f32[8] get-tuple-element(bs), index=1
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  nx = f32[8] add(x, x)
  ROOT t = (s32[], f32[8]) tuple(ni, BODY1)
}
`

// readOnlyModule builds a module from the shared loop and entry; scheduled
// marks it is_scheduled.
func readOnlyModule(t *testing.T, name string, scheduled bool, body1, entry string) *hlo.Module {
	t.Helper()
	head := "HloModule " + name
	if scheduled {
		head += ", is_scheduled=true"
	}
	src := head + strings.ReplaceAll(readOnlyLoopCond, "BODY1", body1) + entry
	m, err := hlo.ParseModule(name+".hlo", src)
	require.NoError(t, err)
	return m
}

func countCopies(c *hlo.Computation) int {
	n := 0
	for _, in := range c.Instructions {
		if in.Opcode == hlo.OpCopy {
			n++
		}
	}
	return n
}

// copiesOf counts the copies anywhere in m whose operand is in.
func copiesOf(m *hlo.Module, in *hlo.Instruction) int {
	n := 0
	for _, c := range m.Computations {
		for _, x := range c.Instructions {
			if x.Opcode == hlo.OpCopy && x.Operands[0] == in {
				n++
			}
		}
	}
	return n
}

// whileOf returns the while instruction of m whose body is the named
// computation.
func whileOf(t *testing.T, m *hlo.Module, body string) *hlo.Instruction {
	t.Helper()
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpWhile && in.Body() != nil && in.Body().Name == body {
				return in
			}
		}
	}
	t.Fatalf("no while with body %s", body)
	return nil
}

// requireShared asserts the while w's element 1, at its init, its body
// parameter and its result, is the value of ro itself: the read-only value
// shares the loop's buffer, uncopied.
func requireShared(t *testing.T, a *Analysis, w, ro *hlo.Instruction) {
	t.Helper()
	v := a.ValueAt(ro, nil)
	require.NotNil(t, v)
	ix := hlo.ShapeIndex{1}
	require.Same(t, v, a.ValueAt(w.Operands[0], ix), "%s's init holds %s itself", w.Name, ro.Name)
	require.Same(t, v, a.ValueAt(w.Body().Params[0], ix), "%s's body parameter holds %s", w.Name, ro.Name)
	require.Same(t, v, a.ValueAt(w, ix), "%s's result holds %s", w.Name, ro.Name)
	require.Same(t, v.Buffer, a.ValueAt(w, ix).Buffer)
	require.Len(t, v.Buffer.Values, 1, "%s's buffer holds it alone (AddSpecialCaseCopies copies a read-only value only when it does not)", ro.Name)
}

// insertCopies runs copy insertion (unscheduled) or the scheduled path's
// repair, as the pipeline does (prepare), and returns the analysis.
func insertCopiesFor(t *testing.T, m *hlo.Module) *Analysis {
	t.Helper()
	a, err := prepare(m)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m), m.String())
	require.Empty(t, a.Interference())
	return a
}

// TestReadOnlyPassThroughNoCopy: a constant, or an undonated entry
// parameter, that initialises an element the body passes through gets no
// copy, before the loop or at the body root, unscheduled or scheduled.
// copy_insertion.cc: IndicesToCopyForWhile (the while's value at index 1 is
// the init's) and AddSpecialCaseCopies (the read-only value's buffer holds
// no other value). XLA's own test: copy_insertion_test.cc,
// WhileCopyInsertionTest.DependentTupleElements_OneReadOnly (a constant
// element passed through: no copy in the body).
func TestReadOnlyPassThroughNoCopy(t *testing.T) {
	entries := map[string]string{
		"k": `
ENTRY e {
  z = s32[] constant(0)
  k = f32[8] constant({1,2,3,4,5,6,7,8})
  init = (s32[], f32[8]) tuple(z, k)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  r = f32[8] get-tuple-element(w), index=1
  ROOT s = f32[8] add(r, r)
}`,
		"a": `
ENTRY e {
  a = f32[8] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[8]) tuple(z, a)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  r = f32[8] get-tuple-element(w), index=1
  ROOT s = f32[8] add(r, r)
}`,
	}
	for ro, entry := range entries {
		for _, scheduled := range []bool{false, true} {
			m := readOnlyModule(t, "pass_"+ro, scheduled, "x", entry)
			a := insertCopiesFor(t, m)
			body := m.Computation("body")
			require.Zero(t, countCopies(body), "%s scheduled=%v: no copy in the body\n%s", ro, scheduled, m)
			require.Equal(t, "x", body.Root.Operands[1].Name, "%s scheduled=%v", ro, scheduled)
			k := m.Entry.Instruction(ro)
			require.Zero(t, copiesOf(m, k), "%s scheduled=%v: no copy of %s\n%s", ro, scheduled, ro, m)
			requireShared(t, a, whileOf(t, m, "body"), k)
			// The counter's constant the loop writes is copied all the same.
			require.Equal(t, 1, copiesOf(m, m.Entry.Instruction("z")), "%s scheduled=%v\n%s", ro, scheduled, m)
		}
	}
}

// TestReadOnlyWrittenKeepsCopy: when the body writes the element, the
// constant or parameter that initialises it is copied before the loop, so
// the loop's buffer is not the read-only one. copy_insertion.cc:
// AddCopiesForWhile (the element is not passed through) and
// AddSpecialCaseCopies (a read-only value whose buffer holds more than one
// value is copied). XLA's own tests: copy_insertion_test.cc,
// WhileCopyInsertionTest.InitPointsToConstant and InitPointsToParameter.
// Scheduled, the repair's ReadOnly rule adds the same copy.
func TestReadOnlyWrittenKeepsCopy(t *testing.T) {
	for _, ro := range []string{"k", "a"} {
		for _, scheduled := range []bool{false, true} {
			m := readOnlyModule(t, "written_"+ro, scheduled, "nx", `
ENTRY e {
  a = f32[8] parameter(0)
  z = s32[] constant(0)
  k = f32[8] constant({1,2,3,4,5,6,7,8})
  init = (s32[], f32[8]) tuple(z, `+ro+`)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  r = f32[8] get-tuple-element(w), index=1
  ROOT s = f32[8] add(r, a)
}`)
			a := insertCopiesFor(t, m)
			x := m.Entry.Instruction(ro)
			require.Equal(t, 1, copiesOf(m, x), "%s scheduled=%v\n%s", ro, scheduled, m)
			w := whileOf(t, m, "body")
			init := a.ValueAt(w.Operands[0], hlo.ShapeIndex{1})
			require.Equal(t, hlo.OpCopy, init.Inst.Opcode, "%s scheduled=%v: the loop starts from a copy", ro, scheduled)
			require.NotSame(t, a.ValueAt(x, nil).Buffer, init.Buffer)
			require.Len(t, a.ValueAt(x, nil).Buffer.Values, 1, "%s keeps a buffer of its own", ro)
		}
	}
}

// TestReadOnlyPassThroughLiveOut: a passed-through constant or parameter
// that is also a result of the entry is copied at the entry root, and only
// there. copy_insertion.cc: IndicesToCopyForWhile (no copy at the loop)
// and AddSpecialCaseCopies (ShouldCopyRootValue: the entry's policy copies
// constants and parameters at its root). XLA's own tests:
// copy_insertion_test.cc, CopyInsertionTest.MultipleConstantsAndParameters.
func TestReadOnlyPassThroughLiveOut(t *testing.T) {
	for _, ro := range []string{"k", "a"} {
		m := readOnlyModule(t, "liveout_"+ro, false, "x", `
ENTRY e {
  a = f32[8] parameter(0)
  z = s32[] constant(0)
  k = f32[8] constant({1,2,3,4,5,6,7,8})
  init = (s32[], f32[8]) tuple(z, `+ro+`)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  r = f32[8] get-tuple-element(w), index=1
  ROOT o = (f32[8], f32[8]) tuple(r, `+ro+`)
}`)
		a := insertCopiesFor(t, m)
		require.Zero(t, countCopies(m.Computation("body")), ro)
		x := m.Entry.Instruction(ro)
		requireShared(t, a, whileOf(t, m, "body"), x)
		root := m.Entry.Root
		for k := range 2 {
			require.Equal(t, hlo.OpCopy, root.Operands[k].Opcode, "%s: result %d is copied at the root\n%s", ro, k, m)
			require.Same(t, a.ValueAt(x, nil), a.ValueAt(root.Operands[k].Operands[0], nil))
		}
		// Two root copies, plus the counter's.
		require.Equal(t, 3, countCopies(m.Entry), "%s\n%s", ro, m)
	}
}

// TestReadOnlyPassThroughNested: an outer loop passes the constant to an
// inner loop, which passes it through, and so does the outer body: no
// copy at either level. copy_insertion.cc: IndicesToCopyForWhile for each
// while (the element's value is the init's, the constant, at both) and
// AddSpecialCaseCopies (the constant's buffer holds it alone).
func TestReadOnlyPassThroughNested(t *testing.T) {
	for _, scheduled := range []bool{false, true} {
		head := "HloModule nested_k"
		if scheduled {
			head += ", is_scheduled=true"
		}
		m, err := hlo.ParseModule("nested.hlo", head+`
icond {
  ics = (s32[], f32[8]) parameter(0)
  ici = s32[] get-tuple-element(ics), index=0
  in = s32[] constant(3)
  ROOT ilt = pred[] compare(ici, in), direction=LT
}
ibody {
  ibs = (s32[], f32[8]) parameter(0)
  ii = s32[] get-tuple-element(ibs), index=0
  ix = f32[8] get-tuple-element(ibs), index=1
  ione = s32[] constant(1)
  ini = s32[] add(ii, ione)
  ROOT it = (s32[], f32[8]) tuple(ini, ix)
}
ocond {
  ocs = (s32[], f32[8]) parameter(0)
  oci = s32[] get-tuple-element(ocs), index=0
  on = s32[] constant(2)
  ROOT olt = pred[] compare(oci, on), direction=LT
}
obody {
  obs = (s32[], f32[8]) parameter(0)
  oi = s32[] get-tuple-element(obs), index=0
  ox = f32[8] get-tuple-element(obs), index=1
  iz = s32[] constant(0)
  iinit = (s32[], f32[8]) tuple(iz, ox)
  iw = (s32[], f32[8]) while(iinit), condition=icond, body=ibody
  nx = f32[8] get-tuple-element(iw), index=1
  oone = s32[] constant(1)
  oni = s32[] add(oi, oone)
  ROOT ot = (s32[], f32[8]) tuple(oni, nx)
}
ENTRY e {
  z = s32[] constant(0)
  k = f32[8] constant({1,2,3,4,5,6,7,8})
  init = (s32[], f32[8]) tuple(z, k)
  w = (s32[], f32[8]) while(init), condition=ocond, body=obody
  r = f32[8] get-tuple-element(w), index=1
  ROOT s = f32[8] add(r, r)
}`)
		require.NoError(t, err)
		a := insertCopiesFor(t, m)
		k := m.Entry.Instruction("k")
		require.Zero(t, copiesOf(m, k), "scheduled=%v\n%s", scheduled, m)
		require.Zero(t, countCopies(m.Computation("ibody")), "scheduled=%v", scheduled)
		require.Equal(t, "ix", m.Computation("ibody").Root.Operands[1].Name)
		require.Equal(t, "nx", m.Computation("obody").Root.Operands[1].Name)
		requireShared(t, a, whileOf(t, m, "obody"), k)
		requireShared(t, a, whileOf(t, m, "ibody"), k)
	}
}

// TestReadOnlyTwoLoops: one constant, or one parameter, initialises two
// loops. Where both pass it through, neither copies it; where the second
// writes it, only the second's init is a copy. copy_insertion.cc:
// IndicesToCopyForWhile, per while, and AddSpecialCaseCopies. XLA's own
// test: copy_insertion_test.cc,
// WhileCopyInsertionTest.DependentTupleElements_OneReadOnly_TwoLoops_EntryParams
// (two loops on one init of entry parameters: the read-only element is
// not copied, the written one is copied for each loop).
func TestReadOnlyTwoLoops(t *testing.T) {
	for _, ro := range []string{"k", "a"} {
		for _, second := range []string{"x", "nx"} {
			for _, scheduled := range []bool{false, true} {
				head := "HloModule two_" + ro
				if scheduled {
					head += ", is_scheduled=true"
				}
				loop := strings.ReplaceAll(readOnlyLoopCond, "BODY1", "x")
				loop2 := strings.NewReplacer("cond", "cond2", "body", "body2", "BODY1", second).Replace(readOnlyLoopCond)
				m, err := hlo.ParseModule("two.hlo", head+loop+loop2+`
ENTRY e {
  a = f32[8] parameter(0)
  z = s32[] constant(0)
  z2 = s32[] constant(0)
  k = f32[8] constant({1,2,3,4,5,6,7,8})
  init = (s32[], f32[8]) tuple(z, `+ro+`)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  init2 = (s32[], f32[8]) tuple(z2, `+ro+`)
  w2 = (s32[], f32[8]) while(init2), condition=cond2, body=body2
  r = f32[8] get-tuple-element(w), index=1
  r2 = f32[8] get-tuple-element(w2), index=1
  ROOT s = f32[8] add(r, r2)
}`)
				require.NoError(t, err)
				a := insertCopiesFor(t, m)
				x := m.Entry.Instruction(ro)
				requireShared(t, a, whileOf(t, m, "body"), x)
				require.Zero(t, countCopies(m.Computation("body")))
				require.Zero(t, countCopies(m.Computation("body2")))
				w2 := whileOf(t, m, "body2")
				if second == "x" {
					require.Zero(t, copiesOf(m, x), "%s scheduled=%v\n%s", ro, scheduled, m)
					requireShared(t, a, w2, x)
					continue
				}
				require.Equal(t, 1, copiesOf(m, x), "%s scheduled=%v\n%s", ro, scheduled, m)
				require.Equal(t, hlo.OpCopy, a.ValueAt(w2.Operands[0], hlo.ShapeIndex{1}).Inst.Opcode, "%s scheduled=%v\n%s", ro, scheduled, m)
			}
		}
	}
}

// TestDependentTupleElementsOneReadOnly ports copy_insertion_test.cc,
// WhileCopyInsertionTest.DependentTupleElements_OneReadOnly: the init is
// two constants, the body passes element 0 through (reading it) and
// updates element 1 from both; XLA inserts no copy in the body. By
// copy_insertion.cc's rules the entry copies the written constant before
// the loop and never constant(0) there (IndicesToCopyForWhile: element 0's
// while value is the init's; AddSpecialCaseCopies: constant(0)'s buffer
// holds it alone), but copies element 0 at the root, the while, whose
// value there is constant(0) (AddSpecialCaseCopies, ShouldCopyRootValue).
func TestDependentTupleElementsOneReadOnly(t *testing.T) {
	m, err := hlo.ParseModule("oneread.hlo", `HloModule oneread
cond {
  ls = (s32[], f32[8]) parameter(0)
  iv = s32[] get-tuple-element(ls), index=0
  limit = s32[] constant(10)
  ROOT lt = pred[] compare(iv, limit), direction=LT
}
body {
  ls = (s32[], f32[8]) parameter(0)
  iv = s32[] get-tuple-element(ls), index=0
  data = f32[8] get-tuple-element(ls), index=1
  cv = f32[] convert(iv)
  update = f32[8] broadcast(cv), dimensions={}
  add1 = f32[8] add(data, update)
  ROOT t = (s32[], f32[8]) tuple(iv, add1)
}
ENTRY e {
  ivinit = s32[] constant(0)
  datainit = f32[8] constant({0,0,0,0,0,0,0,0})
  init = (s32[], f32[8]) tuple(ivinit, datainit)
  ROOT w = (s32[], f32[8]) while(init), condition=cond, body=body
}`)
	require.NoError(t, err)
	changed, err := InsertCopies(m)
	require.NoError(t, err)
	require.True(t, changed)
	require.NoError(t, hlo.Verify(m), m.String())
	require.Zero(t, countCopies(m.Computation("body")), m.String())
	require.Zero(t, copiesOf(m, m.Entry.Instruction("ivinit")), m.String())
	require.Equal(t, 1, copiesOf(m, m.Entry.Instruction("datainit")), m.String())
	a, err := Analyze(m, Options{})
	require.NoError(t, err)
	root := m.Entry.Root
	require.Equal(t, hlo.OpTuple, root.Opcode, m.String())
	require.Equal(t, hlo.OpCopy, root.Operands[0].Opcode, m.String())
	require.Same(t, a.ValueAt(m.Entry.Instruction("ivinit"), nil), a.ValueAt(root.Operands[0].Operands[0], nil))
	require.NotEqual(t, hlo.OpCopy, root.Operands[1].Opcode, "the loop's own value at index 1 needs no copy")
	require.Equal(t, 2, countCopies(m.Entry), m.String())
}
