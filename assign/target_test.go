package assign

import (
	"context"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// TestTargetByName: the predefined targets by name, and the error the CLI
// prints for another name.
func TestTargetByName(t *testing.T) {
	for _, want := range []Target{GPU, CPU, TPU} {
		got, err := TargetByName(want.Name)
		require.NoError(t, err, "TargetByName(%q)", want.Name)
		require.True(t, got.Name == want.Name && got.Alignment == want.Alignment, "TargetByName(%q) = %+v; want %+v", want.Name, got, want)
	}
	_, err := TargetByName("arm")
	require.EqualError(t, err, `assign: unknown target "arm" (want gpu, cpu or tpu)`, "TargetByName(arm)")
}

// TestCustomTarget: a target of the caller's own takes its alignment, is
// refused without one, and is refused when its sizes disagree with the
// analysis's; the zero Target is GPU.
func TestCustomTarget(t *testing.T) {
	ctx := context.Background()
	as, err := Assign(ctx, analysedForValidate(t), Options{})
	require.NoError(t, err, "zero target")
	require.True(t, as.Options.Target.Name == "gpu" && as.Options.Align == 128, "zero target: got %+v; want gpu aligned to 128", as.Options)
	own := Target{Name: "own", Alignment: 32}
	as, err = Assign(ctx, analysedForValidate(t), Options{Target: own})
	require.NoError(t, err, "own target")
	require.True(t, as.Options.Align == 32, "own target: got %v; want alignment 32", as)
	require.NoError(t, Check(as))
	_, err = Assign(ctx, analysedForValidate(t), Options{Target: Target{Name: "own"}})
	require.ErrorContains(t, err, "no alignment", "target without alignment")
	own.Size = func(s hlo.Shape) (int64, error) {
		n, err := hlo.ByteSize(s)
		return 2 * n, err
	}
	_, err = Assign(ctx, analysedForValidate(t), Options{Target: own})
	require.ErrorContains(t, err, "in.hlo:4:3: n: 32 bytes on the target, 16 in the analysis", "target of other sizes")
}
