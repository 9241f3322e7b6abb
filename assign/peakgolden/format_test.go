package peakgolden

import (
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/stretchr/testify/require"
)

func TestWriteParseRoundTrip(t *testing.T) {
	lines := []Line{
		{Module: "jit_step", Key: "jit_step@0a1b2c3d", Signature: "0a1b2c3d", Schedule: "keep", LowerBound: 1000, Temp: 512, Total: 1024, PeakStep: 17,
			Top: []Buffer{{"fusion.42", "f32[8,4096]", 131072}, {"custom-call.5{1}", "s8[4194304]", 4194304}, {"tuple.1", "(f32[2],s32[])", 16}}},
		{Module: "jit_step", Key: "jit_step@ffff0000#2", Signature: "ffff0000", Schedule: "list", PeakStep: -1},
	}
	opts := Options{Target: assign.CPU, Algorithm: "portfolio", Schedule: "dfs"}
	data, err := Bytes(opts, lines)
	require.NoError(t, err)
	require.Equal(t, `# hlomem peak v2 target=cpu algorithm=portfolio schedule=dfs
# module@signature schedule lower_bound temp total peak_step | largest occupants of the peak: name shape bytes occupied
jit_step@0a1b2c3d keep 1000 512 1024 17 | fusion.42 f32[8,4096] 131072 | custom-call.5{1} s8[4194304] 4194304 | tuple.1 (f32[2],s32[]) 16
jit_step@ffff0000#2 list 0 0 0 -1
`, string(data))
	f, err := Parse("x.peak", data)
	require.NoError(t, err)
	require.Equal(t, 2, f.Version)
	require.Equal(t, "cpu", f.Options.Target.Name)
	require.Equal(t, "portfolio", f.Options.Algorithm)
	require.Equal(t, "dfs", f.Options.Schedule)
	require.Len(t, f.Lines, 2)
	for i := range lines {
		require.Equal(t, lines[i].text(), f.Lines[i].text())
		require.Equal(t, lines[i].Module, f.Lines[i].Module)
		require.Equal(t, lines[i].Signature, f.Lines[i].Signature)
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
	const head = "# hlomem peak v2 target=gpu algorithm=xla schedule=default\n"
	const headV1 = "# hlomem peak v1 target=gpu algorithm=xla schedule=default\n"
	for _, tc := range []struct {
		name, text, err string
	}{
		{"empty", "", `g.peak:1: empty file; a peak file starts with "# hlomem peak v2" (write one with hlomem peak --update)`},
		{"not a peak file", "module,temp\n", `g.peak:1: not a peak file: the first line is "module,temp", want "# hlomem peak v2" followed by the options`},
		{"version", "# hlomem peak v3 target=gpu\n", `g.peak:1: unsupported version "# hlomem peak v3 target=gpu" (this hlomem reads "# hlomem peak v2" and "# hlomem peak v1")`},
		{"version glued", "# hlomem peak v20 target=gpu\n", `g.peak:1: unsupported version "# hlomem peak v20 target=gpu" (this hlomem reads "# hlomem peak v2" and "# hlomem peak v1")`},
		{"header pair", "# hlomem peak v2 target\n", `g.peak:1: header: want key=value, got "target"`},
		{"header unknown", "# hlomem peak v2 target=gpu colour=red\n", `g.peak:1: header: unknown option "colour" (want target, algorithm and schedule, and optionally xla_rules and execution_threads)`},
		{"header missing", "# hlomem peak v1 target=gpu algorithm=xla\n", `g.peak:1: header: no schedule= option`},
		{"header twice", "# hlomem peak v2 target=gpu target=cpu\n", `g.peak:1: header: target given twice`},
		{"fields", head + "\nm@0a1b2c3d keep 1 2 3\n", `g.peak:3: want 6 fields (module@signature schedule lower_bound temp total peak_step) before the first " | ", got 5`},
		{"schedule", head + "m@0a1b2c3d fast 1 2 3 4\n", `g.peak:2: module m@0a1b2c3d: unknown schedule "fast"`},
		{"bytes", head + "m@0a1b2c3d keep 1 2x 3 4\n", `g.peak:2: module m@0a1b2c3d: temp: want a byte count, got "2x"`},
		{"negative", head + "m@0a1b2c3d keep 1 2 -3 4\n", `g.peak:2: module m@0a1b2c3d: total: want a byte count, got "-3"`},
		{"step", head + "m@0a1b2c3d keep 1 2 3 -2\n", `g.peak:2: module m@0a1b2c3d: peak_step: want a step (-1 for none), got "-2"`},
		{"buffer", head + "m@0a1b2c3d keep 1 2 3 4 | a f32[2]\n", `g.peak:2: module m@0a1b2c3d: buffer 1: want name shape bytes, got "a f32[2]"`},
		{"buffer bytes", head + "m@0a1b2c3d keep 1 2 3 4 | a f32[2] 8 | b f32[4] lots\n", `g.peak:2: module m@0a1b2c3d: buffer 2 (b): want a byte count, got "lots"`},
		{"trailing bar", head + "m@0a1b2c3d keep 1 2 3 4 |\n", `g.peak:2: want 6 fields (module@signature schedule lower_bound temp total peak_step) before the first " | ", got 7`},
		{"duplicate", head + "m@0a1b2c3d keep 1 2 3 4\n# a comment\nm@0a1b2c3d keep 1 2 3 4\n", `g.peak:4: module m@0a1b2c3d again (first on line 2)`},
		{"duplicate v1", headV1 + "m keep 1 2 3 4\nm keep 1 2 3 4\n", `g.peak:3: module m again (first on line 2)`},
		{"v1 key in v2", head + "m keep 1 2 3 4\n", `g.peak:2: key m: want NAME@SIGNATURE, the module's name and 8 hex digits (a v1 file has no signature: its first line says v1)`},
		{"short signature", head + "m@0a1b keep 1 2 3 4\n", `g.peak:2: key m@0a1b: want NAME@SIGNATURE, the module's name and 8 hex digits (a v1 file has no signature: its first line says v1)`},
		{"no name", head + "@0a1b2c3d keep 1 2 3 4\n", `g.peak:2: key @0a1b2c3d: want NAME@SIGNATURE, the module's name and 8 hex digits (a v1 file has no signature: its first line says v1)`},
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
	text := "# hlomem peak v2 target=gpu algorithm=xla schedule=default\r\n\r\n# hand-written note\r\nm@0a1b2c3d keep 1 2 3 4 | a f32[2] 8\r\n"
	f, err := Parse("g.peak", []byte(text))
	require.NoError(t, err)
	require.Len(t, f.Lines, 1)
	require.Equal(t, Buffer{"a", "f32[2]", 8}, f.Lines[0].Top[0])
	require.Equal(t, 4, f.Lines[0].lineNo)
}

func TestParseV1(t *testing.T) {
	// A v1 file keyed modules by name, NAME#K when a name repeated.
	text := "# hlomem peak v1 target=gpu algorithm=xla schedule=default\n# module schedule lower_bound temp total peak_step | ...\nm keep 1 2 3 4\nn#1 keep 1 2 3 4\nn#2 keep 1 2 3 4\n"
	f, err := Parse("g.peak", []byte(text))
	require.NoError(t, err)
	require.Equal(t, 1, f.Version)
	var got []string
	for _, l := range f.Lines {
		got = append(got, l.Key+" "+l.Module+" "+l.Signature)
	}
	require.Equal(t, []string{"m m ", "n#1 n ", "n#2 n "}, got)
}
