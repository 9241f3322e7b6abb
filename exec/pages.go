package exec

import (
	"iter"
	"slices"
)

// PageSize is the unit of a Pages store's backing memory.
const PageSize = 64 << 10

// Pages is a sparse byte store over an address space: pages of PageSize
// bytes are made on first write, so a large address space costs what is
// written. Bytes never written read as the fill byte the caller passes.
// It checks nothing: the Memory that holds it checks that accesses fall
// inside its live regions. The zero value is empty.
type Pages struct {
	m map[int64][]byte
}

// Len is the number of pages held.
func (s *Pages) Len() int { return len(s.m) }

// Has reports whether page pg is held.
func (s *Pages) Has(pg int64) bool {
	_, ok := s.m[pg]
	return ok
}

// All yields the numbers of the pages held, in no order.
func (s *Pages) All() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for p := range s.m {
			if !yield(p) {
				return
			}
		}
	}
}

// Clone returns a deep copy.
func (s *Pages) Clone() Pages {
	c := Pages{m: make(map[int64][]byte, len(s.m))}
	for p, page := range s.m {
		c.m[p] = slices.Clone(page)
	}
	return c
}

// Read fills p from the bytes at addr.
func (s *Pages) Read(p []byte, addr int64, fill byte) {
	s.each(addr, int64(len(p)), func(pg, off, done, k int64) {
		if page := s.m[pg]; page != nil {
			copy(p[done:done+k], page[off:off+k])
		} else {
			fillBytes(p[done:done+k], fill)
		}
	})
}

// Write copies p to the bytes at addr, making pages as needed.
func (s *Pages) Write(p []byte, addr int64, fill byte) {
	s.each(addr, int64(len(p)), func(pg, off, done, k int64) {
		copy(s.page(pg, fill)[off:off+k], p[done:done+k])
	})
}

// Reset sets the bytes of [lo, hi) held in pages to fill.
func (s *Pages) Reset(lo, hi int64, fill byte) {
	if len(s.m) == 0 || lo >= hi {
		return
	}
	s.each(lo, hi-lo, func(pg, off, _, k int64) {
		if page := s.m[pg]; page != nil {
			fillBytes(page[off:off+k], fill)
		}
	})
}

// MoveDown copies size bytes from from down to to (to <= from), in
// ascending order, which is safe when the ranges overlap: a chunk's
// destination lies below every source byte not yet copied. Bytes of the
// source the copy does not cover keep their value.
func (s *Pages) MoveDown(from, to, size int64, fill byte) {
	if len(s.m) == 0 {
		return
	}
	for done := int64(0); done < size; {
		src, dst := from+done, to+done
		k := min(size-done, PageSize-src%PageSize, PageSize-dst%PageSize)
		sp, dp := s.m[src/PageSize], s.m[dst/PageSize]
		switch {
		case sp != nil:
			if dp == nil {
				dp = s.page(dst/PageSize, fill)
			}
			copy(dp[dst%PageSize:dst%PageSize+k], sp[src%PageSize:src%PageSize+k])
		case dp != nil:
			fillBytes(dp[dst%PageSize:dst%PageSize+k], fill)
		}
		done += k
	}
}

// Drop drops the pages that hold a byte of [lo, hi) and that keep does
// not ask to keep.
func (s *Pages) Drop(lo, hi int64, keep func(page int64) bool) {
	if len(s.m) == 0 || lo >= hi {
		return
	}
	for p := lo / PageSize; p <= (hi-1)/PageSize; p++ {
		if _, ok := s.m[p]; ok && !keep(p) {
			delete(s.m, p)
		}
	}
}

// DropAll drops every page that keep does not ask to keep.
func (s *Pages) DropAll(keep func(page int64) bool) {
	for p := range s.m {
		if !keep(p) {
			delete(s.m, p)
		}
	}
}

// page returns page pg, made filled with fill when absent.
func (s *Pages) page(pg int64, fill byte) []byte {
	page := s.m[pg]
	if page == nil {
		if s.m == nil {
			s.m = map[int64][]byte{}
		}
		page = make([]byte, PageSize)
		fillBytes(page, fill)
		s.m[pg] = page
	}
	return page
}

// each calls f on each page's part of [addr, addr+n), in address order:
// the page, the offset in it, the bytes done before and the part's length.
func (s *Pages) each(addr, n int64, f func(pg, off, done, k int64)) {
	for done := int64(0); done < n; {
		pg, off := addr/PageSize, addr%PageSize
		k := min(n-done, PageSize-off)
		f(pg, off, done, k)
		done, addr = done+k, addr+k
	}
}

// fillBytes sets every byte of p to b.
func fillBytes(p []byte, b byte) {
	if b == 0 {
		clear(p)
		return
	}
	for i := range p {
		p[i] = b
	}
}
