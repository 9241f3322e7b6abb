package assign

import (
	"context"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
)

// TestTargetByName: the predefined targets by name, and the error the CLI
// prints for another name.
func TestTargetByName(t *testing.T) {
	for _, want := range []Target{GPU, CPU, TPU} {
		got, err := TargetByName(want.Name)
		if err != nil || got.Name != want.Name || got.Alignment != want.Alignment {
			t.Errorf("TargetByName(%q) = %+v, %v; want %+v", want.Name, got, err, want)
		}
	}
	if _, err := TargetByName("arm"); err == nil || err.Error() != `assign: unknown target "arm" (want gpu, cpu or tpu)` {
		t.Errorf("TargetByName(arm): got %v", err)
	}
}

// TestCustomTarget: a target of the caller's own takes its alignment, is
// refused without one, and is refused when its sizes disagree with the
// analysis's; the zero Target is GPU.
func TestCustomTarget(t *testing.T) {
	ctx := context.Background()
	as, err := Assign(ctx, analysedForValidate(t), Options{})
	if err != nil || as.Options.Target.Name != "gpu" || as.Options.Align != 128 {
		t.Fatalf("zero target: got %+v, %v; want gpu aligned to 128", as.Options, err)
	}
	own := Target{Name: "own", Alignment: 32}
	as, err = Assign(ctx, analysedForValidate(t), Options{Target: own})
	if err != nil || as.Options.Align != 32 {
		t.Fatalf("own target: got %v, %v; want alignment 32", as, err)
	}
	if err := Check(as); err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(ctx, analysedForValidate(t), Options{Target: Target{Name: "own"}}); err == nil || !strings.Contains(err.Error(), "no alignment") {
		t.Errorf("target without alignment: got %v", err)
	}
	own.Size = func(s hlo.Shape) (int64, error) {
		n, err := hlo.ByteSize(s)
		return 2 * n, err
	}
	if _, err := Assign(ctx, analysedForValidate(t), Options{Target: own}); err == nil || !strings.Contains(err.Error(), "in.hlo:4:3: n: 32 bytes on the target, 16 in the analysis") {
		t.Errorf("target of other sizes: got %v", err)
	}
}
