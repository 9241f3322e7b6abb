package eval

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/hlomem/hlomem/hlo"
)

// decodeC reads logical c64 or c128 elements.
func decodeC(t hlo.ElementType, b []byte) []complex128 {
	if t == hlo.C64 {
		out := make([]complex128, len(b)/8)
		for i := range out {
			re := math.Float32frombits(binary.LittleEndian.Uint32(b[8*i:]))
			im := math.Float32frombits(binary.LittleEndian.Uint32(b[8*i+4:]))
			out[i] = complex(float64(re), float64(im))
		}
		return out
	}
	out := make([]complex128, len(b)/16)
	for i := range out {
		re := math.Float64frombits(binary.LittleEndian.Uint64(b[16*i:]))
		im := math.Float64frombits(binary.LittleEndian.Uint64(b[16*i+8:]))
		out[i] = complex(re, im)
	}
	return out
}

func encodeC(t hlo.ElementType, v []complex128) []byte {
	if t == hlo.C64 {
		b := make([]byte, 8*len(v))
		for i, c := range v {
			binary.LittleEndian.PutUint32(b[8*i:], math.Float32bits(float32(real(c))))
			binary.LittleEndian.PutUint32(b[8*i+4:], math.Float32bits(float32(imag(c))))
		}
		return b
	}
	b := make([]byte, 16*len(v))
	for i, c := range v {
		binary.LittleEndian.PutUint64(b[16*i:], math.Float64bits(real(c)))
		binary.LittleEndian.PutUint64(b[16*i+8:], math.Float64bits(imag(c)))
	}
	return b
}

func complexLiteral(shape hlo.Shape, words []string) (Literal, error) {
	n := elemCount(shape)
	if len(words) == 2 && n > 1 {
		for len(words) < 2*n {
			words = append(words, words[:2]...)
		}
	}
	if len(words) != 2*n {
		return Literal{}, errCount(shape, 2*n, len(words))
	}
	v := make([]complex128, n)
	for i := range v {
		re, err := parseFloatWord(words[2*i])
		if err != nil {
			return Literal{}, err
		}
		im, err := parseFloatWord(words[2*i+1])
		if err != nil {
			return Literal{}, err
		}
		v[i] = complex(re, im)
	}
	return fromLogical(shape, encodeC(shape.Elem, v))
}

func formatComplex(t hlo.ElementType, c complex128) string {
	bitsz := 64
	if t == hlo.C64 {
		bitsz = 32
	}
	f := func(x float64) string {
		switch {
		case math.IsNaN(x):
			return "nan"
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		}
		return strconv.FormatFloat(x, 'g', -1, bitsz)
	}
	return "(" + f(real(c)) + ", " + f(imag(c)) + ")"
}
