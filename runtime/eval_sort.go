package runtime

import "github.com/hlomem/hlomem/hlo"

// sort evaluates sort. Not written yet.
func (ev *Evaluator) sort(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}

// rng evaluates rng. Not written yet.
func (ev *Evaluator) rng(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}

// mapOp evaluates map. Not written yet.
func (ev *Evaluator) mapOp(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}

// reduceVariadic evaluates a reduce of several operands. Not written yet.
func (ev *Evaluator) reduceVariadic(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}
