package runtime

import "github.com/hlomem/hlomem/hlo"

// evalConvolution evaluates convolution. Not written yet.
func evalConvolution(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}

// reduceWindow evaluates reduce-window. Not written yet.
func (ev *Evaluator) reduceWindow(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}
