package pack

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	b := func(id string) Buffer { return Buffer{ID: id, Start: 0, End: 2, Size: 4} }
	tests := []struct {
		name string
		p    Problem
		want string
	}{
		{"ok", Problem{Buffers: []Buffer{b("a"), b("b")}, Groups: [][]int{{0, 1}}}, ""},
		{"negative size", Problem{Buffers: []Buffer{{ID: "a", End: 1, Size: -1}}}, `buffer "a": negative size -1`},
		{"end before start", Problem{Buffers: []Buffer{{ID: "a", Start: 3, End: 1}}}, `buffer "a": end 1 before start 3`},
		{"negative alignment", Problem{Buffers: []Buffer{{ID: "a", Align: -4}}}, `buffer "a": negative alignment -4`},
		{"negative color", Problem{Buffers: []Buffer{{ID: "a", Color: -1}}}, `buffer "a": negative color -1`},
		{"misaligned fixed", Problem{Buffers: []Buffer{{ID: "a", Align: 8, Fixed: true, Offset: 12}}},
			`buffer "a": fixed offset 12 is not a multiple of its alignment 8`},
		{"too large", Problem{Buffers: []Buffer{{ID: "a", Size: math.MaxInt64}}}, `buffer "a": size, alignment or offset too large`},
		{"sum too large", Problem{Buffers: []Buffer{{ID: "a", Size: math.MaxInt64 / 5}, {ID: "b", Size: math.MaxInt64 / 5}}},
			"color 0: sizes add up to more than 2305843009213693951 bytes"},
		{"empty group", Problem{Buffers: []Buffer{b("a")}, Groups: [][]int{{}}}, "group 0 is empty"},
		{"group index", Problem{Buffers: []Buffer{b("a")}, Groups: [][]int{{0, 3}}}, "group 0: buffer index 3 out of range"},
		{"two groups", Problem{Buffers: []Buffer{b("a"), b("b")}, Groups: [][]int{{0, 1}, {1}}}, `buffer "b" is in groups 0 and 1`},
		{"group colors", Problem{Buffers: []Buffer{b("a"), {ID: "b", Color: 2}}, Groups: [][]int{{0, 1}}},
			`group 0: buffer "b" has color 2, buffer "a" color 0`},
		{"group fixed", Problem{Buffers: []Buffer{{ID: "a", Fixed: true, Offset: 4}, {ID: "b", Fixed: true, Offset: 8}}, Groups: [][]int{{0, 1}}},
			`group 0: buffers "a" and "b" are fixed at different offsets 4 and 8`},
		{"group fixed alignment", Problem{Buffers: []Buffer{{ID: "a", Fixed: true, Offset: 4}, {ID: "b", Align: 8}}, Groups: [][]int{{0, 1}}},
			`group 0: fixed offset 4 of buffer "a" is not a multiple of the alignment 8 of buffer "b"`},
	}
	for _, tc := range tests {
		err := tc.p.Validate()
		if tc.want == "" {
			require.NoError(t, err, "%s", tc.name)
			continue
		}
		require.ErrorIs(t, err, ErrInvalid, "%s: got %v, want %q", tc.name, err, tc.want)
		require.EqualError(t, err, "pack: invalid problem: "+tc.want, "%s", tc.name)
	}
}

func TestLowerBound(t *testing.T) {
	p := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 4},
		{ID: "b", Start: 1, End: 3, Size: 2},
		{ID: "c", Start: 3, End: 6, Size: 2},
		{ID: "d", Start: 4, End: 8, Size: 4},
		{ID: "e", Start: 0, End: 8, Size: 10, Color: 1},
		{ID: "f", Start: 2, End: 2, Size: 100}, // never live
	}}
	require.Equal(t, int64(6), LowerBound(p, 0), "color 0")
	require.Equal(t, int64(10), LowerBound(p, 1), "color 1")
	require.Equal(t, int64(0), LowerBound(p, 7), "absent color")
	// Members of a group alias: live together, they count as the largest.
	q := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 4},
		{ID: "g", Start: 1, End: 4, Size: 3},
	}}
	require.Equal(t, int64(7), LowerBound(q, 0), "ungrouped")
	q.Groups = [][]int{{0, 1}}
	require.Equal(t, int64(4), LowerBound(q, 0), "grouped")
	require.Equal(t, int64(0), LowerBound(&Problem{Buffers: []Buffer{{ID: "x", Start: 1, End: 0}}}, 0), "invalid problem")
}

func TestGroupProfile(t *testing.T) {
	p := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 8},
		{ID: "b", Start: 2, End: 10, Size: 2},
		{ID: "c", Start: 6, End: 8, Size: 5},
		{ID: "d", Start: 12, End: 14, Size: 2},
		{ID: "e", Start: 3, End: 3, Size: 50},
	}}
	got := groupProfile(p, []int{0, 1, 2, 3, 4}, nil)
	want := []seg{{0, 4, 8}, {4, 6, 2}, {6, 8, 5}, {8, 10, 2}, {12, 14, 2}}
	require.Equal(t, want, got)
}
