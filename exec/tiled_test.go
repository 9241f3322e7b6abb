package exec

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
)

// TestTiledOrder pins where XLA's tiled layouts put each element, for the
// tiles of every width and rank the TPU uses.
func TestTiledOrder(t *testing.T) {
	shape := func(s string) hlo.Shape {
		sh, err := hlo.ParseShape("shape", s)
		require.NoError(t, err, s)
		return sh
	}
	for _, tc := range []struct {
		shape  string
		place  func(i int64) int64 // dense (minor-to-major) element i
		extent int64
	}{
		// f32[3,5] in one 8×128 tile: row i at i*128.
		{"f32[3,5]{1,0:T(8,128)}", func(i int64) int64 { return i/5*128 + i%5 }, 8 * 128},
		// Row pairs of a bf16 tile share 32-bit words: (i,j) at
		// ((i/2)*128 + j)*2 + i%2.
		{"bf16[3,5]{1,0:T(8,128)(2,1)}", func(i int64) int64 { r, c := i/5, i%5; return (r/2*128+c)*2 + r%2 }, 8 * 128},
		// 8-bit: four rows per word.
		{"s8[9,3]{1,0:T(8,128)(4,1)}", func(i int64) int64 {
			r, c := i/3, i%3
			tile := r / 8 // second row tile
			r %= 8
			return tile*1024 + (r/4*128+c)*4 + r%4
		}, 16 * 128},
		// Two tiles along the minor dimension, one along the major.
		{"f32[2,130]{1,0:T(8,128)}", func(i int64) int64 { r, c := i/130, i%130; return c/128*1024 + r*128 + c%128 }, 8 * 256},
		// Column-major: dimension 0 is minor, dense order runs down
		// columns; (i,j) with j major lands at j*128 + i.
		{"f32[3,5]{0,1:T(8,128)}", func(i int64) int64 { j, r := i/3, i%3; return j*128 + r }, 8 * 128},
		// Rank 3: the tile applies to the two minor dimensions.
		{"f32[2,3,5]{2,1,0:T(8,128)}", func(i int64) int64 { b, r, c := i/15, i/5%3, i%5; return b*1024 + r*128 + c }, 2 * 1024},
		// 1-D.
		{"f32[5]{0:T(1024)}", func(i int64) int64 { return i }, 1024},
		{"bf16[300]{0:T(1024)(128)(2,1)}", func(i int64) int64 { return (i/128/2*128+i%128)*2 + i/128%2 }, 1024},
		// Scalars: one element, a whole tile.
		{"f32[]{:T(256)}", func(int64) int64 { return 0 }, 256},
	} {
		s := shape(tc.shape)
		order, extent, err := tiledOrder(s)
		require.NoError(t, err, tc.shape)
		n, _ := s.Elements()
		require.Len(t, order, int(n), tc.shape)
		require.Equal(t, tc.extent, extent, tc.shape)
		seen := map[int64]bool{}
		for i, p := range order {
			require.Equal(t, tc.place(int64(i)), p, "%s: element %d", tc.shape, i)
			require.False(t, seen[p], "%s: two elements at %d", tc.shape, p)
			seen[p] = true
		}
		// The tiled elements lie within the padded size XLA gives the
		// shape.
		size, err := hlo.ByteSize(s)
		require.NoError(t, err)
		w := int64(s.Elem.ByteWidth())
		for _, p := range order {
			require.Less(t, (p+1)*w, size+1, tc.shape)
		}
	}
	order, _, err := tiledOrder(shape("f32[3,5]{1,0}"))
	require.NoError(t, err)
	require.Nil(t, order, "untiled: dense")
	_, _, err = tiledOrder(shape("f32[3,5]{1,0:T(2,*)}"))
	require.Error(t, err, "combined tile dimensions are not evaluated")
}

// recording is a HostArena that remembers the base of every allocation,
// in order.
type recording struct {
	*HostArena
	bases []int64
}

func (r *recording) Allocate(size, align int64) (int64, error) {
	b, err := r.HostArena.Allocate(size, align)
	r.bases = append(r.bases, b)
	return b, err
}

// TestExecuteStoresTiles: a planned run keeps a tiled value in tile
// order in its padded buffer: the output f32[3,5] of T(8,128) has row i
// at byte i*512 of its slot, and the padding between rows is untouched.
func TestExecuteStoresTiles(t *testing.T) {
	m, err := hlo.ParseModule("tiles.hlo", `HloModule tiles, is_scheduled=true

ENTRY e {
  p = f32[3,5]{1,0:T(8,128)} parameter(0)
  n = f32[3,5]{1,0:T(8,128)} negate(p)
  b = f32[15]{0:T(1024)} bitcast(n)
  ROOT r = f32[15]{0:T(1024)} exponential(b)
}
`)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	ctx := context.Background()
	as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU})
	require.NoError(t, err)
	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(5, 0)))
	ref, err := Execute(ctx, as, args, nil, Options{Reference: true})
	require.NoError(t, err)
	mem := &recording{HostArena: NewHostArena()}
	mem.Fill = PoisonByte
	got, err := Execute(ctx, as, args, mem, Options{})
	require.NoError(t, err)
	require.Equal(t, ref.Outputs[0].Data, got.Outputs[0].Data, "the bitcast reads n's elements in order")

	// The parameter's tiled bytes: row i of the argument at i*512.
	v := a.ValueAt(as.Module.Entry.Instruction("p"), nil)
	al, slot, ok := as.AllocationOf(v)
	off := slot.Offset
	require.True(t, ok)
	raw := make([]byte, v.Size)
	require.Equal(t, int64(8*128*4), v.Size)
	require.NoError(t, mem.ReadAt(raw, mem.bases[al.Index]+off))
	arg := args[0].Data
	for i := range 3 {
		for j := range 5 {
			want := arg[(i*5+j)*4 : (i*5+j+1)*4]
			require.Equal(t, want, raw[(i*128+j)*4:(i*128+j+1)*4], "element (%d,%d)", i, j)
		}
		// Padding after the row was never written.
		require.Equal(t, []byte{PoisonByte, PoisonByte, PoisonByte, PoisonByte}, raw[(i*128+5)*4:(i*128+6)*4])
	}
	f := math.Float32frombits(binary.LittleEndian.Uint32(raw[128*4:]))
	require.Equal(t, math.Float32frombits(binary.LittleEndian.Uint32(arg[5*4:])), f, "row 1 starts a tile row")
}

// TestExecuteRefusesUnpaddedTiledBuffer: a plan whose buffer is too small
// for its tiles' padding fails the run instead of writing past it.
func TestExecuteRefusesUnpaddedTiledBuffer(t *testing.T) {
	tl := &tiling{}
	var err error
	tl.order, _, err = tiledOrder(hlo.Shape{Elem: hlo.F32, Dims: []int64{3, 5}, Layout: &hlo.Layout{MinorToMajor: []int64{1, 0}, Tiles: []hlo.Tile{{Dims: []int64{8, 128}}}}})
	require.NoError(t, err)
	tl.width, tl.span = 4, (2*128+5)*4
	x := &executor{mem: NewHostArena()}
	base, err := x.mem.Allocate(60, 0)
	require.NoError(t, err)
	err = x.writeTiled(tl, make([]byte, 60), base, 60)
	require.ErrorContains(t, err, "more than the 60 of its buffer")
	err = x.readTiled(tl, make([]byte, 60), base, 60)
	require.ErrorContains(t, err, "more than the 60 of its buffer")
}
