package tpu

import (
	"github.com/hlomem/hlomem/hlo"
)

// DefaultLayout returns s with the tiling XLA:TPU gives an array that has
// none, by element width and rank:
//
//   - rank >= 2: 32-bit (and 64-bit, which the TPU splits into 32-bit
//     halves) T(8,128); 16-bit T(8,128)(2,1), or T(16,128)(2,1) when the
//     generation says (Generation.Tile16); 8-bit T(8,128)(4,1) (or
//     T(32,128)(4,1) with Tile16); sub-byte types T(8,128)(8,1);
//   - rank 1: 32- and 64-bit T(1024); 16-bit T(1024)(128)(2,1); 8-bit
//     T(1024)(128)(4,1); sub-byte T(1024)(128)(8,1);
//   - scalars: T(256) whatever the width (a scalar counts 256 elements);
//
// minor-to-major is kept (the default descending order when absent). A
// layout that already has tiles wins: s is returned as it is. Tuples are
// tiled element by element; tokens and opaques are left alone.
func DefaultLayout(s hlo.Shape, gen Generation) hlo.Shape {
	switch {
	case s.IsTuple():
		out := s
		out.Tuple = make([]hlo.Shape, len(s.Tuple))
		for i, e := range s.Tuple {
			out.Tuple[i] = DefaultLayout(e, gen)
		}
		return out
	case !s.IsArray():
		return s
	case s.Layout != nil && len(s.Layout.Tiles) > 0:
		return s
	}
	var l hlo.Layout
	if s.Layout != nil {
		l = *s.Layout
		l.MinorToMajor = append([]int64(nil), s.Layout.MinorToMajor...)
	}
	rank := s.Rank()
	if len(l.MinorToMajor) != rank {
		l.MinorToMajor = make([]int64, rank)
		for i := range l.MinorToMajor {
			l.MinorToMajor[i] = int64(rank - 1 - i)
		}
	}
	l.Tiles = Tiles(s.Elem, rank, gen)
	out := s
	out.Layout = &l
	return out
}

// Tiles returns the tiling DefaultLayout uses for an array of element
// type t and the given rank.
func Tiles(t hlo.ElementType, rank int, gen Generation) []hlo.Tile {
	bits := t.BitWidth()
	// pack is how many elements share a 32-bit word: the second-level
	// sub-tile (k,1) of the narrow types.
	pack := int64(1)
	if bits < 32 {
		pack = int64(32 / max(bits, 4))
	}
	tile := func(dims ...int64) hlo.Tile { return hlo.Tile{Dims: dims} }
	switch {
	case rank == 0:
		return []hlo.Tile{tile(256)}
	case rank == 1:
		if pack == 1 {
			return []hlo.Tile{tile(1024)}
		}
		return []hlo.Tile{tile(1024), tile(128), tile(pack, 1)}
	case pack == 1:
		return []hlo.Tile{tile(8, 128)}
	}
	rows := int64(8)
	if gen.Tile16 && pack <= 4 {
		rows = 8 * pack
	}
	return []hlo.Tile{tile(rows, 128), tile(pack, 1)}
}

// ApplyLayouts gives every instruction shape of m that has no tiling
// DefaultLayout's, in every computation (fused ones too, so that a fusion's
// parameters keep the shapes of its operands), and reports whether it
// changed any. Shapes already tiled are kept. The module header's
// entry_computation_layout, which hlomem keeps verbatim, is not
// rewritten.
func ApplyLayouts(m *hlo.Module, gen Generation) bool {
	if m == nil {
		return false
	}
	changed := false
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			s := DefaultLayout(in.Shape, gen)
			if !changed && s.String() != in.Shape.String() {
				changed = true
			}
			in.Shape = s
		}
	}
	// A bitcast only relabels bytes; where tiling pads its result and
	// its operand differently it is no longer one, and XLA:TPU's layout
	// assignment moves the bytes instead: here a reshape, which has a
	// buffer of its own.
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode != hlo.OpBitcast || len(in.Operands) != 1 {
				continue
			}
			op := in.Operands[0]
			if !in.Shape.IsArray() || !op.Shape.IsArray() || in.Shape.Elem != op.Shape.Elem {
				continue
			}
			n, err1 := hlo.ByteSize(in.Shape)
			k, err2 := hlo.ByteSize(op.Shape)
			ne, ok1 := in.Shape.Elements()
			ke, ok2 := op.Shape.Elements()
			if err1 == nil && err2 == nil && n != k && ok1 && ok2 && ne == ke {
				in.Opcode = hlo.OpReshape
				changed = true
			}
		}
	}
	return changed
}
