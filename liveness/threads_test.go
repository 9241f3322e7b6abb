package liveness

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// XLA's hlo_live_range_test.cc, ThreadedCall: with execution threads
// {"main"} the computation on "host" is not flattened, only main's
// instructions are scheduled, and neg0, the call's operand, lives from
// its definition to the call (its callee not being flattened, the call's
// use counts).
func TestXLARangeThreadedCall(t *testing.T) {
	a := analyzeWith(t, Options{ExecutionThreads: []string{"main"}}, `HloModule ThreadedModule, is_scheduled=true

%SubComp (param: f32[4]) -> f32[4] {
  %param = f32[4] parameter(0)
  ROOT %neg = f32[4] negate(%param)
}, execution_thread="host"

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %neg0 = f32[4] negate(%p0)
  %call = f32[4] call(%neg0), to_apply=%SubComp
  ROOT %copy = f32[4] copy(%call)
}`)
	for _, in := range a.Sequence {
		require.Same(t, a.Module.Entry, in.Parent, "%s is not on main", in.Name)
	}
	require.Equal(t, a.Module.Entry.Root, a.Sequence[len(a.Sequence)-1])
	require.Equal(t, Range{timeOf(t, a, "neg0"), timeOf(t, a, "call")}, rangeOf(t, a, "neg0"))
	// HloDataflowAnalysis::UpdateCallValueSet: a call into a computation
	// left out holds no values.
	require.Nil(t, a.ValueAt(a.Module.Entry.Instruction("call"), nil))
	sub := a.Module.Computation("SubComp")
	require.Nil(t, a.ValueAt(sub.Root, nil), "no values on host")
	require.Equal(t, Unreachable, a.Kinds[sub.ID])

	// Without a thread set, SubComp is flattened and neg0 ends in it.
	all := analyzeWith(t, Options{}, `HloModule ThreadedModule, is_scheduled=true

%SubComp (param: f32[4]) -> f32[4] {
  %param = f32[4] parameter(0)
  ROOT %neg = f32[4] negate(%param)
}, execution_thread="host"

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %neg0 = f32[4] negate(%p0)
  %call = f32[4] call(%neg0), to_apply=%SubComp
  ROOT %copy = f32[4] copy(%call)
}`)
	require.Equal(t, 6, all.EndTime())
	require.Equal(t, Range{1, timeOf(t, all, "neg")}, rangeOf(t, all, "neg0"))
}

const threadedAsync = `HloModule ThreadedAsyncModule, is_scheduled=true

%AsyncSubComp (param: f32[4]) -> f32[4] {
  %param = f32[4] parameter(0)
  ROOT %neg = f32[4] negate(%param)
}, execution_thread="host"

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %neg0 = f32[4] negate(%p0)
  %async-start = ((f32[4]), f32[4], u32[]) async-start(%neg0), async_execution_thread="host", calls=%AsyncSubComp
  %async-done = f32[4] async-done(%async-start), calls=%AsyncSubComp
  ROOT %copy = f32[4] copy(%async-done)
}`

// XLA's hlo_live_range_test.cc, ThreadedAsyncCall: the async computation
// runs on "host"; with threads {"main"} it is not flattened (neg0 at 1,
// async-start at 2, async-done at 3) and neg0 lives to the async-done.
// The async-start then defines its output {1} itself
// (HloDataflowAnalysis::InitializeInstructionValueSets), which the
// async-done forwards (UpdateAsyncDoneValueSet without the root).
func TestXLARangeThreadedAsyncCall(t *testing.T) {
	bothRules(t, func(t *testing.T, rules Rules) {
		a := analyzeWith(t, Options{XLARules: rules, ExecutionThreads: []string{"main"}}, threadedAsync)
		require.Equal(t, 1, timeOf(t, a, "neg0"))
		require.Equal(t, 2, timeOf(t, a, "async-start"))
		require.Equal(t, 3, timeOf(t, a, "async-done"))
		require.Equal(t, Range{1, 3}, rangeOf(t, a, "neg0"))
		e := a.Module.Entry
		start, done := e.Instruction("async-start"), e.Instruction("async-done")
		out := a.ValueAt(start, hlo.ShapeIndex{1})
		require.NotNil(t, out)
		require.Same(t, start, out.Inst, "async-start defines {1}")
		require.Same(t, out, a.ValueAt(done, nil), "the done forwards it")
		require.Nil(t, a.ValueAt(a.Module.Computation("AsyncSubComp").Root, nil))
	})
	// With every thread (or host among them) the computation is analysed:
	// {1} is its root's value, defined inside.
	for _, threads := range [][]string{nil, {"main", "host"}} {
		a := analyzeWith(t, Options{ExecutionThreads: threads}, threadedAsync)
		root := a.Module.Computation("AsyncSubComp").Root
		require.Same(t, a.ValueAt(root, nil), a.ValueAt(a.Module.Entry.Instruction("async-start"), hlo.ShapeIndex{1}))
		require.Equal(t, 0, rangeOf(t, a, "neg").Start, "current rules: the entry's start")
	}
}

// XLA's hlo_instructions.cc SetThreadName, through the parser's
// CreateAsyncStart: an async-start without async_execution_thread puts
// its computation, and the computations it calls, on "main", whatever
// their own execution_thread says; one with async_execution_thread puts
// them on that thread.
func TestAsyncStartSetsItsComputationsThread(t *testing.T) {
	const src = `HloModule m, is_scheduled=true

%leaf (q: f32[4]) -> f32[4] {
  %q = f32[4] parameter(0)
  ROOT %l = f32[4] negate(%q)
}, execution_thread="other"

%wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %c = f32[4] call(%p), to_apply=%leaf
}, execution_thread="host"

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %s = ((f32[4]), f32[4], u32[]) async-start(%p0), calls=%wrapped
  %d = f32[4] async-done(%s)
  ROOT %r = f32[4] copy(%d)
}`
	m, err := hlo.ParseModule("t.hlo", src)
	require.NoError(t, err)
	m.Renumber()
	th := threadsOf(m)
	for _, name := range []string{"leaf", "wrapped", "entry"} {
		require.Equal(t, "main", th.comp[m.Computation(name).ID], name)
	}
	a := analyzeWith(t, Options{ExecutionThreads: []string{"main"}}, src)
	require.NotNil(t, a.ValueAt(a.Module.Computation("leaf").Root, nil), "leaf runs on main")

	hosted := `HloModule m, is_scheduled=true

%leaf (q: f32[4]) -> f32[4] {
  %q = f32[4] parameter(0)
  ROOT %l = f32[4] negate(%q)
}

%wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %c = f32[4] call(%p), to_apply=%leaf
}

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %s = ((f32[4]), f32[4], u32[]) async-start(%p0), async_execution_thread="host", calls=%wrapped
  %d = f32[4] async-done(%s)
  ROOT %r = f32[4] copy(%d)
}`
	a = analyzeWith(t, Options{ExecutionThreads: []string{"main"}}, hosted)
	require.Nil(t, a.ValueAt(a.Module.Computation("leaf").Root, nil), "leaf follows the async-start onto host")
	require.Equal(t, []string{"p0", "s", "d", "r"}, names(a.Sequence))
}

// XLA's hlo_live_range_test.cc, WhileLoopInitLiveRangeWithScheduledBody:
// with threads {"main"} a while on main is flattened as usual.
func TestXLARangeWhileLoopInitWithThreads(t *testing.T) {
	a := analyzeWith(t, Options{ExecutionThreads: []string{"main"}}, `HloModule WhileModule, is_scheduled=true

%WhileCond (param: f32[4]) -> pred[] {
  %param = f32[4] parameter(0)
  %c = f32[] constant(0)
  ROOT %cmp = pred[] compare(%c, %c), direction=EQ
}

%WhileBody (param: f32[4]) -> f32[4] {
  %param = f32[4] parameter(0)
  %c = f32[] constant(1)
  %b = f32[4] broadcast(%c), dimensions={}
  ROOT %sub = f32[4] subtract(%param, %b)
}

ENTRY %entry {
  %p0 = f32[4] parameter(0)
  %neg0 = f32[4] negate(%p0)
  ROOT %while = f32[4] while(%neg0), condition=%WhileCond, body=%WhileBody
}`)
	require.GreaterOrEqual(t, timeOf(t, a, "neg0"), 0)
	require.Equal(t, 10, a.EndTime()) // condition 3, body 4, entry 3
}

func names(seq []*hlo.Instruction) []string {
	out := make([]string, len(seq))
	for i, in := range seq {
		out[i] = in.Name
	}
	return out
}
