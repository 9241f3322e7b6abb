package tpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/hlomem/hlomem/liveness"
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

// heapHBM is the bytes of as's color-0 allocations.
func heapHBM(as *assign.Assignment) int64 {
	hbm, _, _ := heaps(as)
	return hbm
}

// spacesChecked is what checkSpaces found.
type spacesChecked struct {
	as      *assign.Assignment
	heap    int64 // color-1 allocations of the plan
	numeric bool  // outputs compared with the original module's
	// unevaluated is what stopped the reference run (numericsBounded), nil
	// when it ran or was not tried.
	unevaluated error
}

// numericsMaxSteps and numericsMaxWork bound the reference run of a
// corpus module under numericsBounded (eval.InstructionWork: well under a
// second of the evaluator on this 2-core machine).
const numericsMaxSteps, numericsMaxWork = 1 << 20, 1 << 24

// numerics says whether checkSpaces runs the module to compare outputs.
type numerics int

const (
	noNumerics numerics = iota
	// requireNumerics: the test's own small module is evaluated with no
	// time limit (its size bounds the work), and an evaluator error fails.
	requireNumerics
	// numericsBounded: a corpus module, evaluated when its reference run
	// takes at most numericsMaxSteps instructions (loop trips counted
	// again) and numericsMaxWork element operations, and the evaluator
	// knows its opcodes; the outputs are compared
	// whenever it does. A count, not a time, so that the modules compared
	// are the same on any machine, loaded or not.
	numericsBounded
)

// checkSpaces holds the module AssignSpaces returned to every promise:
// it verifies, its text parses back to the same text, it prepares, its
// TPU plan passes assign.Check and the shadow run, keeps VMEM within
// vmem and, unless num is noNumerics, computes the original module's
// outputs bit for bit (see numerics).
func checkSpaces(t *testing.T, name string, orig, out *hlo.Module, rep *SpaceReport, vmem int64, num numerics) spacesChecked {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, hlo.Verify(out), name)
	require.True(t, out.IsScheduled, "%s: output not scheduled", name)
	text := out.String()
	back, err := hlo.ParseModule(name, text)
	require.NoError(t, err, "%s: printed output does not parse", name)
	require.Equal(t, text, back.String(), "%s: printed output does not round-trip", name)

	a, err := preptest.Prepare(out, "")
	require.NoError(t, err, name)
	require.Equal(t, text, out.String(), "%s: preparing the output changed it", name)
	as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU, Algorithm: spacePacker})
	require.NoError(t, err, name)
	require.NoError(t, assign.Check(as), name)
	// The default packer starts from the portfolio and ends no higher.
	auto, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU, Budget: 20 * time.Millisecond})
	require.NoError(t, err, name)
	require.NoError(t, assign.Check(auto), name)
	_, autoVMEM, autoSMEM := heaps(auto)
	require.LessOrEqual(t, autoVMEM, rep.VMEMHeap, "%s: the default packer's VMEM", name)
	require.LessOrEqual(t, autoSMEM, rep.SMEMHeap, "%s: the default packer's SMEM", name)
	sh, err := exec.Shadow(ctx, as)
	require.NoError(t, err, name)
	require.Nil(t, sh.Violation, "%s: shadow run: %v", name, sh.Violation)
	_, heap, smem := heaps(as)
	require.LessOrEqual(t, heap, vmem, "%s: VMEM heap", name)
	require.Equal(t, rep.VMEMHeap, heap, "%s: reported VMEM heap", name)
	require.Equal(t, rep.SMEMHeap, smem, "%s: reported SMEM heap", name)
	require.LessOrEqual(t, rep.VMEMPeak, vmem, "%s: VMEM peak", name)
	require.LessOrEqual(t, rep.VMEMPeak, heap, "%s: VMEM peak above the plan", name)
	require.LessOrEqual(t, rep.SMEMPeak, smem, "%s: SMEM peak above the plan", name)
	if rep.Placed == 0 {
		require.Zero(t, heap, name)
	}
	if rep.SMEMScalars == 0 {
		require.Zero(t, smem, name)
	}
	require.Len(t, rep.Decisions, rep.Placed, name)
	require.Len(t, rep.Scalars, rep.SMEMScalars, name)
	require.Equal(t, rep.Placed, rep.Prefetches+rep.Produced, name)
	var prefetched, produced, evicted, saved int64
	for _, d := range rep.Decisions {
		switch d.Kind {
		case Prefetch:
			prefetched += d.Bytes
			require.Equal(t, d.Uses-1, d.Benefit, "%s: %s", name, d.Name)
		case Produce:
			produced += d.Bytes
			require.Zero(t, d.HBMUses, "%s: %s", name, d.Name)
			require.Equal(t, d.Uses+1, d.Benefit, "%s: %s", name, d.Name)
		case ProduceEvict:
			produced += d.Bytes
			evicted += d.Bytes
			require.Positive(t, d.HBMUses, "%s: %s", name, d.Name)
			require.Equal(t, d.Uses, d.Benefit, "%s: %s", name, d.Name)
		}
		saved += int64(d.Benefit) * d.Bytes
		if d.Kind != Produce {
			require.Positive(t, d.Window, "%s: %s", name, d.Name)
			require.GreaterOrEqual(t, d.WindowBytes, d.Bytes, "%s: %s: the window moves fewer bytes than the copy", name, d.Name)
		}
	}
	require.Equal(t, prefetched, rep.BytesPrefetched, name)
	require.Equal(t, produced, rep.BytesProduced, name)
	require.Equal(t, evicted, rep.BytesEvicted, name)
	require.Equal(t, saved, rep.HBMTrafficSaved, name)
	copies := rep.Prefetches + rep.Evicted
	require.Equal(t, copies, strings.Count(text, " copy-start("), "%s: copy-starts in the text", name)
	require.Equal(t, copies, strings.Count(text, " copy-done("), "%s: copy-dones in the text", name)
	require.Equal(t, rep.HBMPeakAfter, spacePeak(a, HBMSpace), name)
	require.LessOrEqual(t, rep.HBMPeakAfter, heapHBM(as), name)

	res := spacesChecked{as: as, heap: heap}
	if num == noNumerics || rep.Placed == 0 && rep.SMEMScalars == 0 || as.Stats.TotalBytes > 64<<20 {
		return res
	}
	// Numerics: the original module's reference run against the planned
	// run of the output.
	ref0 := orig.Clone()
	a0, err := preptest.Prepare(ref0, "")
	require.NoError(t, err, name)
	as0, err := assign.Assign(ctx, a0, assign.Options{Target: assign.TPU, Budget: 20 * time.Millisecond})
	require.NoError(t, err, name)
	args := eval.RandomArgs(as0.Module, rand.New(rand.NewPCG(1, 0)))
	ropts := exec.Options{Reference: true}
	if num == numericsBounded {
		ropts.MaxSteps, ropts.MaxWork = numericsMaxSteps, numericsMaxWork
	}
	want, err := exec.Execute(ctx, as0, args, nil, ropts)
	if err != nil {
		// An opcode the evaluator lacks, or (numericsBounded) over its
		// steps: no numerics. Where they are required, an error fails.
		require.NotEqual(t, requireNumerics, num, "%s: the reference run: %v", name, err)
		res.unevaluated = err
		return res
	}
	// The planned run on a chip whose VMEM and SMEM are the capacities
	// the plan was made for: its color-1 and color-2 allocations go there.
	chip, err := NewChip(Generation{HBM: 64 << 30, VMEM: vmem, SMEM: max(rep.SMEMHeap, 1)}, exec.PoisonByte)
	require.NoError(t, err, name)
	got, err := exec.Execute(ctx, as, args, chip, exec.Options{})
	require.NoError(t, err, "%s: planned run of the output", name)
	if rep.Placed > 0 {
		require.Positive(t, chip.VMEM().Stats().Peak, "%s: nothing ran in VMEM", name)
	}
	if rep.SMEMScalars > 0 {
		require.Positive(t, chip.SMEM().Stats().Peak, "%s: nothing ran in SMEM", name)
	}
	require.Equal(t, len(want.Outputs), len(got.Outputs), name)
	for i := range want.Outputs {
		require.Equal(t, want.Outputs[i].Checksum(), got.Outputs[i].Checksum(), "%s: output %d differs from the original module's", name, i)
	}
	res.numeric = true
	return res
}

// decision returns the placement of the value name in rep.
func decision(t *testing.T, rep *SpaceReport, name string) SpaceDecision {
	t.Helper()
	for _, d := range rep.Decisions {
		if d.Name == name {
			return d
		}
	}
	require.Failf(t, "no placement", "%s is not placed: %+v", name, rep.Decisions)
	return SpaceDecision{}
}

// TestAssignSpacesPrefetchOnly: with prefetches alone, the most used
// value, p1, is prefetched first, for the four uses that leave room for a
// window of two; the first (a) stays on HBM.
func TestAssignSpacesPrefetchOnly(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	before := m.String()
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, PrefetchOnly: true}, nil))
	require.NoError(t, err)
	require.Equal(t, before, m.String(), "AssignSpaces changed its input")
	c := checkSpaces(t, "spaces_small", m, out, rep, 16<<20, requireNumerics)
	require.True(t, c.numeric, "the small module evaluates")

	text := out.String()
	t.Log(text)
	require.Contains(t, text, "f32[64,128]{1,0:S(1)}")
	require.Equal(t, rep.Placed, rep.Prefetches)
	require.Zero(t, rep.Produced)
	require.Zero(t, rep.BytesEvicted)

	d := rep.Decisions[0]
	require.Equal(t, Prefetch, d.Kind)
	require.Equal(t, "p1", d.Name)
	require.Equal(t, int64(64*128*4), d.Bytes)
	require.Equal(t, 4, d.Uses)
	require.Equal(t, 1, d.HBMUses)
	require.Equal(t, 3, d.Benefit)
	require.Equal(t, DefaultMinWindow, d.Window)
	// n2 and n3 move 4 × 32 KiB, more than the 32 KiB copy.
	require.Equal(t, int64(4*64*128*4), d.WindowBytes)
	require.InDelta(t, 3.0/(64*128*4), d.BenefitPerByte, 1e-15)
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
	require.Equal(t, int64(3*64*128*4), d.Bytes*int64(d.Benefit))
	require.Positive(t, rep.VMEMPeak)
	// A prefetch frees no HBM: the HBM peak is what it was, with each
	// copy's u32 context and the index table of its (dest, src, context)
	// tuple, 4 + 3 × 8 bytes.
	require.LessOrEqual(t, rep.HBMPeakBefore, rep.HBMPeakAfter)
	require.LessOrEqual(t, rep.HBMPeakAfter-rep.HBMPeakBefore, int64(28*rep.Prefetches))
}

// spacesEvict: a is read by three instructions and then handed to the
// root tuple, which must read HBM; t0 is read by one instruction right
// after it and nothing else.
const spacesEvict = `HloModule spaces_evict

ENTRY main {
  p0 = f32[64,128] parameter(0)
  a = f32[64,128] exponential(p0)
  t0 = f32[64,128] negate(p0)
  b = f32[64,128] add(a, t0)
  c = f32[64,128] multiply(b, a)
  d = f32[64,128] subtract(c, a)
  e = f32[64,128] negate(d)
  f = f32[64,128] exponential(e)
  ROOT r = (f32[64,128], f32[64,128]) tuple(f, a)
}
`

// TestAssignSpacesProduceAndEvict: a value whose uses all compute with it
// is produced in VMEM and never reaches HBM; one that is also live to the
// end of the entry through a tuple is produced in VMEM, read there by its
// first uses and evicted for the tuple.
func TestAssignSpacesProduceAndEvict(t *testing.T) {
	m := spacesParse(t, spacesEvict)
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20}, nil))
	require.NoError(t, err)
	c := checkSpaces(t, "spaces_evict", m, out, rep, 16<<20, requireNumerics)
	require.True(t, c.numeric, "the module evaluates")
	text := out.String()
	t.Log(text)
	for _, n := range []string{"t0", "b", "c", "d", "e"} {
		d := decision(t, rep, n)
		require.Equal(t, Produce, d.Kind, n)
		require.Zero(t, d.HBMUses, n)
		require.Contains(t, text, "%"+n+" = f32[64,128]{1,0:S(1)}", n)
	}
	d := decision(t, rep, "a")
	require.Equal(t, ProduceEvict, d.Kind)
	require.Equal(t, 3, d.Uses)
	require.Equal(t, 1, d.HBMUses)
	require.Equal(t, 3, d.Benefit)
	require.NotEmpty(t, d.CopyStart)
	entry := out.Entry
	cs, cd := entry.Instruction(d.CopyStart), entry.Instruction(d.CopyDone)
	require.Equal(t, hlo.OpCopyStart, cs.Opcode)
	require.Equal(t, entry.Instruction("a"), cs.Operands[0], "the eviction copies a")
	require.Equal(t, "(f32[64,128], f32[64,128]{1,0:S(1)}, u32[])", cs.Shape.String())
	require.Equal(t, "f32[64,128]", cd.Shape.String())
	require.Equal(t, cd, entry.Root.Operands[1], "the root tuple reads the eviction's copy")
	require.Equal(t, entry.Instruction("a"), entry.Instruction("d").Operands[1], "d reads a from VMEM")
	// The eviction starts right after a and ends as soon as two
	// instructions moving at least a's bytes have run.
	require.Equal(t, d.Start+1, slices.Index(entry.Instructions, cs))
	require.Equal(t, DefaultMinWindow, d.Window)
	require.Equal(t, d.Done, slices.Index(entry.Instructions, cd))
	require.Equal(t, int64(64*128*4), rep.BytesEvicted)
	// The HBM peak is at the root (the parameter, both outputs and the
	// tuple's table) and stays; the values produced in VMEM never reach
	// HBM.
	require.LessOrEqual(t, rep.HBMPeakAfter, rep.HBMPeakBefore)
	for _, v := range c.as.Analysis.Values {
		if n := v.Inst.Name; n == "b" || n == "c" || n == "d" || n == "e" || n == "t0" {
			require.Equal(t, int64(VMEMSpace), v.Color, n)
		}
	}
	require.Equal(t, rep.Placed, rep.Produced)
	require.Equal(t, 1, rep.Evicted)
}

// TestAssignSpacesCapacity: a VMEM too small for any value places
// nothing and leaves the prepared module alone; one that holds exactly one
// value places one.
func TestAssignSpacesCapacity(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	// Nothing placed: the output is the prepared module, scheduled.
	prepared := m.Clone()
	a, err := preptest.Prepare(prepared, "")
	require.NoError(t, err)
	a.Schedule.Apply(prepared)
	for _, vmem := range []int64{1, 512, 64*128*4 - 1} {
		out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: vmem}, nil))
		require.NoError(t, err)
		require.Zero(t, rep.Placed, "VMEM %d", vmem)
		require.Equal(t, prepared.String(), out.String(), "VMEM %d: nothing placed, yet the module changed", vmem)
		require.Zero(t, rep.BytesPrefetched)
		require.Zero(t, rep.VMEMPeak)
		require.Equal(t, rep.HBMPeakBefore, rep.HBMPeakAfter)
		require.NotContains(t, out.String(), "S(1)")
		require.NotContains(t, out.String(), "copy-start")
		checkSpaces(t, "spaces_small", m, out, rep, vmem, noNumerics)
	}
	// Room for one array at a time: several values, never two at once.
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 64 * 128 * 4}, nil))
	require.NoError(t, err)
	require.Positive(t, rep.Placed)
	require.Equal(t, int64(64*128*4), rep.VMEMPeak)
	checkSpaces(t, "spaces_small", m, out, rep, 64*128*4, requireNumerics)
	out, rep, err = AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 64 * 128 * 4, PrefetchOnly: true}, nil))
	require.NoError(t, err)
	require.Equal(t, 1, rep.Placed)
	checkSpaces(t, "spaces_small", m, out, rep, 64*128*4, requireNumerics)
}

// TestAssignSpacesWindow: a window longer than the schedule allows places
// no copy; MinWindow 1 moves more uses; a copy larger than what the
// instructions around it move needs a longer window, or Overlap < 0.
func TestAssignSpacesWindow(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	_, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, MinWindow: 100, PrefetchOnly: true}, nil))
	require.NoError(t, err)
	require.Zero(t, rep.Placed)
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, MinWindow: 100}, nil))
	require.NoError(t, err)
	require.Zero(t, rep.Prefetches+rep.Evicted, "no copy has a window of 100")
	require.Positive(t, rep.Produced, "values produced in VMEM need no window")
	checkSpaces(t, "spaces_small", m, out, rep, 16<<20, requireNumerics)
	out, rep, err = AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, MinWindow: 1, PrefetchOnly: true}, nil))
	require.NoError(t, err)
	require.Positive(t, rep.Placed)
	require.Equal(t, 1, rep.Decisions[0].Window)
	checkSpaces(t, "spaces_small", m, out, rep, 16<<20, requireNumerics)

	// big is 64 times the arrays the instructions between its definition
	// and its uses move: two instructions of 3 × 16 KiB cannot hide a
	// 1 MiB copy, so the window grows until they can, or it is refused.
	big := spacesParse(t, `HloModule bigcopy

ENTRY main {
  big = f32[512,512] parameter(0)
  x = f32[64,64] parameter(1)
  s = f32[64,64] slice(big), slice={[0:64], [0:64]}
`+chain(40)+`
  u = f32[64,64] slice(big), slice={[64:128], [0:64]}
  v = f32[64,64] add(u, x39)
  w = f32[64,64] slice(big), slice={[128:192], [0:64]}
  ROOT r = f32[64,64] add(w, v)
}
`)
	_, rep, err = AssignSpaces(context.Background(), big, spaceOpts(SpaceOptions{VMEM: 16 << 20, PrefetchOnly: true}, nil))
	require.NoError(t, err)
	d := decision(t, rep, "big")
	require.Equal(t, 2, d.Uses, "u and w read the prefetch")
	require.GreaterOrEqual(t, d.WindowBytes, int64(512*512*4))
	require.Greater(t, d.Window, 20, "the window spans the chain")
	_, rep, err = AssignSpaces(context.Background(), big, spaceOpts(SpaceOptions{VMEM: 16 << 20, PrefetchOnly: true, Overlap: -1}, nil))
	require.NoError(t, err)
	d = decision(t, rep, "big")
	require.Equal(t, DefaultMinWindow, d.Window, "counting instructions only")
	_, rep, err = AssignSpaces(context.Background(), big, spaceOpts(SpaceOptions{VMEM: 16 << 20, PrefetchOnly: true, Overlap: 100}, nil))
	require.NoError(t, err)
	for _, d := range rep.Decisions {
		require.NotEqual(t, "big", d.Name, "no window moves 100 MiB")
	}
}

// chain returns n element-wise instructions x0..x{n-1} on f32[64,64]
// starting from x.
func chain(n int) string {
	var b strings.Builder
	prev := "x"
	for i := range n {
		fmt.Fprintf(&b, "  x%d = f32[64,64] negate(%s)\n", i, prev)
		prev = fmt.Sprintf("x%d", i)
	}
	return b.String()
}

func TestAssignSpacesBadOptions(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	for _, opts := range []SpaceOptions{{}, {VMEM: 1 << 20}, {VMEM: -1}, {VMEM: 1 << 20, MinWindow: -1}, {VMEM: 1 << 20, SMEM: -1}, {VMEM: 1 << 20, Overlap: math.NaN()}, {VMEM: 1 << 20, Overlap: math.Inf(1)}} {
		_, _, err := AssignSpaces(context.Background(), m, opts)
		require.Error(t, err, "%+v", opts)
		require.True(t, errors.Is(err, ErrSpaceOptions), "%+v: %v", opts, err)
	}
	_, _, err := AssignSpaces(context.Background(), nil, spaceOpts(SpaceOptions{VMEM: 1 << 20}, nil))
	require.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = AssignSpaces(ctx, m, spaceOpts(SpaceOptions{VMEM: 1 << 20}, nil))
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
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 1 << 20}, nil))
	require.NoError(t, err)
	require.Positive(t, rep.Placed)
	checkSpaces(t, "unlaid", m, out, rep, 1<<20, requireNumerics)
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
	for _, only := range []bool{true, false} {
		out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, PrefetchOnly: only}, nil))
		require.NoError(t, err)
		c := checkSpaces(t, "calls", m, out, rep, 16<<20, requireNumerics)
		require.True(t, c.numeric, "the module evaluates")
		t.Log(out.String())
		d := decision(t, rep, "q1")
		require.Equal(t, Prefetch, d.Kind)
		require.Equal(t, "callee", d.Computation)
		require.Equal(t, 2, d.Uses)
		callee := out.Computation("callee")
		require.Equal(t, d.CopyDone, callee.Instructions[d.Done].Name)
		require.Equal(t, "c", callee.Instructions[d.LastUse].Name)
		if only {
			require.Equal(t, 1, rep.Placed)
			require.Equal(t, int64(64*128*4), rep.HBMTrafficSaved)
		} else {
			// a, n1, n2 and n3 are produced in VMEM; c is the callee's
			// root, which leaves it.
			for _, n := range []string{"a", "n1", "n2", "n3", "b"} {
				require.Equal(t, Produce, decision(t, rep, n).Kind, n)
			}
		}
	}
}

// TestAssignSpacesDropsWhatThePlanCannotHold: values chosen for a larger
// VMEM than the plan may use are given up, the last chosen first, until
// the plan fits.
func TestAssignSpacesDropsWhatThePlanCannotHold(t *testing.T) {
	m := spacesParse(t, spacesSmall)
	base := m.Clone()
	a, err := preptest.Prepare(base, "")
	require.NoError(t, err)
	opts := spaceOpts(SpaceOptions{VMEM: 16 << 20, MinWindow: DefaultMinWindow, Overlap: DefaultOverlap, PrefetchOnly: true}, nil)
	chosen := chooseSpaces(newSpacePlanner(a, opts).candidates(make([]bool, len(a.Buffers))), a.EndTime(), 16<<20)
	require.Len(t, chosen, 2)
	a.Schedule.Apply(base)
	const vmem = 64 * 128 * 4 // one of the two
	opts.VMEM = vmem
	out, rep, err := fitSpaces(context.Background(), base, chosen, nil, opts, 0)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Placed)
	require.Equal(t, 1, rep.Dropped)
	require.Equal(t, "p1", rep.Decisions[0].Name)
	checkSpaces(t, "spaces_small", m, out, rep, vmem, requireNumerics)

	opts.VMEM = 1
	out, rep, err = fitSpaces(context.Background(), base, chosen, nil, opts, 0)
	require.NoError(t, err)
	require.Zero(t, rep.Placed)
	require.Equal(t, 2, rep.Dropped)
	checkSpaces(t, "spaces_small", m, out, rep, 1, noNumerics)
}

// spacesLoop counts i from 0 to 10, adding x to an accumulator each time:
// the counter, its limit and the loop's predicate are scalars.
const spacesLoop = `HloModule loop

cond {
  pc = (s32[], f32[64,128], f32[64,128]) parameter(0)
  i = s32[] get-tuple-element(pc), index=0
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}

body {
  pb = (s32[], f32[64,128], f32[64,128]) parameter(0)
  i = s32[] get-tuple-element(pb), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  acc = f32[64,128] get-tuple-element(pb), index=1
  x = f32[64,128] get-tuple-element(pb), index=2
  sum = f32[64,128] add(acc, x)
  ROOT t = (s32[], f32[64,128], f32[64,128]) tuple(next, sum, x)
}

ENTRY main {
  x = f32[64,128] parameter(0)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  acc0 = f32[64,128] broadcast(z), dimensions={}
  init = (s32[], f32[64,128], f32[64,128]) tuple(zero, acc0, x)
  w = (s32[], f32[64,128], f32[64,128]) while(init), condition=cond, body=body
  ROOT r = f32[64,128] get-tuple-element(w), index=1
}
`

// TestAssignSpacesSMEM: with SMEM, the loop counter's buffer (its copy
// before the loop, the phi, the increment) and the loop's predicate go to
// S(2), untiled, at every position; the plan packs them by words and the
// module still computes the same.
func TestAssignSpacesSMEM(t *testing.T) {
	m := spacesParse(t, spacesLoop)
	gen := V4
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: gen.VMEM, SMEM: gen.SMEM}, &gen))
	require.NoError(t, err)
	c := checkSpaces(t, "loop", m, out, rep, gen.VMEM, requireNumerics)
	require.True(t, c.numeric, "the loop evaluates")
	text := out.String()
	t.Log(text)
	require.Positive(t, rep.SMEMScalars)
	require.LessOrEqual(t, rep.SMEMHeap, gen.SMEM)
	body := out.Computation("body")
	require.Equal(t, "s32[]{:S(2)}", body.Instruction("next").Shape.String())
	require.Equal(t, "s32[]{:S(2)}", body.Instruction("i").Shape.String())
	require.Contains(t, body.Root.Shape.String(), "(s32[]{:S(2)}, f32[64,128]{1,0:T(8,128)")
	require.Contains(t, out.Entry.Instruction("w").Shape.String(), "(s32[]{:S(2)}, ")
	require.Equal(t, "pred[]{:S(2)}", out.Computation("cond").Root.Shape.String())
	// Words, not tiles: the counter takes 4 bytes of SMEM, and the color-2
	// heap is a few words.
	counter := false
	for _, s := range rep.Scalars {
		require.LessOrEqual(t, s.Bytes, int64(8), s.Name)
		if s.Values >= 3 {
			counter = true
		}
	}
	require.True(t, counter, "the loop counter's buffer, with its phi, is in SMEM: %+v", rep.Scalars)
	require.Less(t, rep.SMEMHeap, int64(64))
	for _, al := range c.as.Allocations {
		if al.Color == SMEMSpace {
			for _, s := range al.Slots {
				require.Zero(t, s.Offset%4)
			}
		}
	}

	// No SMEM: scalars stay tiled in HBM.
	out, rep, err = AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: gen.VMEM}, &gen))
	require.NoError(t, err)
	checkSpaces(t, "loop", m, out, rep, gen.VMEM, noNumerics)
	require.Zero(t, rep.SMEMScalars)
	require.NotContains(t, out.String(), "S(2)")
	require.Contains(t, out.String(), "s32[]{:T(256)}")
	// SMEM for one word at a time.
	out, rep, err = AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: gen.VMEM, SMEM: 4}, &gen))
	require.NoError(t, err)
	checkSpaces(t, "loop", m, out, rep, gen.VMEM, requireNumerics)
	require.LessOrEqual(t, rep.SMEMHeap, int64(4))
}

// TestAssignSpacesTiled: with a generation, values are placed at their
// padded sizes: f32[3,5] takes a whole 8×128 tile, 4 KiB, in VMEM.
func TestAssignSpacesTiled(t *testing.T) {
	m := spacesParse(t, strings.ReplaceAll(spacesSmall, "64,128", "3,5"))
	gen := V4
	out, rep, err := AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 16 << 20, PrefetchOnly: true}, &gen))
	require.NoError(t, err)
	checkSpaces(t, "tiled", m, out, rep, 16<<20, requireNumerics)
	d := decision(t, rep, "p1")
	require.Equal(t, int64(8*128*4), d.Bytes)
	require.Contains(t, out.String(), "f32[3,5]{1,0:T(8,128)S(1)}")
	// Too small for one padded array, though the unpadded one would fit.
	_, rep, err = AssignSpaces(context.Background(), m, spaceOpts(SpaceOptions{VMEM: 1024}, &gen))
	require.NoError(t, err)
	require.Zero(t, rep.Placed)
}

// spaceOpts is opts with the pipeline's preparation (package preptest,
// compile's order): gen, when set, tiles the module first as compile's
// target-layout pass does.
func spaceOpts(opts SpaceOptions, gen *Generation) SpaceOptions {
	opts.Prepare = func(ctx context.Context, m *hlo.Module) (*liveness.Analysis, error) {
		var po preptest.Options
		if gen != nil {
			g := *gen
			po.Before = func(m *hlo.Module) (bool, error) { return ApplyLayouts(m, g), nil }
		}
		return preptest.With(ctx, m, po)
	}
	opts.Replan = func(ctx context.Context, m *hlo.Module, ao assign.Options) (*assign.Assignment, error) {
		a, err := preptest.With(ctx, m, preptest.Options{})
		if err != nil {
			return nil, err
		}
		return assign.Assign(ctx, a, ao)
	}
	return opts
}
