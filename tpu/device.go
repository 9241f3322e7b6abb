package tpu

import (
	"fmt"
	"strings"

	"github.com/hlomem/hlomem/internal/bytesize"
)

// Generation is a TPU chip generation as one JAX device sees it: its HBM,
// the VMEM (the fast vector memory of space S(1)) and SMEM (the scalar
// memory of space S(2)) of a TensorCore, and whether its 16-bit types tile
// 16 rows deep (T(16,128)(2,1)) rather than 8.
type Generation struct {
	Name            string
	HBM, VMEM, SMEM int64
	Tile16          bool
}

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// Presets, from JAX's own table of TPU hardware (get_tpu_info in
// jax/_src/pallas/mosaic/tpu_info.py, the figures the docs' "TPU Hardware
// Reference" prints), per TensorCore:
//
//	generation  VMEM     SMEM   HBM
//	v4          16 MiB   1 MiB  34.4 GB per chip of 2 cores (megacore)
//	v5e         128 MiB  1 MiB  17.2 GB, 1 core
//	v5p         64 MiB   1 MiB  103 GB per chip of 2 cores (megacore)
//	v6e         128 MiB  1 MiB  34.4 GB, 1 core
//	7x          64 MiB   1 MiB  206 GB per chip of 2 cores
//
// HBM is what one JAX device holds: the whole chip for the megacore parts
// (v4 and v5p run their two TensorCores as one device), read as the
// capacities Google quotes (32, 16, 95 and 32 GiB); a TPU7x core is a
// device of its own, half of the chip's 192 GiB. The same table sets the
// sublane tiling: before TPU7x XLA tiles 16-bit arrays 8 rows deep unless
// --xla_tpu_enable_large_2nd_minor_layout_for_x16 says otherwise, from
// TPU7x on 16 rows (Tile16).
var (
	V4  = Generation{Name: "tpu-v4", HBM: 32 * gib, VMEM: 16 * mib, SMEM: 1 * mib}
	V5e = Generation{Name: "tpu-v5e", HBM: 16 * gib, VMEM: 128 * mib, SMEM: 1 * mib}
	V5p = Generation{Name: "tpu-v5p", HBM: 95 * gib, VMEM: 64 * mib, SMEM: 1 * mib}
	V6e = Generation{Name: "tpu-v6e", HBM: 32 * gib, VMEM: 128 * mib, SMEM: 1 * mib}
	V7x = Generation{Name: "tpu-7x", HBM: 96 * gib, VMEM: 64 * mib, SMEM: 1 * mib, Tile16: true}
)

// Generations lists the presets.
var Generations = []Generation{V4, V5e, V5p, V6e, V7x}

// Custom generations get these VMEM and SMEM sizes unless they say
// otherwise.
const (
	DefaultCustomVMEM = 16 * mib
	DefaultCustomSMEM = 1 * mib
)

// GenerationByName returns the preset named name ("tpu-v4", "v4",
// "tpu-v6e", "7x", ...), or a custom part for
// "tpu-custom:HBM[:VMEM[:SMEM]]" ("tpu-custom:16GiB:32MiB:1MiB"; VMEM
// defaults to DefaultCustomVMEM, SMEM to DefaultCustomSMEM; a custom part
// tiles as the presets before TPU7x).
func GenerationByName(name string) (Generation, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, g := range Generations {
		if n == g.Name || "tpu-"+n == g.Name || n == "tpu"+strings.TrimPrefix(g.Name, "tpu-") {
			return g, nil
		}
	}
	rest, ok := strings.CutPrefix(n, "tpu-custom:")
	if !ok {
		rest, ok = strings.CutPrefix(n, "custom:")
	}
	if !ok {
		names := make([]string, len(Generations))
		for i, g := range Generations {
			names[i] = g.Name
		}
		return Generation{}, fmt.Errorf("tpu: unknown generation %q (want %s or tpu-custom:HBM[:VMEM[:SMEM]])", name, strings.Join(names, ", "))
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return Generation{}, fmt.Errorf("tpu: generation %q: want tpu-custom:HBM[:VMEM[:SMEM]]", name)
	}
	g := Generation{Name: "tpu-custom", VMEM: DefaultCustomVMEM, SMEM: DefaultCustomSMEM}
	for i, field := range []*int64{&g.HBM, &g.VMEM, &g.SMEM}[:len(parts)] {
		what := [...]string{"HBM", "VMEM", "SMEM"}[i]
		v, err := bytesize.Parse(parts[i])
		if err != nil || v <= 0 {
			return Generation{}, fmt.Errorf("tpu: generation %q: %s size %q must be a positive byte count", name, what, parts[i])
		}
		*field = v
	}
	return g, nil
}
