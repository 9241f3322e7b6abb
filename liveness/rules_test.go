package liveness

import (
	"context"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// rangeOf returns the range of the value defined at name{} (the value
// at the top of the instruction, whoever defines it).
func rangeOf(t *testing.T, a *Analysis, name string) Range {
	t.Helper()
	for _, c := range a.Module.Computations {
		if in := c.Instruction(name); in != nil {
			v := a.ValueAt(in, nil)
			require.NotNil(t, v, "no value at %s", name)
			require.True(t, v.Scheduled, "%s is not scheduled", name)
			return v.Range
		}
	}
	t.Fatalf("no instruction %s", name)
	return Range{}
}

// timeOf returns the time of instruction name in the flattened schedule.
func timeOf(t *testing.T, a *Analysis, name string) int {
	t.Helper()
	for _, c := range a.Module.Computations {
		if in := c.Instruction(name); in != nil {
			return a.Time(in)
		}
	}
	t.Fatalf("no instruction %s", name)
	return -1
}

// bothRules runs f under the current rules and under Rules2025.
func bothRules(t *testing.T, f func(t *testing.T, rules Rules)) {
	for _, r := range []Rules{Rules2026, Rules2025} {
		t.Run(string(r), func(t *testing.T) { f(t, r) })
	}
}

// XLA's hlo_live_range_test.cc, AsyncCall: the ranges of the entry's
// values, which the async rule does not move, under both rules.
func TestXLARangeAsyncCall(t *testing.T) {
	const src = `HloModule AsyncCall, is_scheduled=true, entry_computation_layout={(f32[4096],f32[4096])->f32[4096]}

%called_computation (param_0: f32[4096], param_1: f32[4096]) -> f32[4096] {
  %param_0 = f32[4096] parameter(0)
  %param_1 = f32[4096] parameter(1)
  %negate_2 = f32[4096] negate(%param_0)
  %negate_3 = f32[4096] negate(%param_1)
  ROOT %result.1 = f32[4096] add(%negate_2, %negate_3)
}

%async_wrapped (async_param: f32[4096], async_param.1: f32[4096]) -> f32[4096] {
  %async_param = f32[4096] parameter(0)
  %async_param.1 = f32[4096] parameter(1)
  ROOT %call = f32[4096] call(%async_param, %async_param.1), to_apply=%called_computation
}

ENTRY %main (a: f32[4096], b: f32[4096]) -> f32[4096] {
  %a = f32[4096] parameter(0)
  %b = f32[4096] parameter(1)
  %negate_0 = f32[4096] negate(%a)
  %negate_1 = f32[4096] negate(%b)
  %async-start = ((f32[4096], f32[4096]), f32[4096], u32[]) async-start(%negate_0, %negate_1), calls=%async_wrapped
  %add_0 = f32[4096] add(%negate_0, %negate_1)
  %async-done = f32[4096] async-done(((f32[4096], f32[4096]), f32[4096], u32[]) %async-start)
  ROOT %add_1 = f32[4096] add(%add_0, %async-done)
}`
	bothRules(t, func(t *testing.T, rules Rules) {
		a := analyzeWith(t, Options{XLARules: rules}, src)
		require.Equal(t, 16, a.EndTime())
		for name, want := range map[string]Range{
			"a": {0, 16}, "b": {0, 16}, "add_0": {13, 15}, "add_1": {15, 16},
			"negate_0": {2, 14}, "negate_1": {3, 14},
		} {
			require.Equal(t, want, rangeOf(t, a, name), name)
		}
		// The value the called computation's root defines is in the
		// async context: it starts at the entry's start under the
		// current rules, at its definition under the older; it reaches
		// the async-done, whose user add_1 reads it last.
		start := timeOf(t, a, "result.1")
		if rules == Rules2026 {
			start = 0
		}
		require.Equal(t, Range{start, timeOf(t, a, "add_1")}, rangeOf(t, a, "result.1"))
	})
}

// XLA's hlo_live_range_test.cc,
// AsyncInnerBufferStartExtendedToOuterStart: an instruction inside the
// async computation starts at the outer computation's start (0). Under
// Rules2025 it starts at its own time.
//
// The XLA test also expects the range to end at the async-done (time 5).
// XLA's CalculateBufferStartEndMap, as the source reads, then takes the
// later of that and GetLastUsageTime, and the value is the async-done's
// (UpdateAsyncDoneValueSet), which result reads at time 6; the paired
// dumps agree (an async all-to-all's result lives to its done's user, see
// TestAsyncAllToAll). This test asserts the source's end, 6.
func TestXLARangeAsyncInnerBufferStartExtendedToOuterStart(t *testing.T) {
	const src = `HloModule AsyncInnerBufferStart, is_scheduled=true

%async_wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %inner_op = f32[4] negate(%p)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %outer_op = f32[4] negate(%a)
  %async-start = ((f32[4]), f32[4], u32[]) async-start(%outer_op), calls=%async_wrapped
  %async-done = f32[4] async-done(%async-start)
  ROOT %result = f32[4] add(%outer_op, %async-done)
}`
	bothRules(t, func(t *testing.T, rules Rules) {
		a := analyzeWith(t, Options{XLARules: rules}, src)
		r := rangeOf(t, a, "inner_op")
		require.Equal(t, 5, timeOf(t, a, "async-done"))
		require.Equal(t, timeOf(t, a, "result"), r.End)
		if rules == Rules2026 {
			require.Equal(t, 0, r.Start)
		} else {
			require.Equal(t, timeOf(t, a, "inner_op"), r.Start)
			require.Positive(t, r.Start)
		}
	})
}

// XLA's hlo_live_range_test.cc,
// AsyncInnerParameterStartExtendedToOuterStart: the async computation's
// parameter (whose value is the entry parameter's) and its result both
// start at 0.
func TestXLARangeAsyncInnerParameterStartExtendedToOuterStart(t *testing.T) {
	a := analyzeWith(t, Options{}, `HloModule AsyncInnerParamStart, is_scheduled=true

%async_wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %inner_op = f32[4] negate(%p)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %async-start = ((f32[4]), f32[4], u32[]) async-start(%a), calls=%async_wrapped
  %async-done = f32[4] async-done(%async-start)
  ROOT %result = f32[4] negate(%async-done)
}`)
	require.Equal(t, 0, rangeOf(t, a, "p").Start)
	require.Equal(t, 0, rangeOf(t, a, "inner_op").Start)
}

// XLA's hlo_live_range_test.cc,
// AsyncInnerBufferOverlapsShortLivedOuterBuffer: with the flattened order
// a, temp, outer, p, inner_op, async-start, async-done, result, temp
// lives [1, 2]; inner_op starts at 0 and so overlaps it. Under Rules2025
// it starts at 4, after temp's end.
func TestXLARangeAsyncInnerBufferOverlapsShortLivedOuterBuffer(t *testing.T) {
	const src = `HloModule AsyncInnerOverlap, is_scheduled=true

%async_wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %inner_op = f32[4] negate(%p)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %temp = f32[4] negate(%a)
  %outer = f32[4] negate(%temp)
  %async-start = ((f32[4]), f32[4], u32[]) async-start(%outer), calls=%async_wrapped
  %async-done = f32[4] async-done(%async-start)
  ROOT %result = f32[4] negate(%async-done)
}`
	bothRules(t, func(t *testing.T, rules Rules) {
		a := analyzeWith(t, Options{XLARules: rules}, src)
		var seq []string
		for _, in := range a.Sequence {
			seq = append(seq, in.Name)
		}
		require.Equal(t, "a temp outer p inner_op async-start async-done result", strings.Join(seq, " "))
		temp, inner := rangeOf(t, a, "temp"), rangeOf(t, a, "inner_op")
		require.Equal(t, Range{1, 2}, temp)
		if rules == Rules2026 {
			require.Equal(t, 0, inner.Start)
			require.True(t, inner.Start <= temp.End && temp.Start <= inner.End, "the ranges overlap")
		} else {
			require.Equal(t, 4, inner.Start)
			require.Greater(t, inner.Start, temp.End)
		}
	})
}

// TestAsyncStartRuleEventsMatchLayout holds the Events (which the
// schedulers read) to Layout under both rules on a module with a nested
// call in the async context.
func TestAsyncStartRuleEventsMatchLayout(t *testing.T) {
	const src = `HloModule m, is_scheduled=true

%inner (q: f32[4]) -> f32[4] {
  %q = f32[4] parameter(0)
  %n = f32[4] negate(%q)
  ROOT %e = f32[4] exponential(%n)
}

%async_wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %k = f32[4] call(%p), to_apply=%inner
  ROOT %inner_op = f32[4] negate(%k)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %temp = f32[4] negate(%a)
  %outer = f32[4] negate(%temp)
  %async-start = ((f32[4]), f32[4], u32[]) async-start(%outer), calls=%async_wrapped
  %x = f32[4] negate(%a)
  %async-done = f32[4] async-done(%async-start)
  ROOT %result = f32[4] add(%x, %async-done)
}`
	bothRules(t, func(t *testing.T, rules Rules) {
		a := analyzeWith(t, Options{XLARules: rules}, src)
		em := a.Events()
		tl := a.Layout(a.Schedule)
		ranges, _ := em.resolve(tl)
		ranges = normalizeRanges(a, ranges, em.Scheduled)
		for _, v := range a.Values {
			if em.Scheduled[v.ID] {
				require.Equal(t, tl.Ranges[v.ID], ranges[v.ID], v.Name())
			}
		}
		n := rangeOf(t, a, "n")
		if rules == Rules2026 {
			require.Equal(t, 0, n.Start, "a value of a computation called inside the async context")
		} else {
			require.Equal(t, timeOf(t, a, "n"), n.Start)
		}
	})
}

func TestParseRules(t *testing.T) {
	for in, want := range map[string]Rules{"": Rules2026, "2026": Rules2026, "2025": Rules2025} {
		got, err := ParseRules(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseRules("2024")
	require.Error(t, err)
}

// An analysis takes its Options' settings, else its context's
// (WithSettings), else the defaults; one derived from it (options) keeps
// them.
func TestSettingsPrecedence(t *testing.T) {
	m, err := hlo.ParseModule("t.hlo", threadedAsync)
	require.NoError(t, err)
	ctx := WithSettings(context.Background(), Settings{XLARules: Rules2025, ExecutionThreads: []string{"main"}})
	a, err := AnalyzeUnscheduled(ctx, m, CheckAll)
	require.NoError(t, err)
	require.Equal(t, Settings{XLARules: Rules2025, ExecutionThreads: []string{"main"}}, a.Settings())
	b, err := analyzeModule(ctx, m, Options{XLARules: Rules2026}, checkAll, true)
	require.NoError(t, err)
	require.Equal(t, Settings{XLARules: Rules2026, ExecutionThreads: []string{"main"}}, b.Settings())
	c, err := analyzeModule(context.Background(), m, a.Settings().options(), checkAll, true)
	require.NoError(t, err)
	require.Equal(t, a.Settings(), c.Settings())
	d, err := Analyze(m, Options{})
	require.NoError(t, err)
	require.Equal(t, Settings{XLARules: Rules2026}, d.Settings())
	require.Equal(t, "XLA rules 2025, execution threads main", a.Settings().String())
}
