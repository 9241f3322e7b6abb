package liveness

import "github.com/hlomem/hlomem/hlo"

// WithNumbering sets the XLA IDs of non-phi values (from an XLA dump) for
// the corpus tests that check everything the numbering does not decide.
func WithNumbering(o *Options, f func(in *hlo.Instruction, ix hlo.ShapeIndex) (int, bool)) {
	o.numbering = f
}
