package fusion

import "testing"

func TestByID(t *testing.T) {
	var tb byID[int]
	if v, ok := tb.get(3); ok || v != 0 {
		t.Fatalf("empty table: get(3) = %d, %v", v, ok)
	}
	tb.set(5, 0) // a set zero is present
	tb.set(2, 7)
	tb.set(2, 8)
	if v, ok := tb.get(5); !ok || v != 0 {
		t.Fatalf("get(5) = %d, %v, want 0, true", v, ok)
	}
	if tb.at(2) != 8 || tb.size() != 2 {
		t.Fatalf("at(2) = %d, size %d, want 8, 2", tb.at(2), tb.size())
	}
	if _, ok := tb.get(4); ok {
		t.Fatal("get(4): set, want absent")
	}
	if _, ok := tb.get(100); ok {
		t.Fatal("get(100) past the end: set, want absent")
	}
	tb.reset()
	if _, ok := tb.get(2); ok || tb.size() != 0 {
		t.Fatal("after reset: entry 2 still set")
	}
	tb.set(1000, 3)
	if tb.at(1000) != 3 || tb.at(5) != 0 || tb.size() != 1 {
		t.Fatal("grown table: wrong entries")
	}
	tb.cur = ^uint32(0) // the next reset wraps around
	tb.set(7, 1)
	tb.reset()
	if _, ok := tb.get(7); ok {
		t.Fatal("after wrap-around: entry 7 still set")
	}
	if _, ok := tb.get(1000); ok {
		t.Fatal("after wrap-around: entry 1000 set again")
	}
}

func TestMarks(t *testing.T) {
	var s marks
	if s.has(0) || s.has(9) || s.size() != 0 {
		t.Fatal("empty set: has an ID")
	}
	s.mark(4)
	s.mark(4)
	s.mark(0)
	if !s.has(4) || !s.has(0) || s.has(3) || s.has(50) || s.size() != 2 {
		t.Fatalf("set {0, 4}: wrong contents (size %d)", s.size())
	}
	s.reset()
	if s.has(4) || s.size() != 0 {
		t.Fatal("after reset: 4 still marked")
	}
	s.cur = ^uint32(0) // the next reset wraps around
	s.mark(2)
	s.reset()
	if s.has(2) || s.has(4) {
		t.Fatal("after wrap-around: an ID still marked")
	}
}
