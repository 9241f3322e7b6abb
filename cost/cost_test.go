package cost

import (
	"fmt"
	"math"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/stretchr/testify/require"
)

// whileSrc is a loop whose body adds to an s32[] counter and squares an
// s32[3]; its condition compares the counter. XLA's HandleWhile counts
// body + condition once; backend is the while's backend_config.
func whileSrc(backend string) string {
	return `HloModule m
%body (p: (s32[], s32[3])) -> (s32[], s32[3]) {
  %p = (s32[], s32[3]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %v = s32[3] get-tuple-element(%p), index=1
  %sq = s32[3] multiply(%v, %v)
  ROOT %t = (s32[], s32[3]) tuple(%next, %sq)
}
%cond (q: (s32[], s32[3])) -> pred[] {
  %q = (s32[], s32[3]) parameter(0)
  %j = s32[] get-tuple-element(%q), index=0
  %n = s32[] constant(100)
  ROOT %lt = pred[] compare(%j, %n), direction=LT
}
ENTRY e {
  %init = (s32[], s32[3]) parameter(0)
  ROOT %w = (s32[], s32[3]) while(%init), condition=%cond, body=%body` + backend + `
}`
}

// HandleWhile (hlo_cost_analysis.cc): one iteration of body + condition,
// hand-counted: add 1 + multiply 3 + compare 1 FLOPs; bytes: add reads 8
// writes 4, multiply reads 24 writes 12, the body's tuple writes its
// 16-byte pointer table, compare reads 8 writes 1.
func TestWhileOnce(t *testing.T) {
	c := Module(parse(t, whileSrc("")))
	require.Equal(t, Cost{FLOPs: 5, BytesRead: 8 + 24 + 8, BytesWritten: 4 + 12 + 16 + 1, Loop: true}, c)
}

// A while that carries XLA's known_trip_count (WhileLoopTripCountAnnotator)
// counts body + condition that many times and is not flagged.
func TestWhileKnownTripCount(t *testing.T) {
	m := parse(t, whileSrc(`, backend_config={"known_trip_count":{"n":"100"}}`))
	n, ok := TripCount(m.Entry.Root)
	require.True(t, ok)
	require.Equal(t, int64(100), n)
	c := Module(m)
	require.Equal(t, Cost{FLOPs: 500, BytesRead: 100 * 40, BytesWritten: 100 * 33}, c)
}

// HandleConditional: the maximum over branches, figure by figure: branch 0
// has 10 transcendentals and no FLOPs, branch 1 20 FLOPs and none.
func TestConditionalMax(t *testing.T) {
	c := Module(parse(t, `HloModule m
%b0 (x: f32[10]) -> f32[10] {
  %x = f32[10] parameter(0)
  ROOT %e = f32[10] exponential(%x)
}
%b1 (y: f32[10]) -> f32[10] {
  %y = f32[10] parameter(0)
  %a = f32[10] add(%y, %y)
  ROOT %b = f32[10] add(%a, %y)
}
ENTRY e {
  %p = s32[] parameter(0)
  %x = f32[10] parameter(1)
  ROOT %c = f32[10] conditional(%p, %x, %x), branch_computations={%b0, %b1}
}`))
	require.Equal(t, Cost{FLOPs: 20, Transcendentals: 10, BytesRead: 80 + 80, BytesWritten: 40 + 40}, c)
}

// HandleCall: the called computation's cost; Module sums the entry.
func TestCallAndModule(t *testing.T) {
	m := parse(t, `HloModule m
%f (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %n = f32[8] negate(%x)
}
ENTRY e {
  %p = f32[8] parameter(0)
  %c = f32[8] call(%p), to_apply=%f
  ROOT %s = f32[8] sqrt(%c)
}`)
	require.Equal(t, Cost{FLOPs: 8, BytesRead: 32, BytesWritten: 32}, Instruction(m.Entry.Instruction("c")))
	require.Equal(t, Cost{FLOPs: 8, Transcendentals: 8, BytesRead: 64, BytesWritten: 64}, Module(m))
	require.Equal(t, Module(m), Computation(m.Entry))
}

// HandleSort: elements × ⌈log2 elements⌉; HandleFft: 8 × ∏⌊log2 fft_length⌋ ×
// elements; HandleRng: one transcendental per element; HandleCustomCall:
// unknown (here 0 FLOPs, flagged).
func TestSortFftRngCustomCall(t *testing.T) {
	src := `HloModule m
%less (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %l = pred[] compare(%a, %b), direction=LT
}
ENTRY e {
  %x = f32[1000] parameter(0)
  %s = f32[1000] sort(%x), dimensions={0}, to_apply=%less
  %z = c64[8,16] parameter(1)
  %f = c64[8,16] fft(%z), fft_type=FFT, fft_length={16}
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %r = f32[5,6] rng(%lo, %hi), distribution=rng_uniform
  ROOT %cc = f32[1000] custom-call(%s), custom_call_target="foo"
}`
	require.Equal(t, int64(1000*10), named(t, src, "s").FLOPs)
	require.Equal(t, int64(8*4*8*16), named(t, src, "f").FLOPs)
	require.Equal(t, int64(30), named(t, src, "r").Transcendentals)
	cc := named(t, src, "cc")
	require.True(t, cc.Unknown)
	require.Zero(t, cc.FLOPs)
	require.True(t, Module(parse(t, src)).Unknown)
}

// Figures saturate: a dot whose FLOPs exceed int64 reports MaxInt64.
func TestSaturates(t *testing.T) {
	c := named(t, `HloModule m
ENTRY e {
  %a = f32[1099511627776,1099511627776] parameter(0)
  %b = f32[1099511627776] parameter(1)
  ROOT %d = f32[1099511627776] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}`, "d")
	require.Equal(t, int64(math.MaxInt64), c.FLOPs)
	big := Cost{FLOPs: math.MaxInt64 - 1, BytesRead: math.MaxInt64}
	require.Equal(t, int64(math.MaxInt64), big.Add(big).FLOPs)
	require.Equal(t, int64(math.MaxInt64), big.Bytes())
}

// Every opcode of hlo's table returns non-negative figures without
// panicking on minimal and malformed instructions: no operands, nil
// operands, operands of other ranks, tuple shapes, junk attributes, and
// called computations missing or calling themselves.
func TestEveryOpcodeNoPanic(t *testing.T) {
	f32 := func(d ...int64) hlo.Shape { return hlo.ArrayShape(hlo.F32, d...) }
	vec := &hlo.Instruction{Name: "v", Opcode: hlo.OpParameter, Shape: f32(4)}
	mat := &hlo.Instruction{Name: "m", Opcode: hlo.OpParameter, Shape: f32(2, 3)}
	tup := &hlo.Instruction{Name: "t", Opcode: hlo.OpParameter, Shape: hlo.TupleShape(f32(4), f32())}
	self := &hlo.Computation{Name: "self"}
	loop := &hlo.Instruction{Name: "loop", Opcode: hlo.OpCall, Shape: f32(4),
		Ext: &hlo.Ext{ToApply: self, Calls: []*hlo.Computation{self}}}
	self.Instructions = []*hlo.Instruction{loop}
	self.Root = loop
	junk := []hlo.Attr{{Name: "window", Value: "{size=x3 pad=1_ stride=0}"}, {Name: "dim_labels", Value: "b0f_0io->"},
		{Name: "fft_length", Value: "{a,-3}"}, {Name: "feature_group_count", Value: "-2"}}
	shapes := []hlo.Shape{f32(), f32(4), f32(0, 7), hlo.TupleShape(), hlo.TupleShape(f32(2), f32(3, 3)), {}}
	operands := [][]*hlo.Instruction{nil, {vec}, {mat, vec, tup}, {nil, vec}, {tup, tup, tup, tup, tup}}
	exts := []*hlo.Ext{nil, {Calls: []*hlo.Computation{nil}, Branches: []*hlo.Computation{nil, self},
		ToApply: self, Body: self, Condition: self, Select: self, Scatter: self,
		Dot: &hlo.DotDims{LhsContracting: []int64{-1, 5, 0}}}}
	n := 0
	for _, op := range hlo.Opcodes() {
		for _, s := range shapes {
			for _, ops := range operands {
				for _, x := range exts {
					for _, attrs := range [][]hlo.Attr{nil, junk} {
						in := &hlo.Instruction{Name: "x", Opcode: op, Shape: s, Operands: ops, Ext: x, Attrs: attrs}
						c := Instruction(in)
						require.True(t, c.FLOPs >= 0 && c.BytesRead >= 0 && c.BytesWritten >= 0 && c.Transcendentals >= 0,
							"%s: %+v", op, c)
						n++
					}
				}
			}
		}
	}
	require.Equal(t, len(hlo.Opcodes())*len(shapes)*len(operands)*len(exts)*2, n)
	require.Equal(t, Cost{}, Instruction(nil))
	require.Equal(t, Cost{}, Computation(nil))
	require.Equal(t, Cost{}, Module(nil))
	require.Equal(t, Cost{}, Module(&hlo.Module{}))
}

// checkModule checks a module's figures: no panic, non-negative, Module is
// the entry's Computation, and a computation's cost is the sum of its
// instructions' (short of saturation).
func checkModule(t testing.TB, m *hlo.Module) {
	mc := Module(m)
	require.Equal(t, Computation(m.Entry), mc)
	for _, c := range m.Computations {
		var sum Cost
		for _, in := range c.Instructions {
			ic := Instruction(in)
			require.True(t, ic.FLOPs >= 0 && ic.BytesRead >= 0 && ic.BytesWritten >= 0 && ic.Transcendentals >= 0)
			sum = sum.Add(ic)
		}
		require.Equal(t, sum, Computation(c), c.Name)
	}
}

func TestRandomModules(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		m := parse(t, randhlo.Generate(seed, randhlo.Options{Instructions: 40}))
		checkModule(t, m)
		require.Positive(t, Module(m).FLOPs+Module(m).Bytes(), "seed %d", seed)
	}
}

func FuzzModule(f *testing.F) {
	f.Add(uint64(1), uint16(20))
	f.Add(uint64(7), uint16(300))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		src := randhlo.Generate(seed, randhlo.Options{Instructions: int(n%500) + 1})
		m, err := hlo.ParseModule("fuzz.hlo", src)
		if err != nil {
			t.Fatalf("randhlo module does not parse: %v", err)
		}
		checkModule(t, m)
	})
}

// BenchmarkModule measures Module on random modules of 10^3, 10^4 and
// 10^5 entry instructions, per instruction of the module.
func BenchmarkModule(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m, err := hlo.ParseModule("bench.hlo", randhlo.Generate(1, randhlo.Options{Instructions: n}))
			require.NoError(b, err)
			count := m.NumInstructions()
			var c Cost
			for b.Loop() {
				c = Module(m)
			}
			require.Positive(b, c.FLOPs)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(count), "ns/instruction")
			b.ReportMetric(float64(count), "instructions")
		})
	}
}

// GpuHloCostAnalysisTest.ConvCustomCall (xla/service/gpu/model/
// gpu_hlo_cost_analysis_test.cc): a cuDNN convolution custom-call counts as
// its convolution and writes its result, not the scratch.
func TestXLAConvCustomCall(t *testing.T) {
	c := named(t, `HloModule module, is_scheduled=true

ENTRY entry {
  p0 = s8[128,12,24,24,4]{4,3,2,1,0} parameter(0)
  p1 = s8[16,12,5,5,4]{4,3,2,1,0} parameter(1)
  p2 = f32[16]{0} parameter(2)
  conv1 = (s8[128,4,24,24,4]{4,3,2,1,0}, u8[0]{0}) custom-call(p0, p1, p2),
              window={size=5x5 pad=2_2x2_2},
              dim_labels=bf01_oi01->bf01,
              custom_call_target="__cudnn$convBiasActivationForward"
  ROOT tuple = tuple(conv1)
}`, "conv1")
	require.Equal(t, int64(159694848), c.FLOPs)
	require.Equal(t, int64(128*4*24*24*4), c.BytesWritten)
	require.Equal(t, int64(128*12*24*24*4+16*12*5*5*4+4*16), c.BytesRead)
	require.False(t, c.Unknown)
}

// GpuHloCostAnalysis::HandleCustomCall on a cuBLAS gemm (the form XLA:GPU
// dumps, as in the corpus): GetDotFlops with the backend_config's
// dot_dimension_numbers on tuple element 0, hand-counted:
// 2 × 16×4096 outputs × 1024 contracted.
func TestCublasGemmCustomCall(t *testing.T) {
	c := named(t, `HloModule m
ENTRY e {
  %a = bf16[16,1024]{1,0} parameter(0)
  %b = bf16[4096,1024]{1,0} parameter(1)
  ROOT %gemm = (bf16[16,4096]{1,0}, s8[4194304]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"gemm_backend_config":{"alpha_real":1,"alpha_imag":0,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["1"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"epilogue":"DEFAULT"}}
}`, "gemm")
	require.Equal(t, int64(2*16*4096*1024), c.FLOPs)
	require.Equal(t, int64(2*16*4096), c.BytesWritten)
	require.False(t, c.Unknown)
}

// DomainCostAnalysis.DomainCost: a domain costs nothing.
func TestXLADomainCost(t *testing.T) {
	c := named(t, `HloModule m
ENTRY e {
  %x = f32[123] parameter(0)
  %y = f32[42] parameter(1)
  %t = (f32[123], f32[42]) tuple(%x, %y)
  ROOT %d = (f32[123], f32[42]) domain(%t), domain={kind="sharding", entry={maximal device=0}, exit={maximal device=1}}
}`, "d")
	require.Equal(t, Cost{}, c)
}

// HandleCopy, HandleTranspose, HandleReshape, HandleConcatenate, HandlePad,
// HandleReverse and HandleIota add no FLOPs: data movement costs its
// operands' and output's bytes (Preprocess) and nothing else.
func TestDataMovementNoFlops(t *testing.T) {
	src := `HloModule m
ENTRY e {
  %x = f32[4,8] parameter(0)
  %cp = f32[4,8] copy(%x)
  %tr = f32[8,4] transpose(%x), dimensions={1,0}
  %rs = f32[32] reshape(%x)
  %cc = f32[8,8] concatenate(%x, %x), dimensions={0}
  %z = f32[] constant(0)
  %pd = f32[6,8] pad(%x, %z), padding=1_1x0_0
  %rv = f32[4,8] reverse(%x), dimensions={0}
  ROOT %io = s32[4,8] iota(), iota_dimension=0
}`
	m := parse(t, src)
	for name, want := range map[string]Cost{
		"cp": {BytesRead: 128, BytesWritten: 128},
		"tr": {BytesRead: 128, BytesWritten: 128},
		"rs": {BytesRead: 128, BytesWritten: 128},
		"cc": {BytesRead: 256, BytesWritten: 256},
		"pd": {BytesRead: 128 + 4, BytesWritten: 6 * 8 * 4},
		"rv": {BytesRead: 128, BytesWritten: 128},
		"io": {BytesWritten: 128},
	} {
		require.Equal(t, want, Instruction(m.Entry.Instruction(name)), name)
	}
}
