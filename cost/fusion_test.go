package cost

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// named is the cost of the instruction named name in the entry.
func named(t *testing.T, src, name string) Cost {
	t.Helper()
	m := parse(t, src)
	in := m.Entry.Instruction(name)
	require.NotNil(t, in, name)
	return Instruction(in)
}

// loopFusionBody is FusionCostAnalysis.LoopFusion's fused expression:
// add = c1 + c2; clamp(c2, add, add); exp(add); mul = exp * c3;
// sub = mul - clamp, with the three constants as fusion operands.
const loopFusionBody = `
  %p0 = f32[2,2] parameter(0)
  %p1 = f32[2,2] parameter(1)
  %p2 = f32[2,2] parameter(2)
  %add = f32[2,2] add(%p0, %p1)
  %clamp = f32[2,2] clamp(%p1, %add, %add)
  %exp = f32[2,2] exponential(%add)
  %mul = f32[2,2] multiply(%exp, %p2)
  ROOT %sub = f32[2,2] subtract(%mul, %clamp)
`

// FusionCostAnalysis.LoopFusion.
func TestXLALoopFusion(t *testing.T) {
	c := named(t, `HloModule m
%fused (p0: f32[2,2], p1: f32[2,2], p2: f32[2,2]) -> f32[2,2] {`+loopFusionBody+`}
ENTRY e {
  %c1 = f32[2,2] parameter(0)
  %c2 = f32[2,2] parameter(1)
  %c3 = f32[2,2] parameter(2)
  ROOT %fusion = f32[2,2] fusion(%c1, %c2, %c3), kind=kLoop, calls=%fused
}`, "fusion")
	require.Equal(t, int64(16), c.FLOPs)
	require.Equal(t, int64(4), c.Transcendentals)
	require.Equal(t, int64(64), c.Bytes())
	require.Equal(t, int64(3*16), c.BytesRead)
	require.Equal(t, int64(16), c.BytesWritten)
}

// FusionCostAnalysis.LoopFusionTupleOutput: the fusion also outputs its
// tuple operand, whose leaves are read through the tuple's pointer table.
func TestXLALoopFusionTupleOutput(t *testing.T) {
	c := named(t, `HloModule m
%fused (t: (f32[2,2], f32[2,2]), p0: f32[2,2], p1: f32[2,2], p2: f32[2,2]) -> (f32[2,2], f32[2,2], f32[2,2], (f32[2,2], f32[2,2])) {
  %t = (f32[2,2], f32[2,2]) parameter(0)
  %p0 = f32[2,2] parameter(1)
  %p1 = f32[2,2] parameter(2)
  %p2 = f32[2,2] parameter(3)
  %add = f32[2,2] add(%p0, %p1)
  %clamp = f32[2,2] clamp(%p1, %add, %add)
  %exp = f32[2,2] exponential(%add)
  %mul = f32[2,2] multiply(%exp, %p2)
  %sub = f32[2,2] subtract(%mul, %clamp)
  ROOT %r = (f32[2,2], f32[2,2], f32[2,2], (f32[2,2], f32[2,2])) tuple(%sub, %sub, %mul, %t)
}
ENTRY e {
  %c1 = f32[2,2] parameter(0)
  %c2 = f32[2,2] parameter(1)
  %c3 = f32[2,2] parameter(2)
  %tuple1 = (f32[2,2], f32[2,2]) tuple(%c1, %c2)
  ROOT %fusion = (f32[2,2], f32[2,2], f32[2,2], (f32[2,2], f32[2,2])) fusion(%tuple1, %c1, %c2, %c3), kind=kLoop, calls=%fused
}`, "fusion")
	require.Equal(t, int64(16), c.FLOPs)
	require.Equal(t, int64(4), c.Transcendentals)
	require.Equal(t, int64(4*(5+5)*2*2), c.Bytes())
	require.Equal(t, int64(4*5*2*2), c.BytesWritten)
	require.Equal(t, int64(4*2*2*2+3*4*2*2), c.BytesRead)
}

// FusionCostAnalysis.NoLayout: a broadcast user reads its parameter whole.
func TestXLAFusionNoLayout(t *testing.T) {
	c := named(t, `HloModule m
%fused (p0: f32[2,3,4,5], p1: f32[3]) -> f32[2,3,4,5] {
  %p0 = f32[2,3,4,5] parameter(0)
  %p1 = f32[3] parameter(1)
  %b = f32[2,3,4,5] broadcast(%p1), dimensions={1}
  ROOT %add = f32[2,3,4,5] add(%p0, %b)
}
ENTRY e {
  %c1 = f32[2,3,4,5] parameter(0)
  %c2 = f32[3] parameter(1)
  ROOT %fusion = f32[2,3,4,5] fusion(%c1, %c2), kind=kLoop, calls=%fused
}`, "fusion")
	require.Equal(t, int64(120), c.FLOPs)
	require.Zero(t, c.Transcendentals)
	require.Equal(t, int64(4*(2*3*4*5+3+2*3*4*5)), c.Bytes())
}

// FusionCostAnalysis.NonTupleWithTupleParamBytesAccessed and
// TupleBytesAccessed (XLA's HLO text).
func TestXLAFusionTupleParam(t *testing.T) {
	c := named(t, `HloModule module, is_scheduled=true

fused_computation {
  param = (f32[3,2]{1,0}, f32[3,2]{1,0}) parameter(0)
  gte0 = f32[3,2]{1,0} get-tuple-element(param), index=0
  gte1 = f32[3,2]{1,0} get-tuple-element(param), index=1
  ROOT add = f32[3,2]{1,0} add(gte0, gte1)
}

ENTRY entry {
  param0 = f32[3,2]{1,0} parameter(0)
  param1 = f32[3,2]{1,0} parameter(1)
  tuple = (f32[3,2]{1,0}, f32[3,2]{1,0}) tuple(param0, param1)
  ROOT fusion = f32[3,2]{1,0} fusion(tuple), kind=kLoop, calls=fused_computation
}`, "fusion")
	require.Equal(t, int64(4*3*2*3), c.Bytes())
	require.Equal(t, int64(4*3*2*2), c.BytesRead)
	require.Equal(t, int64(4*3*2), c.BytesWritten)

	c = named(t, `HloModule module, is_scheduled=true

fused_computation {
  param = (f32[2,2]{1,0}, f32[2,2]{1,0}) parameter(0)
  gte0 = f32[2,2]{1,0} get-tuple-element(param), index=0
  gte1 = f32[2,2]{1,0} get-tuple-element(param), index=1
  add = f32[2,2]{1,0} add(gte0, gte1)
  mul = f32[2,2]{1,0} multiply(gte0, gte1)
  ROOT root = (f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(add, mul)
}

ENTRY entry {
  param0 = f32[2,2]{1,0} parameter(0)
  param1 = f32[2,2]{1,0} parameter(1)
  tuple = (f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(param0, param1)
  ROOT fusion = (f32[2,2]{1,0}, f32[2,2]{1,0}) fusion(tuple), kind=kLoop, calls=fused_computation
}`, "fusion")
	require.Equal(t, int64(4*2*2*4), c.Bytes())
	require.Equal(t, int64(4*2*2*2), c.BytesRead)
	require.Equal(t, int64(4*2*2*2), c.BytesWritten)
}

// FusionCostAnalysis.IgnoreUnusedParameterShape: an unused tuple leaf is
// read as the tuple's pointer table; the non-scalar constant is read.
func TestXLAFusionIgnoreUnusedParameterShape(t *testing.T) {
	c := named(t, `HloModule m

f {
  p0 = (s8[3], s8[100]) parameter(0)
  gte0 = s8[3] get-tuple-element(p0), index=0
  c1 = s8[3] constant({0,0,0})
  a1 = s8[3] add(gte0, c1)
  ROOT r1 = s8[3] add(a1, c1)
}

ENTRY e {
  param0 = (s8[3], s8[100]) parameter(0)
  ROOT r0 = s8[3] fusion(param0), kind=kInput, calls=f
}`, "r0")
	require.Equal(t, int64(3), c.BytesWritten)
	require.Equal(t, int64(2*8+3+3), c.BytesRead)
}

// FusionCostAnalysis.Broadcast: a scalar parameter broadcast inside the
// fusion is read once; scalar constants are immediate.
func TestXLAFusionBroadcast(t *testing.T) {
	c := named(t, `HloModule m

f {
  p0 = s8[] parameter(0)
  c1 = s8[] constant(0)
  a1 = s8[] add(p0, c1)
  b1 = s8[10000] broadcast(a1), dimensions={}
  b2 = s8[10000] broadcast(c1), dimensions={}
  ROOT r1 = s8[10000] add(b1, b2)
}

ENTRY e {
  param0 = s8[] parameter(0)
  ROOT r0 = s8[10000] fusion(param0), kind=kInput, calls=f
}`, "r0")
	require.Equal(t, int64(10000), c.BytesWritten)
	require.Equal(t, int64(1), c.BytesRead)
}

// FusionCostAnalysis.LoopFusionDynUpdateSlice: a fusion whose root updates
// its operand in place costs what the bare dynamic-update-slice does.
func TestXLALoopFusionDynUpdateSlice(t *testing.T) {
	fusion := named(t, `HloModule module

_.1 {
  tmp_0 = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} parameter(0)
  tmp_1 = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} parameter(2)
  tmp_2 = s32[]{:T(128)} parameter(1)
  tmp_3 = s32[]{:T(128)} constant(0)
  tmp_4 = bf16[1,32,256,1152]{3,2,1,0:T(8,128)(2,1)S(3)} dynamic-slice(tmp_1, tmp_2, tmp_3, tmp_3, tmp_3), dynamic_slice_sizes={1,32,256,1152}
  tmp_11 = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} dynamic-update-slice(tmp_0, tmp_4, tmp_2, tmp_3, tmp_3, tmp_3)
  ROOT tmp_20 = (bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)}) tuple(tmp_11)
}

ENTRY _ {
  _0 = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} parameter(0)
  _1 = s32[]{:T(128)} parameter(1)
  _4 = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} parameter(2)
  ROOT _ = (bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)}) fusion(_0, _1, _4), kind=kLoop, calls=_.1
}`, "_")
	dus := named(t, `HloModule module

ENTRY _ {
  _0 = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} parameter(0)
  _1 = s32[]{:T(128)} parameter(1)
  _2 = bf16[1,32,256,1152]{3,2,1,0:T(8,128)(2,1)} parameter(2)
  ROOT _ = bf16[50,32,256,1152]{3,2,1,0:T(8,128)(2,1)} dynamic-update-slice(_0, _2, _1, _1, _1, _1)
}`, "_")
	require.Equal(t, dus.Bytes(), fusion.Bytes())
	require.Equal(t, dus.BytesWritten, fusion.BytesWritten)
	require.Equal(t, int64(2*32*256*1152), fusion.BytesWritten)
}

// FusionCostAnalysis.RevisitModifiedFusion: negate(multiply(add, add)),
// then the same with exponential at the root.
func TestXLARevisitModifiedFusion(t *testing.T) {
	src := func(root string) string {
		return `HloModule m
%fused (p: f32[2,2]) -> f32[2,2] {
  %p = f32[2,2] parameter(0)
  %add = f32[2,2] add(%p, %p)
  %mul = f32[2,2] multiply(%add, %add)
  ROOT %r = f32[2,2] ` + root + `(%mul)
}
ENTRY e {
  %c1 = f32[2,2] parameter(0)
  ROOT %fusion = f32[2,2] fusion(%c1), kind=kLoop, calls=%fused
}`
	}
	c := named(t, src("negate"), "fusion")
	require.Equal(t, Cost{FLOPs: 12, BytesRead: 16, BytesWritten: 16}, c)
	c = named(t, src("exponential"), "fusion")
	require.Equal(t, Cost{FLOPs: 8, Transcendentals: 4, BytesRead: 16, BytesWritten: 16}, c)
}

// FusionCostAnalysis.InfeedOutfeed and AllReduceTupleBytesAccessed: these
// count their leaves' bytes, not the tuples' pointer tables.
func TestXLAInfeedOutfeedAllReduce(t *testing.T) {
	src := `HloModule module, is_scheduled=true

ENTRY entry {
  after-all = token[] after-all()
  infeed = ((f32[2,3]{1,0}), token[]) infeed(after-all)
  gte0 = (f32[2,3]{1,0}) get-tuple-element(infeed), index=0
  gte1 = f32[2,3]{1,0} get-tuple-element(gte0), index=0
  add = f32[2,3]{1,0} add(gte1, gte1)
  tuple = (f32[2,3]{1,0}) tuple(add)
  tok = token[] get-tuple-element(infeed), index=1
  ROOT outfeed = token[] outfeed(tuple, tok)
}`
	require.Equal(t, Cost{BytesWritten: 4 * 2 * 3}, named(t, src, "infeed"))
	require.Equal(t, Cost{BytesRead: 4 * 2 * 3}, named(t, src, "outfeed"))

	c := named(t, `HloModule module, is_scheduled=true

sum {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}

ENTRY entry {
  param0 = f32[2,2]{1,0} parameter(0)
  param1 = f32[2,2]{1,0} parameter(1)
  ROOT all-reduce = (f32[2,2]{1,0}, f32[2,2]{1,0}) all-reduce(param0, param1), replica_groups={{0,1}}, to_apply=sum
}`, "all-reduce")
	require.Equal(t, int64(4*2*2*4), c.Bytes())
	require.Equal(t, int64(4*2*2*2), c.BytesWritten)
	require.Equal(t, int64(2*2*2), c.FLOPs) // HandleAllReduce: one op per output element
}
