package runtime

import "sort"

// segment: bytes [lo, hi) of an allocation were last written by value val
// of buffer buf.
type segment struct {
	lo, hi int64
	buf    int32
	val    int32
}

// ownerMap records, for one allocation, which value owns each byte range:
// sorted, non-overlapping segments. Bytes in no segment were never
// written. It holds as many segments as there are values alive in it.
type ownerMap struct {
	segs []segment
}

// first returns the index of the first segment ending after lo.
func (m *ownerMap) first(lo int64) int {
	return sort.Search(len(m.segs), func(i int) bool { return m.segs[i].hi > lo })
}

// each calls f on every segment overlapping [lo, hi) until f returns false.
func (m *ownerMap) each(lo, hi int64, f func(*segment) bool) {
	for i := m.first(lo); i < len(m.segs) && m.segs[i].lo < hi; i++ {
		if !f(&m.segs[i]) {
			return
		}
	}
}

// foreign returns a segment in [lo, hi) owned by a buffer other than buf,
// or reports a gap (bytes never written) when there is none.
func (m *ownerMap) foreign(lo, hi int64, buf int32) (*segment, bool) {
	at := lo
	for i := m.first(lo); i < len(m.segs) && m.segs[i].lo < hi; i++ {
		s := &m.segs[i]
		if s.lo > at {
			return nil, true
		}
		if s.buf != buf {
			return s, false
		}
		at = s.hi
	}
	return nil, at < hi
}

// set makes value val of buffer buf the owner of [lo, hi).
func (m *ownerMap) set(lo, hi int64, buf, val int32) {
	i := m.first(lo)
	j := i
	var keep []segment
	for j < len(m.segs) && m.segs[j].lo < hi {
		s := m.segs[j]
		if s.lo < lo {
			keep = append(keep, segment{s.lo, lo, s.buf, s.val})
		}
		if s.hi > hi {
			keep = append(keep, segment{hi, s.hi, s.buf, s.val})
		}
		j++
	}
	// Replace segs[i:j] with the kept left part, the new segment and the
	// kept right part, in address order.
	repl := make([]segment, 0, len(keep)+1)
	for _, s := range keep {
		if s.hi <= lo {
			repl = append(repl, s)
		}
	}
	repl = append(repl, segment{lo, hi, buf, val})
	for _, s := range keep {
		if s.lo >= hi {
			repl = append(repl, s)
		}
	}
	m.segs = append(m.segs[:i], append(repl, m.segs[j:]...)...)
}
