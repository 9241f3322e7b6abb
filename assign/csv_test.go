package assign

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadCSV(t *testing.T) {
	in := "id, lower ,upper,size,alignment,offset\n" +
		"a,0,4,16,,\n" +
		"\"b,2\",1,3,8,8,\n" +
		"c,3,6,4,4,32\n"
	p, err := ReadCSV(strings.NewReader(in), "x.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Buffer{
		{ID: "a", Start: 0, End: 4, Size: 16},
		{ID: "b,2", Start: 1, End: 3, Size: 8, Align: 8},
		{ID: "c", Start: 3, End: 6, Size: 4, Align: 4, Fixed: true, Offset: 32},
	}
	if diff := cmp.Diff(want, p.Buffers); diff != "" {
		t.Fatalf("buffers (-want +got):\n%s", diff)
	}
	// Columns may come in any order.
	p, err = ReadCSV(strings.NewReader("size,upper,id,lower\n5,9,q,2\n"), "y.csv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Buffer{{ID: "q", Start: 2, End: 9, Size: 5}}, p.Buffers); diff != "" {
		t.Fatalf("reordered columns (-want +got):\n%s", diff)
	}
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"missing column in header", "id,lower,upper\na,0,1\n", "f.csv:1: missing column \"size\""},
		{"missing column in row", "id,lower,upper,size\na,0,1,4\nb,0,1\n", "f.csv:3: missing column \"size\""},
		{"extra field", "id,lower,upper,size\na,0,1,4,5\n", "f.csv:2: 5 fields, the header has 4"},
		{"negative size", "id,lower,upper,size\na,0,1,-5\n", "f.csv:2: negative size -5"},
		{"end before start", "id,lower,upper,size\na,7,3,4\n", "f.csv:2: upper 3 is before lower 7"},
		{"duplicate id", "id,lower,upper,size\na,0,1,4\nb,0,1,4\na,2,3,4\n", "f.csv:4: duplicate id \"a\" (first on line 2)"},
		{"duplicates and others", "id,lower,upper,size\nb,0,1,4\na,0,1,4\nb,2,1,4\nb,2,3,4\na,2,3,4\nb,2,3,4\n",
			"f.csv:4: upper 1 is before lower 2\nf.csv:5: duplicate id \"b\" (first on line 2)\n" +
				"f.csv:6: duplicate id \"a\" (first on line 3)\nf.csv:7: duplicate id \"b\" (first on line 2)"},
		{"not a number", "id,lower,upper,size\na,0,1,12kb\n", "f.csv:2: size: \"12kb\" is not an integer"},
		{"overflow", "id,lower,upper,size\na,0,1,99999999999999999999\n", "f.csv:2: size: \"99999999999999999999\" is not an integer"},
		{"empty id", "id,lower,upper,size\n,0,1,4\n", "f.csv:2: empty id"},
		{"negative alignment", "id,lower,upper,size,alignment\na,0,1,4,-2\n", "f.csv:2: negative alignment -2"},
		{"negative offset", "id,lower,upper,size,offset\na,0,1,4,-2\n", "f.csv:2: negative offset -2"},
		{"misaligned offset", "id,lower,upper,size,alignment,offset\na,0,1,4,8,4\n", "f.csv:2: offset 4 is not a multiple of the alignment 8"},
		{"empty file", "", "f.csv:1: empty file: want a header row id,lower,upper,size"},
		{"bad quoting", "id,lower,upper,size\n\"a,0,1,4\n", "f.csv:2: extraneous or missing \" in quoted-field"},
		{"several errors", "id,lower,upper,size\na,0,1,-1\nb,2,1,1\n", "f.csv:2: negative size -1\nf.csv:3: upper 1 is before lower 2"},
	}
	for _, tc := range tests {
		_, err := ReadCSV(strings.NewReader(tc.in), "f.csv")
		var el ErrorList
		if !errors.As(err, &el) {
			t.Errorf("%s: got %v, want an ErrorList", tc.name, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, err, tc.want)
		}
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
	if err := WriteCSV(&out, p, pk); err != nil {
		t.Fatal(err)
	}
	want := "id,lower,upper,size,alignment,offset\na,0,4,16,1,0\n\"b,\"\"2\"\"\",1,3,8,8,16\nc,3,6,4,1,0\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	// Read back: the offsets come back as fixed offsets.
	q, err := ReadCSV(&out, "out.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range q.Buffers {
		a := p.Buffers[i]
		if b.ID != a.ID || b.Start != a.Start || b.End != a.End || b.Size != a.Size || !b.Fixed || b.Offset != pk.Offsets[i] {
			t.Fatalf("buffer %d: wrote %+v at %d, read %+v", i, a, pk.Offsets[i], b)
		}
	}
}
