package remat

import (
	"fmt"
	"slices"

	"github.com/hlomem/hlomem/hlo"
)

// item is one instruction of a sequence being replayed (XLA's Item).
type item struct {
	in         *hlo.Instruction
	placed     bool
	denylisted bool
	defined    []int // buffers the instruction defines
	output     []int // buffers its value holds (a GTE's or bitcast's too)
	used       []int // buffers it reads
	prev, next *item
	position   int64
	skip       bool // a candidate start (XLA's express lane)
	seq        int  // order of placement: the list order of placed items
	inCands    bool
	pts        *node      // points-to set
	lbs        []*logical // logical buffers defined
}

// use is one use of a buffer (XLA's ItemUse): the user, the operand slot,
// and the tuple element when the buffer is one (index of length 1).
type use struct {
	user    *item
	operand int
	index   int64 // -1 when none
}

// buffer is XLA's MemoryUsageTracker::Buffer.
type buffer struct {
	id         int
	def        *item
	size       int64
	shape      hlo.Shape
	liveOut    bool
	indirect   bool
	index      hlo.ShapeIndex
	users      []use
	unfinished int
}

// list is the sequence as a linked list with XLA's non-decreasing
// position numbers.
type list struct {
	first *item
	ix    *itemIndex
}

// itemIndex finds an instruction's item by its ID; the lists of all
// computations share one (instruction IDs are unique in a module).
type itemIndex struct {
	byID []*item
}

func (x *itemIndex) put(it *item) {
	id := it.in.ID
	if id < 0 {
		panic(fmt.Sprintf("remat: instruction %s has ID %d", it.in.Name, id))
	}
	if id >= len(x.byID) {
		x.byID = append(x.byID, make([]*item, max(id+1, 2*len(x.byID))-len(x.byID))...)
	}
	x.byID[id] = it
}

func newList(seq []*hlo.Instruction, ix *itemIndex) *list {
	l := &list{ix: ix}
	var last *item
	for i, in := range seq {
		it := &item{in: in, position: int64(i), prev: last}
		if last == nil {
			l.first = it
		} else {
			last.next = it
		}
		last = it
		ix.put(it)
	}
	return l
}

// get returns in's item, nil when in has none.
func (l *list) get(in *hlo.Instruction) *item {
	if in.ID < 0 || in.ID >= len(l.ix.byID) {
		return nil
	}
	if it := l.ix.byID[in.ID]; it != nil && it.in == in {
		return it
	}
	return nil
}

func (l *list) create(in *hlo.Instruction) *item {
	it := &item{in: in}
	l.ix.put(it)
	return it
}

// insertBeforeAny puts it right before the earliest of before
// (InstructionList::InsertBeforeInstructions).
func (l *list) insertBeforeAny(it *item, before []*item) {
	var min *item
	for _, b := range before {
		if min == nil || b.position < min.position {
			min = b
		}
	}
	for min.prev != nil && min.prev.position == min.position {
		min = min.prev
	}
	for !slices.Contains(before, min) {
		min = min.next
	}
	it.prev = min.prev
	it.next = min
	min.prev = it
	if it.prev != nil {
		it.prev.next = it
	} else {
		l.first = it
	}
	it.position = min.position
}

func (l *list) sequence() []*hlo.Instruction {
	var out []*hlo.Instruction
	for it := l.first; it != nil; it = it.next {
		out = append(out, it.in)
	}
	return out
}

// isIndirectUser is XLA's IsSupportedIndirectUser: bitcast and GTE relay
// the buffers they read.
func isIndirectUser(in *hlo.Instruction) bool {
	return in.Opcode == hlo.OpBitcast || in.Opcode == hlo.OpGetTupleElement
}

// tracker is XLA's MemoryUsageTracker for one computation.
type tracker struct {
	c          *hlo.Computation
	l          *list
	buffers    []*buffer
	usage      int64
	inProgress *item
	// cands are the placed items that may be picked, in list order (which
	// for placed items is placement order), with a live buffer when last
	// looked at; eligible says which items may ever be.
	cands    []*item
	eligible func(*item) bool
	nextSeq  int
}

// newTracker builds the buffers of c's sequence from its points-to sets
// (MemoryUsageTracker's constructor).
func newTracker(c *hlo.Computation, l *list) (*tracker, error) {
	t := &tracker{c: c, l: l}
	pt, err := pointsTo(l)
	if err != nil {
		return nil, err
	}
	liveOut := map[*logical]bool{}
	for _, lb := range pt.flat(c.Root) {
		liveOut[lb] = true
	}
	ids := map[*logical]int{}
	for it := l.first; it != nil; it = it.next {
		in := it.in
		for _, lb := range it.lbs {
			var b *buffer
			if in.Opcode == hlo.OpWhile {
				src := pt.at(in.Operands[0], lb.index)
				if len(src) != 1 {
					return nil, fmt.Errorf("%s: while operand holds %d buffers at %s", in.Name, len(src), lb.index)
				}
				b = t.buffers[ids[src[0]]]
				b.indirect = true
				b.liveOut = b.liveOut || liveOut[lb]
				us, _, err := pt.users(l, lb)
				if err != nil {
					return nil, err
				}
				for _, u := range us {
					if !slices.ContainsFunc(b.users, func(x use) bool { return x.user == u.user }) {
						b.unfinished++
						u.user.used = append(u.user.used, b.id)
						b.users = append(b.users, u)
					}
				}
			} else {
				us, indirect, err := pt.users(l, lb)
				if err != nil {
					return nil, err
				}
				b, err = t.newBuffer(it, lb.shape, lb.index, us, liveOut[lb], indirect)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", in.Name, err)
				}
				it.defined = append(it.defined, b.id)
				for _, u := range b.users {
					if !slices.Contains(u.user.used, b.id) {
						u.user.used = append(u.user.used, b.id)
					}
				}
			}
			ids[lb] = b.id
		}
		for _, lb := range pt.flat(in) {
			it.output = append(it.output, ids[lb])
		}
	}
	return t, nil
}

func (t *tracker) newBuffer(def *item, s hlo.Shape, ix hlo.ShapeIndex, us []use, liveOut, indirect bool) (*buffer, error) {
	size, err := hlo.BufferSize(s)
	if err != nil {
		return nil, err
	}
	seen := map[*item]bool{}
	for _, u := range us {
		seen[u.user] = true
	}
	b := &buffer{id: len(t.buffers), def: def, size: size, shape: s, liveOut: liveOut,
		indirect: indirect, index: ix, users: us, unfinished: len(seen)}
	t.buffers = append(t.buffers, b)
	return b, nil
}

// allocated is AllocatedSize: live-out and parameter buffers are the
// caller's and count zero.
func (t *tracker) allocated(id int) int64 {
	b := t.buffers[id]
	if b.liveOut || b.def.in.Opcode == hlo.OpParameter {
		return 0
	}
	return b.size
}

func (t *tracker) itemSize(it *item) int64 {
	var n int64
	for _, id := range it.defined {
		n += t.allocated(id)
	}
	return n
}

func (t *tracker) begin(it *item) error {
	if t.inProgress != nil {
		return fmt.Errorf("remat: %s begun while %s is in progress", it.in.Name, t.inProgress.in.Name)
	}
	t.inProgress = it
	it.placed = true
	it.seq = t.nextSeq
	t.nextSeq++
	for _, id := range it.defined {
		t.usage += t.allocated(id)
	}
	if t.eligible != nil && t.eligible(it) && t.hasLive(it) {
		it.inCands = true
		t.cands = append(t.cands, it)
	}
	return nil
}

// hasLive reports whether a buffer it defines is live.
func (t *tracker) hasLive(it *item) bool {
	for _, id := range it.defined {
		if t.live(id) {
			return true
		}
	}
	return false
}

// revive puts a placed item whose buffer came back to life (a clone now
// reads it) back among the candidates, in order.
func (t *tracker) revive(it *item) {
	if !it.placed || it.inCands || t.eligible == nil || !t.eligible(it) {
		return
	}
	i, _ := slices.BinarySearchFunc(t.cands, it.seq, func(x *item, seq int) int { return x.seq - seq })
	t.cands = slices.Insert(t.cands, i, it)
	it.inCands = true
}

func (t *tracker) end() error {
	it := t.inProgress
	if it == nil {
		return fmt.Errorf("remat: end without begin")
	}
	for _, id := range it.used {
		b := t.buffers[id]
		b.unfinished--
		if b.unfinished < 0 {
			return fmt.Errorf("remat: buffer of %s has a negative unfinished user count", b.def.in.Name)
		}
		if b.unfinished == 0 {
			t.usage -= t.allocated(id)
		}
	}
	for _, id := range it.defined {
		if t.buffers[id].unfinished == 0 {
			t.usage -= t.allocated(id)
		}
	}
	t.inProgress = nil
	return nil
}

func (t *tracker) isPlaced(in *hlo.Instruction) bool {
	it := t.l.get(in)
	return it != nil && it.placed
}

func (t *tracker) inUse(id int) bool {
	return t.inProgress != nil && slices.Contains(t.inProgress.used, id)
}

func (t *tracker) live(id int) bool {
	b := t.buffers[id]
	return b.def.placed && b.unfinished > 0
}

// memoryReduced is MemoryReducedIfRematerialized for a block of one.
func (t *tracker) memoryReduced(it *item) int64 {
	if !it.placed || it == t.inProgress {
		return 0
	}
	var reduced int64
	for _, id := range it.defined {
		b := t.buffers[id]
		if b.indirect || b.liveOut || len(b.index) > 1 || t.inUse(id) {
			return 0
		}
		if t.live(id) {
			reduced += t.allocated(id)
		}
	}
	for _, id := range it.used {
		if !t.live(id) {
			reduced -= t.allocated(id)
		}
	}
	return reduced
}

// cost is GetCostOfRecompute with RematerializationCost; ok is false
// when the item is no candidate.
func (t *tracker) cost(it *item, limit int64) (int64, bool) {
	for _, s := range it.in.ControlSuccessors() {
		if t.isPlaced(s) {
			return 0, false
		}
	}
	reduced := t.memoryReduced(it)
	if reduced <= 0 {
		return 0, false
	}
	for _, u := range it.in.Users {
		if t.isPlaced(u) {
			return limit / reduced, true
		}
	}
	return 0, true // a move: no user placed yet
}

func (t *tracker) hasUnplacedUsers(it *item) bool {
	for _, id := range it.defined {
		for _, u := range t.buffers[id].users {
			if !u.user.placed {
				return true
			}
		}
	}
	return false
}

func (t *tracker) itemUses(it *item) []use {
	var out []use
	for _, id := range it.defined {
		out = append(out, t.buffers[id].users...)
	}
	return out
}

// addRemat is AddRematerializedInstruction.
func (t *tracker) addRemat(orig, remat *item, indirect []*item) error {
	if t.inProgress == nil || !orig.placed || remat.placed {
		return fmt.Errorf("remat: bad state rematerializing %s", orig.in.Name)
	}
	remat.used = slices.Clone(orig.used)
	for _, id := range orig.used {
		b := t.buffers[id]
		if b.unfinished == 0 {
			t.usage += t.allocated(id)
		}
		b.unfinished++
		if b.unfinished == 1 {
			t.revive(b.def)
		}
		var extra []use
		for _, u := range b.users {
			if u.user == orig {
				extra = append(extra, use{remat, u.operand, u.index})
			}
		}
		b.users = append(b.users, extra...)
	}
	for _, oldID := range orig.defined {
		old := t.buffers[oldID]
		var placed, unplaced []use
		for _, u := range old.users {
			switch {
			case u.user.placed:
				placed = append(placed, u)
			case !isIndirectUser(u.user.in) || slices.Contains(indirect, u.user):
				unplaced = append(unplaced, u)
			default:
				u.user.output = nil
				u.user.used = nil
			}
		}
		old.users = placed
		old.unfinished = 0
		t.usage -= t.allocated(oldID)
		if old.indirect || old.liveOut {
			return fmt.Errorf("remat: %s has an indirect or live-out buffer", orig.in.Name)
		}
		nb, err := t.newBuffer(remat, old.shape, old.index, unplaced, false, false)
		if err != nil {
			return err
		}
		remat.defined = append(remat.defined, nb.id)
		remat.output = append(remat.output, nb.id)
		for _, u := range nb.users {
			replaceID(u.user.used, oldID, nb.id)
			replaceID(u.user.output, oldID, nb.id)
		}
	}
	for _, iu := range indirect {
		src := t.l.get(iu.in.Operands[0])
		switch iu.in.Opcode {
		case hlo.OpBitcast:
			if isIndirectUser(src.in) {
				iu.used, iu.output = slices.Clone(src.output), slices.Clone(src.output)
			} else {
				iu.used, iu.output = slices.Clone(src.defined), slices.Clone(src.defined)
			}
		case hlo.OpGetTupleElement:
			for _, id := range src.defined {
				b := t.buffers[id]
				if len(b.index) == 1 && b.index[0] == iu.in.TupleIndex {
					iu.output = append(iu.output, id)
				}
				if len(b.index) == 0 {
					iu.used = append(iu.used, id)
				}
			}
		}
		for _, id := range iu.used {
			b := t.buffers[id]
			b.unfinished++
			b.users = append(b.users, use{iu, 0, -1})
		}
	}
	return nil
}

func replaceID(ids []int, old, nw int) {
	for i, id := range ids {
		if id == old {
			ids[i] = nw
		}
	}
}
