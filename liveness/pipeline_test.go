package liveness

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

// preparedCorpus is what the preparation tests run on: the hand-written
// modules and every paired dump.
var preparedCorpus = []string{"hlo/*/*.hlo", "paired*/*/*after_optimizations.txt"}

// TestPipelineVerifyEach runs the preparation pipeline on every corpus
// module with hlo.Verify after each pass, and holds every pass to what it
// reports: a pass that says it changed nothing leaves the module's text
// as it was. Modules over 5,000 instructions keep their order (the
// schedulers have tests of their own) and are not printed between passes.
func TestPipelineVerifyEach(t *testing.T) {
	n := 0
	forCorpusModules(t, preparedCorpus, func(f string, m *hlo.Module) {
		small := m.NumInstructions() <= 5000
		if testing.Short() && !small {
			return
		}
		opts := PrepareOptions{VerifyEach: true}
		if !small {
			opts.Scheduler = SchedKeep
		}
		var passes []Pass
		for _, p := range Passes {
			p := p
			run := p.Run
			p.Run = func(m *hlo.Module, o PrepareOptions) (bool, error) {
				var before string
				if small {
					before = m.String()
				}
				changed, err := run(m, o)
				if err == nil && !changed && small {
					require.Equal(t, before, m.String(), "%s: pass %s reported no change", filepath.Base(f), p.Name)
				}
				return changed, err
			}
			passes = append(passes, p)
		}
		a, err := RunPasses(m, passes, opts)
		if err != nil {
			// Modules the analysis refuses (unknown opcodes, unsized
			// shapes) must be refused for that, not by verification.
			require.False(t, errors.Is(err, ErrInvalidAfterPass), "%s: %v", f, err)
			require.False(t, errors.Is(err, ErrPassPanicked), "%s: %v", f, err)
			return
		}
		require.NotNil(t, a)
		require.Len(t, a.Kinds, len(m.Computations))
		require.Len(t, a.Spans, len(m.Computations))
		for i, c := range m.Computations {
			require.Equal(t, i, c.ID)
		}
		n++
	})
	require.Greater(t, n, 300)
}

// TestPipelinePanicNamesPass: a panicking pass fails the pipeline with an
// error naming it, and a pass leaving the module invalid is caught by
// VerifyEach and named.
func TestPipelinePanicNamesPass(t *testing.T) {
	src := "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"
	m, err := hlo.ParseModule("m.hlo", src)
	require.NoError(t, err)
	_, err = PrepareWith(m, PrepareOptions{Fusion: func(*hlo.Module) (bool, error) { panic("boom") }})
	require.ErrorIs(t, err, ErrPassPanicked)
	require.EqualError(t, err, "liveness: pass fusion: internal error: boom")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "fusion", e.Pass)
	require.Equal(t, "m", e.Module)

	m, err = hlo.ParseModule("m.hlo", src)
	require.NoError(t, err)
	breaks := func(m *hlo.Module) (bool, error) {
		m.Entry.Root = nil
		return true, nil
	}
	_, err = PrepareWith(m, PrepareOptions{Fusion: breaks, VerifyEach: true})
	require.ErrorIs(t, err, ErrInvalidAfterPass)
	require.ErrorAs(t, err, &e)
	require.Equal(t, "fusion", e.Pass)

	// A fusion that changes the module: the analysis is of the result.
	m, err = hlo.ParseModule("m.hlo", src)
	require.NoError(t, err)
	calls := 0
	a, err := PrepareWith(m, PrepareOptions{VerifyEach: true, Fusion: func(*hlo.Module) (bool, error) {
		calls++
		return false, nil
	}})
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Len(t, a.Values, 2)
}

// TestErrorKinds: the errors the package returns match their sentinels
// under errors.Is, with their messages unchanged.
func TestErrorKinds(t *testing.T) {
	parse := func(src string) *hlo.Module {
		t.Helper()
		m, err := hlo.ParseModule("k.hlo", src)
		require.NoError(t, err)
		return m
	}
	_, err := Prepare(nil, "")
	require.ErrorIs(t, err, ErrNoModule)
	require.EqualError(t, err, "liveness: no module")
	_, err = Analyze(nil, Options{})
	require.ErrorIs(t, err, ErrNoModule)

	_, err = Analyze(parse("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] frobnicate(p)\n}\n"), Options{})
	require.ErrorIs(t, err, ErrUnknownOpcode)
	require.False(t, errors.Is(err, ErrUnsizedShape))
	require.Contains(t, err.Error(), "unknown opcode frobnicate")

	notFlat := `HloModule m
f {
  ROOT x = f32[] parameter(0)
}
ENTRY e {
  p = f32[] parameter(0)
  a = f32[] call(p), to_apply=f
  ROOT b = f32[] call(a), to_apply=f
}
`
	_, err = Analyze(parse(notFlat), Options{})
	require.ErrorIs(t, err, ErrNotFlat)
	require.EqualError(t, err, "liveness: computation f is called from a and b; flatten the call graph first (hlo.FlattenCallGraph)")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "m", e.Module)
	require.True(t, e.Pos.IsValid())
	_, err = Prepare(parse(notFlat), "")
	require.NoError(t, err, "Prepare flattens")

	m := parse("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")
	_, err = Prepare(m, "magic")
	require.ErrorIs(t, err, ErrUnknownScheduler)
	require.ErrorAs(t, err, &e)
	require.Equal(t, "schedule", e.Pass)

	a, err := Analyze(parse("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"), Options{})
	require.NoError(t, err)
	s := NewSchedule("reversed")
	c := a.Module.Entry
	s.Set(c, []*hlo.Instruction{c.Instructions[1], c.Instructions[0]})
	err = a.Reschedule(s)
	require.ErrorIs(t, err, ErrInvalidSchedule)
	require.EqualError(t, err, "liveness: schedule of e runs n before its operand p")
	require.ErrorIs(t, a.Reschedule(nil), ErrInvalidSchedule)
	require.False(t, errors.Is(fmt.Errorf("x"), ErrInvalidSchedule))
}

// TestPipelineOptimize: optimization passes run, named, between the
// fusion slot and copy insertion.
func TestPipelineOptimize(t *testing.T) {
	var ran []string
	pass := func(name string) Pass {
		return Pass{Name: name, Run: func(m *hlo.Module, _ PrepareOptions) (bool, error) {
			ran = append(ran, name)
			if name == "bad" {
				return false, errors.New("refused")
			}
			return false, nil
		}}
	}
	opts := PrepareOptions{Optimize: []Pass{pass("one"), pass("two")}}
	var names []string
	for _, p := range Pipeline(opts) {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"flatten-call-graph", "fusion", "one", "two", "copy-insertion", "schedule"}, names)
	m, err := hlo.ParseModule("m.hlo", "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n")
	require.NoError(t, err)
	_, err = PrepareWith(m, opts)
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, ran)
	_, err = PrepareWith(m, PrepareOptions{Optimize: []Pass{pass("bad")}})
	require.ErrorContains(t, err, "refused")
}
