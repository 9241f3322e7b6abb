package hlo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func shapeOf(t *testing.T, text string) Shape {
	t.Helper()
	m, err := ParseModule("s.hlo", "HloModule m\nENTRY e {\n  ROOT p = "+text+" parameter(0)\n}")
	require.NoError(t, err)
	return m.Entry.Root.Shape
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		shape string
		want  int64
	}{
		{"f32[]", 4},
		{"f32[2,3]{1,0}", 24},
		{"pred[10]", 10},
		{"bf16[7]", 14},
		{"f16[3]", 6},
		{"f64[2]", 16},
		{"c64[2]", 16},
		{"c128[2]", 32},
		{"s8[5]", 5},
		{"u64[1]", 8},
		{"f8e4m3fn[9]", 9},
		{"s4[5]", 5},         // unpacked: one byte per element
		{"s4[5]{0:E(4)}", 3}, // packed two per byte, rounded up
		{"u4[1024,512]{1,0:E(4)}", 262144},
		{"f4e2m1fn[6]{0:E(4)}", 3},
		{"u2[7]{0:E(2)}", 2},
		{"token[]", 0},
		{"opaque[]", 8},
		{"(f32[100], s32[], (f32[2], f32[3]))", 24}, // 3 entries in the index table
		{"()", 0},
		{"f32[<=8,3]", 96}, // dynamic dimensions count at their bound
		// Tiled layouts pad along minor-to-major by the first tile only.
		{"f32[3,5]{1,0:T(8,128)}", 8 * 128 * 4},
		{"f32[16,256]{1,0:T(8,128)}", 16 * 256 * 4},
		{"bf16[3,5]{1,0:T(8,128)(2,1)}", 8 * 128 * 2},
		{"f32[100]{0:T(256)}", 256 * 4},
		{"s32[]{:T(256)}", 256 * 4}, // a tile longer than the rank pads from 1
		{"f32[2,3,5]{2,1,0:T(8,128)}", 2 * 8 * 128 * 4},
		{"f32[10]{0:L(16)}", 16 * 4},
		// The published TPU checks (XLA.md section 6).
		{"s32[29360128,10]{1,0:T(8,128)}", 15032385536},
		{"f32[128,256,896,18]{0,3,2,1:T(8,128)}", 2818572288},
	}
	for _, tc := range tests {
		t.Run(tc.shape, func(t *testing.T) {
			got, err := ByteSize(shapeOf(t, tc.shape))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestUnpaddedByteSize(t *testing.T) {
	got, err := UnpaddedByteSize(shapeOf(t, "s32[29360128,10]{1,0:T(8,128)}"))
	require.NoError(t, err)
	require.EqualValues(t, 1174405120, got)
	got, err = UnpaddedByteSize(shapeOf(t, "f32[128,256,896,18]{0,3,2,1:T(8,128)}"))
	require.NoError(t, err)
	require.EqualValues(t, 128*256*896*18*4, got)
}

func TestByteSizeErrors(t *testing.T) {
	_, err := ByteSize(shapeOf(t, "f32[4611686018427387904,4]"))
	require.ErrorContains(t, err, "overflows int64")
	_, err = ByteSize(shapeOf(t, "f32[?,3]"))
	require.ErrorContains(t, err, "unbounded")
	_, err = ByteSize(shapeOf(t, "u4[9223372036854775807]{0:E(4)}"))
	require.NoError(t, err, "packing keeps the huge count representable")
	_, err = ByteSize(shapeOf(t, "f32[9223372036854775807]{0:T(1024)}"))
	require.ErrorContains(t, err, "overflows int64")
}

func TestStringWithLayout(t *testing.T) {
	require.Equal(t, "(f32[2,3]{1,0}, s32[], bf16[4]{0:T(128)})", shapeOf(t, "(f32[2,3], s32[], bf16[4]{0:T(128)})").StringWithLayout())
}

// TestCompatible: shapes equal but for layouts are compatible, exactly when
// they print alike without layouts.
func TestCompatible(t *testing.T) {
	texts := []string{"f32[2,3]", "f32[2,3]{0,1}", "f32[3,2]", "s32[2,3]", "f32[<=2,3]", "f32[2,3,1]",
		"(f32[2,3], s32[])", "(f32[2,3]{0,1}, s32[])", "(f32[2,3], s32[], s32[])", "((f32[2,3]), s32[])", "token[]"}
	for _, x := range texts {
		for _, y := range texts {
			a, b := shapeOf(t, x), shapeOf(t, y)
			require.Equal(t, a.StringNoLayout() == b.StringNoLayout(), Compatible(a, b), "%s vs %s", x, y)
		}
	}
	require.True(t, Compatible(shapeOf(t, "f32[2,3]"), shapeOf(t, "f32[2,3]{0,1}")))
	require.False(t, Compatible(shapeOf(t, "f32[2,3]"), shapeOf(t, "f32[<=2,3]")))
}
