package pack

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckViolations(t *testing.T) {
	buf := func(id string, s, e, z int64) Buffer { return Buffer{ID: id, Start: s, End: e, Size: z} }
	tests := []struct {
		name string
		p    Problem
		off  []int64
		kind string
		msg  string
	}{
		{"valid", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), buf("b", 2, 6, 4)}}, []int64{0, 4}, "", ""},
		{"touching in time", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), buf("b", 4, 6, 4)}}, []int64{0, 0}, "", ""},
		{"other colors", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), {ID: "b", End: 4, Size: 4, Color: 1}}}, []int64{0, 0}, "", ""},
		{"empty buffers", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), buf("b", 0, 4, 0), buf("c", 2, 2, 9)}}, []int64{0, 1, 0}, "", ""},
		{"count", Problem{Buffers: []Buffer{buf("a", 0, 4, 4)}}, []int64{0, 1}, "count", "pack: invalid packing: 2 offsets for 1 buffers"},
		{"negative", Problem{Buffers: []Buffer{buf("a", 0, 4, 4)}}, []int64{-8}, "negative", `pack: invalid packing: buffer "a": negative offset -8`},
		{"misaligned", Problem{Buffers: []Buffer{{ID: "a", End: 4, Size: 4, Align: 8}}}, []int64{4}, "misaligned",
			`pack: invalid packing: buffer "a": offset 4 is not a multiple of its alignment 8`},
		{"moved", Problem{Buffers: []Buffer{{ID: "a", End: 4, Size: 4, Fixed: true, Offset: 16}}}, []int64{0}, "moved",
			`pack: invalid packing: buffer "a": fixed at offset 16, placed at 0`},
		{"split", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), buf("b", 4, 8, 4)}, Groups: [][]int{{0, 1}}}, []int64{0, 4}, "split",
			`pack: invalid packing: group 0 split: buffer "a" at offset 0, buffer "b" at offset 4`},
		{"overlap", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), buf("b", 2, 6, 4)}}, []int64{0, 3}, "overlap",
			`pack: invalid packing: buffers "a" (time [0,4), bytes [0,4)) and "b" (time [2,6), bytes [3,7)) overlap at time 2`},
		{"first overlap in time", Problem{Buffers: []Buffer{buf("a", 5, 9, 4), buf("b", 6, 9, 4), buf("c", 0, 3, 4), buf("d", 1, 3, 4)}},
			[]int64{0, 0, 0, 2}, "overlap",
			`pack: invalid packing: buffers "c" (time [0,3), bytes [0,4)) and "d" (time [1,3), bytes [2,6)) overlap at time 1`},
		{"group members alias", Problem{Buffers: []Buffer{buf("a", 0, 4, 4), buf("b", 3, 8, 2)}, Groups: [][]int{{0, 1}}}, []int64{0, 0}, "", ""},
		{"group shrinks", Problem{
			Buffers: []Buffer{buf("a", 0, 4, 8), buf("b", 2, 10, 2), buf("c", 4, 10, 6)},
			Groups:  [][]int{{0, 1}}}, []int64{0, 0, 2}, "", ""},
		{"group extent", Problem{
			Buffers: []Buffer{buf("a", 0, 4, 8), buf("b", 2, 10, 2), buf("c", 3, 10, 6)},
			Groups:  [][]int{{0, 1}}}, []int64{0, 0, 2}, "overlap",
			`pack: invalid packing: buffers "a" (time [0,4), bytes [0,8)) and "c" (time [3,10), bytes [2,8)) overlap at time 3`},
	}
	for _, tc := range tests {
		err := Check(&tc.p, Packing{tc.off})
		if tc.kind == "" {
			require.NoError(t, err, "%s", tc.name)
			continue
		}
		var ce *CheckError
		require.True(t, errors.As(err, &ce) && errors.Is(err, ErrCheck), "%s: got %v, want a *CheckError", tc.name, err)
		require.Equal(t, tc.kind, ce.Kind, "%s: got %s %q, want %s %q", tc.name, ce.Kind, err, tc.kind, tc.msg)
		require.EqualError(t, err, tc.msg, "%s: got %s %q, want %s %q", tc.name, ce.Kind, err, tc.kind, tc.msg)
	}
}

// bruteValid checks a packing pairwise, in O(n^2), as a reference for Check.
func bruteValid(p *Problem, off []int64) bool {
	group := make([]int, len(p.Buffers))
	for i := range group {
		group[i] = -1
	}
	for g, ms := range p.Groups {
		for _, m := range ms {
			group[m] = g
		}
	}
	for i, a := range p.Buffers {
		if off[i] < 0 || a.Align > 1 && off[i]%a.Align != 0 || a.Fixed && off[i] != a.Offset {
			return false
		}
		if group[i] >= 0 && off[i] != off[p.Groups[group[i]][0]] {
			return false
		}
		for j := i + 1; j < len(p.Buffers); j++ {
			b := p.Buffers[j]
			if a.Color != b.Color || group[i] >= 0 && group[i] == group[j] {
				continue
			}
			if a.Start < b.End && b.Start < a.End && a.Start < a.End && b.Start < b.End && a.Size > 0 && b.Size > 0 &&
				off[i] < off[j]+b.Size && off[j] < off[i]+a.Size {
				return false
			}
		}
	}
	return true
}

// TestCheckAgainstBruteForce compares Check with the pairwise reference on
// random packings, valid and not.
func TestCheckAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var valid, invalid int
	for it := 0; it < 3000; it++ {
		p := randomProblem(rng, genOptions{n: 2 + rng.Intn(12), steps: 8, maxLen: 5, maxSz: 6,
			align: rng.Intn(2) == 0, colors: 1 + rng.Intn(2), groups: 0.3, empty: true})
		off := make([]int64, len(p.Buffers))
		for i := range off {
			off[i] = rng.Int63n(12)
		}
		// Make groups share offsets most of the time.
		for _, ms := range p.Groups {
			if rng.Intn(4) != 0 {
				for _, m := range ms {
					off[m] = off[ms[0]]
				}
			}
		}
		want := bruteValid(p, off)
		err := Check(p, Packing{off})
		require.Equal(t, want, err == nil, "problem %+v groups %v offsets %v: Check says %v, pairwise check says valid=%v", p.Buffers, p.Groups, off, err, want)
		if want {
			valid++
		} else {
			invalid++
		}
	}
	require.True(t, valid >= 100 && invalid >= 100, "too few of one kind: %d valid, %d invalid", valid, invalid)
}
