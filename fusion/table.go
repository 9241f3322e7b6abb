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
	e   []stamped[T]
	gen uint32 // the current generation; 0 until the first reset or set
	n   int    // entries set in the current generation
}

type stamped[T any] struct {
	gen uint32
	v   T
}

// reset clears every entry.
func (t *byID[T]) reset() {
	t.gen++
	t.n = 0
	if t.gen == 0 {
		// Wrapped around: old stamps could match again.
		clear(t.e)
		t.gen = 1
	}
}

// get returns the entry of id and whether it is set.
func (t *byID[T]) get(id int) (T, bool) {
	if id >= 0 && id < len(t.e) && t.gen != 0 && t.e[id].gen == t.gen {
		return t.e[id].v, true
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
	if t.gen == 0 {
		t.gen = 1
	}
	if id >= len(t.e) {
		t.e = append(t.e, make([]stamped[T], id+1-len(t.e))...)
	}
	if t.e[id].gen != t.gen {
		t.e[id].gen = t.gen
		t.n++
	}
	t.e[id].v = v
}

// size returns the number of entries set.
func (t *byID[T]) size() int { return t.n }

// marks is a set of instruction IDs, a byID[bool] in a quarter of the
// space: an ID is in the set when its stamp is the current generation.
type marks struct {
	gen []uint32
	cur uint32 // the current generation; 0 until the first reset or mark
	n   int    // IDs marked in the current generation
}

// reset empties the set.
func (s *marks) reset() {
	s.cur++
	s.n = 0
	if s.cur == 0 {
		clear(s.gen)
		s.cur = 1
	}
}

// has reports whether id is in the set.
func (s *marks) has(id int) bool {
	return id >= 0 && id < len(s.gen) && s.cur != 0 && s.gen[id] == s.cur
}

// mark adds id to the set.
func (s *marks) mark(id int) {
	if s.cur == 0 {
		s.cur = 1
	}
	if id >= len(s.gen) {
		s.gen = append(s.gen, make([]uint32, id+1-len(s.gen))...)
	}
	if s.gen[id] != s.cur {
		s.gen[id] = s.cur
		s.n++
	}
}

// size returns the number of IDs in the set.
func (s *marks) size() int { return s.n }
