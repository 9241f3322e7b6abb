package eager

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// chain is a function of five f32[1024] arrays (4 KiB each): a, then
// b = -a, c = exp(b), d = b + c and the result -d.
const chain = `HloModule chain
ENTRY %e (a: f32[1024]) -> f32[1024] {
  %a = f32[1024]{0} parameter(0)
  %b = f32[1024]{0} negate(%a), metadata={op_name="jit(f)/neg" source_file="f.py" source_line=2}
  %c = f32[1024]{0} exponential(%b), metadata={op_name="jit(f)/exp" source_file="f.py" source_line=3}
  %d = f32[1024]{0} add(%b, %c), metadata={op_name="jit(f)/add" source_file="f.py" source_line=4}
  ROOT %r = f32[1024]{0} negate(%d)
}`

func platformClient(t *testing.T, mem int64) func() (*gpu.Client, error) {
	return func() (*gpu.Client, error) {
		return gpu.NewClient(gpu.Device{Name: "test", Memory: mem}, gpu.ClientConfig{MemFraction: 1, Allocator: gpu.Platform}, gpu.ClientOptions{})
	}
}

func parse(t *testing.T, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("t.hlo", src)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
	return m
}

// TestReleaseRules counts the chain by hand: held keeps all five arrays
// (20 KiB); last-use frees b and c after d reads them, so the peak is while
// d runs: a, b, c, d (16 KiB); jitted, the chain fuses into one op and
// only the argument and the result are ever allocated (8 KiB).
func TestReleaseRules(t *testing.T) {
	m := parse(t, chain)
	opts := Options{Compile: compile.Options{Fuse: true}, LiveAt: -1}
	for _, tc := range []struct {
		rule      Release
		peak      int64
		peakStep  int
		liveNames []string
	}{
		{Held, 5 * 4096, 4, []string{"a", "b", "c", "d", "r"}},
		{LastUse, 4 * 4096, 3, []string{"a", "b", "c", "d"}},
	} {
		t.Run(tc.rule.String(), func(t *testing.T) {
			opts.Release = tc.rule
			cmp, err := Compare(context.Background(), m, platformClient(t, 1<<20), opts)
			require.NoError(t, err)
			e := cmp.Eager
			require.True(t, e.Fits())
			require.Equal(t, tc.peak, e.Peak)
			require.Equal(t, tc.peakStep, e.PeakStep)
			require.Len(t, e.Steps, 4)
			var names []string
			for _, a := range e.Live {
				names = append(names, a.Name)
				require.Equal(t, int64(4096), a.Bytes)
			}
			require.ElementsMatch(t, tc.liveNames, names)
			require.Equal(t, int64(2*4096), cmp.Jit.Peak)
			require.InDelta(t, float64(tc.peak)/float64(2*4096), cmp.Ratio(), 1e-9)
		})
	}
}

// TestLiveArraysCarrySource: the listing names each array's op, its
// op_name and source line, largest first, at the step asked for.
func TestLiveArraysCarrySource(t *testing.T) {
	m := parse(t, chain)
	c, err := platformClient(t, 1<<20)()
	require.NoError(t, err)
	r, err := Run(context.Background(), m, c, Options{Release: LastUse, LiveAt: 2, Compile: compile.Options{Fuse: true}})
	require.NoError(t, err)
	require.Equal(t, 2, r.LiveStep)
	require.Len(t, r.Live, 3) // a, b, c while c is computed
	byName := map[string]LiveArray{}
	for _, a := range r.Live {
		byName[a.Name] = a
	}
	require.Equal(t, "f.py:3", byName["c"].Source)
	require.Equal(t, "jit(f)/exp", byName["c"].OpName)
	require.Equal(t, "f32[1024]{0}", byName["c"].Shape.String())
	require.Equal(t, hlo.OpParameter, byName["a"].Inst.Opcode)
}

// TestOutOfMemory: on a device too small for the held arrays, the run
// stops at the op whose result does not fit, with the allocator's OOM and
// the arrays alive then; last-use fits the same device.
func TestOutOfMemory(t *testing.T) {
	m := parse(t, chain)
	opts := Options{Release: Held, LiveAt: -1, Compile: compile.Options{Fuse: true}}
	c, err := platformClient(t, 18*1024)()
	require.NoError(t, err)
	r, err := Run(context.Background(), m, c, opts)
	require.NoError(t, err)
	require.False(t, r.Fits())
	require.Equal(t, "r", r.FailedInst().Name, "a, b, c, d take 16 KiB; r's 4 KiB more do not fit in 18")
	require.Len(t, r.Live, 4)
	require.Contains(t, r.OOM.Error(), "Out of memory while trying to allocate 4096 bytes.")

	opts.Release = LastUse
	c, err = platformClient(t, 18*1024)()
	require.NoError(t, err)
	r, err = Run(context.Background(), m, c, opts)
	require.NoError(t, err)
	require.True(t, r.Fits())
}

// TestNumbersOpByOp: with arguments, each op's program is evaluated on
// its plan and the numbers flow op to op; the results equal the jitted
// program's plan-free run bit for bit, under either release rule, on the
// bundled transformer's training step.
func TestNumbersOpByOp(t *testing.T) {
	mods, err := hlo.ParseFile("../testdata/transformer.hlo")
	require.NoError(t, err)
	m := mods[0]
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(3, 3)))
	for _, rule := range []Release{Held, LastUse} {
		cmp, err := Compare(context.Background(), m, platformClient(t, 1<<30), Options{Release: rule, Compile: compile.Options{Fuse: true}, LiveAt: -1, Inputs: args, Seed: 3})
		require.NoError(t, err)
		want, err := exec.Execute(context.Background(), cmp.Jit.Program.Assignment, args, nil, exec.Options{Reference: true, Seed: 3})
		require.NoError(t, err)
		require.Len(t, cmp.Eager.Outputs, len(want.Outputs))
		for i := range want.Outputs {
			require.Equal(t, want.Outputs[i].Checksum(), cmp.Eager.Outputs[i].Checksum(), "%s: output %d", rule, i)
		}
	}
}

// TestLiveAtStepZero: step 0 puts the arguments; --live-at=0 lists them.
func TestLiveAtStepZero(t *testing.T) {
	m := parse(t, chain)
	c, err := platformClient(t, 1<<20)()
	require.NoError(t, err)
	r, err := Run(context.Background(), m, c, Options{Release: Held, LiveAt: 0, Compile: compile.Options{Fuse: true}})
	require.NoError(t, err)
	require.Equal(t, 0, r.LiveStep)
	require.Len(t, r.Live, 1)
	require.Equal(t, "a", r.Live[0].Name)
}
