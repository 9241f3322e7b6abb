package exec

// Tiled storage. A TPU keeps an array with a tiled layout tile by tile:
// XLA's tiled layout (docs/tiled_layout.md) applies the tiles of
// T(a,b)(c,d)... one after the other to the array's dimensions in
// physical, major-to-minor order. A tile of k dimensions splits the k most
// minor dimensions of the shape so far, each d into ceil(d/t) tiles of t,
// and moves the within-tile dimensions behind all others:
//
//	(..., d1, d2) with T(t1,t2)  ->  (..., ceil(d1/t1), ceil(d2/t2), t1, t2)
//	element (..., i1, i2)        ->  (..., i1/t1, i2/t2, i1%t1, i2%t2)
//
// (a tile with more dimensions than the shape first pads it with leading
// dimensions of 1). The element's place in memory is its index in the
// final shape, row-major. The padding the tiles add (a partial tile at the
// edge) is in the buffer but belongs to no element; hlo.ByteSize counts it,
// for the first tile, as XLA's ShapeUtil::ArraySize does.
//
// An eval.Literal holds an array densely in its minor-to-major order. A planned
// run keeps every value with a tiled layout in tile order instead: storeLeaf
// scatters the literal's elements to their tiled places in the value's
// padded buffer and loadArray gathers them back, both by the tiles of the
// value's own shape (the shape of the instruction that defines it). A
// reader whose shape differs (a bitcast) then sees the value's elements in
// the same dense order as an untiled run would, so that the planned run's
// numbers stay comparable with the plan-free reference, while every byte
// of the padded buffer, padding included, is the plan's to get right: a
// buffer sized without its tiles' padding is too small for the tiled
// elements and fails the run.

import (
	"fmt"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
)

// tiledOrder returns, for an array shape with tiles, the place (in
// elements) of each element of its dense minor-to-major order in the tiled
// buffer, and how many elements the tiled buffer spans; nil when the
// shape has no tiles.
func tiledOrder(s hlo.Shape) ([]int64, int64, error) {
	if s.Layout == nil || len(s.Layout.Tiles) == 0 || !s.IsArray() {
		return nil, 0, nil
	}
	r := len(s.Dims)
	m2m := s.Layout.MinorToMajor
	if len(m2m) == 0 && r > 0 {
		m2m = make([]int64, r)
		for i := range m2m {
			m2m[i] = int64(r - 1 - i)
		}
	}
	if len(m2m) != r {
		return nil, 0, fmt.Errorf("layout of %s does not match its rank", s)
	}
	// The dimensions in physical order, major first.
	phys := make([]int64, r)
	n := int64(1)
	for j := range r {
		d := m2m[r-1-j]
		if d < 0 || int(d) >= r || s.Dims[d] < 0 {
			return nil, 0, fmt.Errorf("layout of %s is invalid", s)
		}
		phys[j] = s.Dims[d]
		n *= phys[j]
	}
	// The shape after each tile, to lay out the final index.
	type level struct {
		k      int     // the tile's rank
		pad    int     // leading 1-dimensions added before the tile
		tile   []int64 // the tile's dimensions
		before int     // rank of the shape the tile applies to, after padding
	}
	levels := make([]level, 0, len(s.Layout.Tiles))
	shape := append([]int64(nil), phys...)
	for _, t := range s.Layout.Tiles {
		k := len(t.Dims)
		for _, d := range t.Dims {
			if d <= 0 {
				return nil, 0, fmt.Errorf("layout of %s: tile dimension %d is not evaluated", s, d)
			}
		}
		pad := max(k-len(shape), 0)
		if pad > 0 {
			shape = append(make([]int64, pad), shape...)
			for i := range pad {
				shape[i] = 1
			}
		}
		m := len(shape)
		next := make([]int64, 0, m+k)
		next = append(next, shape[:m-k]...)
		for j := range k {
			next = append(next, (shape[m-k+j]+t.Dims[j]-1)/t.Dims[j])
		}
		next = append(next, t.Dims...)
		levels = append(levels, level{k: k, pad: pad, tile: t.Dims, before: m})
		shape = next
	}
	extent := int64(1)
	for _, d := range shape {
		extent *= d
		if extent < 0 || extent > 1<<40 {
			return nil, 0, fmt.Errorf("tiled %s is too large to evaluate", s)
		}
	}
	if n > 1<<40 {
		return nil, 0, fmt.Errorf("%s is too large to evaluate", s)
	}
	final := shape
	out := make([]int64, n)
	idx := make([]int64, r) // odometer over phys
	cur := make([]int64, 0, len(final))
	nxt := make([]int64, 0, len(final))
	for e := int64(0); e < n; e++ {
		cur = append(cur[:0], idx...)
		for _, lv := range levels {
			if lv.pad > 0 {
				nxt = nxt[:0]
				for range lv.pad {
					nxt = append(nxt, 0)
				}
				nxt = append(nxt, cur...)
				cur, nxt = nxt, cur
			}
			m, k := len(cur), lv.k
			nxt = append(nxt[:0], cur[:m-k]...)
			for j := range k {
				nxt = append(nxt, cur[m-k+j]/lv.tile[j])
			}
			for j := range k {
				nxt = append(nxt, cur[m-k+j]%lv.tile[j])
			}
			cur, nxt = nxt, cur
		}
		var lin int64
		for j, d := range final {
			lin = lin*d + cur[j]
		}
		out[e] = lin
		for j := r - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < phys[j] {
				break
			}
			idx[j] = 0
		}
	}
	return out, extent, nil
}

// tiling is the tiled order of one value, with the bytes it spans.
type tiling struct {
	order []int64 // element places, in elements; nil: dense
	width int     // element bytes
	span  int64   // bytes from the first element's place to past the last's
}

// tilingOf returns (and caches) the tiled order of value id of shape s;
// an untiled shape has none.
func (x *executor) tilingOf(id int, s hlo.Shape) (*tiling, error) {
	if x.tilings == nil {
		x.tilings = map[int]*tiling{}
	}
	if t, ok := x.tilings[id]; ok {
		return t, nil
	}
	order, _, err := tiledOrder(s)
	if err != nil {
		return nil, err
	}
	t := &tiling{order: order}
	if order != nil {
		w, err := eval.ElemWidth(s.Elem)
		if err != nil {
			return nil, err
		}
		t.width = w
		var hi int64 = -1
		for _, p := range order {
			hi = max(hi, p)
		}
		t.span = (hi + 1) * int64(w)
	}
	x.tilings[id] = t
	return t, nil
}

// readTiled fills dense (the value's elements in dense order) from the
// tiled buffer of size bytes at addr.
func (x *executor) readTiled(t *tiling, dense []byte, addr, size int64) error {
	if int64(len(t.order))*int64(t.width) != int64(len(dense)) {
		return fmt.Errorf("%d bytes read as %d elements of %d bytes", len(dense), len(t.order), t.width)
	}
	if t.span > size {
		return fmt.Errorf("its tiles span %d bytes, more than the %d of its buffer", t.span, size)
	}
	buf := make([]byte, t.span)
	if err := x.mem.ReadAt(buf, addr); err != nil {
		return err
	}
	w := int64(t.width)
	for i, p := range t.order {
		copy(dense[int64(i)*w:int64(i+1)*w], buf[p*w:(p+1)*w])
	}
	return nil
}

// writeTiled writes dense to the tiled buffer of size bytes at addr,
// leaving the padding between the elements as it was.
func (x *executor) writeTiled(t *tiling, dense []byte, addr, size int64) error {
	if int64(len(t.order))*int64(t.width) != int64(len(dense)) {
		return fmt.Errorf("%d bytes written as %d elements of %d bytes", len(dense), len(t.order), t.width)
	}
	if t.span > size {
		return fmt.Errorf("its tiles span %d bytes, more than the %d of its buffer", t.span, size)
	}
	buf := make([]byte, t.span)
	if err := x.mem.ReadAt(buf, addr); err != nil {
		return err
	}
	w := int64(t.width)
	for i, p := range t.order {
		copy(buf[p*w:(p+1)*w], dense[int64(i)*w:int64(i+1)*w])
	}
	return x.mem.WriteAt(buf, addr)
}
