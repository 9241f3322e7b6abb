// Package segtree holds a segment tree over steps with range add and
// range maximum, the structure planners use to ask how much is held at
// the busiest step of a live range.
package segtree

import "math"

// Number is what a tree counts.
type Number interface{ ~int32 | ~int64 }

// AddMax is a segment tree over steps [0, n) with range add and range
// maximum. Every step starts at 0.
type AddMax[T Number] struct {
	n     int // leaves, a power of two
	steps int
	max   []T // max over the node's steps, excluding its ancestors' adds
	add   []T // added to the node's whole range
}

// New returns a tree over steps [0, steps).
func New[T Number](steps int) *AddMax[T] {
	return FromValues(make([]T, steps))
}

// FromValues returns a tree over steps [0, len(vals)) whose step i
// starts at vals[i], built in O(n).
func FromValues[T Number](vals []T) *AddMax[T] {
	n := 1
	for n < len(vals) {
		n *= 2
	}
	t := &AddMax[T]{n: n, steps: len(vals), max: make([]T, 2*n), add: make([]T, 2*n)}
	copy(t.max[n:], vals)
	// The leaves past the last step hold the lowest value, so the root is
	// the maximum over the steps (All). No add ever reaches them: a node
	// takes an add whole only when its range lies within [0, steps).
	low := lowest[T]()
	for i := n + len(vals); i < 2*n; i++ {
		t.max[i] = low
	}
	for k := n - 1; k >= 1; k-- {
		t.max[k] = max(t.max[2*k], t.max[2*k+1])
	}
	return t
}

// lowest returns a value below any a tree holds: T's minimum, halved for
// int64 so that sums stay far from overflow.
func lowest[T Number]() T {
	wide := int64(math.MinInt32) - 1
	if int64(T(wide)) == wide {
		half := int64(math.MinInt64) / 2 // a variable: T may be int32
		return T(half)
	}
	return T(math.MinInt32)
}

// All returns the largest value over every step in O(1), 0 for a tree
// without steps.
func (t *AddMax[T]) All() T {
	if t.steps == 0 {
		return 0
	}
	return t.max[1]
}

// ArgMax returns the first step holding the largest value (All), -1 for
// a tree without steps, in O(log n).
func (t *AddMax[T]) ArgMax() int {
	if t.steps == 0 {
		return -1
	}
	k := 1
	for k < t.n {
		if t.max[2*k] >= t.max[2*k+1] {
			k = 2 * k
		} else {
			k = 2*k + 1
		}
	}
	return k - t.n
}

// At returns the value at step i (0 outside the tree's steps).
func (t *AddMax[T]) At(i int) T {
	if i < 0 || i >= t.steps {
		return 0
	}
	return t.Max(i, i+1)
}

// Add adds d to steps [lo, hi); steps past the tree's are ignored.
func (t *AddMax[T]) Add(lo, hi int, d T) {
	hi = min(hi, t.steps)
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

// Max returns the largest value over steps [lo, hi) (those of the
// tree's steps), 0 when the range holds none.
func (t *AddMax[T]) Max(lo, hi int) T {
	hi = min(hi, t.steps)
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
