package eval

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// chunks records the writes it gets.
type chunks struct {
	sizes []int
	b     strings.Builder
}

func (c *chunks) Write(p []byte) (int, error) {
	c.sizes = append(c.sizes, len(p))
	return c.b.Write(p)
}

// TestWriteTextStreams: WriteText prints what String prints, blocks of
// elements past the first included and in logical order for a layout
// that is not row-major, and writes as it goes, in pieces of a few KiB,
// never the whole text at once.
func TestWriteTextStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []hlo.Shape{
		hlo.ArrayShape(hlo.F32, 3, 5000),
		{Elem: hlo.S16, Dims: []int64{7000, 2}, Layout: &hlo.Layout{MinorToMajor: []int64{0, 1}}},
		hlo.ArrayShape(hlo.PRED, 9000),
		hlo.ArrayShape(hlo.C64, 4100),
		hlo.ArrayShape(hlo.F64),
	} {
		l := RandomLiteral(shape, rng)
		b, _, err := l.logical()
		require.NoError(t, err)
		// The text built element by element from the logical bytes.
		w := len(b) / max(elemCount(shape), 1)
		var words []string
		for i := 0; i < len(b); i += w {
			words = append(words, Literal{Shape: hlo.ArrayShape(shape.Elem), Data: b[i : i+w]}.String()[len(shape.Elem.String())+3:])
		}
		k := 0
		var want strings.Builder
		want.WriteString(shape.StringNoLayout() + " ")
		var walk func(d int)
		walk = func(d int) {
			if d == len(shape.Dims) {
				want.WriteString(words[k])
				k++
				return
			}
			want.WriteString("{")
			for i := int64(0); i < shape.Dims[d]; i++ {
				if i > 0 {
					want.WriteString(", ")
				}
				walk(d + 1)
			}
			want.WriteString("}")
		}
		walk(0)

		var c chunks
		require.NoError(t, l.WriteText(&c))
		require.Equal(t, want.String(), c.b.String(), "%s", shape)
		require.Equal(t, want.String(), l.String(), "%s", shape)
		if len(want.String()) > 64<<10 {
			require.Greater(t, len(c.sizes), 8, "%s: written in pieces", shape)
			for _, n := range c.sizes {
				require.LessOrEqual(t, n, 4096, "%s: a piece of %d bytes", shape, n)
			}
		}
	}
}

// f32[1000000,1000000]: 4e12 bytes, more than MaxLiteralBytes.
var hugeShape = hlo.ArrayShape(hlo.F32, 1000000, 1000000)

// TestHugeShapesAreErrors: a shape whose size overflows or is absurd is
// an error wherever a literal of it would be made, before anything is
// allocated: arguments, literals parsed from text (one value fills an
// array) and instructions' results (exec's TestHugeArgumentsAreErrors
// holds Execute to it).
func TestHugeShapesAreErrors(t *testing.T) {
	overflow := hlo.ArrayShape(hlo.S32, 1<<62, 4)
	for _, s := range []hlo.Shape{hugeShape, overflow} {
		l := RandomLiteral(s, rand.New(rand.NewPCG(1, 2)))
		require.Nil(t, l.Data, "%s", s)
		_, err := ParseLiteral(s, "0")
		require.Error(t, err, "%s", s)
		_, err = NewLiteral(s)
		require.Error(t, err, "%s", s)
	}
	_, err := ParseLiteral(hugeShape, "0")
	require.EqualError(t, err, "shape f32[1000000,1000000] is too large to evaluate: 4000000000000 bytes, more than 1099511627776")
	_, err = ParseLiteral(overflow, "0")
	require.EqualError(t, err, "shape s32[4611686018427387904,4] has no computable size")

	m, err := hlo.ParseModule("huge.hlo", `HloModule huge
ENTRY e {
  z = f32[] parameter(0)
  ROOT b = f32[1000000,1000000] broadcast(z), dimensions={}
}
`)
	require.NoError(t, err)
	root := m.Entry.Root
	_, err = Instruction(root, []Literal{RandomLiteral(hlo.ArrayShape(hlo.F32), rand.New(rand.NewPCG(1, 2)))})
	require.EqualError(t, err, "b: broadcast: shape f32[1000000,1000000] is too large to evaluate: 4000000000000 bytes, more than 1099511627776")
}
