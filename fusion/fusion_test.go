package fusion

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

// lowerBound is the guard's measure in fusion's own tests: the lower
// bound of m prepared as the pipeline prepares it (package compile's
// measure, which fusion cannot import; preptest gives the same analysis).
func lowerBound(ctx context.Context, m *hlo.Module) (Measure, error) {
	a, err := preptest.With(ctx, m, preptest.Options{})
	if err != nil {
		return Measure{}, err
	}
	return Measure{LowerBound: a.LowerBound(nil).Bytes}, nil
}

// fuse runs Run (measuring with lowerBound unless opts has a measure)
// and returns the decisions, checking that the result
// verifies and prints to text that parses back to itself.
func fuse(t *testing.T, m *hlo.Module, opts Options) (bool, []Decision) {
	t.Helper()
	var ds []Decision
	opts.Explain = func(d Decision) { ds = append(ds, d) }
	if !opts.NoGuard && opts.Measure == nil {
		opts.Measure = lowerBound
	}
	changed, err := Run(context.Background(), m, opts)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
	requireListedInOrder(t, m)
	text := m.String()
	again, err := hlo.ParseModule("again.hlo", text)
	require.NoError(t, err, text)
	require.Equal(t, text, again.String())
	return changed, ds
}

// requireListedInOrder fails unless every computation of m lists each
// instruction after its operands (the order fusion's edits of a fused
// computation rely on, and the one XLA prints).
func requireListedInOrder(t *testing.T, m *hlo.Module) {
	t.Helper()
	for _, c := range m.Computations {
		seen := map[*hlo.Instruction]bool{}
		for _, in := range c.Instructions {
			for _, op := range in.Operands {
				require.True(t, seen[op], "%s: %s reads %s before it is listed:\n%s", c.Name, in.Name, op.Name, c)
			}
			seen[in] = true
		}
	}
}

func reasons(ds []Decision) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func entryOps(m *hlo.Module) []string {
	var out []string
	for _, in := range m.Entry.Instructions {
		out = append(out, in.OpName())
	}
	return out
}

const chain = `HloModule chain

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p0 = f32[64,32] parameter(0)
  p1 = f32[64,32] parameter(1)
  m = f32[64,32] multiply(p0, p1)
  c = f32[] constant(2)
  b = f32[64,32] broadcast(c), dimensions={}
  a = f32[64,32] add(m, b)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(a, z), dimensions={1}, to_apply=add
}
`

// TestInputFusion: an element-wise chain and its broadcast constant go
// into the reduction: one kInput fusion in XLA's form.
func TestInputFusion(t *testing.T) {
	m := parse(t, chain)
	changed, ds := fuse(t, m, Options{})
	require.True(t, changed)
	require.Equal(t, []string{"parameter", "parameter", "fusion"}, entryOps(m), m.String())
	f := m.Entry.Root
	require.Equal(t, hlo.FusionInput, f.FusionKind())
	fc := f.Calls()[0]
	require.Len(t, fc.Params, 2)
	require.Equal(t, hlo.OpReduce, fc.Root.Opcode)
	require.Contains(t, m.String(), "kind=kInput, calls=%fused_computation")
	for _, d := range ds {
		require.True(t, d.Fused, d.String())
		require.Equal(t, "input", d.Kind)
	}
	require.Len(t, ds, 5) // m, b, c, a, z
}

// TestExpensiveNotDuplicated: an expensive producer with two users stays
// as it is, with the wording; a cheap one is duplicated into both.
func TestExpensiveNotDuplicated(t *testing.T) {
	m := parse(t, `HloModule dup
ENTRY main {
  p = f32[8] parameter(0)
  exp.3 = f32[8] exponential(p)
  n = f32[8] negate(exp.3)
  a = f32[8] abs(exp.3)
  neg.1 = f32[8] negate(p)
  x = f32[8] sine(neg.1)
  y = f32[8] cosine(neg.1)
  ROOT t = (f32[8], f32[8], f32[8], f32[8]) tuple(n, a, x, y)
}`)
	_, ds := fuse(t, m, Options{NoMultiOutput: true})
	require.Contains(t, reasons(ds), "producer exp.3 is expensive and has 2 users")
	require.NotNil(t, m.Entry.Instruction("exp.3"), "exp.3 must stay")
	require.Nil(t, m.Entry.Instruction("neg.1"), "the cheap negate is duplicated into both users")
	require.Contains(t, reasons(ds), "cheap producer duplicated into its 2 users")
}

// TestNeverFused: parameters, custom-calls, dots and tuples are not fused;
// nothing to fuse leaves the module's text as it was.
func TestNeverFused(t *testing.T) {
	src := `HloModule never
ENTRY main {
  p = f32[8,8] parameter(0)
  cc = f32[8,8] custom-call(p), custom_call_target="foo"
  d = f32[8,8] dot(cc, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8,8], f32[8,8]) tuple(d, cc)
}`
	m := parse(t, src)
	before := m.String()
	changed, ds := fuse(t, m, Options{})
	require.False(t, changed)
	require.Equal(t, before, m.String())
	require.Empty(t, ds, "parameters, custom-calls and dots are not candidates")
}

// TestNeverFusedOps: while, conditional, call, collectives and
// side-effecting ops stay outside every fusion, as producers and as
// consumers of the element-wise ops around them, which still fuse.
func TestNeverFusedOps(t *testing.T) {
	src := `HloModule never_ops
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  y = f32[8] negate(x)
  ROOT t = (s32[], f32[8]) tuple(i1, y)
}
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
callee {
  c = f32[8] parameter(0)
  ROOT e = f32[8] exponential(c)
}
br_true {
  bt = f32[8] parameter(0)
  ROOT nt = f32[8] negate(bt)
}
br_false {
  bf = f32[8] parameter(0)
  ROOT af = f32[8] abs(bf)
}
ENTRY main {
  p = f32[8] parameter(0)
  q = pred[] parameter(1)
  a = f32[8] add(p, p)
  z = s32[] constant(0)
  init = (s32[], f32[8]) tuple(z, a)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  wx = f32[8] get-tuple-element(w), index=1
  b = f32[8] multiply(wx, wx)
  cl = f32[8] call(b), to_apply=callee
  c = f32[8] subtract(cl, p)
  cd = f32[8] conditional(q, c, c), true_computation=br_true, false_computation=br_false
  d = f32[8] negate(cd)
  ar = f32[8] all-reduce(d), replica_groups={}, to_apply=sum
  e = f32[8] abs(ar)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[8] rng(lo, hi), distribution=rng_uniform
  ROOT f = f32[8] add(e, r)
}`
	m := parse(t, src)
	_, _ = fuse(t, m, Options{NoGuard: true})
	for _, name := range []string{"w", "cl", "cd", "ar", "r"} {
		in := m.Entry.Instruction(name)
		require.NotNil(t, in, "%s left the entry computation", name)
		require.NotEqual(t, hlo.OpFusion, in.Opcode, name)
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode != hlo.OpFusion {
				continue
			}
			for _, x := range in.Calls()[0].Instructions {
				switch x.Opcode {
				case hlo.OpWhile, hlo.OpCall, hlo.OpConditional, hlo.OpAllReduce, hlo.OpRng, hlo.OpParameter:
					require.Equal(t, hlo.OpParameter, x.Opcode, "%s fused into %s", x.Name, in.Name)
				}
			}
		}
	}
	// The element-wise ops next to them still fuse.
	fusions := 0
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpFusion {
			fusions++
		}
	}
	require.Positive(t, fusions)
}

// TestInstructionBound: fusion stops growing a fused computation at the
// instruction bound, saying so with the figures.
func TestInstructionBound(t *testing.T) {
	m := parse(t, `HloModule insts
ENTRY main {
  p = f32[8] parameter(0)
  a = f32[8] negate(p)
  b = f32[8] abs(a)
  c = f32[8] negate(b)
  d = f32[8] abs(c)
  e = f32[8] negate(d)
  ROOT f = f32[8] abs(e)
}`)
	_, ds := fuse(t, m, Options{MaxInstructions: 3})
	require.Contains(t, reasons(ds), "the fused computation would have 4 instructions, over the limit of 3")
	for _, c := range m.Computations {
		if c != m.Entry {
			require.LessOrEqual(t, len(c.Instructions), 3, c.Name)
		}
	}
}

// TestSiblingCycleRefused: two fusions reading the same operand, one
// of which reads the other, are not merged.
func TestSiblingCycleRefused(t *testing.T) {
	m := parse(t, `HloModule cyc
c1 {
  a = f32[8,8] parameter(0)
  ROOT n = f32[8,8] negate(a)
}
c2 {
  x = f32[8,8] parameter(0)
  y = f32[8,8] parameter(1)
  ROOT s = f32[8,8] add(x, y)
}
ENTRY main {
  p = f32[8,8] parameter(0)
  f1 = f32[8,8] fusion(p), kind=kLoop, calls=c1
  d = f32[8,8] dot(f1, f1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f2 = f32[8,8] fusion(p, d), kind=kLoop, calls=c2
  ROOT t = (f32[8,8], f32[8,8]) tuple(f1, f2)
}`)
	_, ds := fuse(t, m, Options{NoGuard: true})
	require.Contains(t, reasons(ds), "sibling f1 -> f2: not fused (one depends on the other: fusing would make a cycle)")
	require.NotNil(t, m.Entry.Instruction("f1"))
	require.NotNil(t, m.Entry.Instruction("f2"))
}

// TestDuplicatedThroughTwoPaths: a cheap producer read by a consumer both
// directly and through another of its users goes into both; no cycle.
func TestDuplicatedThroughTwoPaths(t *testing.T) {
	m := parse(t, `HloModule two
ENTRY main {
  p = f32[8] parameter(0)
  n = f32[8] negate(p)
  s = f32[8] sine(n)
  c = f32[8] cosine(s)
  a = f32[8] add(n, s)
  ROOT t = (f32[8], f32[8]) tuple(a, c)
}`)
	_, ds := fuse(t, m, Options{NoGuard: true, NoMultiOutput: true})
	require.Nil(t, m.Entry.Instruction("n"), reasons(ds))
	require.Contains(t, reasons(ds), "producer s is expensive and has 2 users")
}

// TestInPlaceOperandStaysOutside: the buffer a dynamic-update-slice
// updates is not fused into it; its update is.
func TestInPlaceOperandStaysOutside(t *testing.T) {
	m := parse(t, `HloModule dus
ENTRY main {
  p = f32[16] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  base = f32[16] negate(p)
  upd = f32[4] exponential(u)
  ROOT d = f32[16] dynamic-update-slice(base, upd, i)
}`)
	_, ds := fuse(t, m, Options{})
	require.Regexp(t, `not fused \(\S+ updates base in place\)`, reasons(ds))
	require.NotNil(t, m.Entry.Instruction("base"))
	require.Nil(t, m.Entry.Instruction("upd"), "the update is fused")
}

// TestOperandBound: a fusion that would read more operands than allowed is
// declined with the figures.
func TestOperandBound(t *testing.T) {
	m := parse(t, `HloModule ops
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  p2 = f32[8] parameter(2)
  p3 = f32[8] parameter(3)
  a = f32[8] add(p0, p1)
  b = f32[8] add(p2, p3)
  ROOT c = f32[8] multiply(a, b)
}`)
	_, ds := fuse(t, m, Options{MaxOperands: 3})
	require.Contains(t, reasons(ds), "the fusion would have 4 operands, over the limit of 3")
}

// TestSiblingFusion: two loop fusions reading the same operand over the
// same shape become one multi-output fusion whose elements feed their
// users.
func TestSiblingFusion(t *testing.T) {
	m := parse(t, `HloModule sib
ENTRY main {
  p = f32[32] parameter(0)
  q = f32[32] parameter(1)
  n = f32[32] negate(p)
  x = f32[32] multiply(n, q)
  a = f32[32] abs(p)
  y = f32[32] add(a, q)
  ROOT t = (f32[32], f32[32]) tuple(x, y)
}`)
	_, ds := fuse(t, m, Options{NoGuard: true})
	require.Contains(t, reasons(ds), "sibling")
	var mof *hlo.Instruction
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpFusion && in.Shape.IsTuple() {
			mof = in
		}
	}
	require.NotNil(t, mof, m.String())
	require.Equal(t, hlo.OpTuple, mof.Calls()[0].Root.Opcode)
	require.Len(t, mof.Users, 2)
}

// TestFusedParamsInterleaved: XLA may print a fused computation's
// parameters among the instructions that read them (CPU dumps do).
// Fusing a producer into such a fusion, and merging it with a sibling,
// keeps every list in dependency order and computes what the module did
// (a CPU dump of jit_fn, paired-jax-cpu module_0245, once crashed the
// sibling merge here).
func TestFusedParamsInterleaved(t *testing.T) {
	const text = `HloModule interleaved

fc {
  p1 = f32[8]{0} parameter(1)
  n = f32[8]{0} negate(p1)
  sq = f32[8]{0} multiply(n, n)
  p0 = f32[8]{0} parameter(0)
  ROOT a = f32[8]{0} add(sq, p0)
}

ENTRY main {
  x = f32[8]{0} parameter(0)
  y = f32[8]{0} parameter(1)
  e = f32[8]{0} exponential(y)
  f = f32[8]{0} fusion(x, e), kind=kLoop, calls=fc
  d = f32[8]{0} subtract(x, y)
  s = f32[8]{0} negate(d)
  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(f, s)
}`
	m := parse(t, text)
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(1, 2)))
	want, err := eval.Computation(m.Entry, args)
	require.NoError(t, err)
	_, ds := fuse(t, m, Options{NoGuard: true})
	require.Contains(t, reasons(ds), "sibling", reasons(ds)+m.String())
	got, err := eval.Computation(m.Entry, args)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestGuardDeclines: fusing both slices into their consumer would keep
// two large temps live together; the guard declines the fusion that does
// it, saying by how much, and the lower bound does not rise.
func TestGuardDeclines(t *testing.T) {
	src, err := os.ReadFile("testdata/guard.hlo")
	require.NoError(t, err)
	lb := func(m *hlo.Module) int64 {
		x, err := measureClone(context.Background(), m, Options{Measure: lowerBound}, false)
		require.NoError(t, err)
		return x.lb
	}
	m := parse(t, string(src))
	base := lb(m)

	free := parse(t, string(src))
	fuse(t, free, Options{NoGuard: true})
	require.Greater(t, lb(free), base, "without the guard the bound rises (the test's premise)")

	_, ds := fuse(t, m, Options{})
	require.LessOrEqual(t, lb(m), base)
	require.Regexp(t, `not fused \(fusing it raises the lower bound from \d+ to \d+ bytes\)`, reasons(ds))
	fusions := 0
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpFusion {
			fusions++
		}
	}
	require.Positive(t, fusions, "the harmless fusions are still made")
}

// TestGuardProbe: a probe (Options.Probe) only guides the guard's
// bisection. Whatever it says (the measure itself, nothing ever raised,
// everything raised), the guard keeps and declines what it does without
// one, and a probe that agrees with the measure saves measurements.
func TestGuardProbe(t *testing.T) {
	src, err := os.ReadFile("testdata/guard.hlo")
	require.NoError(t, err)
	run := func(probe MeasureFunc) (text, why string, measured int) {
		counted := func(ctx context.Context, m *hlo.Module) (Measure, error) {
			measured++
			return lowerBound(ctx, m)
		}
		m := parse(t, string(src))
		_, ds := fuse(t, m, Options{Measure: counted, Probe: probe})
		return m.String(), reasons(ds), measured
	}
	want, wantWhy, plain := run(nil)
	require.Contains(t, wantWhy, "raises the lower bound", "the guard declines a fusion here (the test's premise)")
	never := func(context.Context, *hlo.Module) (Measure, error) { return Measure{}, nil }
	always := func(_ context.Context, m *hlo.Module) (Measure, error) {
		return Measure{LowerBound: int64(m.NumIDs())}, nil // grows with every fusion
	}
	for name, probe := range map[string]MeasureFunc{"same": lowerBound, "never": never, "always": always} {
		t.Run(name, func(t *testing.T) {
			got, why, n := run(probe)
			t.Logf("%d measurements (%d without a probe)", n, plain)
			require.Equal(t, want, got)
			require.Equal(t, wantWhy, why)
			if name == "same" {
				require.LessOrEqual(t, n, plain, "the probe bisects, the measure confirms")
			}
		})
	}
}

// TestGuardKeepsCost: the measure's cost is kept from rising as the lower bound
// is. A cost that counts the fusions rises with every fusion, so the guard
// declines each, naming the cost, and the module ends unfused.
func TestGuardKeepsCost(t *testing.T) {
	src, err := os.ReadFile("testdata/guard.hlo")
	require.NoError(t, err)
	fusions := func(m *hlo.Module) int64 {
		n := int64(0)
		for _, c := range m.Computations {
			for _, in := range c.Instructions {
				if in.Opcode == hlo.OpFusion {
					n++
				}
			}
		}
		return n
	}
	free := parse(t, string(src))
	fuse(t, free, Options{NoGuard: true})
	require.Positive(t, fusions(free), "the rules fuse something (the test's premise)")

	m := parse(t, string(src))
	before := m.String()
	counted := func(ctx context.Context, m *hlo.Module) (Measure, error) {
		x, err := lowerBound(ctx, m)
		x.Cost, x.HasCost = fusions(m), true
		return x, err
	}
	changed, ds := fuse(t, m, Options{Measure: counted})
	require.False(t, changed)
	require.Equal(t, before, m.String(), "declining every fusion leaves the module's text as it was")
	require.Regexp(t, `raises the cost \(Options.Cost\) from 0 to [1-9]\d* bytes`, reasons(ds))
}

// TestProducerConsumerMultiOutput: a producer with a user that cannot
// take it in (a dot) becomes a second output of its fusion user, which
// the dot then reads; a cycle through the dot is refused.
func TestProducerConsumerMultiOutput(t *testing.T) {
	m := parse(t, `HloModule pc
ENTRY main {
  p = f32[8,8] parameter(0)
  q = f32[8,8] parameter(1)
  n = f32[8,8] negate(p)
  e = f32[8,8] exponential(q)
  a = f32[8,8] add(n, e)
  d = f32[8,8] dot(n, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8,8], f32[8,8]) tuple(a, d)
}`)
	_, ds := fuse(t, m, Options{NoGuard: true})
	require.Contains(t, reasons(ds), "multi-output n -> loop_add_fusion: fused into loop_add_fusion (n has users that cannot take it in")
	d := m.Entry.Instruction("d")
	require.Equal(t, hlo.OpGetTupleElement, d.Operands[0].Opcode)
	require.Equal(t, int64(1), d.Operands[0].TupleIndex)

	cyc := parse(t, `HloModule pc
ENTRY main {
  p = f32[8,8] parameter(0)
  q = f32[8,8] parameter(1)
  n = f32[8,8] negate(p)
  d = f32[8,8] dot(n, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[8,8] exponential(d)
  ROOT a = f32[8,8] add(n, e)
}`)
	_, ds = fuse(t, cyc, Options{NoGuard: true})
	require.Regexp(t, `multi-output n -> \S+: not fused \(\S+ also reads n through \S+: fusing would make a cycle\)`, reasons(ds))
}
