package hlo

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dynamic dimensions as XLA spells them: a bounded one "<=N", an unbounded
// one "?" (XLA's shape_test.cc, ShapeTest.DynamicShapeToString:
// "f32[<=23,44,<=55]" and "f32[?,784]"), layouts printed after them as for
// any array ("f32[?,8]{1,0}").
const dynamicModule = `HloModule dyn

ENTRY main {
  p0 = f32[?]{0} parameter(0)
  p1 = f32[?,8]{1,0} parameter(1)
  p2 = f32[<=23,44,<=55]{2,1,0} parameter(2)
  n = f32[?]{0} negate(p0)
  ROOT t = (f32[?]{0}, f32[?,8]{1,0}, f32[<=23,44,<=55]{2,1,0}) tuple(n, p1, p2)
}
`

func TestDynamicShapesRoundTrip(t *testing.T) {
	m := mustParse(t, dynamicModule) // verifies, prints, reparses, reprints
	e := m.Entry
	p0 := e.Instruction("p0").Shape
	require.Equal(t, []int64{UnboundedDim}, p0.Dims)
	require.True(t, p0.IsDynamic(0), "an unbounded dimension is dynamic (XLA's MakeDynamicDimensions)")
	require.Equal(t, "f32[?]{0}", p0.String())
	require.Equal(t, "f32[?]", p0.StringNoLayout())
	p1 := e.Instruction("p1").Shape
	require.Equal(t, "f32[?,8]{1,0}", p1.String())
	require.False(t, p1.IsDynamic(1))
	p2 := e.Instruction("p2").Shape
	require.Equal(t, []int64{23, 44, 55}, p2.Dims)
	require.Equal(t, []bool{true, false, true}, p2.Dynamic)
	require.Equal(t, "f32[<=23,44,<=55]{2,1,0}", p2.String())
	out := m.String()
	for _, want := range []string{"%p0 = f32[?]{0} parameter(0)", "%p1 = f32[?,8]{1,0} parameter(1)",
		"%p2 = f32[<=23,44,<=55]{2,1,0} parameter(2)", "(f32[?]{0}, f32[?,8]{1,0}, f32[<=23,44,<=55]{2,1,0}) tuple("} {
		require.Contains(t, out, want)
	}
}

// XLA's Shape::is_unbounded_dynamic (shape.cc; shape_test.cc,
// ShapeTest.IsDynamic): an array with a kUnboundedSize dimension, a tuple
// with such an element at any depth; a bounded dynamic shape is not.
func TestIsUnboundedDynamic(t *testing.T) {
	for text, want := range map[string]bool{
		"f32[?,784]":                    true,
		"f32[<=23,44,<=55]":             false,
		"f32[2,3]":                      false,
		"(f32[2], (s32[], f32[3,?]))":   true,
		"(f32[2], (s32[], f32[3,<=4]))": false,
		"token[]":                       false,
	} {
		require.Equal(t, want, shapeOf(t, text).IsUnboundedDynamic(), text)
	}
}

// ShapeUtil::ByteSizeOf sizes a bounded dynamic dimension at its bound
// (the dimension holds the bound; shape_util.cc, ByteSizeOfElements
// multiplies dimensions()), while an unbounded one has no size:
// kUnboundedSize is INT64_MIN (shape.h), not a count.
func TestDynamicByteSize(t *testing.T) {
	for text, want := range map[string]int64{
		"f32[<=8]{0}":               32,
		"f32[<=23,44,<=55]":         23 * 44 * 55 * 4,
		"(f32[<=8], f32[?])":        16, // a tuple's own buffer is its index table
		"bf16[<=4,8]{1,0:T(8,128)}": 8 * 128 * 2,
	} {
		got, err := ByteSize(shapeOf(t, text))
		require.NoError(t, err, text)
		require.Equal(t, want, got, text)
	}
	for _, text := range []string{"f32[?]{0}", "f32[?,8]{1,0}", "bf16[?,8]{1,0:T(8,128)}", "u4[?]{0:E(4)}"} {
		n, err := ByteSize(shapeOf(t, text))
		require.Error(t, err, text)
		require.Zero(t, n)
		require.True(t, errors.Is(err, ErrUnboundedShape), text)
		require.Equal(t, "unbounded dynamic shape "+text+": its size is unknown", err.Error())
	}
}

func TestUnboundedErrors(t *testing.T) {
	m, err := ParseModule("dyn.hlo", dynamicModule)
	require.NoError(t, err)
	errs := UnboundedErrors(m)
	var lines []string
	for _, e := range errs {
		require.True(t, errors.Is(e, ErrUnboundedShape))
		lines = append(lines, e.Error())
	}
	require.Equal(t, []string{
		"dyn.hlo:4:3: p0: unbounded dynamic shape f32[?]{0}: its size is unknown",
		"dyn.hlo:5:3: p1: unbounded dynamic shape f32[?,8]{1,0}: its size is unknown",
		"dyn.hlo:7:3: n: unbounded dynamic shape f32[?]{0}: its size is unknown",
		"dyn.hlo:8:8: t: unbounded dynamic shape (f32[?]{0}, f32[?,8]{1,0}, f32[<=23,44,<=55]{2,1,0}): its size is unknown",
	}, lines)
	require.Nil(t, UnboundedErrors(mustParse(t, strings.ReplaceAll(strings.ReplaceAll(dynamicModule, "?", "<=9"), "dyn", "bdyn"))))
	require.Nil(t, UnboundedErrors(nil))
}

// XLA's ShapeUtil::ValidateShape accepts a negative dimension only when it
// is kUnboundedSize and dynamic; hlomem's verifier accepts "?" shapes
// (every "?" is dynamic) and the parser refuses a negative size.
func TestVerifyUnbounded(t *testing.T) {
	m, err := ParseModule("dyn.hlo", dynamicModule)
	require.NoError(t, err)
	require.NoError(t, Verify(m))
	_, err = ParseModule("neg.hlo", "HloModule m\nENTRY e {\n  ROOT p = f32[-3] parameter(0)\n}")
	require.Error(t, err)
}

// The verifier's messages spell dimensions as XLA's shape printer does
// (shape_test.cc, ShapeTest.DynamicShapeToString: "f32[<=23,44,<=55]",
// "f32[?,784]"), not as the INT64_MIN that stands for "?".
func TestDimsStringDynamic(t *testing.T) {
	require.Equal(t, "[<=23,44,<=55]", dimsString(shapeOf(t, "f32[<=23,44,<=55]")))
	require.Equal(t, "[?,784]", dimsString(shapeOf(t, "f32[?,784]")))
	require.Equal(t, "[]", dimsString(shapeOf(t, "f32[]")))
}

// BufferSize is XLA:GPU's GetSizeOfShape (and XLA:CPU's ShapeSizeBytes):
// ByteSizeOf, plus sizeof(int32) per dimension of an array that is not
// static; tuples and static arrays get ByteSizeOf alone. XLA's
// backends/gpu/tests/calling_convention.hlo expects a 44-byte buffer for
// s32[2,<=2,2].
func TestBufferSize(t *testing.T) {
	for text, want := range map[string]int64{
		"s32[2,<=2,2]{2,0,1}":       44,
		"f32[<=8]{0}":               36,
		"f32[<=23,44,<=55]":         23*44*55*4 + 3*4,
		"f32[8]{0}":                 32,
		"(f32[<=8], s32[<=2,3])":    16,
		"bf16[<=4,8]{1,0:T(8,128)}": 8*128*2 + 2*4,
		"token[]":                   0,
	} {
		got, err := BufferSize(shapeOf(t, text))
		require.NoError(t, err, text)
		require.Equal(t, want, got, text)
	}
	_, err := BufferSize(shapeOf(t, "f32[<=4,?]"))
	require.True(t, errors.Is(err, ErrUnboundedShape))
	_, err = BufferSize(shapeOf(t, "s8[<=9223372036854775807]"))
	require.ErrorContains(t, err, "overflows int64")
}
