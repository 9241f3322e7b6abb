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

	"github.com/hlomem/hlomem/internal/segtree"
	"github.com/hlomem/hlomem/liveness"
)

type reusableSet struct {
	end int // the schedule's last time
	// busy counts, per schedule step, the reusable allocations holding a
	// value over [start, end) of its range. When every reusable
	// allocation is busy at a step strictly inside a value's range, none
	// can take that value's buffer: each holds a value overlapping it
	// beyond a shared endpoint.
	busy *segtree.AddMax[int32]
	bits *busyBits // nil when too large: then tails and busy counts
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
	if r.bits != nil && len(r.als) > 64*r.bits.words {
		// More allocations than the index was sized for (the bound
		// counted every candidate, so this does not happen): go on
		// without it.
		r.bits = nil
		for _, x := range r.als[:len(r.als)-1] {
			for _, b := range x.buffers {
				r.markBusy(x, b)
			}
		}
	}
	for _, b := range al.buffers {
		r.markBusy(al, b)
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

// markBusy records b's values as busy steps of al.
func (r *reusableSet) markBusy(al *Allocation, b *liveness.Buffer) {
	if r.bits != nil {
		for _, v := range b.Values {
			lo, hi := 0, r.end+1 // a value outside the schedule refuses everything
			if v.Scheduled {
				lo, hi = v.Range.Start, v.Range.End
			}
			r.bits.mark(al.reusePos-1, lo, hi)
		}
		return
	}
	if r.busy == nil {
		r.busy = segtree.New[int32](r.end + 1)
	}
	for _, v := range b.Values {
		if !v.Scheduled {
			r.busy.Add(0, r.end+1, 1) // refuses everything
			continue
		}
		r.busy.Add(v.Range.Start, v.Range.End, 1)
	}
}

// candidates calls try on the reusable allocations that may take b, most
// recent first, until it returns true, and reports whether it did. It
// skips only allocations that must refuse b: busy at a step where one of
// b's values is live on into the next (bit index), or, without the index,
// whose live-out tail b would cross or when all are busy at such a step.
func (r *reusableSet) candidates(b *liveness.Buffer, try func(*Allocation) bool) bool {
	if r.bits != nil {
		clear(r.bits.scr)
		for _, v := range b.Values {
			if v.Scheduled && v.Range.End > v.Range.Start {
				r.bits.union(v.Range.Start)
			}
		}
		for i := len(r.als) - 1; i >= 0; i-- {
			if r.bits.scr[i/64]&(1<<(i%64)) == 0 && try(r.als[i]) {
				return true
			}
		}
		return false
	}
	if r.hopeless(b) {
		return false
	}
	need := r.need(b)
	for i := r.prev(len(r.als), need); i >= 0; i = r.prev(i, need) {
		if try(r.als[i]) {
			return true
		}
	}
	return false
}

// hopeless reports whether no reusable allocation can take b: at a step
// where one of b's values is live on into the next, every one of them is
// busy.
func (r *reusableSet) hopeless(b *liveness.Buffer) bool {
	if r.busy == nil || len(r.als) == 0 {
		return false
	}
	all := int32(len(r.als))
	for _, v := range b.Values {
		if v.Scheduled && v.Range.End > v.Range.Start && r.busy.Max(v.Range.Start, v.Range.End) >= all {
			return true
		}
	}
	return false
}

// added updates al's tail after b joined it.
func (r *reusableSet) added(al *Allocation, b *liveness.Buffer) {
	r.markBusy(al, b)
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

// busyBits records, per schedule step m, which reusable allocations hold a
// value live at both m and m+1 (over [start, end) of its range): a segment
// tree over steps whose nodes carry a bit set of allocation positions,
// set on the nodes that cover a value's steps. The allocations busy at m
// are the union of the sets on the path from the root to m's leaf. A
// buffer with a value live at m and m+1 cannot go into any of them (the
// two values would overlap in two points), so only the others need the
// full test. Memory is steps x allocations bits, so it is built only when
// that is small (maxBusyWords).
type busyBits struct {
	n     int // leaves: a power of two at least the number of steps
	words int // per set
	tags  []uint64
	scr   []uint64 // a query's union
}

// maxBusyWords bounds the index: 4 Mi words is 32 MiB.
const maxBusyWords = 4 << 20

func newBusyBits(steps, allocs int) *busyBits {
	n := 1
	for n < steps {
		n *= 2
	}
	words := (allocs + 63) / 64
	if words == 0 || 2*n*words > maxBusyWords {
		return nil
	}
	return &busyBits{n: n, words: words, tags: make([]uint64, 2*n*words), scr: make([]uint64, words)}
}

// mark sets allocation k busy over steps [lo, hi).
func (t *busyBits) mark(k, lo, hi int) {
	lo, hi = max(lo, 0), min(hi, t.n)
	w, bit := k/64, uint64(1)<<(k%64)
	for l, r := lo+t.n, hi+t.n; l < r; l, r = l/2, r/2 {
		if l&1 == 1 {
			t.tags[l*t.words+w] |= bit
			l++
		}
		if r&1 == 1 {
			r--
			t.tags[r*t.words+w] |= bit
		}
	}
}

// union ORs the allocations busy at step m into t.scr.
func (t *busyBits) union(m int) {
	if m < 0 || m >= t.n {
		return
	}
	for k := m + t.n; k >= 1; k /= 2 {
		tag := t.tags[k*t.words : (k+1)*t.words]
		for i, x := range tag {
			t.scr[i] |= x
		}
	}
}
