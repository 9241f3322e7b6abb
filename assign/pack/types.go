package pack

// The data model of the packing layer, which every other file of the
// package uses and which uses nothing of them: buffers over half-open time
// intervals, must-share groups, packings and what is known about them, what
// a packer returns for one instance, and the typed errors the packers
// return.

import (
	"errors"
	"fmt"
	"time"
)

// Buffer is one block of memory to place: Size bytes live over the half-open
// time interval [Start, End). Times are positions in a schedule; only their
// order matters. A buffer with Start == End or Size == 0 conflicts with
// nothing.
type Buffer struct {
	ID    string // caller's name for the buffer, used in messages and output
	Start int64  // first time step at which the buffer is live
	End   int64  // first time step at which it is no longer live; End >= Start
	Size  int64  // bytes, >= 0
	Align int64  // the offset must be a multiple of Align; 0 and 1 mean any offset
	Color int    // >= 0; each color is a separate heap, packed on its own

	// Fixed says the buffer is pre-placed at Offset, which packers keep.
	Fixed  bool
	Offset int64
}

// Problem is an offset-assignment (dynamic storage allocation) problem.
type Problem struct {
	Buffers []Buffer

	// Groups lists sets of buffers that must share one offset, as XLA's
	// colocated buffers do. Each group holds indices into Buffers; a buffer
	// is in at most one group and all members of a group have one color.
	// Members of a group alias one another, so they may be live at the same
	// time; at each moment the group occupies as many bytes as its largest
	// live member.
	Groups [][]int
}

// Packing assigns an offset to every buffer of a problem: Offsets[i] is the
// offset of Buffers[i].
type Packing struct {
	Offsets []int64
}

// Heap summarises the packing of one color.
type Heap struct {
	Color      int
	Height     int64 // max(offset+size) over the color's buffers
	LowerBound int64 // largest total size live at one time
	Optimal    bool  // Height is proven to be the least possible
}

// Solution is a packing with what is known about it.
type Solution struct {
	Packing
	Heaps     []Heap        // one per color present, by ascending color
	Algorithm string        // the packer whose placement was kept
	Elapsed   time.Duration // wall time of the whole Pack call
	Nodes     int64         // search nodes visited by the exact packer, if it ran
}

// Height returns the total over colors of the heap heights; for a one-color
// problem it is the height of the packing.
func (s *Solution) Height() int64 {
	var h int64
	for _, hp := range s.Heaps {
		h += hp.Height
	}
	return h
}

// LowerBound returns the total over colors of the heaps' lower bounds.
func (s *Solution) LowerBound() int64 {
	var lb int64
	for _, hp := range s.Heaps {
		lb += hp.LowerBound
	}
	return lb
}

// Optimal reports whether every heap is proven optimal.
func (s *Solution) Optimal() bool {
	for _, hp := range s.Heaps {
		if !hp.Optimal {
			return false
		}
	}
	return true
}

// ErrCapacity is the sentinel matched by every *CapacityError.
var ErrCapacity = errors.New("pack: capacity exceeded")

// CapacityError reports that no packing found fits the capacity: the best one
// needs Need bytes in color Color, Limit are available.
type CapacityError struct {
	Color int
	Need  int64
	Limit int64
}

func (e *CapacityError) Error() string {
	over := e.Need - e.Limit
	return fmt.Sprintf("pack: capacity exceeded: color %d needs %d bytes, capacity %d (%d bytes, %.2f%% over)",
		e.Color, e.Need, e.Limit, over, 100*float64(over)/float64(max(e.Limit, 1)))
}

// Is makes errors.Is(err, ErrCapacity) true for a *CapacityError.
func (e *CapacityError) Is(target error) bool { return target == ErrCapacity }

// ErrInvalid is the sentinel matched by every *InvalidError.
var ErrInvalid = errors.New("pack: invalid problem")

// InvalidError reports a malformed problem. Buffer is the index of the
// offending buffer, or -1.
type InvalidError struct {
	Buffer int
	Msg    string
}

func (e *InvalidError) Error() string { return "pack: invalid problem: " + e.Msg }

// Is makes errors.Is(err, ErrInvalid) true for an *InvalidError.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// ErrUnknownAlgorithm is returned for an Options.Algorithm that Algorithms
// does not list.
var ErrUnknownAlgorithm = errors.New("pack: unknown algorithm")

// heapResult is what a packer returns for one instance.
type heapResult struct {
	off     []int64 // per item
	height  int64
	optimal bool
	algo    string
	nodes   int64
}
