package liveness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

func seqNames(a *Analysis) []string {
	var seq []string
	for _, in := range a.Sequence {
		seq = append(seq, in.Name)
	}
	return seq
}

func requireRanges(t *testing.T, a *Analysis, want ...string) {
	t.Helper()
	require.Empty(t, cmp.Diff(sorted(want), rangeLines(a)), "ranges (-want +got)")
}

// TestPassThroughPhi: a loop state element the body passes through
// unchanged. Propagation first gives it phis at the condition's parameter,
// the body's parameter and the while (the body's result arrives as the
// same value twice); the phi graph then resolves them to the init value and
// deletes them, and their IDs stay unused, as in XLA's dumps.
func TestPassThroughPhi(t *testing.T) {
	a := analyze(t, `HloModule pt, is_scheduled=true
cond {
  cs = (s32[], f32[4]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  c = s32[] constant(4)
  ROOT lt = pred[] compare(ci, c), direction=LT
}
body {
  bs = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(bs), index=0
  x = f32[4] get-tuple-element(bs), index=1
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT t = (s32[], f32[4]) tuple(ni, x)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  cz = s32[] copy(z)
  init = (s32[], f32[4]) tuple(cz, p)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}`)
	ids := map[string]int{}
	for _, v := range a.Values {
		ids[v.Name()] = v.XLAID
		if v.IsPhi {
			ids[v.Name()+" (phi)"] = v.XLAID
		}
	}
	// Values are numbered condition, body, entry (post-order of each), then
	// the phis as the propagation creates them: cs{} 9, bs{} 10, cs{0} 11,
	// cs{1} 12 (deleted), bs{0} 13, bs{1} 14 (deleted), w{} 15, w{0} 16,
	// w{1} 17 (deleted).
	want := map[string]int{
		"c{}": 0, "lt{}": 1, "one{}": 2, "ni{}": 3, "t{}": 4, "z{}": 5, "cz{}": 6, "p{}": 7, "init{}": 8,
		"cs{}": 9, "cs{} (phi)": 9, "bs{}": 10, "bs{} (phi)": 10, "cs{0}": 11, "cs{0} (phi)": 11,
		"bs{0}": 13, "bs{0} (phi)": 13, "w{}": 15, "w{} (phi)": 15, "w{0}": 16, "w{0} (phi)": 16,
	}
	require.Equal(t, want, ids)
	e := a.Module.Entry
	pv := a.ValueAt(e.Instruction("p"), nil)
	require.Same(t, pv, a.ValueAt(e.Instruction("w"), hlo.ShapeIndex{1}), "no phi for the passed-through element")
	require.Same(t, pv, a.ValueAt(a.Module.Computation("body").Instruction("x"), nil))
	require.Same(t, pv, a.ValueAt(a.Module.Computation("cond").Instruction("cs"), hlo.ShapeIndex{1}))
	requireRanges(t, a, "p{}:0-16", "z{}:1-2", "cz{}:2-4", "init{}:3-4", "cs{}:4-8", "cs{0}:4-8", "c{}:6-7", "lt{}:7-8",
		"bs{}:8-10", "bs{0}:8-12", "one{}:11-12", "ni{}:12-14", "t{}:13-14", "w{}:14-15", "w{0}:14-14")
}

// TestInitReadAfterLoop: a value that seeds the loop state and is read
// again after the loop. The loop updates its state in place, so copy
// insertion (for a module XLA has not compiled) gives the loop a copy; the
// value keeps its own buffer and lives until its last read.
func TestInitReadAfterLoop(t *testing.T) {
	m, err := hlo.ParseModule("after.hlo", `HloModule after
cond {
  cs = (s32[], f32[4]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  c = s32[] constant(4)
  ROOT lt = pred[] compare(ci, c), direction=LT
}
body {
  bs = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(bs), index=0
  x = f32[4] get-tuple-element(bs), index=1
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  nx = f32[4] negate(x)
  ROOT t = (s32[], f32[4]) tuple(ni, nx)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  n = f32[4] negate(p)
  init = (s32[], f32[4]) tuple(z, n)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  wx = f32[4] get-tuple-element(w), index=1
  ROOT r = f32[4] add(wx, n)
}`)
	require.NoError(t, err)
	a, changed, err := AnalyzeInsertingCopies(m)
	require.NoError(t, err)
	require.True(t, changed)
	e := m.Entry
	w := e.Instruction("w")
	state := w.Operands[0]
	require.Equal(t, hlo.OpTuple, state.Opcode)
	for k, src := range []string{"z", "n"} {
		cp := state.Operands[k]
		require.Equal(t, hlo.OpCopy, cp.Opcode, "loop state element %d is copied in", k)
		require.Equal(t, src, cp.Operands[0].Name)
	}
	nv := a.ValueAt(e.Instruction("n"), nil)
	require.Len(t, nv.Buffer.Values, 1, "n keeps a buffer of its own")
	require.Equal(t, a.Time(e.Instruction("r")), nv.Range.End, "n lives until it is read after the loop")
	cv := a.ValueAt(state.Operands[1], nil)
	bodyStart := a.Spans[w.Body().ID].Start
	require.LessOrEqual(t, cv.Range.End, bodyStart, "the copy dies as the loop starts")
	require.Same(t, cv.Buffer, a.ValueAt(w, hlo.ShapeIndex{1}).Buffer, "the copy is the loop's state")
}

// TestNestedLoops: an inner loop in an outer loop's body. Both are
// flattened where they run, the inner loop's phis are defined in the outer
// body, and the array the inner loop updates in place is one buffer with
// the outer loop's state, its ranges chained across both loops.
func TestNestedLoops(t *testing.T) {
	a := analyze(t, `HloModule nest, is_scheduled=true
icond {
  ics = (s32[], f32[4]) parameter(0)
  ici = s32[] get-tuple-element(ics), index=0
  ic = s32[] constant(3)
  ROOT ilt = pred[] compare(ici, ic), direction=LT
}
ibody {
  ibs = (s32[], f32[4]) parameter(0)
  ii = s32[] get-tuple-element(ibs), index=0
  ix = f32[4] get-tuple-element(ibs), index=1
  ione = s32[] constant(1)
  ini = s32[] add(ii, ione)
  inx = f32[4] negate(ix)
  ROOT it = (s32[], f32[4]) tuple(ini, inx)
}
ocond {
  ocs = (s32[], f32[4]) parameter(0)
  oci = s32[] get-tuple-element(ocs), index=0
  oc = s32[] constant(2)
  ROOT olt = pred[] compare(oci, oc), direction=LT
}
obody {
  obs = (s32[], f32[4]) parameter(0)
  oi = s32[] get-tuple-element(obs), index=0
  ox = f32[4] get-tuple-element(obs), index=1
  z = s32[] constant(0)
  cz = s32[] copy(z)
  iinit = (s32[], f32[4]) tuple(cz, ox)
  iw = (s32[], f32[4]) while(iinit), condition=icond, body=ibody
  nx = f32[4] get-tuple-element(iw), index=1
  oone = s32[] constant(1)
  oni = s32[] add(oi, oone)
  ROOT ot = (s32[], f32[4]) tuple(oni, nx)
}
ENTRY e {
  p = f32[4] parameter(0)
  z0 = s32[] constant(0)
  cz0 = s32[] copy(z0)
  cp = f32[4] copy(p)
  init = (s32[], f32[4]) tuple(cz0, cp)
  w = (s32[], f32[4]) while(init), condition=ocond, body=obody
  ROOT r = f32[4] get-tuple-element(w), index=1
}`)
	require.Equal(t, []string{"p", "z0", "cz0", "cp", "init", "ocs", "oci", "oc", "olt",
		"obs", "oi", "ox", "z", "cz", "iinit", "ics", "ici", "ic", "ilt",
		"ibs", "ii", "ix", "ione", "ini", "inx", "it", "iw", "nx", "oone", "oni", "ot", "w", "r"}, seqNames(a))
	for _, name := range []string{"ics", "ibs"} {
		for _, ix := range []hlo.ShapeIndex{{}, {0}, {1}} {
			var in *hlo.Instruction
			for _, c := range a.Module.Computations {
				if x := c.Instruction(name); x != nil {
					in = x
				}
			}
			v := a.ValueAt(in, ix)
			require.True(t, v.IsPhi && v.Inst == in, "%s%s is a phi defined there", name, ix)
		}
	}
	require.Equal(t, []string{"cp{}", "ibs{1}", "ics{1}", "inx{}", "iw{1}", "obs{1}", "ocs{1}", "w{1}"}, bufferOf(a, "cp{}"))
	requireRanges(t, a,
		"p{}:0-33", "z0{}:1-2", "cz0{}:2-5", "cp{}:3-5", "init{}:4-5",
		"ocs{}:5-9", "ocs{0}:5-9", "ocs{1}:5-9", "oc{}:7-8", "olt{}:8-9",
		"obs{}:9-11", "obs{0}:9-29", "obs{1}:9-15", "z{}:12-13", "cz{}:13-15", "iinit{}:14-15",
		"ics{}:15-19", "ics{0}:15-19", "ics{1}:15-19", "ic{}:17-18", "ilt{}:18-19",
		"ibs{}:19-21", "ibs{0}:19-23", "ibs{1}:19-24", "ione{}:22-23", "ini{}:23-26", "inx{}:24-26", "it{}:25-26",
		"iw{}:26-27", "iw{0}:26-26", "iw{1}:26-31", "oone{}:28-29", "oni{}:29-31", "ot{}:30-31",
		"w{}:31-32", "w{0}:31-31", "w{1}:31-33")
}

// TestConditionalInLoop: a conditional in a loop body. The branches are
// flattened just before the conditional; a branch parameter takes its
// single operand's value (no phi); the branch roots differ, so the
// conditional defines a phi that shares their buffer.
func TestConditionalInLoop(t *testing.T) {
	a := analyze(t, `HloModule cl, is_scheduled=true
br0 {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
br1 {
  b = f32[4] parameter(0)
  ROOT e1 = f32[4] exponential(b)
}
cond {
  cs = (s32[], f32[4]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  c = s32[] constant(4)
  ROOT lt = pred[] compare(ci, c), direction=LT
}
body {
  bs = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(bs), index=0
  x = f32[4] get-tuple-element(bs), index=1
  two = s32[] constant(2)
  pr = pred[] compare(i, two), direction=LT
  cd = f32[4] conditional(pr, x, x), true_computation=br0, false_computation=br1
  y = f32[4] add(cd, x)
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT t = (s32[], f32[4]) tuple(ni, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  cz = s32[] copy(z)
  cp = f32[4] copy(p)
  init = (s32[], f32[4]) tuple(cz, cp)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}`)
	require.Equal(t, []string{"p", "z", "cz", "cp", "init", "cs", "ci", "c", "lt",
		"bs", "i", "x", "two", "pr", "a", "n", "b", "e1", "cd", "y", "one", "ni", "t", "w", "r"}, seqNames(a))
	body := a.Module.Computation("body")
	xv := a.ValueAt(body.Instruction("x"), nil)
	require.Same(t, xv, a.ValueAt(a.Module.Computation("br0").Instruction("a"), nil), "a branch parameter takes its operand")
	require.Same(t, xv, a.ValueAt(a.Module.Computation("br1").Instruction("b"), nil))
	cd := a.ValueAt(body.Instruction("cd"), nil)
	require.True(t, cd.IsPhi)
	require.Equal(t, []string{"cd{}", "e1{}", "n{}"}, bufferOf(a, "cd{}"))
	requireRanges(t, a,
		"p{}:0-25", "z{}:1-2", "cz{}:2-5", "cp{}:3-5", "init{}:4-5",
		"cs{}:5-9", "cs{0}:5-9", "cs{1}:5-9", "c{}:7-8", "lt{}:8-9",
		"bs{}:9-11", "bs{0}:9-21", "bs{1}:9-19", "two{}:12-13", "pr{}:13-18",
		"n{}:15-16", "e1{}:17-18", "cd{}:18-19", "y{}:19-23", "one{}:20-21", "ni{}:21-23", "t{}:22-23",
		"w{}:23-24", "w{0}:23-23", "w{1}:23-25")
}
