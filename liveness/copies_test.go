package liveness

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpusmod"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/stretchr/testify/require"
)

// checkNoSharedReadonly asserts the buffers of an analysed module never put
// a constant or an undonated entry parameter together with other values,
// and never hold two values live at the same time.
func checkNoSharedReadonly(t *testing.T, a *Analysis) {
	t.Helper()
	donated := map[int64]bool{}
	for _, io := range a.Module.InputOutputAlias {
		donated[io.Param] = true
	}
	for _, b := range a.Buffers {
		if len(b.Values) < 2 {
			continue
		}
		for _, v := range b.Values {
			require.NotEqual(t, hlo.OpConstant, v.Inst.Opcode, "constant %s shares buffer %d with %d other values", v.Name(), b.ID, len(b.Values)-1)
			require.False(t, v.Inst.Opcode == hlo.OpParameter && v.Inst.Parent == a.Module.Entry && !donated[v.Inst.ParameterNumber],
				"undonated parameter %s shares buffer %d", v.Name(), b.ID)
		}
	}
}

func TestInsertCopies(t *testing.T) {
	m, err := hlo.ParseModule("c.hlo", `HloModule c
cond {
  s = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  y = f32[4] get-tuple-element(s), index=2
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  nx = f32[4] add(x, y)
  ROOT t = (s32[], f32[4], f32[4]) tuple(ni, nx, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(z, p, p)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  r = f32[4] get-tuple-element(w), index=1
  after = f32[4] negate(p)
  ROOT out = (f32[4], f32[4], f32[4]) tuple(r, after, p)
}`)
	require.NoError(t, err)
	changed, err := InsertCopies(m)
	require.NoError(t, err)
	require.True(t, changed)
	require.NoError(t, hlo.Verify(m), m.String())
	init := m.Entry.Instruction("init")
	for k := 0; k < 2; k++ {
		require.Equal(t, hlo.OpCopy, init.Operands[k].Opcode, "init leaf %d: the loop overwrites the constant and the parameter", k)
	}
	require.Equal(t, "p", init.Operands[2].Name, "the loop never writes leaf 2 (y passes through): no copy")
	root := m.Entry.Root
	require.Equal(t, "out", root.Name, "the root tuple is edited in place")
	require.Equal(t, hlo.OpGetTupleElement, root.Operands[0].Opcode)
	require.Equal(t, hlo.OpNegate, root.Operands[1].Opcode)
	require.Equal(t, hlo.OpCopy, root.Operands[2].Opcode, "an undonated parameter in the result is copied")
	body := m.Computation("body")
	require.Equal(t, "y", body.Root.Operands[2].Name, "passing y through at its own index needs no copy")
	a, err := Analyze(m, Options{})
	require.NoError(t, err)
	checkNoSharedReadonly(t, a)
	// A second run finds nothing to do.
	changed, err = InsertCopies(m)
	require.NoError(t, err)
	require.False(t, changed)
}

func TestInsertCopiesOnRandomModules(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		m, err := hlo.ParseModule("rand.hlo", randhlo.Generate(seed, randhlo.Options{Instructions: 10 + int(seed%50)}))
		require.NoError(t, err)
		_, err = hlo.FlattenCallGraph(m)
		require.NoError(t, err)
		_, err = InsertCopies(m)
		require.NoError(t, err)
		require.NoError(t, hlo.Verify(m), "seed %d\n%s", seed, m)
		a, err := Analyze(m, Options{})
		require.NoError(t, err)
		checkNoSharedReadonly(t, a)
		before := m.String()
		changed, err := InsertCopies(m)
		require.NoError(t, err)
		require.False(t, changed, "seed %d: copies are idempotent", seed)
		require.Equal(t, before, m.String())
	}
}

// TestSequentialTreeMatchesWalkCorpus: the pre-order intervals answer "is x
// inside c" as the walk over sequential calls does, for every pair of
// computations of every flattened corpus module with loops or branches,
// and for a module whose computation has two sequential callers (not a
// forest: the walk answers).
func TestSequentialTreeMatchesWalkCorpus(t *testing.T) {
	pairs := 0
	corpusmod.ForModules(t, []string{"paired-jax*/*/*after_optimizations.txt", "hlo/*/*.hlo"}, func(t *testing.T, f string, m *hlo.Module) {
		if hlo.Verify(m) != nil || len(m.Computations) < 2 {
			return
		}
		_, err := hlo.FlattenCallGraph(m)
		require.NoError(t, err, "%s", f)
		tree := newSequentialTree(m)
		require.True(t, tree.tree, "%s: flattened module is not a call forest", f)
		for _, c := range m.Computations {
			w := within(c)
			for _, x := range m.Computations {
				require.Equal(t, w[x.ID], tree.within(c, x), "%s: within(%s, %s)", f, c.Name, x.Name)
				pairs++
			}
		}
	})
	require.NotZero(t, pairs, "no computations compared")
	m, err := hlo.Parse("two.hlo", []byte(`HloModule two
f {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}
g {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=f
}
ENTRY e {
  p = f32[] parameter(0)
  a = f32[] call(p), to_apply=f
  ROOT b = f32[] call(a), to_apply=g
}
`))
	require.NoError(t, err)
	tree := newSequentialTree(m[0])
	require.False(t, tree.tree, "f has two callers, yet the calls were taken for a forest")
	byName := map[string]*hlo.Computation{}
	for _, c := range m[0].Computations {
		byName[c.Name] = c
	}
	for _, tc := range []struct {
		c, x string
		want bool
	}{{"g", "f", true}, {"e", "f", true}, {"f", "g", false}, {"g", "e", false}, {"e", "g", true}} {
		require.Equal(t, tc.want, tree.within(byName[tc.c], byName[tc.x]), "within(%s, %s)", tc.c, tc.x)
	}
	t.Logf("%d pairs compared", pairs)
}
