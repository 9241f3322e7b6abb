package assign

// The reusable allocations of the global assignment, in creation order,
// with an index that skips those that must refuse a buffer.
//
// XLA tries every reusable allocation from the most recent back and takes
// the first that accepts the buffer. Those allocations hold live-out
// values, which stay live to the end of the schedule; once an allocation
// holds a value live from time s to the end, it refuses every buffer with
// a value that ends after s and starts before the end (the two would
// overlap in more than a point where one ends as the other starts). The
// index keeps, per allocation, that time s (its tail) in a max segment
// tree, so a buffer whose values end late skips every allocation whose
// tail starts earlier without testing it. The allocations it does test
// are tested in XLA's order, so the choice is XLA's.

import (
	"math"

	"github.com/hlomem/hlomem/liveness"
)

type reusableSet struct {
	end  int // the schedule's last time
	busy *busyTree
	als  []*Allocation
	tail []int // per allocation: see tailOf
	tree []int // max segment tree over tail, leaves from len(tree)/2
}

// noTail is the tail of an allocation with no value live to the end.
const noTail = math.MaxInt

// tailOf is the earliest start of al's values live to the end (noTail if
// none); -1 if al holds a value outside the schedule, which refuses every
// buffer.
func (r *reusableSet) tailOf(vals []*liveness.Value, tail int) int {
	for _, v := range vals {
		switch {
		case !v.Scheduled:
			return -1
		case v.Range.End >= r.end:
			tail = min(tail, v.Range.Start)
		}
	}
	return tail
}

// add appends al as the most recent reusable allocation.
func (r *reusableSet) add(al *Allocation) {
	r.als = append(r.als, al)
	al.reusePos = len(r.als)
	for _, b := range al.buffers {
		r.markBusy(b)
	}
	t := noTail
	for _, b := range al.buffers {
		t = r.tailOf(b.Values, t)
	}
	r.tail = append(r.tail, t)
	if leaves := len(r.tree) / 2; len(r.als) > leaves {
		n := max(1, 2*leaves)
		tree := make([]int, 2*n)
		for i := range tree {
			tree[i] = -1
		}
		copy(tree[n:], r.tail)
		for i := n - 1; i >= 1; i-- {
			tree[i] = max(tree[2*i], tree[2*i+1])
		}
		r.tree = tree
		return
	}
	r.set(al.reusePos-1, t)
}

// markBusy counts b's values in the busy tree.
func (r *reusableSet) markBusy(b *liveness.Buffer) {
	if r.busy == nil {
		r.busy = newBusyTree(r.end + 1)
	}
	for _, v := range b.Values {
		if !v.Scheduled {
			r.busy.inc(0, r.end+1, 1) // refuses everything
			continue
		}
		r.busy.inc(v.Range.Start, v.Range.End, 1)
	}
}

// hopeless reports whether no reusable allocation can take b: at a step
// strictly inside one of b's values, every one of them is busy.
func (r *reusableSet) hopeless(b *liveness.Buffer) bool {
	if r.busy == nil || len(r.als) == 0 {
		return false
	}
	all := int32(len(r.als))
	for _, v := range b.Values {
		if v.Scheduled && v.Range.End-v.Range.Start >= 2 && r.busy.peak(v.Range.Start+1, v.Range.End) >= all {
			return true
		}
	}
	return false
}

// added updates al's tail after b joined it.
func (r *reusableSet) added(al *Allocation, b *liveness.Buffer) {
	r.markBusy(b)
	i := al.reusePos - 1
	if t := r.tailOf(b.Values, r.tail[i]); t != r.tail[i] {
		r.tail[i] = t
		r.set(i, t)
	}
}

func (r *reusableSet) set(i, t int) {
	n := len(r.tree) / 2
	k := n + i
	r.tree[k] = t
	for k /= 2; k >= 1; k /= 2 {
		r.tree[k] = max(r.tree[2*k], r.tree[2*k+1])
	}
}

// prev returns the largest position below i whose tail is at least need,
// or -1.
func (r *reusableSet) prev(i, need int) int {
	n := len(r.tree) / 2
	if i <= 0 || n == 0 {
		return -1
	}
	// Walk up from leaf i-1 looking for a left sibling subtree (or the
	// leaf itself) holding a tail >= need, then down to its rightmost such
	// leaf.
	k := n + i - 1
	if r.tree[k] >= need {
		return i - 1
	}
	for k > 1 {
		if k%2 == 1 && r.tree[k-1] >= need {
			k--
			for k < n {
				if r.tree[2*k+1] >= need {
					k = 2*k + 1
				} else {
					k = 2 * k
				}
			}
			return k - n
		}
		k /= 2
	}
	return -1
}

// need is the smallest tail an allocation may have and still accept b:
// the latest end among b's values that start before the end of the
// schedule (-1 when none, which skips nothing).
func (r *reusableSet) need(b *liveness.Buffer) int {
	need := -1
	for _, v := range b.Values {
		if v.Scheduled && v.Range.Start < r.end {
			need = max(need, v.Range.End)
		}
	}
	return need
}

// busyTree counts, per schedule step, the reusable allocations holding a
// value over [start, end) of its range (a range add, max query segment
// tree). When every reusable allocation is busy at a step strictly inside
// a value's range, none can take that value's buffer: each holds a value
// overlapping it beyond a shared endpoint.
type busyTree struct {
	n   int
	max []int32 // max over the node's steps, excluding ancestors' adds
	add []int32 // added to the node's whole range
}

func newBusyTree(steps int) *busyTree {
	n := 1
	for n < steps {
		n *= 2
	}
	return &busyTree{n: n, max: make([]int32, 2*n), add: make([]int32, 2*n)}
}

// inc adds d to steps [lo, hi).
func (t *busyTree) inc(lo, hi int, d int32) {
	if lo < hi {
		t.incRec(1, 0, t.n, lo, hi, d)
	}
}

func (t *busyTree) incRec(k, l, r, lo, hi int, d int32) {
	if hi <= l || r <= lo {
		return
	}
	if lo <= l && r <= hi {
		t.add[k] += d
		t.max[k] += d
		return
	}
	m := (l + r) / 2
	t.incRec(2*k, l, m, lo, hi, d)
	t.incRec(2*k+1, m, r, lo, hi, d)
	t.max[k] = t.add[k] + max(t.max[2*k], t.max[2*k+1])
}

// peak returns the largest count over steps [lo, hi).
func (t *busyTree) peak(lo, hi int) int32 {
	if lo >= hi {
		return 0
	}
	return t.peakRec(1, 0, t.n, lo, hi)
}

func (t *busyTree) peakRec(k, l, r, lo, hi int) int32 {
	if hi <= l || r <= lo {
		return math.MinInt32 / 2
	}
	if lo <= l && r <= hi {
		return t.max[k]
	}
	m := (l + r) / 2
	return t.add[k] + max(t.peakRec(2*k, l, m, lo, hi), t.peakRec(2*k+1, m, r, lo, hi))
}
