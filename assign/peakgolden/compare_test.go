package peakgolden

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/internal/atomicfile"
	"github.com/stretchr/testify/require"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// line is a module's line with the given temp; total and lower bound are
// temp plus 1 GiB of parameters. The key is NAME@SIGNATURE or, as the
// tests of verdicts have it, the name alone.
func line(key string, temp int64, top ...Buffer) Line {
	name, sig, _ := strings.Cut(key, "@")
	sig, _, _ = strings.Cut(sig, "#")
	return Line{Module: name, Key: key, Signature: sig, Schedule: "keep", LowerBound: temp + gib, Temp: temp, Total: temp + gib, PeakStep: 7, Top: top}
}

func sentences(r *Report) []string {
	var out []string
	for _, v := range r.Verdicts {
		out = append(out, v.Sentence)
	}
	return out
}

func TestCompareVerdicts(t *testing.T) {
	big := Buffer{"fusion.42", "f32[8,4096,4096]", 512 * mib}
	small := Buffer{"fusion.7", "f32[1024]", 4096}
	// The golden file need not be sorted.
	golden := &File{Lines: []Line{
		line("grown", 1200*mib+mib*20, small),
		line("gone", 10*mib),
		line("same", 100*mib, small),
		line("shrunk", 1500*mib, big, small),
		line("within", 1000*mib, small),
	}}
	golden.Lines[0].lineNo = 3
	golden.Lines[1].lineNo = 4
	moved := line("within", 1000*mib+5*mib, small)
	moved.PeakStep = 9
	now := []Line{
		line("added", 3*mib),
		line("grown", 1382*mib, big, small),
		line("same", 100*mib, small),
		line("shrunk", 1200*mib, small),
		moved,
	}
	r := Compare("g.peak", golden, now, Tolerance{Default: 0.01})
	require.Equal(t, []string{
		"module added: added, not in the golden file: temp 3.00MiB, total 1.00GiB, lower bound 1.00GiB",
		"module gone: removed, in the golden file (line 4) but not among the modules",
		"module grown: temp grew 13.3% (1.19GiB → 1.35GiB), total grew 7.2% (2.19GiB → 2.35GiB) and lower bound grew 7.2% (2.19GiB → 2.35GiB), over the 1% tolerance; new at the peak: fusion.42 f32[8,4096,4096] 512.00MiB",
		"module same: ok (temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB)",
		"module shrunk: temp shrank 20.0% (1.46GiB → 1.17GiB), total shrank 11.9% (2.46GiB → 2.17GiB) and lower bound shrank 11.9% (2.46GiB → 2.17GiB), beyond the 1% tolerance; no longer among the largest at the peak: fusion.42 f32[8,4096,4096] 512.00MiB; a gain: update the golden file to record it",
		"module within: ok; within tolerance: temp grew 0.5% (1000.00MiB → 1005.00MiB), total grew 0.2% (1.98GiB → 1.98GiB, +5242880B) and lower bound grew 0.2% (1.98GiB → 1.98GiB, +5242880B); the peak moved from step 7 to 9",
	}, sentences(r))
	require.True(t, r.Failed())
	require.Equal(t, "4 of 6 modules out of tolerance of g.peak: 1 same, 1 changed within tolerance, 1 grew, 1 shrank, 1 added, 1 removed; a module added or removed fails the check until the golden file is updated", r.Summary())
	require.Contains(t, r.Diff, `"grown": {`)
	require.Regexp(t, `(?m)^-[\s\x{a0}]+"gone": {$`, r.Diff)
	require.Regexp(t, `(?m)^\+[\s\x{a0}]+"added": {$`, r.Diff)
	kinds := []Kind{Added, Removed, Grew, Same, Shrank, Changed}
	for i, v := range r.Verdicts {
		require.Equal(t, kinds[i], v.Kind, v.Key)
	}
}

func TestCompareExactAndFields(t *testing.T) {
	golden := &File{Lines: []Line{line("m", 1000)}}
	now := []Line{line("m", 1001)}
	// Exact by default: one byte fails, and the sentence says it in bytes.
	r := Compare("g.peak", golden, now, Tolerance{})
	require.Equal(t, []string{"module m: temp grew 0.1% (1000B → 1001B), total grew <0.1% (1.00GiB → 1.00GiB, +1B) and lower bound grew <0.1% (1.00GiB → 1.00GiB, +1B), over the 0% tolerance"}, sentences(r))
	require.True(t, r.Failed())

	// A field's own tolerance overrides the default.
	r = Compare("g.peak", golden, now, Tolerance{Default: 0.01, Fields: map[Field]float64{Temp: 0}})
	require.Equal(t, []string{"module m: temp grew 0.1% (1000B → 1001B), over the 0% tolerance; within tolerance: total grew <0.1% (1.00GiB → 1.00GiB, +1B) and lower bound grew <0.1% (1.00GiB → 1.00GiB, +1B)"}, sentences(r))
	r = Compare("g.peak", golden, now, Tolerance{Fields: map[Field]float64{Temp: 0.5, Total: 0.5, LowerBound: 0.5}})
	require.False(t, r.Failed())
	require.Equal(t, "1 module within tolerance of g.peak: 1 changed within tolerance", r.Summary())

	// Growth from nothing has no percentage, and fails at any tolerance.
	r = Compare("g.peak", &File{Lines: []Line{{Module: "z", Key: "z", Schedule: "keep"}}}, []Line{{Module: "z", Key: "z", Schedule: "keep", Temp: 256}}, Tolerance{Default: 10})
	require.Equal(t, []string{"module z: temp grew from nothing (0B → 256B), over the 1000% tolerance"}, sentences(r))

	// Only the peak moved: the module passes and the sentence says so.
	moved := line("m", 1000)
	moved.PeakStep = 8
	moved.Schedule = "list"
	r = Compare("g.peak", golden, []Line{moved}, Tolerance{})
	require.False(t, r.Failed())
	require.Equal(t, []string{"module m: ok, same figures; schedule list, was keep"}, sentences(r))
	moved.Schedule = "keep"
	r = Compare("g.peak", golden, []Line{moved}, Tolerance{})
	require.Equal(t, []string{"module m: ok, same figures; the peak moved from step 7 to 8"}, sentences(r))
}

func TestCompareBuffersAtThePeak(t *testing.T) {
	golden := &File{Lines: []Line{line("m", 100*mib, Buffer{"a", "f32[4]", 16}, Buffer{"b", "f32[8]", 32}, Buffer{"c", "f32[2]", 8})}}
	now := []Line{line("m", 100*mib, Buffer{"b", "f32[16]", 64}, Buffer{"a", "f32[2]", 8}, Buffer{"d", "f32[1]", 4})}
	r := Compare("g.peak", golden, now, Tolerance{})
	require.Equal(t, []string{"module m: ok, same figures; new at the peak: d f32[1] 4B; grew at the peak: b f32[16] 64B (was f32[8] 32B); shrank at the peak: a f32[2] 8B (was f32[4] 16B); no longer among the largest at the peak: c f32[2] 8B"}, sentences(r))
}

func TestToleranceValidate(t *testing.T) {
	require.NoError(t, Tolerance{Default: 0.01, Fields: map[Field]float64{Temp: 0}}.Validate())
	require.EqualError(t, Tolerance{Default: -1}.Validate(), "tolerance must be a fraction of at least 0, got -1")
	require.EqualError(t, Tolerance{Fields: map[Field]float64{Total: -0.5}}.Validate(), "tolerance of total must be a fraction of at least 0, got -0.5")
	require.EqualError(t, Tolerance{Fields: map[Field]float64{"peak": 1}}.Validate(), `tolerance for unknown field "peak" (want lower_bound, temp or total)`)
}

func TestWriteFileKeepsOldOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.peak")
	require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o600))
	// A write that fails midway (an interrupted update) leaves the old
	// file and no temporary file behind.
	err := atomicfile.Write(path, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return errors.New("interrupted")
	})
	require.EqualError(t, err, "interrupted")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old\n", string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// A complete write replaces it, keeping its permissions.
	require.NoError(t, WriteFile(path, []byte("new\n")))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new\n", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// The directory is made if needed.
	require.NoError(t, WriteFile(filepath.Join(dir, "testdata", "x.peak"), []byte("x\n")))

	// A link stays a link; the file it names is replaced.
	link := filepath.Join(dir, "link.peak")
	require.NoError(t, os.Symlink(path, link))
	require.NoError(t, WriteFile(link, []byte("via link\n")))
	fi, err = os.Lstat(link)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "via link\n", string(b))
}
