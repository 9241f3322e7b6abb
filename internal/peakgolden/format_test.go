package peakgolden

import (
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/stretchr/testify/require"
)

func TestWriteParseRoundTrip(t *testing.T) {
	lines := []Line{
		{Module: "jit_step", Schedule: "keep", LowerBound: 1000, Temp: 512, Total: 1024, PeakStep: 17,
			Top: []Buffer{{"fusion.42", "f32[8,4096]", 131072}, {"custom-call.5{1}", "s8[4194304]", 4194304}, {"tuple.1", "(f32[2],s32[])", 16}}},
		{Module: "jit_step#2", Schedule: "list", PeakStep: -1},
	}
	opts := Options{Target: assign.CPU, Algorithm: "portfolio", Schedule: "dfs"}
	data, err := Bytes(opts, lines)
	require.NoError(t, err)
	require.Equal(t, `# hlomem peak v1 target=cpu algorithm=portfolio schedule=dfs
# module schedule lower_bound temp total peak_step | largest buffers live at the peak: name shape bytes
jit_step keep 1000 512 1024 17 | fusion.42 f32[8,4096] 131072 | custom-call.5{1} s8[4194304] 4194304 | tuple.1 (f32[2],s32[]) 16
jit_step#2 list 0 0 0 -1
`, string(data))
	f, err := Parse("x.peak", data)
	require.NoError(t, err)
	require.Equal(t, "cpu", f.Options.Target.Name)
	require.Equal(t, "portfolio", f.Options.Algorithm)
	require.Equal(t, "dfs", f.Options.Schedule)
	require.Len(t, f.Lines, 2)
	for i := range lines {
		require.Equal(t, lines[i].text(), f.Lines[i].text())
	}
	require.Equal(t, 3, f.Lines[0].lineNo)

	// The default schedule reads back as "".
	data, err = Bytes(Options{}, nil)
	require.NoError(t, err)
	require.Contains(t, string(data), "target=gpu algorithm=xla schedule=default\n")
	f, err = Parse("x.peak", data)
	require.NoError(t, err)
	require.Equal(t, "", f.Options.Schedule)
	require.Empty(t, f.Lines)
}

func TestParseErrors(t *testing.T) {
	const head = "# hlomem peak v1 target=gpu algorithm=xla schedule=default\n"
	for _, tc := range []struct {
		name, text, err string
	}{
		{"empty", "", `g.peak:1: empty file; a peak file starts with "# hlomem peak v1" (write one with hlomem peak --update)`},
		{"not a peak file", "module,temp\n", `g.peak:1: not a peak file: the first line is "module,temp", want "# hlomem peak v1" followed by the options`},
		{"version", "# hlomem peak v2 target=gpu\n", `g.peak:1: unsupported version "# hlomem peak v2 target=gpu" (this hlomem reads "# hlomem peak v1")`},
		{"header pair", "# hlomem peak v1 target\n", `g.peak:1: header: want key=value, got "target"`},
		{"header unknown", "# hlomem peak v1 target=gpu colour=red\n", `g.peak:1: header: unknown option "colour" (want target, algorithm and schedule)`},
		{"header missing", "# hlomem peak v1 target=gpu algorithm=xla\n", `g.peak:1: header: no schedule= option`},
		{"header twice", "# hlomem peak v1 target=gpu target=cpu\n", `g.peak:1: header: target given twice`},
		{"fields", head + "\nm keep 1 2 3\n", `g.peak:3: want 6 fields (module schedule lower_bound temp total peak_step) before the first " | ", got 5`},
		{"schedule", head + "m fast 1 2 3 4\n", `g.peak:2: module m: unknown schedule "fast"`},
		{"bytes", head + "m keep 1 2x 3 4\n", `g.peak:2: module m: temp: want a byte count, got "2x"`},
		{"negative", head + "m keep 1 2 -3 4\n", `g.peak:2: module m: total: want a byte count, got "-3"`},
		{"step", head + "m keep 1 2 3 -2\n", `g.peak:2: module m: peak_step: want a step (-1 for none), got "-2"`},
		{"buffer", head + "m keep 1 2 3 4 | a f32[2]\n", `g.peak:2: module m: buffer 1: want name shape bytes, got "a f32[2]"`},
		{"buffer bytes", head + "m keep 1 2 3 4 | a f32[2] 8 | b f32[4] lots\n", `g.peak:2: module m: buffer 2 (b): want a byte count, got "lots"`},
		{"trailing bar", head + "m keep 1 2 3 4 |\n", `g.peak:2: want 6 fields (module schedule lower_bound temp total peak_step) before the first " | ", got 7`},
		{"duplicate", head + "m keep 1 2 3 4\n# a comment\nm keep 1 2 3 4\n", `g.peak:4: module m again (first on line 2)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.peak", []byte(tc.text))
			require.EqualError(t, err, tc.err)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
		})
	}
}

func TestParseTolerates(t *testing.T) {
	// Comments, blank lines and CRLF line ends are fine.
	text := "# hlomem peak v1 target=gpu algorithm=xla schedule=default\r\n\r\n# hand-written note\r\nm keep 1 2 3 4 | a f32[2] 8\r\n"
	f, err := Parse("g.peak", []byte(text))
	require.NoError(t, err)
	require.Len(t, f.Lines, 1)
	require.Equal(t, Buffer{"a", "f32[2]", 8}, f.Lines[0].Top[0])
	require.Equal(t, 4, f.Lines[0].lineNo)
}

func TestSortAndNames(t *testing.T) {
	lines := []Line{{Module: "b"}, {Module: "a"}, {Module: "b"}, {Module: "c"}, {Module: "a"}}
	for i := range 11 {
		lines = append(lines, Line{Module: "z", PeakStep: i})
	}
	nameModules(lines)
	Sort(lines)
	var got []string
	for _, l := range lines {
		got = append(got, l.Module)
	}
	require.Equal(t, []string{"a#1", "a#2", "b#1", "b#2", "c", "z#1", "z#2", "z#3", "z#4", "z#5", "z#6", "z#7", "z#8", "z#9", "z#10", "z#11"}, got)
	// The ordinal follows input order.
	require.Equal(t, 0, lines[5].PeakStep)
	require.Equal(t, 10, lines[15].PeakStep)
}
