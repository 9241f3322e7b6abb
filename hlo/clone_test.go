package hlo

import (
	"strings"
	"testing"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

func TestFlattenCallGraph(t *testing.T) {
	m := mustParse(t, `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
f {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add
}
g {
  y = f32[4] parameter(0)
  ROOT c = f32[] call(y), to_apply=f
}
ENTRY e {
  p = f32[4] parameter(0)
  c1 = f32[] call(p), to_apply=f
  c2 = f32[] call(p), to_apply=f
  c3 = f32[] call(p), to_apply=g
  ROOT t = (f32[], f32[], f32[]) tuple(c1, c2, c3)
}`)
	before := m.String()
	changed, err := FlattenCallGraph(m)
	require.NoError(t, err)
	require.True(t, changed)
	require.NoError(t, Verify(m))
	e := m.Entry
	f1, f2 := e.Instruction("c1").ToApply(), e.Instruction("c2").ToApply()
	require.Equal(t, "f", f1.Name)
	require.Equal(t, "f.clone", f2.Name)
	require.NotSame(t, f1, f2)
	f3 := m.Computation("g").Instruction("c").ToApply()
	require.Equal(t, "f.clone.1", f3.Name, "g's call is a third site of f")
	// The reduction function stays shared: it runs in a parallel context.
	require.Same(t, f1.Root.ToApply(), f2.Root.ToApply())
	require.Equal(t, "r.clone", f2.Root.Name)
	require.Same(t, f2.Instructions[0], f2.Root.Operands[0], "operands point into the clone")
	// A second run changes nothing, and says so.
	after := m.String()
	changed, err = FlattenCallGraph(m)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, after, m.String())
	require.NotEqual(t, before, after)
	require.True(t, strings.Contains(after, "%f.clone.1 (x.clone.1: f32[4])"))
}

// TestFlattenCallGraphCycle: a computation that calls itself cannot be
// flattened (cloning it would never end); the error names the cycle.
func TestFlattenCallGraphCycle(t *testing.T) {
	m, err := ParseModule("cycle.hlo", `HloModule r
c {
  cs = (s32[], f32[]) parameter(0)
  ROOT f = pred[] constant(false)
}
b {
  bs = (s32[], f32[]) parameter(0)
  w2 = (s32[], f32[]) while(bs), condition=c, body=b
  ROOT t = (s32[], f32[]) copy(w2)
}
ENTRY e {
  p = f32[] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[]) tuple(z, p)
  ROOT w = (s32[], f32[]) while(init), condition=c, body=b
}`)
	require.NoError(t, err)
	changed, err := FlattenCallGraph(m)
	require.False(t, changed)
	require.EqualError(t, err, "cycle.hlo:8:3: computation call cycle: %b -> %b")
}

func TestNameUniquerSmallestFreeSuffix(t *testing.T) {
	var u NameUniquer // the zero value works
	require.Equal(t, "x", u.Unique("x"))
	require.Equal(t, "x.1", u.Unique("x"))
	require.Equal(t, "x.2", u.Unique("x"))
	// A suffixed name taken directly is skipped, and the next free one
	// handed out after it.
	require.Equal(t, "x.3", u.Unique("x.3"))
	require.Equal(t, "x.4", u.Unique("x"))
	require.Equal(t, "x.3.1", u.Unique("x.3"))

	m := mustParse(t, "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  p.1 = f32[] negate(p)\n  ROOT p.3 = f32[] negate(p.1)\n}\n")
	v := NewNameUniquer(m)
	require.Equal(t, "p.2", v.Unique("p"))
	require.Equal(t, "p.4", v.Unique("p"))
	seen := map[string]bool{}
	for range 10_000 {
		n := v.Unique("p")
		require.False(t, seen[n], n)
		seen[n] = true
	}
	require.True(t, seen["p.10003"])
}

// TestModuleCloneCorpus: on every corpus module, the clone prints as the module
// does, verifies, and shares no instruction, computation or operand list
// with it: flattening and renaming the clone leave the module's text as
// it was, and the module's users and IDs are those of the clone.
func TestModuleCloneCorpus(t *testing.T) {
	n, visited := 0, 0
	for _, f := range corpusHLOFiles(t) {
		mods, err := ParseFile(f)
		if err != nil {
			continue
		}
		visited += len(mods)
		for _, m := range mods {
			text := m.String()
			c := m.Clone()
			require.Equal(t, text, c.String(), f)
			require.NoError(t, Verify(c), f)
			require.Same(t, c, c.Entry.Module, f)
			orig := map[any]bool{}
			for _, oc := range m.Computations {
				orig[oc] = true
				for _, in := range oc.Instructions {
					orig[in] = true
				}
			}
			for i, cc := range c.Computations {
				require.False(t, orig[cc], f)
				require.Equal(t, m.Computations[i].Name, cc.Name)
				for j, in := range cc.Instructions {
					require.False(t, orig[in], "%s: %s is shared", f, in.Name)
					require.Same(t, cc, in.Parent)
					require.Equal(t, m.Computations[i].Instructions[j].ID, in.ID)
					require.Len(t, in.Users, len(m.Computations[i].Instructions[j].Users))
					for k, u := range in.Users {
						require.Equal(t, m.Computations[i].Instructions[j].Users[k].Name, u.Name)
						require.False(t, orig[u])
					}
					for _, op := range in.Operands {
						require.False(t, orig[op])
					}
					for _, callee := range in.Callees() {
						require.False(t, orig[callee], "%s: %s calls the original %s", f, in.Name, callee.Name)
					}
				}
			}
			// Edits of the clone stay in the clone.
			_, err := FlattenCallGraph(c)
			require.NoError(t, err, f)
			for _, cc := range c.Computations {
				for _, in := range cc.Instructions {
					in.Name += ".x"
				}
			}
			require.Equal(t, text, m.String(), f)
			n++
		}
	}
	require.GreaterOrEqual(t, n, corpus.Enough(251, visited))
	var nilModule *Module
	require.Nil(t, nilModule.Clone())
}
