package fusion

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

func TestCSE(t *testing.T) {
	m := parse(t, `HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4]{0} parameter(0)
  c1 = f32[] constant(1)
  c2 = f32[] constant(1)
  c3 = f32[] constant(2)
  b1 = f32[4]{0} broadcast(c1), dimensions={}, metadata={op_name="one"}
  b2 = f32[4]{0} broadcast(c2), dimensions={}, metadata={op_name="other"}
  m1 = f32[4]{0} multiply(p, b1)
  m2 = f32[4]{0} multiply(p, b2)
  m3 = f32[4]{0} multiply(b2, p)
  r1 = f32[] reduce(m1, c1), dimensions={0}, to_apply=add
  r2 = f32[] reduce(m2, c2), dimensions={0}, to_apply=add
  s1 = f32[2]{0} slice(m1), slice={[0:2]}
  s2 = f32[2]{0} slice(m2), slice={[2:4]}
  l1 = f32[4]{0} constant({1, 2, 3, 4})
  ROOT t = (f32[], f32[], f32[4]{0}, f32[2]{0}, f32[2]{0}, f32[]) tuple(r1, r2, m3, s1, s2, c3)
}`)
	text0 := m.String()
	require.True(t, runPass(t, pass{"cse", CSE}, m))
	got := opcodes(m)
	for _, gone := range []string{"c2", "b2", "m2", "r2"} {
		require.Empty(t, got[gone], "%s should be merged into its twin:\n%s", gone, m)
	}
	// Operand order, another literal and another slice are differences.
	for _, kept := range []string{"c3", "m3", "s2"} {
		require.NotEmpty(t, got[kept], "%s should stay:\n%s", kept, m)
	}
	root := m.Entry.Root
	require.Same(t, root.Operands[0], root.Operands[1])
	require.Equal(t, "one", m.Entry.Instruction("b1").Metadata.OpName, "the first of twins is kept")
	requireSameOutputs(t, text0, m)
	changed, err := CSE(m)
	require.NoError(t, err)
	require.False(t, changed, "CSE reaches its fixed point in one run")
}

// TestCSEKeeps: effects, control edges, layouts and attributes keep
// instructions apart.
func TestCSEKeeps(t *testing.T) {
	m := parse(t, `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  z = f32[] constant(0)
  o = f32[] constant(1)
  r1 = f32[2,3]{1,0} rng(z, o), distribution=rng_uniform
  r2 = f32[2,3]{1,0} rng(z, o), distribution=rng_uniform
  c1 = f32[2,3]{1,0} copy(p)
  c2 = f32[2,3]{0,1} copy(p)
  n1 = f32[2,3]{1,0} negate(p)
  n2 = f32[2,3]{1,0} negate(p), control-predecessors={n1}
  cc1 = f32[2,3]{1,0} custom-call(p), custom_call_target="foo"
  cc2 = f32[2,3]{1,0} custom-call(p), custom_call_target="foo"
  cmp1 = pred[2,3]{1,0} compare(p, n1), direction=LT
  cmp2 = pred[2,3]{1,0} compare(p, n1), direction=GT
  ROOT t = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{0,1}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, pred[2,3]{1,0}, pred[2,3]{1,0}) tuple(r1, r2, c1, c2, n2, cc1, cc2, cmp1, cmp2)
}`)
	text0 := m.String()
	changed, err := CSE(m)
	require.NoError(t, err)
	require.False(t, changed, "nothing may be merged:\n%s", m)
	require.Equal(t, text0, m.String())
}

// BenchmarkCSE40k times CSE on a module of 40,000 instructions, half of
// them duplicates.
func BenchmarkCSE40k(b *testing.B) {
	src := bigModule(20000)
	for b.Loop() {
		b.StopTimer()
		m := parse(b, src)
		b.StartTimer()
		if _, err := CSE(m); err != nil {
			b.Fatal(err)
		}
	}
}

// bigModule returns a chain of n negates, each twice.
func bigModule(n int) string {
	var sb strings.Builder
	sb.WriteString("HloModule big\nENTRY e {\n  x0 = f32[8]{0} parameter(0)\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "  x%d = f32[8]{0} negate(x%d)\n  y%d = f32[8]{0} negate(x%d)\n", i, i-1, i, i-1)
	}
	fmt.Fprintf(&sb, "  ROOT r = f32[8]{0} add(x%d, y%d)\n}\n", n, n)
	return sb.String()
}

func TestCSELarge(t *testing.T) {
	m := parse(t, bigModule(20000))
	start := time.Now()
	changed, err := CSE(m)
	took := time.Since(start)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, 20002, m.NumInstructions())
	require.NoError(t, hlo.Verify(m))
	t.Logf("CSE of 40k instructions: %v", took)
	require.Less(t, took, time.Second, "CSE must be linear")
}
