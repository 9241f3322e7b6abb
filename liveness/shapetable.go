package liveness

// Shape tables. Every (instruction, shape index) position has a slot,
// numbered by the index's pre-order ordinal within the instruction's shape.
// Going between indices and ordinals by walking the shape costs the size of
// the subtrees skipped, which on a deeply nested tuple makes every lookup
// linear and the analysis cubic. A table lists, per ordinal, the subshape,
// the size of its subtree and its index, computed once per instruction;
// the indices share storage where one is a prefix of the next (a nested
// tuple's indices all share one array).

import "github.com/hlomem/hlomem/hlo"

type shapeTable struct {
	sub   []hlo.Shape
	size  []int32 // subtree sizes, the node itself included
	index []hlo.ShapeIndex
}

func newShapeTable(s hlo.Shape) *shapeTable {
	if !s.IsTuple() {
		return &shapeTable{sub: []hlo.Shape{s}, size: []int32{1}, index: []hlo.ShapeIndex{{}}}
	}
	n := s.NumSubshapes()
	t := &shapeTable{sub: make([]hlo.Shape, n), size: make([]int32, n), index: make([]hlo.ShapeIndex, n)}
	// path is the current index and recorded indices are capped slices of
	// it, except that a leaf with siblings after it records a copy: its
	// next sibling overwrites its last position at once. Should a write
	// still reach a position a recorded slice holds (a subtree with later
	// siblings), the path moves to a fresh array first, once per subtree.
	path := make([]int64, 0, 8)
	shared := 0
	ord := 0
	var walk func(sh hlo.Shape, hasNext bool) int32
	walk = func(sh hlo.Shape, hasNext bool) int32 {
		o := ord
		ord++
		t.sub[o] = sh
		if hasNext && len(sh.Tuple) == 0 {
			t.index[o] = append(hlo.ShapeIndex(nil), path...)
		} else {
			t.index[o] = path[:len(path):len(path)]
			shared = max(shared, len(path))
		}
		size := int32(1)
		for k, e := range sh.Tuple {
			if len(path) < shared {
				fresh := make([]int64, len(path), max(2*len(path), 8))
				copy(fresh, path)
				path, shared = fresh, 0
			}
			if len(path) == cap(path) {
				shared = 0 // append moves to a new array nothing points into
			}
			path = append(path, int64(k))
			size += walk(e, k < len(sh.Tuple)-1)
			path = path[:len(path)-1]
		}
		t.size[o] = size
		return size
	}
	walk(s, false)
	return t
}

// ordinal returns the pre-order ordinal of ix in the table's shape, and
// whether the shape has that index.
func (t *shapeTable) ordinal(ix hlo.ShapeIndex) (int, bool) {
	o := 0
	for _, k := range ix {
		sh := t.sub[o]
		if !sh.IsTuple() || k < 0 || k >= int64(len(sh.Tuple)) {
			return 0, false
		}
		c := o + 1
		for j := int64(0); j < k; j++ {
			c += int(t.size[c])
		}
		o = c
	}
	return o, true
}

// child returns the ordinal of element k of the tuple at ordinal o, and
// whether it exists.
func (t *shapeTable) child(o, k int) (int, bool) {
	sh := t.sub[o]
	if !sh.IsTuple() || k < 0 || k >= len(sh.Tuple) {
		return 0, false
	}
	c := o + 1
	for j := 0; j < k; j++ {
		c += int(t.size[c])
	}
	return c, true
}

// table returns the shape table of a tuple-shaped instruction, built once.
func (a *Analysis) table(in *hlo.Instruction) *shapeTable {
	if in.ID < 0 || in.ID >= len(a.tabs) {
		return newShapeTable(in.Shape)
	}
	if t := a.tabs[in.ID]; t != nil {
		return t
	}
	t := newShapeTable(in.Shape)
	a.tabs[in.ID] = t
	return t
}

// ordinalOf returns the ordinal of ix in in's shape and whether it exists.
func (a *Analysis) ordinalOf(in *hlo.Instruction, ix hlo.ShapeIndex) (int, bool) {
	if len(ix) == 0 {
		return 0, true
	}
	if !in.Shape.IsTuple() {
		return 0, false
	}
	return a.table(in).ordinal(ix)
}

// indexAt returns the index of ordinal o in in's shape.
func (a *Analysis) indexAt(in *hlo.Instruction, o int) hlo.ShapeIndex {
	if o == 0 || !in.Shape.IsTuple() {
		return hlo.ShapeIndex{}
	}
	return a.table(in).index[o]
}

// subAt returns the subshape at ordinal o of in's shape.
func (a *Analysis) subAt(in *hlo.Instruction, o int) hlo.Shape {
	if o == 0 || !in.Shape.IsTuple() {
		return in.Shape
	}
	return a.table(in).sub[o]
}

// sizeAt returns the number of positions in the subtree at ordinal o.
func (a *Analysis) sizeAt(in *hlo.Instruction, o int) int {
	if !in.Shape.IsTuple() {
		return 1
	}
	return int(a.table(in).size[o])
}

// childAt returns the ordinal of element k of the tuple at ordinal o of
// in's shape, and whether it exists.
func (a *Analysis) childAt(in *hlo.Instruction, o, k int) (int, bool) {
	if !in.Shape.IsTuple() {
		return 0, false
	}
	return a.table(in).child(o, k)
}
