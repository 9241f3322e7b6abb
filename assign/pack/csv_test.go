package pack

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestReadCSV(t *testing.T) {
	in := "id, lower ,upper,size,alignment,offset\n" +
		"a,0,4,16,,\n" +
		"\"b,2\",1,3,8,8,\n" +
		"c,3,6,4,4,32\n"
	p, err := ReadCSV(strings.NewReader(in), "x.csv")
	require.NoError(t, err)
	want := []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 16},
		{ID: "b,2", Start: 1, End: 3, Size: 8, Align: 8},
		{ID: "c", Start: 3, End: 6, Size: 4, Align: 4, Fixed: true, Offset: 32},
	}
	require.Empty(t, cmp.Diff(want, p.Buffers), "buffers (-want +got)")
	// Columns may come in any order.
	p, err = ReadCSV(strings.NewReader("size,upper,id,lower\n5,9,q,2\n"), "y.csv")
	require.NoError(t, err)
	require.Empty(t, cmp.Diff([]Buffer{{ID: "q", Start: 2, End: 9, Size: 5}}, p.Buffers), "reordered columns (-want +got)")
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"missing column in header", "id,lower,upper\na,0,1\n", "f.csv:1:1: missing column \"size\""},
		{"missing column in row", "id,lower,upper,size\na,0,1,4\nb,0,1\n", "f.csv:3:6: missing column \"size\""},
		{"extra field", "id,lower,upper,size\na,0,1,4,5\n", "f.csv:2:9: 5 fields, the header has 4"},
		{"negative size", "id,lower,upper,size\na,0,1,-5\n", "f.csv:2:7: negative size -5"},
		{"end before start", "id,lower,upper,size\na,7,3,4\n", "f.csv:2:5: upper 3 is before lower 7"},
		{"duplicate id", "id,lower,upper,size\na,0,1,4\nb,0,1,4\na,2,3,4\n", "f.csv:4:1: duplicate id \"a\" (first on line 2)"},
		{"duplicates and others", "id,lower,upper,size\nb,0,1,4\na,0,1,4\nb,2,1,4\nb,2,3,4\na,2,3,4\nb,2,3,4\n",
			"f.csv:4:5: upper 1 is before lower 2\nf.csv:5:1: duplicate id \"b\" (first on line 2)\n" +
				"f.csv:6:1: duplicate id \"a\" (first on line 3)\nf.csv:7:1: duplicate id \"b\" (first on line 2)"},
		{"not a number", "id,lower,upper,size\na,0,1,12kb\n", "f.csv:2:7: size: \"12kb\" is not an integer"},
		{"overflow", "id,lower,upper,size\na,0,1,99999999999999999999\n", "f.csv:2:7: size: \"99999999999999999999\" is not an integer"},
		{"empty id", "id,lower,upper,size\n,0,1,4\n", "f.csv:2:1: empty id"},
		{"negative alignment", "id,lower,upper,size,alignment\na,0,1,4,-2\n", "f.csv:2:9: negative alignment -2"},
		{"negative offset", "id,lower,upper,size,offset\na,0,1,4,-2\n", "f.csv:2:9: negative offset -2"},
		{"misaligned offset", "id,lower,upper,size,alignment,offset\na,0,1,4,8,4\n", "f.csv:2:11: offset 4 is not a multiple of the alignment 8"},
		{"empty file", "", "f.csv:1:1: empty file: want a header row id,lower,upper,size"},
		{"bad quoting", "id,lower,upper,size\n\"a,0,1,4\n", "f.csv:2:10: extraneous or missing \" in quoted-field"},
		{"spaces before a field", "id, lower, upper, size\na, 0, 1,  x\n", "f.csv:2:11: size: \"x\" is not an integer"},
		{"quoted field", "id,lower,upper,size\n\"a\",\"0\",1,-3\n", "f.csv:2:11: negative size -3"},
		{"duplicate column", "id,lower,upper,size,lower\n", "f.csv:1:21: duplicate column \"lower\""},
		{"byte-order mark", "\uFEFFid,lower,upper,size\na,0,1,x\n", "f.csv:2:7: size: \"x\" is not an integer"},
		{"size above the limit", "id,lower,upper,size\na,0,1,4611686018427387904\n", "f.csv:2:7: size 4611686018427387904 above 2305843009213693951"},
		{"several errors", "id,lower,upper,size\na,0,1,-1\nb,2,1,1\n", "f.csv:2:7: negative size -1\nf.csv:3:5: upper 1 is before lower 2"},
	}
	for _, tc := range tests {
		_, err := ReadCSV(strings.NewReader(tc.in), "f.csv")
		var el ErrorList
		require.ErrorAs(t, err, &el, "%s: got %v, want an ErrorList", tc.name, err)
		require.EqualError(t, err, tc.want, "%s", tc.name)
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	p := &Problem{Buffers: []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 16},
		{ID: "b,\"2\"", Start: 1, End: 3, Size: 8, Align: 8},
		{ID: "c", Start: 3, End: 6, Size: 4},
	}}
	pk := Packing{Offsets: []int64{0, 16, 0}}
	var out bytes.Buffer
	require.NoError(t, WriteCSV(&out, p, pk))
	want := "id,lower,upper,size,alignment,offset\na,0,4,16,1,0\n\"b,\"\"2\"\"\",1,3,8,8,16\nc,3,6,4,1,0\n"
	require.Equal(t, want, out.String())
	// Read back: the offsets come back as fixed offsets.
	q, err := ReadCSV(&out, "out.csv")
	require.NoError(t, err)
	for i, b := range q.Buffers {
		a := p.Buffers[i]
		require.True(t, b.ID == a.ID && b.Start == a.Start && b.End == a.End && b.Size == a.Size && b.Fixed && b.Offset == pk.Offsets[i],
			"buffer %d: wrote %+v at %d, read %+v", i, a, pk.Offsets[i], b)
	}
}

// endless is an endless reader of one byte, as /dev/zero (c = 0) or
// `yes` without newlines.
type endless byte

func (c endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// TestReadCSVBounded: an endless input is an error after one long line,
// with the line named, not a read without end.
func TestReadCSVBounded(t *testing.T) {
	_, err := ReadCSV(endless(0), "/dev/zero")
	require.EqualError(t, err, "/dev/zero:1: line longer than 1048576 bytes, the most hlomem reads")
	_, err = ReadCSV(io.MultiReader(strings.NewReader("id,lower,upper,size\na,0,1,4\n"), endless('x')), "pipe")
	require.EqualError(t, err, "pipe:3: line longer than 1048576 bytes, the most hlomem reads")
	defer func(l int64) { csvSizeLimit = l }(csvSizeLimit)
	csvSizeLimit = 1 << 16
	_, err = ReadCSV(io.MultiReader(strings.NewReader("id,lower,upper,size\n"), endless('\n')), "pipe")
	require.EqualError(t, err, "pipe: input larger than 65536 bytes, the most hlomem reads")
}

// TestReadCSVColumns: the optional columns of the header are reported,
// whatever their values.
func TestReadCSVColumns(t *testing.T) {
	for in, want := range map[string]CSVColumns{
		"id,lower,upper,size\na,0,1,4\n":                    {},
		"id,lower,upper,size,alignment\na,0,1,4,0\n":        {Alignment: true},
		"offset,id,lower,upper,size\n,a,0,1,4\n":            {Offset: true},
		"id,lower,upper,size,offset,alignment\na,0,1,4,,\n": {Alignment: true, Offset: true},
	} {
		_, cols, err := ReadCSVColumns(strings.NewReader(in), "c.csv")
		require.NoError(t, err)
		require.Equal(t, want, cols, "%q", in)
	}
}

// TestCSVWriter: one header for several problems, lead columns, the
// alignment column kept when asked for although no buffer is aligned, and
// a header even without rows.
func TestCSVWriter(t *testing.T) {
	p := &Problem{Buffers: []Buffer{{ID: "a", Start: 0, End: 4, Size: 16}, {ID: "b", Start: 1, End: 3, Size: 8}}}
	q := &Problem{Buffers: []Buffer{{ID: "x,y", Start: 0, End: 1, Size: 4, Align: 0}}}
	var out bytes.Buffer
	cw := NewCSVWriter(&out, CSVColumns{Alignment: true}, "module", "color")
	require.NoError(t, cw.Write(p, Packing{Offsets: []int64{0, 16}}, "m1", "0"))
	require.NoError(t, cw.Write(q, Packing{Offsets: []int64{0}}, "m,2", "1"))
	require.NoError(t, cw.Flush())
	want := "module,color,id,lower,upper,size,alignment,offset\n" +
		"m1,0,a,0,4,16,1,0\n" +
		"m1,0,b,1,3,8,1,16\n" +
		"\"m,2\",1,\"x,y\",0,1,4,1,0\n"
	require.Empty(t, cmp.Diff(want, out.String()), "(-want +got)")
	// What it wrote reads back as a problem (the lead columns ignored).
	_, err := ReadCSV(strings.NewReader(out.String()), "out.csv")
	require.NoError(t, err, "reading back")
	require.Error(t, cw.Write(p, Packing{}, "only one"), "Write with 1 lead value for 2 lead columns: no error")

	out.Reset()
	cw = NewCSVWriter(&out, CSVColumns{}, "module")
	require.NoError(t, cw.Flush())
	require.Equal(t, "module,id,lower,upper,size,offset\n", out.String(), "no rows")
}
