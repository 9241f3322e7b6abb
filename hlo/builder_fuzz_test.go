package hlo_test

import (
	"testing"

	"github.com/hlomem/hlomem/hlo"
)

// FuzzBuilder drives the Builder with a program read from the input: each
// byte picks a method and its arguments among the instructions made so
// far, often ill-fitting ones. Nothing may panic; a module Build returns
// has passed Verify, and its text parses and prints the same again.
func FuzzBuilder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0, 0, 3, 0x11, 0x21, 5, 6, 0x40, 9})
	f.Add([]byte{1, 2, 0x13, 0x22, 7, 8, 0x31, 10, 12, 14})
	f.Fuzz(func(t *testing.T, prog []byte) {
		b := hlo.NewBuilder("fuzz")
		add := b.Computation("add")
		add.Binary(hlo.OpAdd, add.Parameter("a", hlo.ArrayShape(hlo.F32)), add.Parameter("b", hlo.ArrayShape(hlo.F32)))
		c := b.Entry("main")
		shapes := []hlo.Shape{hlo.ArrayShape(hlo.F32), hlo.ArrayShape(hlo.F32, 4), hlo.ArrayShape(hlo.F32, 2, 4), hlo.ArrayShape(hlo.S32, 4)}
		var ins []*hlo.Instruction
		pick := func(k byte) *hlo.Instruction {
			if len(ins) == 0 {
				return nil
			}
			return ins[int(k)%len(ins)]
		}
		for i := 0; i < len(prog); i++ {
			op, arg := prog[i]&0x0f, prog[i]>>4
			x, y := pick(arg), pick(arg/2)
			d := int64(arg % 3)
			var in *hlo.Instruction
			switch op {
			case 0:
				in = c.Parameter("p", shapes[int(arg)%len(shapes)])
			case 1:
				in = c.Constant(shapes[int(arg)%len(shapes)], float64(arg))
			case 2:
				in = c.Unary([]hlo.Opcode{hlo.OpNegate, hlo.OpTanh, hlo.OpIsFinite, hlo.OpAdd}[arg%4], x)
			case 3:
				in = c.Binary([]hlo.Opcode{hlo.OpAdd, hlo.OpMultiply, hlo.OpMaximum, hlo.OpNegate}[arg%4], x, y)
			case 4:
				in = c.Compare("LT", x, y)
			case 5:
				in = c.Broadcast(x, []int64{2, 4}, d)
			case 6:
				in = c.Reshape(x, 8)
			case 7:
				in = c.Transpose(x, 1, d)
			case 8:
				in = c.Dot(x, y, hlo.DotDims{LhsContracting: []int64{d}, RhsContracting: []int64{0}})
			case 9:
				in = c.Reduce(x, y, []int64{d}, add)
			case 10:
				in = c.Tuple(x, y)
			case 11:
				in = c.GetTupleElement(x, d)
			case 12:
				in = c.Slice(x, hlo.SliceDim{Start: d, Limit: 4, Stride: 1})
			case 13:
				in = c.Concatenate(d, x, y)
			case 14:
				in = c.Convert(x, hlo.S32)
			case 15:
				in = c.Call(add, x, y)
			}
			if in != nil {
				ins = append(ins, in)
			}
		}
		m, err := b.Build()
		if err != nil {
			return
		}
		if err := hlo.Verify(m); err != nil {
			t.Fatalf("built module does not verify: %v\n%s", err, m)
		}
		text := m.String()
		p, err := hlo.ParseModule("fuzz.hlo", text)
		if err != nil {
			t.Fatalf("built module's text does not parse: %v\n%s", err, text)
		}
		if got := p.String(); got != text {
			t.Fatalf("parse(print) differs:\n%s\nwant\n%s", got, text)
		}
	})
}
