package assign

// What buffer assignment needs to know of a backend. A Target is plain
// data: the assignment reads its fields and never switches on its name, so
// that a backend package (gpu, tpu) can supply a Target of its own without
// this package importing it.

import (
	"fmt"

	"github.com/hlomem/hlomem/assign/gpualias"
	"github.com/hlomem/hlomem/hlo"
)

// Target describes the backend a module is assigned for. The zero Target
// stands for GPU.
type Target struct {
	// Name is the target's name, as hlomem assign --target and the JSON
	// output's "target" spell it.
	Name string

	// Alignment is the byte alignment of temp chunks: every chunk of a
	// temp heap starts at a multiple of it, and the temp allocations of a
	// color are concatenated at multiples of it. Options.Align overrides
	// it when positive.
	Alignment int64

	// ColorAlignment overrides Alignment (and Options.Align) for the temp
	// chunks of the memory spaces it names: the TPU-like target packs the
	// scalars of SMEM, color 2, at word granularity.
	ColorAlignment map[int64]int64

	// Size returns the byte size of an array or tuple shape on the target;
	// nil means hlo.BufferSize, which already pads tiled layouts as XLA does
	// (the TPU case) and adds a dynamic array's runtime sizes as XLA:GPU
	// and XLA:CPU do. The plan uses the sizes of the analysis (which are
	// hlo.BufferSize's); Assign refuses a value whose Size differs, since
	// the plan would then be wrong for this target.
	Size func(hlo.Shape) (int64, error)

	// FusionCanShare, when set, decides whether the output of a fusion at
	// userIx may take over the buffer of its dying operand (at opIx), in
	// place of the generic rule of liveness.CanShareOperandBufferWithUser:
	// the backend's say in XLA's CanShareOperandBufferWithUser (its
	// AliasInfo). It is not asked about constant operands. nil keeps the
	// generic rule.
	FusionCanShare func(operand *hlo.Instruction, opIx hlo.ShapeIndex, fusion *hlo.Instruction, userIx hlo.ShapeIndex) bool
}

// The predefined targets. XLA:GPU's buffer assigner aligns temp chunks to
// 128 bytes: every temp offset in the paired A100 dumps of the corpus is a
// multiple of 128, and index tables of 16 bytes sit 128 bytes apart (0,
// 128, 256 in module_0010), which 256-byte alignment cannot produce.
// XLA:CPU aligns to 64. The TPU-like target uses 512-byte granules and the
// padded sizes of tiled layouts; its scalar memory, SMEM (color 2), is
// packed by 4-byte words. The GPU decides a fusion's operand sharing by
// XLA:GPU's rule, package assign/gpualias (a leaf over hlo and liveness,
// so that naming it here imports no backend); the CPU and the TPU keep
// liveness' generic rule.
var (
	GPU = Target{Name: "gpu", Alignment: 128, FusionCanShare: gpualias.FusionCanShare}
	CPU = Target{Name: "cpu", Alignment: 64}
	TPU = Target{Name: "tpu", Alignment: 512, ColorAlignment: map[int64]int64{2: 4}}
)

// TargetByName returns the predefined target called name: "gpu", "cpu" or
// "tpu".
func TargetByName(name string) (Target, error) {
	for _, t := range []Target{GPU, CPU, TPU} {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("assign: unknown target %q (want gpu, cpu or tpu)", name)
}

// isZero reports whether t is the zero Target, which stands for GPU.
func (t *Target) isZero() bool {
	return t.Name == "" && t.Alignment == 0 && t.Size == nil && t.FusionCanShare == nil && t.ColorAlignment == nil
}
