package fusion

// byID is a table indexed by instruction ID (Instruction.ID, unique in
// its module and below Module.NumIDs), standing for a map keyed by
// *hlo.Instruction. A table belongs to one module: a clone of a module
// may keep the IDs of the original, so a table must never see the
// instructions of two modules.
//
// It grows on set, as passes give new instructions IDs past the end, and
// reads the zero value (absent) past its end. Its entries are cleared all
// at once by reset, which starts a new generation: an entry set in an
// earlier generation reads as absent. That keeps clearing a table of the
// module's size, once per computation or per search, constant in time.
type byID[T any] struct {
	gen []uint32 // gen[id] is the generation entry id was set in
	val []T      // its value (no memory at all for an empty T)
	cur uint32   // the current generation; 0 until the first reset or set
	n   int      // entries set in the current generation
}

// reset clears every entry.
func (t *byID[T]) reset() {
	t.cur++
	t.n = 0
	if t.cur == 0 {
		// Wrapped around: old stamps could match again.
		clear(t.gen)
		t.cur = 1
	}
}

// get returns the entry of id and whether it is set.
func (t *byID[T]) get(id int) (T, bool) {
	if id >= 0 && id < len(t.gen) && t.cur != 0 && t.gen[id] == t.cur {
		return t.val[id], true
	}
	var zero T
	return zero, false
}

// at returns the entry of id, the zero value when it is not set.
func (t *byID[T]) at(id int) T {
	v, _ := t.get(id)
	return v
}

// set sets the entry of id to v.
func (t *byID[T]) set(id int, v T) {
	if t.cur == 0 {
		t.cur = 1
	}
	if id >= len(t.gen) {
		t.gen = append(t.gen, make([]uint32, id+1-len(t.gen))...)
		t.val = append(t.val, make([]T, id+1-len(t.val))...)
	}
	if t.gen[id] != t.cur {
		t.gen[id] = t.cur
		t.n++
	}
	t.val[id] = v
}

// size returns the number of entries set.
func (t *byID[T]) size() int { return t.n }

// marks is a set of instruction IDs: a byID of empty values, 4 bytes per
// ID (the stamps; the values take none).
type marks struct{ byID[struct{}] }

// has reports whether id is in the set.
func (s *marks) has(id int) bool {
	_, ok := s.get(id)
	return ok
}

// mark adds id to the set.
func (s *marks) mark(id int) { s.set(id, struct{}{}) }
