package randhlo

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
)

// TestGeneratedModulesAreValid parses and verifies many generated modules.
func TestGeneratedModulesAreValid(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		src := Generate(seed, Options{Instructions: 10 + int(seed%40)})
		m, err := hlo.ParseModule("rand.hlo", src)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		if err := hlo.Verify(m); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		if Generate(seed, Options{Instructions: 10 + int(seed%40)}) != src {
			t.Fatalf("seed %d: not deterministic", seed)
		}
	}
}
