// Package binheap holds a binary heap over a slice with the order given
// by a function, the priority queue the planners and the dataflow
// worklist share. Its sifts are the textbook ones (a child replaces its
// parent only when strictly before it; of two children the right one only
// when strictly before the left), so equal items keep a fixed order.
package binheap

// Heap is a binary heap of T: Items[0] is an item no other is Less than.
// Items may be set directly and then ordered with Init.
type Heap[T any] struct {
	Items []T
	Less  func(a, b T) bool
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.Items) }

// Top returns the first item; the heap must not be empty.
func (h *Heap[T]) Top() T { return h.Items[0] }

// Init orders Items into a heap in O(n).
func (h *Heap[T]) Init() {
	for i := len(h.Items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.Items = append(h.Items, x)
	h.up(len(h.Items) - 1)
}

// Pop removes and returns the first item; the heap must not be empty.
func (h *Heap[T]) Pop() T {
	top := h.Items[0]
	last := len(h.Items) - 1
	h.Items[0] = h.Items[last]
	h.Items = h.Items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

// FixTop restores the order after the first item moved later (its key
// grew in a min-heap).
func (h *Heap[T]) FixTop() {
	if len(h.Items) > 0 {
		h.down(0)
	}
}

func (h *Heap[T]) up(i int) {
	items := h.Items
	for i > 0 {
		p := (i - 1) / 2
		if !h.Less(items[i], items[p]) {
			return
		}
		items[p], items[i] = items[i], items[p]
		i = p
	}
}

func (h *Heap[T]) down(i int) {
	items := h.Items
	n := len(items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.Less(items[r], items[l]) {
			m = r
		}
		if !h.Less(items[m], items[i]) {
			return
		}
		items[i], items[m] = items[m], items[i]
		i = m
	}
}
