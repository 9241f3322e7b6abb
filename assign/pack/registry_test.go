package pack

import (
	"slices"
	"testing"
)

// TestRegistry: every packer has one name, Algorithms lists them in the
// registry's order, and PackerNamed finds each and nothing else.
func TestRegistry(t *testing.T) {
	names := Algorithms()
	if len(names) != len(Packers()) || names[0] != "auto" {
		t.Fatalf("Algorithms() = %v", names)
	}
	for i, p := range Packers() {
		if p.Name() != names[i] || slices.Index(names, p.Name()) != i {
			t.Errorf("packer %d: name %q, Algorithms has %q (first at %d)", i, p.Name(), names[i], slices.Index(names, p.Name()))
		}
		if q, ok := PackerNamed(p.Name()); !ok || q.Name() != p.Name() {
			t.Errorf("PackerNamed(%q) = %v, %v", p.Name(), q, ok)
		}
	}
	if _, ok := PackerNamed("magic"); ok {
		t.Error("PackerNamed(magic) found a packer")
	}
}
