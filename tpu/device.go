package tpu

import (
	"fmt"
	"strings"

	"github.com/hlomem/hlomem/gpu"
)

// Generation is a TPU chip generation (per TensorCore): its HBM, its VMEM
// (the fast memory of space S(1)), its SMEM (scalars), and whether its
// narrow types tile 16 or 32 rows deep (T(16,128)(2,1)) rather than 8.
type Generation struct {
	Name            string
	HBM, VMEM, SMEM int64
	Tile16          bool
}

const (
	mib = 1 << 20
	gib = 1 << 30
)

// Presets. The HBM sizes are the published per-chip capacities (32, 16,
// 95 and 32 GB), read as GiB; the VMEM and SMEM sizes are modelling
// defaults, not checked against a primary source: set the real figure of
// the part at hand (tpu-custom:HBM:VMEM).
var (
	V4  = Generation{Name: "tpu-v4", HBM: 32 * gib, VMEM: 32 * mib, SMEM: 16 << 10}
	V5e = Generation{Name: "tpu-v5e", HBM: 16 * gib, VMEM: 128 * mib, SMEM: 1 * mib}
	V5p = Generation{Name: "tpu-v5p", HBM: 95 * gib, VMEM: 64 * mib, SMEM: 1 * mib}
	V6e = Generation{Name: "tpu-v6e", HBM: 32 * gib, VMEM: 128 * mib, SMEM: 1 * mib, Tile16: true}
)

// Generations lists the presets.
var Generations = []Generation{V4, V5e, V5p, V6e}

// GenerationByName returns the preset named name ("tpu-v4" or "v4"), or a
// custom generation for "tpu-custom:HBM" or "tpu-custom:HBM:VMEM"
// ("tpu-custom:16GiB:32MiB"; VMEM defaults to 16 MiB).
func GenerationByName(name string) (Generation, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, g := range Generations {
		if n == g.Name || "tpu-"+n == g.Name {
			return g, nil
		}
	}
	rest, ok := strings.CutPrefix(n, "tpu-custom:")
	if !ok {
		rest, ok = strings.CutPrefix(n, "custom:")
	}
	if ok {
		hbmText, vmemText, hasVMEM := strings.Cut(rest, ":")
		g := Generation{Name: "tpu-custom", VMEM: 16 * mib, SMEM: 1 * mib}
		var err error
		if g.HBM, err = gpu.ParseBytes(hbmText); err != nil || g.HBM <= 0 {
			return Generation{}, fmt.Errorf("tpu: generation %q: HBM size %q must be a positive byte count", name, hbmText)
		}
		if hasVMEM {
			if g.VMEM, err = gpu.ParseBytes(vmemText); err != nil || g.VMEM <= 0 {
				return Generation{}, fmt.Errorf("tpu: generation %q: VMEM size %q must be a positive byte count", name, vmemText)
			}
		}
		return g, nil
	}
	names := make([]string, len(Generations))
	for i, g := range Generations {
		names[i] = g.Name
	}
	return Generation{}, fmt.Errorf("tpu: unknown generation %q (want %s or tpu-custom:HBM[:VMEM])", name, strings.Join(names, ", "))
}
