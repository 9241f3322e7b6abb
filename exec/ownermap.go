package exec

import (
	"slices"
	"sort"
)

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
	for j < len(m.segs) && m.segs[j].lo < hi {
		j++
	}
	// segs[i:j] overlap [lo, hi): only the first can stick out on the
	// left and only the last on the right; those parts stay theirs.
	var parts [3]segment
	repl := parts[:0]
	if i < j && m.segs[i].lo < lo {
		repl = append(repl, segment{m.segs[i].lo, lo, m.segs[i].buf, m.segs[i].val})
	}
	repl = append(repl, segment{lo, hi, buf, val})
	if i < j && m.segs[j-1].hi > hi {
		repl = append(repl, segment{hi, m.segs[j-1].hi, m.segs[j-1].buf, m.segs[j-1].val})
	}
	m.segs = slices.Replace(m.segs, i, j, repl...)
}
