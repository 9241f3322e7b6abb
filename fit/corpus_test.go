package fit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// TestCorpusTenPercentShort: on every paired module and the bundled
// examples, on a device of 90% of the module's plan total (custom:SIZE,
// the platform allocator so that the device's memory is the limit: BFC
// rounds every limit up to 2 MiB, which the small modules fit as they
// are), fit finds a combination that fits, and the changed module
// re-planned and re-run on that device under the combination's settings
// fits (its plan verified and shadow-checked); or it says that none is
// enough, with the run's need above the limit.
func TestCorpusTenPercentShort(t *testing.T) {
	type input struct {
		name, file string
		target     assign.Target
	}
	var in []input
	for _, f := range []string{"demo.hlo", "transformer.hlo"} {
		in = append(in, input{f, filepath.Join("..", "testdata", f), assign.GPU})
	}
	if corpus.Dir() != "" {
		for _, f := range corpus.Files(t, "paired/*/*_gpu_after_optimizations.txt", "paired-jax/*/*_gpu_after_optimizations.txt") {
			in = append(in, input{filepath.Base(filepath.Dir(f)), f, assign.GPU})
		}
		for _, f := range corpus.Files(t, "paired-jax-cpu/*/*.cpu_after_optimizations.txt") {
			in = append(in, input{filepath.Base(filepath.Dir(f)), f, assign.CPU})
		}
	}
	ctx := context.Background()
	platform := env(gpu.EnvAllocator, "platform")
	start := time.Now()
	var fits, none int
	for _, x := range in {
		src, err := os.ReadFile(x.file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.ParseModule(x.file, string(src))
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		copts := compile.Options{Target: x.target}
		r0, err := compile.Compile(ctx, m.Clone(), copts)
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		size := r0.Assignment.Stats.DeviceBytes * 9 / 10
		if size <= 0 {
			continue
		}
		dev := fmt.Sprintf("custom:%d", size)
		rep, err := Analyze(ctx, m, Options{Device: dev, Compile: copts, Getenv: platform})
		if err != nil {
			t.Fatalf("%s on %s: %v", x.name, dev, err)
		}
		c := rep.Combination
		if !c.Fits {
			none++
			if c.Why == "" || c.Need <= c.Limit && !rep.Verdict.Fragmented {
				t.Errorf("%s: no combination fits, yet it says %q with need %d of %d", x.name, c.Why, c.Need, c.Limit)
			}
			continue
		}
		fits++
		changed := m
		if c.Module != nil {
			changed = c.Module
		}
		if err := hlo.Verify(changed); err != nil {
			t.Fatalf("%s: the changed module is invalid: %v", x.name, err)
		}
		r, err := compile.Compile(ctx, changed.Clone(), copts)
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		sh, err := exec.Shadow(ctx, r.Assignment)
		if err != nil || sh.Violation != nil {
			t.Fatalf("%s: shadow check: %v %v", x.name, err, sh.Violation)
		}
		d, _ := gpu.DeviceByName(dev)
		p, err := gpu.NewProgram(changed.Name, r.Assignment)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := gpu.NewClient(d, c.config, gpu.ClientOptions{Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := session(ctx, cl, p)
		if err != nil || !ok {
			t.Errorf("%s: the combination %v says it fits on %s; re-running it: fits %v, %v", x.name, c.Levers, dev, ok, err)
		}
	}
	t.Logf("%d modules: %d fit with a combination, %d with none enough (%v)", len(in), fits, none, time.Since(start).Round(time.Second))
}
