package liveness

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

func analyze(t *testing.T, src string) *Analysis {
	t.Helper()
	return analyzeWith(t, Options{}, src)
}

// analyzeWith is analyze with opts.
func analyzeWith(t *testing.T, opts Options, src string) *Analysis {
	t.Helper()
	m, err := hlo.ParseModule("t.hlo", src)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
	a, err := Analyze(m, opts)
	require.NoError(t, err)
	return a
}

// rangeLines returns "name{index}:start-end" for every scheduled value.
func rangeLines(a *Analysis) []string {
	var out []string
	for _, v := range a.Values {
		if v.Scheduled {
			out = append(out, v.Name()+":"+itoa(v.Range.Start)+"-"+itoa(v.Range.End))
		}
	}
	return sorted(out)
}

func itoa(i int) string { return strconv.Itoa(i) }

// bufferOf returns the names of the values sharing a buffer with name.
func bufferOf(a *Analysis, name string) []string {
	for _, v := range a.Values {
		if v.Name() == name {
			var out []string
			for _, w := range v.Buffer.Values {
				out = append(out, w.Name())
			}
			return sorted(out)
		}
	}
	return nil
}

func TestWhileLoop(t *testing.T) {
	// The loop state is copied in, as XLA's copy insertion leaves it.
	a := analyze(t, `HloModule w, is_scheduled=true
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
  cz = s32[] copy(z)
  cp = f32[4] copy(p)
  init = (s32[], f32[4]) tuple(cz, cp)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}`)
	// Flattened: the condition, then the body, then the while.
	var seq []string
	for _, in := range a.Sequence {
		seq = append(seq, in.Parent.Name+"/"+in.Name)
	}
	require.Equal(t, []string{"e/p", "e/z", "e/cz", "e/cp", "e/init", "cond/cs", "cond/ci", "cond/c", "cond/lt",
		"body/bs", "body/i", "body/x", "body/one", "body/ni", "body/nx", "body/t", "e/w", "e/r"}, seq)
	// Every loop state position merges the init value with the body's
	// result, so the condition's parameter, the body's parameter and the
	// while each define a phi there. Each phi is live from its
	// computation's start; the init values die as the body starts (time 9)
	// and, chained with the phis of their buffer, end where the condition's
	// phi begins (time 5).
	want := sorted([]string{
		"p{}:0-18", "z{}:1-2", "cz{}:2-5", "cp{}:3-5", "init{}:4-5",
		"cs{}:5-9", "cs{0}:5-9", "cs{1}:5-9", "c{}:7-8", "lt{}:8-9",
		"bs{}:9-11", "bs{0}:9-13", "bs{1}:9-14", "one{}:12-13", "ni{}:13-16", "nx{}:14-16", "t{}:15-16",
		"w{}:16-17", "w{0}:16-16", "w{1}:16-18",
	})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	require.Equal(t, []string{"bs{0}", "cs{0}", "cz{}", "ni{}", "w{0}"}, bufferOf(a, "cz{}"))
	require.Equal(t, []string{"bs{1}", "cp{}", "cs{1}", "nx{}", "w{1}"}, bufferOf(a, "cp{}"))
	require.Equal(t, []string{"bs{}", "cs{}", "init{}", "t{}", "w{}"}, bufferOf(a, "t{}"))
	require.Equal(t, []string{"p{}"}, bufferOf(a, "p{}"), "the copy keeps the parameter out of the loop")
	phis := 0
	for _, v := range a.Values {
		if v.IsPhi {
			phis++
			require.Contains(t, []string{"cs", "bs", "w"}, v.Inst.Name)
		}
	}
	require.Equal(t, 9, phis)
	w1 := a.ValueAt(a.Module.Entry.Instruction("w"), hlo.ShapeIndex{1})
	require.True(t, w1.IsPhi)
	require.True(t, w1.LiveOut)
	body := a.Module.Computation("body")
	require.Same(t, a.ValueAt(body.Instruction("bs"), hlo.ShapeIndex{1}), a.ValueAt(body.Instruction("x"), nil), "the body reads its parameter's phi")
}

func TestWhileInvariantStateHasNoPhi(t *testing.T) {
	a := analyze(t, `HloModule w, is_scheduled=true
cond {
  s = (s32[], f32[4]) parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  ni = s32[] add(i, i)
  ROOT t = (s32[], f32[4]) tuple(ni, x)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4]) tuple(z, p)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}`)
	w := a.Module.Entry.Root
	require.True(t, a.ValueAt(w, hlo.ShapeIndex{0}).IsPhi)
	require.Same(t, a.ValueAt(a.Module.Entry.Instruction("p"), nil), a.ValueAt(w, hlo.ShapeIndex{1}), "x passes through unchanged")
}

func TestConditionalAndCall(t *testing.T) {
	a := analyze(t, `HloModule c, is_scheduled=true
yes {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
no {
  b = f32[4] parameter(0)
  ROOT same = f32[4] bitcast(b)
}
callee {
  q = f32[4] parameter(0)
  ROOT e = f32[4] exponential(q)
}
ENTRY e {
  pr = pred[] parameter(0)
  x = f32[4] parameter(1)
  k = f32[4] call(x), to_apply=callee
  ROOT cd = f32[4] conditional(pr, k, k), true_computation=yes, false_computation=no
}`)
	var seq []string
	for _, in := range a.Sequence {
		seq = append(seq, in.Name)
	}
	require.Equal(t, []string{"pr", "x", "q", "e", "k", "a", "n", "b", "same", "cd"}, seq)
	cd := a.Module.Entry.Root
	v := a.ValueAt(cd, nil)
	require.True(t, v.IsPhi, "the branches disagree, so the conditional defines a phi")
	require.Equal(t, []string{"cd{}", "e{}", "n{}"}, bufferOf(a, "cd{}"), "branch roots share the result's buffer")
	want := sorted([]string{"pr{}:0-10", "x{}:0-10", "e{}:3-6", "n{}:6-9", "cd{}:9-10"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
}

func TestDonationAndInPlace(t *testing.T) {
	a := analyze(t, `HloModule d, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }
fused_dus {
  buf = f32[8] parameter(0)
  upd = f32[2] parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[8] dynamic-update-slice(buf, upd, i)
}
ENTRY e {
  p0 = f32[8] parameter(0)
  p1 = f32[2] parameter(1)
  c = s32[] constant(3)
  neg = f32[8] negate(p0)
  f = f32[8] fusion(neg, p1, c), kind=kLoop, calls=fused_dus
  ROOT t = (f32[8], f32[8]) tuple(f, neg)
}`)
	// p0 is donated to output {0}: it does not live to the end.
	require.Equal(t, []string{"f{}", "neg{}", "p0{}"}, bufferOf(a, "p0{}"))
	want := sorted([]string{"p0{}:0-3", "p1{}:0-6", "c{}:2-4", "neg{}:3-4", "f{}:4-6", "t{}:5-6"})
	require.Empty(t, cmp.Diff(want, rangeLines(a)), "ranges (-want +got)")
	pairs := InPlacePairs(a.Module.Entry.Instruction("f"))
	require.Equal(t, []InPlacePair{{Output: hlo.ShapeIndex{}, Operand: 0, OperandIndex: hlo.ShapeIndex{}}}, pairs)
}

func TestDefiningRules(t *testing.T) {
	a := analyze(t, `HloModule r, is_scheduled=true
ENTRY e {
  p = (f32[2], s32[]) parameter(0)
  g = f32[2] get-tuple-element(p), index=0
  b = f32[1,2] bitcast(g)
  cp = (f32[2], s32[]) copy(p)
  t = ((f32[2], s32[]), f32[1,2]) tuple(cp, b)
  ROOT o = f32[2] add(g, g)
}`)
	e := a.Module.Entry
	p, g, b, cp, tu := e.Instruction("p"), e.Instruction("g"), e.Instruction("b"), e.Instruction("cp"), e.Instruction("t")
	require.Same(t, a.ValueAt(p, hlo.ShapeIndex{0}), a.ValueAt(g, nil), "get-tuple-element forwards")
	require.Same(t, a.ValueAt(g, nil), a.ValueAt(b, nil), "bitcast forwards")
	require.Equal(t, cp, a.ValueAt(cp, nil).Inst, "copy defines its top level")
	require.Same(t, a.ValueAt(p, hlo.ShapeIndex{1}), a.ValueAt(cp, hlo.ShapeIndex{1}), "copy forwards the elements")
	require.Same(t, a.ValueAt(cp, nil), a.ValueAt(tu, hlo.ShapeIndex{0}), "tuple forwards its operands")
	require.Equal(t, tu, a.ValueAt(tu, nil).Inst)
	// Uses: get-tuple-element and copy read only the top level; tuple reads nothing.
	pv := a.ValueAt(p, nil)
	var users []string
	for _, u := range pv.Uses {
		users = append(users, u.Inst.Name)
	}
	require.Equal(t, []string{"g", "cp"}, users)
	require.Empty(t, a.ValueAt(cp, nil).Uses)
	gv := a.ValueAt(g, nil)
	require.Len(t, gv.Uses, 3, "b, and o twice (two operands)")
	var pos []string
	for _, x := range gv.Positions {
		pos = append(pos, x.Inst.Name+x.Index.String())
	}
	require.Equal(t, []string{"p{0}", "g{}", "b{}", "cp{0}", "t{0,0}", "t{1}"}, pos, "the defining position comes first")
}
