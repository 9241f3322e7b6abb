package hlo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// verifyModules are the computations the cases of TestVerifyRejects call;
// each case appends its own ENTRY.
const verifyModules = `HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
cond {
  c = (s32[], f32[4]) parameter(0)
  ROOT t = pred[] constant(true)
}
fcond {
  c = (s32[], f32[4]) parameter(0)
  ROOT f = f32[] constant(0)
}
body {
  s = (s32[], f32[4]) parameter(0)
  ROOT r = (s32[], f32[4]) tuple(s#0, s#1)
}
branch {
  q = f32[4] parameter(0)
  ROOT n = f32[4] negate(q)
}
`

// TestVerifyRejects holds each structural error the analyses would
// otherwise trip over to its positioned message. Line 29 is the first line
// of the entry computation below verifyModules.
func TestVerifyRejects(t *testing.T) {
	tests := []struct {
		name, entry, want string
	}{
		{"broadcast to a dimension of another size",
			"  p = f32[4] parameter(0)\n  ROOT b = f32[8] broadcast(p), dimensions={0}",
			"bad.hlo:30:8: broadcast b: operand dimension 0 (size 4) maps to result dimension 0 of size 8 (f32[8] from f32[4])"},
		{"broadcast without dimensions for an array",
			"  p = f32[4] parameter(0)\n  ROOT b = f32[8] broadcast(p), dimensions={}",
			"bad.hlo:30:8: broadcast b: dimensions={} has 0 entries for an operand of rank 1 (f32[4])"},
		{"broadcast to a dimension out of range",
			"  p = f32[4] parameter(0)\n  ROOT b = f32[2,4] broadcast(p), dimensions={2}",
			"bad.hlo:30:8: broadcast b: dimensions={2}: 2 is not a dimension of the result f32[2,4]"},
		{"broadcast changing the element type",
			"  p = f32[4] parameter(0)\n  ROOT b = s32[2,4] broadcast(p), dimensions={1}",
			"bad.hlo:30:8: broadcast b has element type s32, but operand p has f32"},
		{"instruction is its own operand",
			"  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, a)",
			"bad.hlo:30:8: a is its own operand (operand 1)"},
		{"instruction is its own control predecessor",
			"  p = f32[4] parameter(0)\n  ROOT a = f32[4] negate(p), control-predecessors={a}",
			"bad.hlo:30:8: a is its own control predecessor"},
		{"while without condition and body",
			"  p = (s32[], f32[4]) parameter(0)\n  ROOT w = (s32[], f32[4]) while(p)",
			"bad.hlo:30:8: while w needs condition= and body="},
		{"while without body",
			"  p = (s32[], f32[4]) parameter(0)\n  ROOT w = (s32[], f32[4]) while(p), condition=cond",
			"bad.hlo:30:8: while w needs body="},
		{"while condition not pred[]",
			"  p = (s32[], f32[4]) parameter(0)\n  ROOT w = (s32[], f32[4]) while(p), condition=fcond, body=body",
			"bad.hlo:30:8: while w: condition fcond returns f32[], want pred[]"},
		{"while state shape",
			"  p = (s32[], f32[5]) parameter(0)\n  ROOT w = (s32[], f32[5]) while(p), condition=cond, body=body",
			"bad.hlo:30:8: while w: the loop state has shape (s32[], f32[5]), but the parameter of cond has (s32[], f32[4])"},
		{"while result shape",
			"  p = (s32[], f32[4]) parameter(0)\n  ROOT w = (s32[], f32[4], f32[]) while(p), condition=cond, body=body",
			"bad.hlo:30:8: while w has shape (s32[], f32[4], f32[]), but its body body returns (s32[], f32[4])"},
		{"conditional without branches",
			"  i = s32[] parameter(0)\n  ROOT c = f32[4] conditional(i)",
			"bad.hlo:30:8: conditional c has no branch computations"},
		{"conditional selector type",
			"  i = f32[] parameter(0)\n  q = f32[4] parameter(1)\n  ROOT c = f32[4] conditional(i, q), branch_computations={branch}",
			"bad.hlo:31:8: conditional c: selector i has shape f32[], want pred[] or s32[]"},
		{"conditional pred selector with one branch",
			"  i = pred[] parameter(0)\n  q = f32[4] parameter(1)\n  ROOT c = f32[4] conditional(i, q), branch_computations={branch}",
			"bad.hlo:31:8: conditional c has a pred[] selector and 1 branches, want 2"},
		{"conditional branch operand shape",
			"  i = s32[] parameter(0)\n  q = f32[3] parameter(1)\n  ROOT c = f32[4] conditional(i, q), branch_computations={branch}",
			"bad.hlo:31:8: conditional c: operand 1 has shape f32[3], but branch branch takes f32[4]"},
		{"conditional result shape",
			"  i = s32[] parameter(0)\n  q = f32[4] parameter(1)\n  ROOT c = f32[2] conditional(i, q), branch_computations={branch}",
			"bad.hlo:31:8: conditional c has shape f32[2], but branch branch returns f32[4]"},
		{"call without to_apply",
			"  p = f32[] parameter(0)\n  ROOT c = f32[] call(p, p)",
			"bad.hlo:30:8: call c does not name the computation it calls (to_apply=)"},
		{"call result structure",
			"  p = f32[] parameter(0)\n  ROOT c = (f32[]) call(p, p), to_apply=add",
			"bad.hlo:30:8: call c has shape (f32[]), but add returns f32[]"},
		{"reduce without to_apply",
			"  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}",
			"bad.hlo:31:8: reduce r needs to_apply="},
		{"all-reduce without to_apply",
			"  p = f32[4] parameter(0)\n  ROOT r = f32[4] all-reduce(p)",
			"bad.hlo:30:8: all-reduce r needs to_apply="},
		{"sort without to_apply",
			"  p = f32[4] parameter(0)\n  ROOT s = f32[4] sort(p), dimensions={0}",
			"bad.hlo:30:8: sort s needs to_apply="},
		{"sort comparator result",
			"  p = f32[4] parameter(0)\n  ROOT s = f32[4] sort(p), dimensions={0}, to_apply=add",
			"bad.hlo:30:8: sort s: comparator add returns f32[], want pred[]"},
		{"sort comparator parameters",
			"  p = f32[4] parameter(0)\n  q = f32[4] parameter(1)\n  ROOT s = (f32[4], f32[4]) sort(p, q), dimensions={0}, to_apply=less",
			"bad.hlo:31:8: sort s has 2 operands, so its comparator less must take 4 parameters, not 2"},
		{"fusion without calls",
			"  p = f32[4] parameter(0)\n  ROOT f = f32[4] fusion(p), kind=kLoop",
			"bad.hlo:30:8: fusion f does not name its fused computation (calls=)"},
		{"async-start without calls",
			"  p = f32[4] parameter(0)\n  ROOT a = ((f32[4]), f32[4]) async-start(p)",
			"bad.hlo:30:8: async-start a does not name the computation it runs (calls=)"},
		{"select-and-scatter without scatter",
			"  p = f32[4] parameter(0)\n  s = f32[4] parameter(1)\n  z = f32[] constant(0)\n  ROOT r = f32[4] select-and-scatter(p, s, z), select=less",
			"bad.hlo:32:8: select-and-scatter r needs select= and scatter="},
		{"fusion calling two computations",
			"  p = f32[4] parameter(0)\n  ROOT f = f32[4] fusion(p), kind=kLoop, calls={branch, branch}",
			"bad.hlo:30:8: fusion f calls 2 computations, want 1"},
		{"fused computation called by a call",
			"  p = f32[4] parameter(0)\n  f = f32[4] fusion(p), kind=kLoop, calls=branch\n  ROOT c = f32[4] call(f), to_apply=branch",
			"bad.hlo:31:8: call c calls branch, the fused computation of fusion f; only fusions may call it"},
		{"get-tuple-element shape",
			"  p = ((f32[4], f32[4]), f32[2]) parameter(0)\n  ROOT g = f32[64] get-tuple-element(p), index=0",
			"bad.hlo:30:8: get-tuple-element g has shape f32[64], but element 0 of p is (f32[4], f32[4])"},
		{"tuple of an array shape",
			"  p = f32[4] parameter(0)\n  ROOT t = f32[4] tuple(p)",
			"bad.hlo:30:8: tuple t has shape f32[4], which is not a tuple"},
		{"tuple element shape",
			"  p = f32[4] parameter(0)\n  q = (f32[4], f32[4]) tuple(p, p)\n  ROOT t = (f32[4], f32[4]) tuple(q, p)",
			"bad.hlo:31:8: tuple t: element 0 has shape f32[4], but operand q has (f32[4], f32[4])"},
		{"copy shape",
			"  p = (f32[4], f32[2]) parameter(0)\n  ROOT c = (f32[4], (f32[2], f32[3])) copy(p)",
			"bad.hlo:30:8: copy c has shape (f32[4], (f32[2], f32[3])), but operand p is (f32[4], f32[2])"},
		{"opt-barrier shape",
			"  p = (f32[4], f32[2]) parameter(0)\n  ROOT b = (f32[4], f32[3]) opt-barrier(p)",
			"bad.hlo:30:8: opt-barrier b has shape (f32[4], f32[3]), but operand p is (f32[4], f32[2])"},
		{"bitcast size",
			"  p = f32[4] parameter(0)\n  ROOT b = f32[8] bitcast(p)",
			"bad.hlo:30:8: bitcast b has shape f32[8], which does not take the bytes of operand p, f32[4]"},
		{"dynamic-update-slice shape",
			"  p = f32[4] parameter(0)\n  u = f32[2] parameter(1)\n  i = s32[] parameter(2)\n  ROOT d = f32[8] dynamic-update-slice(p, u, i)",
			"bad.hlo:32:8: dynamic-update-slice d has shape f32[8], but operand p is f32[4]"},
		{"copy-done shape",
			"  p = f32[4] parameter(0)\n  s = (f32[4], f32[4], u32[]) copy-start(p)\n  ROOT d = f32[8] copy-done(s)",
			"bad.hlo:31:8: copy-done d has shape f32[8], but element 0 of operand s is f32[4]"},
		{"fusion result shape",
			"  p = f32[4] parameter(0)\n  ROOT f = f32[8] fusion(p), kind=kLoop, calls=branch",
			"bad.hlo:30:8: fusion f has shape f32[8], but branch returns f32[4]"},
		{"in-place alias shapes",
			"  p = f32[4] parameter(0)\n  ROOT c = f32[8] custom-call(p), custom_call_target=\"x\", output_to_operand_aliasing={{}: (0, {})}",
			"bad.hlo:30:8: custom-call c: output {} (f32[8]) aliases {} of operand p (f32[4]), a different shape"},
		{"in-place alias operand",
			"  p = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(p), custom_call_target=\"x\", output_to_operand_aliasing={{}: (1, {})}",
			"bad.hlo:30:8: custom-call c: output_to_operand_aliasing names operand 1 of 1"},
		{"computation on an op that calls none",
			"  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p), to_apply=add",
			"bad.hlo:30:8: negate n calls a computation, which a negate cannot"},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, seen[tc.want], "two cases expect the same message %q", tc.want)
			seen[tc.want] = true
			src := verifyModules + "ENTRY e {\n" + tc.entry + "\n}\n"
			require.Equal(t, 27, strings.Count(verifyModules, "\n"), "lines of verifyModules; the positions above assume 27")
			err := parseAndVerify(src)
			require.Error(t, err, "want %q", tc.want)
			require.Equal(t, tc.want, strings.Split(err.Error(), "\n")[0])
		})
	}
}

// TestVerifyAcceptsUnknownOpcode: an opcode this package does not know is
// kept and printed (hlomem fmt round-trips it); refusing to plan it is the
// analyses' business.
func TestVerifyAcceptsUnknownOpcode(t *testing.T) {
	src := "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] frobnicate(p), to_apply=e\n}"
	require.NoError(t, parseAndVerify(strings.Replace(src, ", to_apply=e", "", 1)))
}

// TestFlattenCallGraphBothContexts: a computation called in its caller's
// thread and also as a reduction function gets a clone at the sequential
// call site, as XLA's FlattenCallGraph does for CallContext::kBoth; the
// analyses used to refuse such a module with a message without position.
func TestFlattenCallGraphBothContexts(t *testing.T) {
	m, err := ParseModule("both.hlo", `HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  r = f32[] reduce(p, z), dimensions={0}, to_apply=add
  ROOT c = f32[] call(r, z), to_apply=add
}`)
	require.NoError(t, err)
	changed, err := FlattenCallGraph(m)
	require.NoError(t, err)
	require.True(t, changed, "want a change")
	r, c := m.Entry.Instruction("r"), m.Entry.Instruction("c")
	require.Equal(t, "add", r.ToApply().Name, "computation the reduce calls")
	require.Equal(t, "add.clone", c.ToApply().Name, "computation the call calls")
	require.NoError(t, Verify(m))
}

// TestFlattenCallGraphVerifies: FlattenCallGraph refuses an invalid module
// with Verify's errors and leaves it as it was.
func TestFlattenCallGraphVerifies(t *testing.T) {
	m, err := ParseModule("in.hlo", "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, a)\n}")
	require.NoError(t, err)
	before := m.String()
	changed, err := FlattenCallGraph(m)
	require.False(t, changed)
	require.EqualError(t, err, "in.hlo:4:8: a is its own operand (operand 1)")
	require.Equal(t, before, m.String(), "the module changed")
}
