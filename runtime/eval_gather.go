package runtime

import "github.com/hlomem/hlomem/hlo"

// evalGather evaluates gather. Not written yet.
func evalGather(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}

// scatter evaluates scatter. Not written yet.
func (ev *Evaluator) scatter(in *hlo.Instruction, ops []Literal) (Literal, error) {
	return Literal{}, unsupportedError{in}
}
