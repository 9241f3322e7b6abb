package assign

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// chainModule is a scheduled module of n element-wise operations in a
// chain, each reading the one before (and, every seventh, the parameter).
func chainModule(n int) string {
	var b strings.Builder
	b.WriteString("HloModule chain, is_scheduled=true\nENTRY e {\n  p = f32[256] parameter(0)\n  x0 = f32[256] negate(p)\n")
	for i := 1; i < n; i++ {
		if i%7 == 0 {
			fmt.Fprintf(&b, "  x%d = f32[256] add(x%d, p)\n", i, i-1)
		} else {
			fmt.Fprintf(&b, "  x%d = f32[256] exponential(x%d)\n", i, i-1)
		}
	}
	fmt.Fprintf(&b, "  ROOT r = f32[256] negate(x%d)\n}\n", n-1)
	return b.String()
}

// nestedTupleModule passes a tuple nested d deep, each level being
// prefix followed by the level below in parentheses, through a parameter,
// a get-tuple-element of element index (the level below) and a copy.
func nestedTupleModule(name, prefix string, index, d int) string {
	s, s1 := "f32[4]", ""
	for i := 0; i < d; i++ {
		s1 = s
		s = "(" + prefix + s + ")"
	}
	return "HloModule " + name + ", is_scheduled=true\nENTRY e {\n  p = " + s + " parameter(0)\n  g = " + s1 +
		" get-tuple-element(p), index=" + strconv.Itoa(index) + "\n  ROOT c = " + s1 + " copy(g)\n}\n"
}

// deepTupleModule passes a tuple nested d deep, ((...(f32[4])...)).
func deepTupleModule(d int) string { return nestedTupleModule("deep", "", 0, d) }

// benchAssign parses src and measures analysis plus assignment. With
// levels > 0 the cost is reported per tuple level, otherwise per
// instruction.
func benchAssign(b *testing.B, src string, opts Options, levels int) {
	b.ReportAllocs()
	var n int
	var as *Assignment
	for b.Loop() {
		mods, err := hlo.Parse("bench.hlo", []byte(src))
		require.NoError(b, err)
		m := mods[0]
		n = m.NumInstructions()
		a, err := liveness.Analyze(m, liveness.Options{})
		require.NoError(b, err)
		as, err = Assign(context.Background(), a, opts)
		require.NoError(b, err)
	}
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	// What the plan keeps alive (module, analysis, assignment; src is the
	// benchmark's own): the live heap with the last plan, less without it.
	with := liveHeap()
	runtime.KeepAlive(as)
	as = nil
	b.ReportMetric(float64(with-liveHeap())/float64(max(n, 1)), "plan-B/instruction")
	if levels > 0 {
		b.ReportMetric(float64(levels), "levels")
		b.ReportMetric(perOp/float64(levels), "ns/level")
		return
	}
	b.ReportMetric(float64(n), "instructions")
	b.ReportMetric(perOp/float64(n), "ns/instruction")
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkAssignChain: parse, analysis and assignment of element-wise
// chains of 10^4 to 10^6 operations, default packer.
func BenchmarkAssignChain(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchAssign(b, chainModule(n), Options{}, 0) })
	}
}

// BenchmarkAssignTupleDepth: parse, analysis and assignment of a tuple
// nested 10^2 to 10^4 deep.
func BenchmarkAssignTupleDepth(b *testing.B) {
	for _, d := range []int{100, 1_000, 10_000} {
		b.Run(strconv.Itoa(d), func(b *testing.B) { benchAssign(b, deepTupleModule(d), Options{}, d) })
	}
}

// tupleChainModule passes a tuple of d leaves shaped (f32[4], (f32[4],
// (...))) through a parameter, a get-tuple-element and a copy. Unlike
// deepTupleModule every level has a leaf, so the shape has d leaves whose
// indices have lengths 1..d: the index text alone is quadratic in d.
func tupleChainModule(d int) string { return nestedTupleModule("tuplechain", "f32[4], ", 1, d) }

// BenchmarkAssignTupleChain: parse, analysis and assignment of a tuple
// whose every level holds a leaf, 10^2 to 10^4 deep.
func BenchmarkAssignTupleChain(b *testing.B) {
	for _, d := range []int{100, 1_000, 10_000} {
		b.Run(strconv.Itoa(d), func(b *testing.B) { benchAssign(b, tupleChainModule(d), Options{}, d) })
	}
}

// callChainModule nests n computations, each calling the next through a
// call instruction.
func callChainModule(n int) string {
	var b strings.Builder
	b.WriteString("HloModule calls\n")
	fmt.Fprintf(&b, "c%d {\n  p = f32[] parameter(0)\n  ROOT r = f32[] negate(p)\n}\n", n)
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "c%d {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c%d\n}\n", i, i+1)
	}
	b.WriteString("ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c0\n}\n")
	return b.String()
}

// BenchmarkAssignCallChain: parse, analysis and assignment of 10^3 to 10^5
// computations calling each other in a chain (quadratic before the call
// graph walk remembered what each computation reaches: 20,000 took 134 s).
func BenchmarkAssignCallChain(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchAssign(b, callChainModule(n), Options{}, 0) })
	}
}

// nestedWhileModule nests n while loops, each body running the next loop
// over an (s32[], f32[4]) state.
func nestedWhileModule(n int) string {
	var b strings.Builder
	b.WriteString("HloModule whiles\n")
	cond := func(i int) {
		fmt.Fprintf(&b, "cond%d {\n  p = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  k = s32[] constant(2)\n  ROOT c = pred[] compare(i, k), direction=LT\n}\n", i)
	}
	cond(n)
	fmt.Fprintf(&b, "body%d {\n  p = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  x = f32[4] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  y = f32[4] negate(x)\n  ROOT t = (s32[], f32[4]) tuple(j, y)\n}\n", n)
	for i := n - 1; i >= 0; i-- {
		cond(i)
		fmt.Fprintf(&b, "body%d {\n  p = (s32[], f32[4]) parameter(0)\n  w = (s32[], f32[4]) while(p), condition=cond%d, body=body%d\n  i = s32[] get-tuple-element(w), index=0\n  x = f32[4] get-tuple-element(w), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  ROOT t = (s32[], f32[4]) tuple(j, x)\n}\n", i, i+1, i+1)
	}
	b.WriteString("ENTRY e {\n  a = f32[4] parameter(0)\n  z = s32[] constant(0)\n  t = (s32[], f32[4]) tuple(z, a)\n  w = (s32[], f32[4]) while(t), condition=cond0, body=body0\n  ROOT r = f32[4] get-tuple-element(w), index=1\n}\n")
	return b.String()
}

// BenchmarkPrepareNestedWhile: parse, copy insertion, analysis and
// assignment of while loops nested 10 to 1,000 deep. XLA's phi
// simplification walks the loop-carried chain from each phi it has not
// seen yet, so this grows quadratically in the depth (in XLA too); it
// was 2.0 s at depth 1,000 before its sets became stamps and the lower
// bound stopped rescanning loop-carried buffers at every step.
func BenchmarkPrepareNestedWhile(b *testing.B) {
	for _, n := range []int{10, 100, 1_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			src := nestedWhileModule(n)
			b.ReportAllocs()
			var insts int
			for b.Loop() {
				mods, err := hlo.Parse("bench.hlo", []byte(src))
				require.NoError(b, err)
				a, err := preptest.Prepare(mods[0], "")
				require.NoError(b, err)
				insts = mods[0].NumInstructions()
				_, err = Assign(context.Background(), a, Options{})
				require.NoError(b, err)
			}
			b.ReportMetric(float64(n), "loops")
			b.ReportMetric(float64(insts), "instructions")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/loop")
		})
	}
}
