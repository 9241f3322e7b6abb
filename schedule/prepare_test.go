package schedule

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// TestRepairDonatedInvariantLeaf: a donated parameter that a while carries
// unchanged (a loop-invariant slot) while its buffer, the output it is
// donated to, takes the loop's accumulator before the loop starts. The
// body reads the parameter after the accumulator's initial value is
// written over it; the repair must copy the parameter where the loop state
// is built (the read is in the body, which only the while hands it to).
// Simplify removes the frontend's copy of the parameter and leaves exactly
// this in the llama31 fp8 corpus modules.
func TestRepairDonatedInvariantLeaf(t *testing.T) {
	for _, sched := range []string{"", List, DFS, PostOrder} {
		ms, err := hlo.ParseFile(filepath.Join("testdata", "donated_invariant.hlo"))
		require.NoError(t, err)
		a, err := prepare(ms[0], sched)
		require.NoError(t, err, sched)
		require.Empty(t, a.Interference(), sched)
		// The copy feeds the loop state: p1 is read only at its copy.
		var p1 *liveness.Value
		for _, v := range a.Values {
			if v.Inst.Name == "p1" {
				p1 = v
			}
		}
		require.NotNil(t, p1)
		tup := ms[0].Entry.Instruction("t")
		require.NotNil(t, tup)
		require.Equal(t, hlo.OpCopy, tup.Operands[2].Opcode, sched)
		require.Same(t, p1.Inst, tup.Operands[2].Operands[0], sched)
	}
}

// liveOutLoop hands parameter p0 to a while loop, which writes its state
// over p0's bytes, and returns p0 too; HEADER is the module's header.
const liveOutLoop = `HloModule liveout, is_scheduled=trueHEADER

cond {
  pc = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(pc), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  pb = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(pb), index=0
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  x = f32[8] get-tuple-element(pb), index=1
  y = f32[8] negate(x)
  ROOT t = (s32[], f32[8]) tuple(ni, y)
}

ENTRY main {
  p0 = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, p0)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  r = f32[8] get-tuple-element(w), index=1
  ROOT out = (f32[8], f32[8]) tuple(r, p0)
}
`

// TestRepairLiveOutRead: a scheduled module that never went through copy
// insertion donates p0 to the loop's result (liveOutLoop), and returns p0
// too. The caller reads the output after the last step, so the
// parameter's value, cut short where the loop's value starts, would be
// read after it was overwritten: the repair gives the root a copy.
func TestRepairLiveOutRead(t *testing.T) {
	m, err := hlo.ParseModule("liveout.hlo", strings.Replace(liveOutLoop, "HEADER", ", input_output_alias={ {0}: (0, {}) }", 1))
	require.NoError(t, err)
	a, err := prepare(m, "")
	require.NoError(t, err)
	require.Empty(t, a.Interference())
	out := a.ValueAt(m.Entry.Root, hlo.ShapeIndex{1})
	require.Equal(t, hlo.OpCopy, out.Inst.Opcode, "the root returns a copy of p0")
	require.Equal(t, "p0", out.Inst.Operands[0].Name)
	require.Equal(t, a.EndTime(), out.Range.End, "the copy lives to the end")
	// p0's own buffer still holds the loop's state; p0 itself is no
	// longer live out.
	p0 := a.ValueAt(m.Entry.Instruction("p0"), nil)
	require.False(t, p0.LiveOut)
}

// TestRepairUndonatedParameterWrite: the same module with p0 not donated.
// Its bytes are the caller's: the loop may not write them, whatever reads
// them later (XLA's copy insertion copies an entry parameter before an
// in-place use unless it is donated). The repair hands the loop a copy,
// made right before the tuple that starts it, and p0 keeps its buffer to itself, live
// to the end.
func TestRepairUndonatedParameterWrite(t *testing.T) {
	m, err := hlo.ParseModule("liveout.hlo", strings.Replace(liveOutLoop, "HEADER", "", 1))
	require.NoError(t, err)
	a, err := prepare(m, "")
	require.NoError(t, err)
	require.Empty(t, a.Interference())
	init := m.Entry.Instruction("init")
	require.Equal(t, hlo.OpCopy, init.Operands[1].Opcode, "the loop's state starts from a copy of p0")
	require.Equal(t, "p0", init.Operands[1].Operands[0].Name)
	p0 := a.ValueAt(m.Entry.Instruction("p0"), nil)
	for _, w := range p0.Buffer.Values {
		require.True(t, w == p0 || w.IsPhi, "%s shares p0's buffer", w.Name())
	}
	require.True(t, p0.LiveOut)
}

// TestRepairReadThroughBitcast: a read that reaches a value through a
// bitcast gets the copy in its own shape: a bitcast of the copy, not the
// copy of the value's shape (torax's f64[1] read as f64[] after
// simplification).
func TestRepairReadThroughBitcast(t *testing.T) {
	m, err := hlo.ParseModule("bitcast.hlo", `HloModule bitcastread, is_scheduled=true

cond {
  pc = (s32[], f32[1]) parameter(0)
  i = s32[] get-tuple-element(pc), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  pb = (s32[], f32[1]) parameter(0)
  i = s32[] get-tuple-element(pb), index=0
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  x = f32[1] get-tuple-element(pb), index=1
  y = f32[1] negate(x)
  ROOT t = (s32[], f32[1]) tuple(ni, y)
}

ENTRY main {
  p0 = f32[1] parameter(0)
  a = f32[1] negate(p0)
  zero = s32[] constant(0)
  init = (s32[], f32[1]) tuple(zero, a)
  w = (s32[], f32[1]) while(init), condition=cond, body=body
  r = f32[1] get-tuple-element(w), index=1
  b = f32[] bitcast(a)
  c = f32[] negate(b)
  rr = f32[] reshape(r)
  ROOT out = (f32[], f32[]) tuple(c, rr)
}
`)
	require.NoError(t, err)
	a, err := prepare(m, "")
	require.NoError(t, err)
	require.Empty(t, a.Interference())
	require.NoError(t, hlo.Verify(m))
	c := m.Entry.Instruction("c")
	bc := c.Operands[0]
	require.Equal(t, hlo.OpBitcast, bc.Opcode)
	require.Equal(t, "f32[]", bc.Shape.StringNoLayout())
	require.Equal(t, hlo.OpCopy, bc.Operands[0].Opcode, "c reads a bitcast of a copy of a")
	require.Equal(t, "a", bc.Operands[0].Operands[0].Name)
	require.NoError(t, a.Schedule.Validate(m, a.Kinds))
}

// TestCopyWhileInitSharedLeaf: a value at two leaves of a loop's state,
// one the loop writes and one it keeps unchanged and reads, gets a copy
// at the written leaf; otherwise the loop writes over the bytes the
// invariant leaf still reads (the pattern of torax's solver loops).
func TestCopyWhileInitSharedLeaf(t *testing.T) {
	m, err := hlo.ParseModule("shared.hlo", `HloModule shared

cond {
  pc = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(pc), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  pb = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(pb), index=0
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  x = f32[4] get-tuple-element(pb), index=1
  k = f32[4] get-tuple-element(pb), index=2
  y = f32[4] add(x, k)
  ROOT t = (s32[], f32[4], f32[4]) tuple(ni, y, k)
}

ENTRY main {
  p0 = f32[4] parameter(0)
  a = f32[4] negate(p0)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, a, a)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
`)
	require.NoError(t, err)
	changed, err := liveness.InsertCopies(m)
	require.NoError(t, err)
	require.True(t, changed)
	init := m.Entry.Instruction("w").Operands[0]
	require.Equal(t, hlo.OpCopy, init.Operands[1].Opcode, "the written leaf gets a copy")
	require.Equal(t, "a", init.Operands[2].Name, "the invariant leaf keeps a")
	a, err := prepare(m, "")
	require.NoError(t, err)
	require.Empty(t, a.Interference())
}

// TestRepairInvariantStateOfInnerLoop: an outer loop's state element,
// handed on to an inner loop as loop-invariant state (through a
// get-tuple-element of the outer body's parameter), is read inside the
// inner loop after the outer body has written the element's next value:
// the repair copies it where the inner loop's state is built, not inside
// the inner loop, where the copy would come too late (diffrax under the
// list scheduler).
func TestRepairInvariantStateOfInnerLoop(t *testing.T) {
	m, err := hlo.ParseModule("nested.hlo", `HloModule nested, is_scheduled=true

inner_cond {
  pc = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(pc), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}

inner_body {
  pb = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(pb), index=0
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  k = f32[4] get-tuple-element(pb), index=1
  acc = f32[4] get-tuple-element(pb), index=2
  acc2 = f32[4] add(acc, k)
  ROOT t = (s32[], f32[4], f32[4]) tuple(ni, k, acc2)
}

outer_cond {
  pc = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(pc), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

outer_body {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  y = f32[4] negate(x)
  zero = s32[] constant(0)
  zf = f32[] constant(0)
  z = f32[4] broadcast(zf), dimensions={}
  it = (s32[], f32[4], f32[4]) tuple(zero, x, z)
  w = (s32[], f32[4], f32[4]) while(it), condition=inner_cond, body=inner_body
  r = f32[4] get-tuple-element(w), index=2
  ROOT t = (s32[], f32[4], f32[4]) tuple(ni, y, r)
}

ENTRY main {
  p0 = f32[4] parameter(0)
  c = f32[4] copy(p0)
  zero = s32[] constant(0)
  zf = f32[] constant(0)
  z = f32[4] broadcast(zf), dimensions={}
  init = (s32[], f32[4], f32[4]) tuple(zero, c, z)
  w = (s32[], f32[4], f32[4]) while(init), condition=outer_cond, body=outer_body
  ROOT r = f32[4] get-tuple-element(w), index=2
}
`)
	require.NoError(t, err)
	a, err := prepare(m, "")
	require.NoError(t, err)
	require.Empty(t, a.Interference())
	require.NoError(t, hlo.Verify(m))
	// The inner loop's state holds a copy of x, made in the outer body.
	it := m.Computation("outer_body").Instruction("it")
	require.Equal(t, hlo.OpCopy, it.Operands[1].Opcode)
	require.Equal(t, "outer_body", it.Operands[1].Parent.Name)
}
