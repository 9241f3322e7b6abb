package tpu

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

func shape(t *testing.T, text string) hlo.Shape {
	t.Helper()
	s, err := hlo.ParseShape("s", text)
	require.NoError(t, err)
	return s
}

func size(t *testing.T, s hlo.Shape) int64 {
	t.Helper()
	n, err := hlo.ByteSize(s)
	require.NoError(t, err)
	return n
}

// TestPublishedSizes: the two sizes of a published XLA:TPU OOM message.
func TestPublishedSizes(t *testing.T) {
	s := shape(t, "s32[29360128,10]{1,0:T(8,128)}")
	require.Equal(t, int64(15_032_385_536), size(t, s))
	u, err := hlo.UnpaddedByteSize(s)
	require.NoError(t, err)
	require.Equal(t, int64(1_174_405_120), u)
	require.InDelta(t, 12.8, float64(size(t, s))/float64(u), 0.05)
	require.Equal(t, int64(2_818_572_288), size(t, shape(t, "f32[128,256,896,18]{0,3,2,1:T(8,128)}")))
	// DefaultLayout gives the first the same tiling.
	d := DefaultLayout(shape(t, "s32[29360128,10]"), V4)
	require.Equal(t, "s32[29360128,10]{1,0:T(8,128)}", d.String())
	require.Equal(t, int64(15_032_385_536), size(t, d))
	// An existing layout's order is kept, and only the tiles are added.
	d = DefaultLayout(shape(t, "f32[128,256,896,18]{0,3,2,1}"), V4)
	require.Equal(t, "f32[128,256,896,18]{0,3,2,1:T(8,128)}", d.String())
	require.Equal(t, int64(2_818_572_288), size(t, d))
}

// TestDefaultLayoutTiles pins the tiling of every element width, rank and
// generation setting, with the padded size each gives.
func TestDefaultLayoutTiles(t *testing.T) {
	gen16 := V7x
	for _, tc := range []struct {
		in   string
		gen  Generation
		want string
		size int64
	}{
		// rank 2 and higher
		{"f32[3,5]", V4, "f32[3,5]{1,0:T(8,128)}", 8 * 128 * 4},
		{"s32[9,130]", V4, "s32[9,130]{1,0:T(8,128)}", 16 * 256 * 4},
		{"bf16[3,5]", V4, "bf16[3,5]{1,0:T(8,128)(2,1)}", 8 * 128 * 2},
		{"bf16[3,5]", gen16, "bf16[3,5]{1,0:T(16,128)(2,1)}", 16 * 128 * 2},
		{"f16[17,5]", V4, "f16[17,5]{1,0:T(8,128)(2,1)}", 24 * 128 * 2},
		{"s8[3,5]", V4, "s8[3,5]{1,0:T(8,128)(4,1)}", 8 * 128},
		{"u8[3,5]", gen16, "u8[3,5]{1,0:T(32,128)(4,1)}", 32 * 128},
		{"pred[3,5]", V4, "pred[3,5]{1,0:T(8,128)(4,1)}", 8 * 128},
		{"f64[3,5]", V4, "f64[3,5]{1,0:T(8,128)}", 8 * 128 * 8},
		{"f32[2,3,5]", V4, "f32[2,3,5]{2,1,0:T(8,128)}", 2 * 8 * 128 * 4},
		{"f32[2,3,5,7]{0,1,2,3}", V4, "f32[2,3,5,7]{0,1,2,3:T(8,128)}", 128 * 8 * 5 * 7 * 4},
		// rank 1
		{"f32[5]", V4, "f32[5]{0:T(1024)}", 1024 * 4},
		{"s32[2049]", V4, "s32[2049]{0:T(1024)}", 3072 * 4},
		{"bf16[5]", V4, "bf16[5]{0:T(1024)(128)(2,1)}", 1024 * 2},
		{"s8[5]", V4, "s8[5]{0:T(1024)(128)(4,1)}", 1024},
		// scalars
		{"f32[]", V4, "f32[]{:T(256)}", 256 * 4},
		{"bf16[]", V4, "bf16[]{:T(256)}", 256 * 2},
		{"pred[]", V4, "pred[]{:T(256)}", 256},
		// a tiled layout in the module wins
		{"f32[3,5]{1,0:T(4,128)}", V4, "f32[3,5]{1,0:T(4,128)}", 4 * 128 * 4},
		{"f32[3,5]{0,1:T(2,128)}", V4, "f32[3,5]{0,1:T(2,128)}", 128 * 6 * 4},
		// tuples tile element by element; tokens stay
		{"(f32[3,5], s32[])", V4, "(f32[3,5]{1,0:T(8,128)}, s32[]{:T(256)})", 16},
		{"token[]", V4, "token[]", 0},
	} {
		got := DefaultLayout(shape(t, tc.in), tc.gen)
		require.Equal(t, tc.want, got.String(), tc.in)
		require.Equal(t, tc.size, size(t, got), tc.in)
	}
}

func TestApplyLayouts(t *testing.T) {
	m, err := hlo.ParseModule("m.hlo", `HloModule m

ENTRY e {
  p = f32[3,5]{1,0} parameter(0)
  q = f32[3,5]{1,0:T(4,128)} parameter(1)
  a = f32[3,5]{1,0} add(p, q)
  ROOT r = (f32[3,5]{1,0}, f32[]) tuple(a, a)
}
`)
	require.NoError(t, err)
	m.Entry.Root.Shape = hlo.TupleShape(m.Entry.Root.Shape.Tuple[0], hlo.ArrayShape(hlo.F32))
	ApplyLayouts(m, V4)
	got := map[string]string{}
	for _, in := range m.Entry.Instructions {
		got[in.Name] = in.Shape.String()
	}
	require.Equal(t, map[string]string{
		"p": "f32[3,5]{1,0:T(8,128)}",
		"q": "f32[3,5]{1,0:T(4,128)}",
		"a": "f32[3,5]{1,0:T(8,128)}",
		"r": "(f32[3,5]{1,0:T(8,128)}, f32[]{:T(256)})",
	}, got)
	ApplyLayouts(nil, V4)
}

func TestGenerationByName(t *testing.T) {
	for n, want := range map[string]Generation{
		"tpu-v4": V4, "v4": V4, "TPU-V5E": V5e, "v5p": V5p, "tpu-v6e": V6e, "tpu-7x": V7x, "7x": V7x, "tpu7x": V7x,
	} {
		g, err := GenerationByName(n)
		require.NoError(t, err, n)
		require.Equal(t, want, g, n)
	}
	// The presets' figures are JAX's (tpu_info.py), per TensorCore for
	// VMEM and SMEM.
	for _, tc := range []struct {
		g               Generation
		hbm, vmem, smem int64
		tile16          bool
	}{
		{V4, 32 << 30, 16 << 20, 1 << 20, false},
		{V5e, 16 << 30, 128 << 20, 1 << 20, false},
		{V5p, 95 << 30, 64 << 20, 1 << 20, false},
		{V6e, 32 << 30, 128 << 20, 1 << 20, false},
		{V7x, 96 << 30, 64 << 20, 1 << 20, true},
	} {
		require.Equal(t, tc.hbm, tc.g.HBM, tc.g.Name)
		require.Equal(t, tc.vmem, tc.g.VMEM, tc.g.Name)
		require.Equal(t, tc.smem, tc.g.SMEM, tc.g.Name)
		require.Equal(t, tc.tile16, tc.g.Tile16, tc.g.Name)
	}
	g, err := GenerationByName("tpu-custom:16GiB:32MiB")
	require.NoError(t, err)
	require.Equal(t, Generation{Name: "tpu-custom", HBM: 16 << 30, VMEM: 32 << 20, SMEM: DefaultCustomSMEM}, g)
	g, err = GenerationByName("custom:8GiB")
	require.NoError(t, err)
	require.Equal(t, Generation{Name: "tpu-custom", HBM: 8 << 30, VMEM: DefaultCustomVMEM, SMEM: DefaultCustomSMEM}, g)
	g, err = GenerationByName("tpu-custom:8GiB:64MiB:16KiB")
	require.NoError(t, err)
	require.Equal(t, Generation{Name: "tpu-custom", HBM: 8 << 30, VMEM: 64 << 20, SMEM: 16 << 10}, g)
	for _, bad := range []string{"v3", "tpu-custom:", "tpu-custom:0", "tpu-custom:1GiB:x", "tpu-custom:1GiB:1MiB:0", "tpu-custom:1GiB:1MiB:1KiB:1", "tpu-v4x"} {
		_, err := GenerationByName(bad)
		require.Error(t, err, bad)
	}
}
