package tpu

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/runtime"
)

// spacesSmall is a module whose parameter p1 is read by five instructions,
// four of them late enough for a prefetch window of two.
const spacesSmall = `HloModule spaces_small, entry_computation_layout={(f32[64,128]{1,0}, f32[64,128]{1,0})->f32[64,128]{1,0}}

ENTRY %main (p0: f32[64,128], p1: f32[64,128]) -> f32[64,128] {
  %p0 = f32[64,128]{1,0} parameter(0)
  %p1 = f32[64,128]{1,0} parameter(1)
  %a = f32[64,128]{1,0} add(f32[64,128]{1,0} %p0, f32[64,128]{1,0} %p1)
  %n1 = f32[64,128]{1,0} negate(f32[64,128]{1,0} %a)
  %n2 = f32[64,128]{1,0} exponential(f32[64,128]{1,0} %n1)
  %n3 = f32[64,128]{1,0} negate(f32[64,128]{1,0} %n2)
  %b = f32[64,128]{1,0} multiply(f32[64,128]{1,0} %n3, f32[64,128]{1,0} %p1)
  %c = f32[64,128]{1,0} subtract(f32[64,128]{1,0} %b, f32[64,128]{1,0} %p1)
  %e = f32[64,128]{1,0} add(f32[64,128]{1,0} %c, f32[64,128]{1,0} %p1)
  %f = f32[64,128]{1,0} multiply(f32[64,128]{1,0} %e, f32[64,128]{1,0} %p1)
  ROOT %g = f32[64,128]{1,0} add(f32[64,128]{1,0} %f, f32[64,128]{1,0} %a)
}
`

func spacesParse(t *testing.T, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("test.hlo", src)
	require.NoError(t, err)
	return m
}

// spacesChecked is what checkSpaces found.
type spacesChecked struct {
	as      *assign.Assignment
	heap    int64 // color-1 allocations of the plan
	numeric bool  // outputs compared with the original module's
}

// checkSpaces holds the module AssignSpaces returned to every promise:
// it verifies, its text parses back to the same text, it prepares, its
// TPU plan passes assign.Check and the shadow run, keeps VMEM within
// vmem and, when orig is evaluable within numericsBudget, computes the
// original module's outputs bit for bit.
func checkSpaces(t *testing.T, name string, orig, out *hlo.Module, rep *SpaceReport, vmem int64, numericsBudget time.Duration) spacesChecked {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, hlo.Verify(out), name)
	require.True(t, out.IsScheduled, "%s: output not scheduled", name)
	text := out.String()
	back, err := hlo.ParseModule(name, text)
	require.NoError(t, err, "%s: printed output does not parse", name)
	require.Equal(t, text, back.String(), "%s: printed output does not round-trip", name)

	a, err := liveness.PrepareWith(out, liveness.PrepareOptions{})
	require.NoError(t, err, name)
	require.Equal(t, text, out.String(), "%s: preparing the output changed it", name)
	as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU})
	require.NoError(t, err, name)
	require.NoError(t, assign.Check(as), name)
	sh, err := runtime.Shadow(ctx, as)
	require.NoError(t, err, name)
	require.Nil(t, sh.Violation, "%s: shadow run: %v", name, sh.Violation)
	var heap int64
	for _, al := range as.Allocations {
		if al.Color == VMEMSpace {
			heap += al.Size
		}
	}
	require.LessOrEqual(t, heap, vmem, "%s: VMEM heap", name)
	require.Equal(t, rep.VMEMHeap, heap, "%s: reported VMEM heap", name)
	require.LessOrEqual(t, rep.VMEMPeak, vmem, "%s: VMEM peak", name)
	require.LessOrEqual(t, rep.VMEMPeak, heap, "%s: VMEM peak above the plan", name)
	if rep.Placed == 0 {
		require.Zero(t, heap, name)
	}
	require.Zero(t, rep.BytesEvicted, name)
	require.Len(t, rep.Decisions, rep.Placed, name)
	require.Equal(t, rep.Placed, strings.Count(text, " copy-start("), "%s: copy-starts in the text", name)
	require.Equal(t, rep.Placed, strings.Count(text, " copy-done("), "%s: copy-dones in the text", name)

	res := spacesChecked{as: as, heap: heap}
	if numericsBudget <= 0 || rep.Placed == 0 || as.Stats.TotalBytes > 64<<20 {
		return res
	}
	// Numerics: the original module's reference run against the planned
	// run of the output.
	ref0 := orig.Clone()
	a0, err := liveness.PrepareWith(ref0, liveness.PrepareOptions{})
	require.NoError(t, err, name)
	as0, err := assign.Assign(ctx, a0, assign.Options{Target: assign.TPU, Budget: 20 * time.Millisecond})
	require.NoError(t, err, name)
	args := runtime.RandomArgs(as0.Module, rand.New(rand.NewPCG(1, 0)))
	rctx, cancel := context.WithTimeout(ctx, numericsBudget)
	want, err := runtime.Execute(rctx, as0, args, nil, runtime.ExecOptions{Reference: true})
	cancel()
	if err != nil {
		return res // an opcode the evaluator lacks, or too slow: no numerics
	}
	got, err := runtime.Execute(ctx, as, args, nil, runtime.ExecOptions{})
	require.NoError(t, err, "%s: planned run of the output", name)
	require.Equal(t, len(want.Outputs), len(got.Outputs), name)
	for i := range want.Outputs {
		require.Equal(t, want.Outputs[i].Checksum(), got.Outputs[i].Checksum(), "%s: output %d differs from the original module's", name, i)
	}
	res.numeric = true
	return res
}

func TestAssignSpacesPlacesHeavilyUsedValue(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	before := m.String()
	out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: 16 << 20})
	require.NoError(t, err)
	require.Equal(t, before, m.String(), "AssignSpaces changed its input")
	c := checkSpaces(t, "spaces_small", m, out, rep, 16<<20, 5*time.Second)
	require.True(t, c.numeric, "the small module evaluates")

	text := out.String()
	t.Log(text)
	require.Contains(t, text, "f32[64,128]{1,0:S(1)}")
	require.Contains(t, text, "copy-start(")
	require.Contains(t, text, "copy-done(")

	// p1 is the most used value: it is chosen first, with the four uses
	// that leave room for a window; the first (a) stays on HBM.
	require.Positive(t, rep.Placed)
	d := rep.Decisions[0]
	require.Equal(t, "p1", d.Name)
	require.Equal(t, int64(64*128*4), d.Bytes)
	require.Equal(t, 4, d.Uses)
	require.Equal(t, 1, d.HBMUses)
	require.Equal(t, DefaultMinWindow, d.Window)
	require.InDelta(t, 4.0/(64*128*4), d.BenefitPerByte, 1e-15)
	require.Less(t, d.Start, d.Done)
	require.Less(t, d.Done, d.LastUse)
	entry := out.Entry.Instructions
	require.Equal(t, hlo.OpCopyStart, entry[d.Start].Opcode)
	require.Equal(t, d.CopyStart, entry[d.Start].Name)
	require.Equal(t, hlo.OpCopyDone, entry[d.Done].Opcode)
	require.Equal(t, d.CopyDone, entry[d.Done].Name)
	require.Equal(t, "f", entry[d.LastUse].Name)
	between := 0
	for _, in := range entry[d.Start+1 : d.Done] {
		if in.Opcode != hlo.OpCopyStart && in.Opcode != hlo.OpCopyDone {
			between++
		}
	}
	require.Equal(t, DefaultMinWindow, between, "instructions between copy-start and copy-done")
	for _, name := range []string{"b", "c", "e", "f"} {
		in := out.Entry.Instruction(name)
		require.NotNil(t, in)
		require.Contains(t, in.Operands, entry[d.Done], "%s reads the prefetch", name)
	}
	require.Contains(t, out.Entry.Instruction("a").Operands, out.Entry.Instruction("p1"), "a reads p1 from HBM")

	var bytes, saved int64
	for _, d := range rep.Decisions {
		bytes += d.Bytes
		saved += int64(d.Uses-1) * d.Bytes
	}
	require.Equal(t, bytes, rep.BytesPrefetched)
	require.Equal(t, saved, rep.HBMTrafficSaved)
	require.Equal(t, int64(3*64*128*4), rep.Decisions[0].Bytes*int64(rep.Decisions[0].Uses-1))
	require.Positive(t, rep.VMEMPeak)
}

// TestAssignSpacesCapacity: a VMEM too small for any value places
// nothing and leaves the prepared module alone; one that holds exactly one
// value places one.
func TestAssignSpacesCapacity(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	// Nothing placed: the output is the prepared module, scheduled.
	prepared := m.Clone()
	a, err := liveness.PrepareWith(prepared, liveness.PrepareOptions{})
	require.NoError(t, err)
	a.Schedule.Apply(prepared)
	for _, vmem := range []int64{1, 512, 64*128*4 - 1} {
		out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: vmem})
		require.NoError(t, err)
		require.Zero(t, rep.Placed, "VMEM %d", vmem)
		require.Equal(t, prepared.String(), out.String(), "VMEM %d: nothing placed, yet the module changed", vmem)
		require.Zero(t, rep.BytesPrefetched)
		require.Zero(t, rep.VMEMPeak)
		require.NotContains(t, out.String(), "S(1)")
		require.NotContains(t, out.String(), "copy-start")
		checkSpaces(t, "spaces_small", m, out, rep, vmem, 0)
	}
	out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: 64 * 128 * 4})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Placed)
	require.Equal(t, int64(64*128*4), rep.VMEMPeak)
	checkSpaces(t, "spaces_small", m, out, rep, 64*128*4, 5*time.Second)
}

// TestAssignSpacesWindow: a window longer than the schedule allows places
// nothing; MinWindow 1 moves more uses.
func TestAssignSpacesWindow(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	_, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: 16 << 20, MinWindow: 100})
	require.NoError(t, err)
	require.Zero(t, rep.Placed)
	out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: 16 << 20, MinWindow: 1})
	require.NoError(t, err)
	require.Positive(t, rep.Placed)
	require.Equal(t, 1, rep.Decisions[0].Window)
	checkSpaces(t, "spaces_small", m, out, rep, 16<<20, 5*time.Second)
}

func TestAssignSpacesBadOptions(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	for _, opts := range []SpaceOptions{{}, {VMEM: -1}, {VMEM: 1 << 20, MinWindow: -1}} {
		_, _, err := AssignSpaces(context.Background(), m, opts)
		require.Error(t, err, "%+v", opts)
		require.True(t, errors.Is(err, ErrSpaceOptions), "%+v: %v", opts, err)
	}
	_, _, err := AssignSpaces(context.Background(), nil, SpaceOptions{VMEM: 1 << 20})
	require.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = AssignSpaces(ctx, m, SpaceOptions{VMEM: 1 << 20})
	require.ErrorIs(t, err, context.Canceled)
}

// TestAssignSpacesScalarAndUnlaidOut: shapes without a layout, a scalar
// among them, get the default layout in S(1), and the text round-trips.
func TestAssignSpacesScalarAndUnlaidOut(t *testing.T) {
	m := spacesParse(t, `HloModule unlaid

ENTRY main {
  s = f32[] parameter(0)
  x = f32[8] parameter(1)
  b = f32[8] broadcast(s), dimensions={}
  n1 = f32[8] negate(x)
  n2 = f32[8] negate(n1)
  n3 = f32[8] negate(n2)
  m1 = f32[8] multiply(n3, b)
  bs = f32[8] broadcast(s), dimensions={}
  m2 = f32[8] multiply(m1, bs)
  m3 = f32[8] add(m2, b)
  ROOT r = f32[8] add(m3, x)
}
`)
	out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: 1 << 20})
	require.NoError(t, err)
	require.Positive(t, rep.Placed)
	checkSpaces(t, "unlaid", m, out, rep, 1<<20, 5*time.Second)
	t.Log(out.String())
	require.Contains(t, out.String(), ":S(1)}")
}

// TestAssignSpacesCallee: a computation called once (call) gets its own
// prefetches; its parameter holds the caller's value and is read there.
func TestAssignSpacesCallee(t *testing.T) {
	m := spacesParse(t, `HloModule calls

callee {
  q0 = f32[64,128] parameter(0)
  q1 = f32[64,128] parameter(1)
  a = f32[64,128] add(q0, q1)
  n1 = f32[64,128] negate(a)
  n2 = f32[64,128] exponential(n1)
  n3 = f32[64,128] negate(n2)
  b = f32[64,128] multiply(n3, q1)
  ROOT c = f32[64,128] subtract(b, q1)
}

ENTRY main {
  p0 = f32[64,128] parameter(0)
  p1 = f32[64,128] parameter(1)
  ROOT r = f32[64,128] call(p0, p1), to_apply=callee
}
`)
	out, rep, err := AssignSpaces(context.Background(), m, SpaceOptions{VMEM: 16 << 20})
	require.NoError(t, err)
	c := checkSpaces(t, "calls", m, out, rep, 16<<20, 5*time.Second)
	require.True(t, c.numeric, "the module evaluates")
	t.Log(out.String())
	require.Equal(t, 1, rep.Placed)
	d := rep.Decisions[0]
	require.Equal(t, "q1", d.Name)
	require.Equal(t, "callee", d.Computation)
	require.Equal(t, 2, d.Uses)
	require.Equal(t, int64(64*128*4), rep.HBMTrafficSaved)
	callee := out.Computation("callee")
	require.Equal(t, d.CopyDone, callee.Instructions[d.Done].Name)
	require.Equal(t, "c", callee.Instructions[d.LastUse].Name)
}

// TestAssignSpacesDropsWhatThePlanCannotHold: values chosen for a larger
// VMEM than the plan may use are given up, the last chosen first, until
// the plan fits.
func TestAssignSpacesDropsWhatThePlanCannotHold(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	base := m.Clone()
	a, err := liveness.PrepareWith(base, liveness.PrepareOptions{})
	require.NoError(t, err)
	cands := spaceCandidates(a, DefaultMinWindow, 16<<20)
	chosen := chooseSpaces(cands, a.EndTime(), 16<<20)
	require.Len(t, chosen, 2)
	a.Schedule.Apply(base)
	const vmem = 64 * 128 * 4 // one of the two
	out, rep, err := fitSpaces(context.Background(), base, chosen, vmem)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Placed)
	require.Equal(t, 1, rep.Dropped)
	require.Equal(t, "p1", rep.Decisions[0].Name)
	checkSpaces(t, "spaces_small", m, out, rep, vmem, 5*time.Second)

	out, rep, err = fitSpaces(context.Background(), base, chosen, 1)
	require.NoError(t, err)
	require.Zero(t, rep.Placed)
	require.Equal(t, 2, rep.Dropped)
	checkSpaces(t, "spaces_small", m, out, rep, 1, 0)
}
