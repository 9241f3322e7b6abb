package eager

import (
	"context"
	"testing"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
)

// FuzzEager runs modules op by op under both release rules on a small
// device: never a panic or an error but the pipeline's refusal; held
// never below last use when both fit; an out-of-memory always names its
// step's op. Seeds: random modules with loops, calls and conditionals.
func FuzzEager(f *testing.F) {
	f.Add([]byte(chain))
	for seed := uint64(0); seed < 12; seed++ {
		f.Add([]byte(randhlo.Generate(seed, randhlo.Options{Instructions: 8 + int(seed)})))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		mods, err := hlo.Parse("fuzz.hlo", src)
		if err != nil || len(mods) != 1 || mods[0].NumInstructions() > 200 {
			return
		}
		m := mods[0]
		var peaks [2]int64
		fits := true
		for i, rule := range []Release{Held, LastUse} {
			c, err := gpu.NewClient(gpu.Device{Name: "fuzz", Memory: 1 << 20}, gpu.ClientConfig{MemFraction: 1, Allocator: gpu.Platform}, gpu.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(context.Background(), m, c, Options{Release: rule, Compile: compile.Options{Fuse: true}, LiveAt: -1})
			if err != nil {
				return // a module the pipeline refuses
			}
			if r.OOM != nil && r.FailedStep > 0 && r.FailedInst() == nil {
				t.Fatalf("out of memory at step %d without its op", r.FailedStep)
			}
			fits = fits && r.Fits()
			peaks[i] = r.Peak
		}
		if fits && peaks[0] < peaks[1] {
			t.Fatalf("held peak %d below last use %d", peaks[0], peaks[1])
		}
	})
}
