// Package segtree holds a segment tree over steps with range add and
// range maximum, the structure planners use to ask how much is held at
// the busiest step of a live range.
package segtree

// Number is what a tree counts.
type Number interface{ ~int32 | ~int64 }

// AddMax is a segment tree over steps [0, n) with range add and range
// maximum. Every step starts at 0.
type AddMax[T Number] struct {
	n   int
	max []T // max over the node's steps, excluding its ancestors' adds
	add []T // added to the node's whole range
}

// New returns a tree over steps [0, steps).
func New[T Number](steps int) *AddMax[T] {
	n := 1
	for n < steps {
		n *= 2
	}
	return &AddMax[T]{n: n, max: make([]T, 2*n), add: make([]T, 2*n)}
}

// FromValues returns a tree over steps [0, len(vals)) whose step i
// starts at vals[i], built in O(n).
func FromValues[T Number](vals []T) *AddMax[T] {
	t := New[T](len(vals))
	copy(t.max[t.n:], vals)
	for k := t.n - 1; k >= 1; k-- {
		t.max[k] = max(t.max[2*k], t.max[2*k+1])
	}
	return t
}

// Add adds d to steps [lo, hi).
func (t *AddMax[T]) Add(lo, hi int, d T) {
	if lo < hi {
		t.addRec(1, 0, t.n, lo, hi, d)
	}
}

func (t *AddMax[T]) addRec(k, l, r, lo, hi int, d T) {
	if hi <= l || r <= lo {
		return
	}
	if lo <= l && r <= hi {
		t.add[k] += d
		t.max[k] += d
		return
	}
	m := (l + r) / 2
	t.addRec(2*k, l, m, lo, hi, d)
	t.addRec(2*k+1, m, r, lo, hi, d)
	t.max[k] = t.add[k] + max(t.max[2*k], t.max[2*k+1])
}

// Max returns the largest value over steps [lo, hi), 0 when the range is
// empty.
func (t *AddMax[T]) Max(lo, hi int) T {
	if lo >= hi {
		return 0
	}
	v, _ := t.maxRec(1, 0, t.n, lo, hi)
	return v
}

func (t *AddMax[T]) maxRec(k, l, r, lo, hi int) (T, bool) {
	if hi <= l || r <= lo {
		return 0, false
	}
	if lo <= l && r <= hi {
		return t.max[k], true
	}
	m := (l + r) / 2
	a, okA := t.maxRec(2*k, l, m, lo, hi)
	b, okB := t.maxRec(2*k+1, m, r, lo, hi)
	switch {
	case !okA:
		a = b
	case okB:
		a = max(a, b)
	}
	return t.add[k] + a, true
}
