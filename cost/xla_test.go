package cost

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// The tests in this file translate XLA's xla/service/hlo_cost_analysis_test.cc
// (commit 001918b7): each builds the test's computation as HLO text (the
// XlaBuilder calls written out as the instructions they make) and checks
// the figures the XLA test expects. XLA's bytes_accessed is BytesRead +
// BytesWritten; operand_bytes_accessed summed over operands is BytesRead,
// output_bytes_accessed is BytesWritten. f32 is 4 bytes, a tuple's pointer
// table 8 bytes per element (the test's kPointerSize).

func parse(t testing.TB, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("test.hlo", src)
	require.NoError(t, err)
	return m
}

// rootCost is the cost of the entry's root, as the XLA tests visit it
// (root_instruction()->Accept(&analysis) visits the root and its operands;
// parameters and scalar constants cost nothing, so the sum is the root's
// unless stated).
func rootCost(t testing.TB, src string) Cost {
	t.Helper()
	return Module(parse(t, src))
}

const addComp = `
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %a = f32[] add(%x, %y)
}
`

const gtComp = `
%gt (x: f32[], y: f32[]) -> pred[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %g = pred[] compare(%x, %y), direction=GT
}
`

// HloCostAnalysisTest.MatrixMultiply.
func TestXLAMatrixMultiply(t *testing.T) {
	c := rootCost(t, `HloModule m
ENTRY e {
  %lhs = f32[10,5] parameter(0)
  %rhs = f32[5,30] parameter(1)
  ROOT %dot = f32[10,30] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}`)
	require.Equal(t, int64(2*10*30*5), c.FLOPs)
	require.Zero(t, c.Transcendentals)
	require.Equal(t, int64(4*(10*5+5*30)), c.BytesRead)
	require.Equal(t, int64(4*10*30), c.BytesWritten)
}

// HloCostAnalysisTest.DotGeneral, DotGeneral2 and DotGeneral3.
func TestXLADotGeneral(t *testing.T) {
	c := rootCost(t, `HloModule m
ENTRY e {
  %lhs = f32[10,5,5] parameter(0)
  %rhs = f32[5,5,30] parameter(1)
  ROOT %dot = f32[10,30] dot(%lhs, %rhs), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
}`)
	require.Equal(t, int64(2*10*30*5*5), c.FLOPs)
	require.Equal(t, int64(4*(10*5*5+5*5*30+10*30)), c.Bytes())

	c = rootCost(t, `HloModule m
ENTRY e {
  %lhs = f32[10,5,5] parameter(0)
  %rhs = f32[5,5,30] parameter(1)
  ROOT %dot = f32[5,10,30] dot(%lhs, %rhs), lhs_batch_dims={2}, lhs_contracting_dims={1}, rhs_batch_dims={1}, rhs_contracting_dims={0}
}`)
	require.Equal(t, int64(2*10*30*5*5), c.FLOPs)
	require.Equal(t, int64(4*(10*5*5+5*5*30+5*10*30)), c.Bytes())

	c = rootCost(t, `HloModule m
ENTRY e {
  %lhs = f32[10,5] parameter(0)
  %rhs = f32[5,30] parameter(1)
  ROOT %dot = f32[10,5,5,30] dot(%lhs, %rhs)
}`)
	require.Equal(t, int64(2*10*30*5*5), c.FLOPs)
	require.Equal(t, int64(4*(10*5+5*30+5*5*10*30)), c.Bytes())
}

// HloCostAnalysisTest.Map: x => exp(x + 0.5) over f32[10].
func TestXLAMap(t *testing.T) {
	c := rootCost(t, `HloModule m
%add_and_exp (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %half = f32[] constant(0.5)
  %a = f32[] add(%x, %half)
  ROOT %e = f32[] exponential(%a)
}
ENTRY e {
  %in = f32[10] parameter(0)
  ROOT %map = f32[10] map(%in), dimensions={0}, to_apply=%add_and_exp
}`)
	require.Equal(t, int64(10), c.FLOPs)
	require.Equal(t, int64(10), c.Transcendentals)
	require.Equal(t, int64(80), c.Bytes())
}

// conv builds a 2-D convolution module with XlaBuilder's default dimension
// numbers (CreateDefaultConvDimensionNumbers: bf01_oi01->bf01).
func conv(in, k, out, window, extra string) string {
	return `HloModule m
ENTRY e {
  %input = f32` + in + ` parameter(0)
  %kernel = f32` + k + ` parameter(1)
  ROOT %conv = f32` + out + ` convolution(%input, %kernel), ` + window + `dim_labels=bf01_oi01->bf01` + extra + `
}`
}

// HloCostAnalysisTest.Convolution, ConvolutionSame,
// ConvolutionWithFeatureGroup, BaseDilatedConvolution.
func TestXLAConvolution(t *testing.T) {
	c := rootCost(t, conv("[1,1,10,20]", "[1,1,3,3]", "[1,1,8,18]", "window={size=3x3}, ", ""))
	require.Equal(t, int64(8*18*2*3*3), c.FLOPs)
	require.Equal(t, int64(4*(10*20+3*3+8*18)), c.Bytes())

	// Padding::kSame on a 3x3 input with a 3x3 kernel pads 1 on each side.
	c = rootCost(t, conv("[1,1,3,3]", "[1,1,3,3]", "[1,1,3,3]", "window={size=3x3 pad=1_1x1_1}, ", ""))
	require.Equal(t, int64(2*(4+6+4+6+9+6+4+6+4)), c.FLOPs)
	require.Equal(t, int64(4*(9+9+9)), c.Bytes())

	c = rootCost(t, conv("[1,120,10,20]", "[120,1,3,3]", "[1,120,8,18]", "window={size=3x3}, ", ", feature_group_count=120"))
	require.Equal(t, int64(120*8*18*2*3*3), c.FLOPs)
	require.Equal(t, int64(4*(120*10*20+120*3*3+120*8*18)), c.Bytes())

	// Strides 1, padding 1 on each side, lhs dilation {3,5}, rhs dilation
	// {7,11}: the output is 16x76 (28+2-15+1, 96+2-23+1).
	c = rootCost(t, conv("[1,1,10,20]", "[1,1,3,3]", "[1,1,16,76]",
		"window={size=3x3 pad=1_1x1_1 lhs_dilate=3x5 rhs_dilate=7x11}, ", ""))
	require.Equal(t, int64(1472), c.FLOPs)
}

// HloCostAnalysisTest.ConvolutionExtreme and ConvolutionExtreme2: the two
// patterns GetConvolutionFlops counts without enumerating kLarge² pairs.
func TestXLAConvolutionExtreme(t *testing.T) {
	const large = 512 * 1024
	src := `HloModule m
ENTRY e {
  %input = f32[1,1,524288] parameter(0)
  %kernel = f32[1,1,524288] parameter(1)
  ROOT %conv = f32[1,1,524288] convolution(%input, %kernel), window={size=524288 stride=524287 lhs_dilate=524288}, dim_labels=bf0_oi0->bf0
}`
	require.Equal(t, int64(2*large), rootCost(t, src).FLOPs)
	src = `HloModule m
ENTRY e {
  %input = f32[1,1,1] parameter(0)
  %kernel = f32[1,1,524288] parameter(1)
  ROOT %conv = f32[1,1,524288] convolution(%input, %kernel), window={size=524288 pad=524287_524287}, dim_labels=bf0_oi0->bf0
}`
	require.Equal(t, int64(2*large), rootCost(t, src).FLOPs)
}

// HloCostAnalysisTest.MatmulAndConvolutionCanBeTheSameComputation.
func TestXLAMatmulAndConvolutionSame(t *testing.T) {
	cv := rootCost(t, conv("[64,64,1,1]", "[64,64,1,1]", "[64,64,1,1]", "window={size=1x1}, ", ""))
	mm := rootCost(t, `HloModule m
ENTRY e {
  %lhs = f32[64,64] parameter(0)
  %rhs = f32[64,64] parameter(1)
  ROOT %dot = f32[64,64] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}`)
	require.Equal(t, mm.FLOPs, cv.FLOPs)
	require.Equal(t, int64(2*64*64*64), cv.FLOPs)
}

// HloCostAnalysisTest.Reduce.
func TestXLAReduce(t *testing.T) {
	c := rootCost(t, `HloModule m`+addComp+`
ENTRY e {
  %input = f32[10,20] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[10] reduce(%input, %zero), dimensions={1}, to_apply=%add
}`)
	require.Equal(t, int64(10*20-10), c.FLOPs)
	require.Equal(t, int64(4*(10*20+1+10)), c.Bytes())
}

// HloCostAnalysisTest.ReduceWindow and ReduceWindowWithOverlaps.
func TestXLAReduceWindow(t *testing.T) {
	c := rootCost(t, `HloModule m`+addComp+`
ENTRY e {
  %input = f32[10,20] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[2,4] reduce-window(%input, %zero), window={size=4x5 stride=4x5}, to_apply=%add
}`)
	require.Equal(t, int64(2*4*(4*5-1)), c.FLOPs)
	require.Equal(t, int64(4*(10*20+1+2*4)), c.Bytes())

	c = rootCost(t, `HloModule m`+addComp+`
ENTRY e {
  %input = f32[8,8] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[3,4] reduce-window(%input, %zero), window={size=4x5 stride=2x1}, to_apply=%add
}`)
	require.Equal(t, int64(3*4*(4*5-1)), c.FLOPs)
	require.Equal(t, int64(4*(8*8+1+3*4)), c.Bytes())
}

// HloCostAnalysisTest.ReduceWindowSingleDimReduceBroadcast (XLA's HLO text).
func TestXLAReduceWindowSingleDimReduceBroadcast(t *testing.T) {
	c := rootCost(t, `HloModule fusion.50

region_0.868 {
  Arg_1.870 = f32[] parameter(1)
  Arg_0.869 = f32[] parameter(0)
  ROOT maximum.871 = f32[] maximum(Arg_0.869, Arg_1.870)
}

ENTRY fusion.50 {
  constant.367 = f32[] constant(-inf)
  param0 = f32[2,3,1024,1024]{2,3,1,0} parameter(0)
  ROOT reduce-window.159 = f32[2,3,1024,1024]{2,3,1,0} reduce-window(param0, constant.367), window={size=1x1x1x2047 pad=0_0x0_0x0_0x1023_1023}, to_apply=region_0.868
}`)
	require.Equal(t, int64(2*3*1024+1024-1), c.FLOPs)
	require.Equal(t, int64(4*2*3*1024*1024+4), c.BytesRead)
	require.Equal(t, int64(4*2*3*1024*1024), c.BytesWritten)
}

// HloCostAnalysisTest.ReduceWindowVariadic.
func TestXLAReduceWindowVariadic(t *testing.T) {
	c := rootCost(t, `HloModule m
%min2 (x0: f32[], x1: f32[], y0: f32[], y1: f32[]) -> (f32[], f32[]) {
  %x0 = f32[] parameter(0)
  %x1 = f32[] parameter(1)
  %y0 = f32[] parameter(2)
  %y1 = f32[] parameter(3)
  %m0 = f32[] minimum(%x0, %y0)
  %m1 = f32[] minimum(%x1, %y1)
  ROOT %t = (f32[], f32[]) tuple(%m0, %m1)
}
ENTRY e {
  %input1 = f32[10,20] parameter(0)
  %input2 = f32[10,20] parameter(1)
  %init = f32[] constant(0)
  ROOT %r = (f32[2,4], f32[2,4]) reduce-window(%input1, %input2, %init, %init), window={size=4x5 stride=4x5}, to_apply=%min2
}`)
	require.Equal(t, int64(2*4*2*(4*5-1)), c.FLOPs)
	// Both inputs, both inits, and the output tuple's pointer table.
	require.Equal(t, int64(4*(10*20*2+2*3)), c.Bytes())
}

// HloCostAnalysisTest.SelectAndScatter.
func TestXLASelectAndScatter(t *testing.T) {
	c := rootCost(t, `HloModule m`+addComp+gtComp+`
ENTRY e {
  %operand = f32[10,20] parameter(0)
  %source = f32[2,4] parameter(1)
  %zero = f32[] constant(0)
  ROOT %s = f32[10,20] select-and-scatter(%operand, %source, %zero), window={size=4x5 stride=4x5}, select=%gt, scatter=%add
}`)
	require.Equal(t, int64(2*4*(4*5-1+1)), c.FLOPs)
	require.Equal(t, int64(4*(10*20+2*4+1+10*20)), c.Bytes())
}

// HloCostAnalysisTest.Broadcast.
func TestXLABroadcast(t *testing.T) {
	c := rootCost(t, `HloModule m
ENTRY e {
  %c = f32[] constant(42)
  ROOT %b = f32[10,7] broadcast(%c), dimensions={}
}`)
	require.Zero(t, c.FLOPs)
	require.Equal(t, int64(4*(1+10*7)), c.Bytes())
}

// HloCostAnalysisTest.FullyConnectedForward: sigmoid(input * weight + bias).
func TestXLAFullyConnectedForward(t *testing.T) {
	c := rootCost(t, `HloModule m
%sigmoid (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %one = f32[] constant(1)
  %n = f32[] negate(%x)
  %e = f32[] exponential(%n)
  %a = f32[] add(%one, %e)
  ROOT %d = f32[] divide(%one, %a)
}
ENTRY e {
  %input = f32[10,5] parameter(0)
  %weight = f32[5,20] parameter(1)
  %bias = f32[20] parameter(2)
  %dot = f32[10,20] dot(%input, %weight), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[10,20] broadcast(%bias), dimensions={1}
  %add = f32[10,20] add(%dot, %bb)
  ROOT %map = f32[10,20] map(%add), dimensions={0,1}, to_apply=%sigmoid
}`)
	require.Equal(t, int64(2*1000+200+3*200), c.FLOPs)
	require.Equal(t, int64(200), c.Transcendentals)
}

// HloCostAnalysisTest.TupleCost.
func TestXLATupleCost(t *testing.T) {
	c := rootCost(t, `HloModule m
ENTRY e {
  %x = f32[123] parameter(0)
  %y = f32[42] parameter(1)
  ROOT %t = (f32[123], f32[42]) tuple(%x, %y)
}`)
	require.Equal(t, Cost{BytesWritten: 2 * hlo.PointerSize}, c)
}

// HloCostAnalysisTest.Slice, DynamicSlice, DynamicUpdateSlice, Gather,
// Scatter and MultioutputScatter.
func TestXLADataMovement(t *testing.T) {
	c := rootCost(t, `HloModule m
ENTRY e {
  %x = f32[2] parameter(0)
  ROOT %s = f32[1] slice(%x), slice={[0:1]}
}`)
	require.Equal(t, Cost{BytesRead: 4, BytesWritten: 4}, c)

	c = rootCost(t, `HloModule m
ENTRY e {
  %x = f32[2] parameter(0)
  %i = s32[] constant(1)
  ROOT %s = f32[1] dynamic-slice(%x, %i), dynamic_slice_sizes={1}
}`)
	require.Equal(t, int64(8+4), c.Bytes())
	require.Equal(t, int64(4), c.BytesWritten)

	c = rootCost(t, `HloModule m
ENTRY e {
  %x = f32[2] parameter(0)
  %u = f32[1] constant({1})
  %i = s32[] constant(1)
  ROOT %s = f32[2] dynamic-update-slice(%x, %u, %i)
}`)
	require.Equal(t, int64(8+4), c.Bytes())
	require.Equal(t, int64(4), c.BytesWritten)

	c = rootCost(t, `HloModule m
ENTRY e {
  %operand = s32[3,3] parameter(0)
  %indices = s32[2] parameter(1)
  ROOT %g = s32[2,3] gather(%operand, %indices), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
}`)
	require.Equal(t, int64(56), c.Bytes())
	require.Zero(t, c.FLOPs)

	c = rootCost(t, `HloModule m`+addComp+`
ENTRY e {
  %operand = f32[3,3] parameter(0)
  %indices = s32[2] parameter(1)
  %values = f32[2,3] parameter(2)
  ROOT %s = f32[3,3] scatter(%operand, %indices, %values), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}`)
	require.Equal(t, int64(4*(2+3*(2*3))), c.Bytes())
	require.Equal(t, int64(4*2*3), c.BytesWritten)
	require.Equal(t, int64(2*3), c.FLOPs) // the combiner once per update element

	c = rootCost(t, `HloModule m
%add2 (x0: f32[], x1: s32[], y0: f32[], y1: s32[]) -> (f32[], s32[]) {
  %x0 = f32[] parameter(0)
  %x1 = s32[] parameter(1)
  %y0 = f32[] parameter(2)
  %y1 = s32[] parameter(3)
  %a0 = f32[] add(%x0, %y0)
  %a1 = s32[] add(%x1, %y1)
  ROOT %t = (f32[], s32[]) tuple(%a0, %a1)
}
ENTRY e {
  %operand0 = f32[3,3] parameter(0)
  %operand1 = s32[3,3] parameter(1)
  %indices = s32[2] parameter(2)
  %values0 = f32[2,3] parameter(3)
  %values1 = s32[2,3] parameter(4)
  ROOT %s = (f32[3,3], s32[3,3]) scatter(%operand0, %operand1, %indices, %values0, %values1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add2
}`)
	require.Equal(t, int64(4*(2+2*3*(2*3))), c.Bytes())
	require.Equal(t, int64(2*4*2*3), c.BytesWritten)
}
