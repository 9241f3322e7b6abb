package peakgolden

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

func parseOne(t *testing.T, text string) *hlo.Module {
	t.Helper()
	mods, err := hlo.Parse("m.hlo", []byte(text))
	require.NoError(t, err)
	require.Len(t, mods, 1)
	return mods[0]
}

func TestSignature(t *testing.T) {
	// The signature is the entry's parameter and result shapes without
	// layouts; the key keeps 8 hex digits of its SHA-256. Pinned: a
	// change here changes the key of every module of every golden file.
	m := parseOne(t, tinyHLO)
	require.Equal(t, "(f32[4])->f32[4]", signatureText(m))
	require.Equal(t, "e5220d5d", Signature(m))
	sum := sha256.Sum256([]byte("(f32[4])->f32[4]"))
	require.Equal(t, hex.EncodeToString(sum[:4]), Signature(m))

	// Layouts, the entry_computation_layout attribute, names and the body
	// do not count: the module before and after optimization, or with
	// another body, keeps its key.
	other := parseOne(t, `HloModule m, is_scheduled=true, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main.7 (arg: f32[4]) -> f32[4] {
  %arg = f32[4]{0} parameter(0)
  %e = f32[4]{0} exponential(%arg)
  ROOT %r = f32[4]{0} add(%e, %arg)
}
`)
	require.Equal(t, Signature(m), Signature(other))

	// Shapes do count, tuples and every parameter in order.
	tuple := parseOne(t, `HloModule m

ENTRY %e (p: f32[4], q: (s32[], f32[2,3])) -> (f32[4], s32[]) {
  %p = f32[4]{0} parameter(0)
  %q = (s32[], f32[2,3]{1,0}) parameter(1)
  %i = s32[] get-tuple-element(%q), index=0
  ROOT %t = (f32[4]{0}, s32[]) tuple(%p, %i)
}
`)
	require.Equal(t, "(f32[4],(s32[],f32[2,3]))->(f32[4],s32[])", signatureText(tuple))
	require.NotEqual(t, Signature(m), Signature(tuple))
}

func TestAssignKeysAndSort(t *testing.T) {
	lines := []Line{
		{Module: "b", Signature: "00000001"},
		{Module: "a", Signature: "00000002"},
		{Module: "b", Signature: "00000002"},
		{Module: "c", Signature: "00000001"},
		{Module: "a", Signature: "00000001"},
		{Module: "a.x", Signature: "00000001"},
		{Module: "odd name#@|", Signature: "00000001"},
	}
	// Eleven compiles of z with one signature: the ordinal follows input
	// order, and sorts as a number.
	for i := range 11 {
		lines = append(lines, Line{Module: "z", Signature: "0000000f", PeakStep: i})
	}
	assignKeys(lines)
	Sort(lines)
	var keys, v1 []string
	for _, l := range lines {
		keys = append(keys, l.Key)
		v1 = append(v1, l.v1Key)
	}
	require.Equal(t, []string{"a@00000001", "a@00000002", "a.x@00000001", "b@00000001", "b@00000002", "c@00000001", "odd_name___@00000001",
		"z@0000000f#1", "z@0000000f#2", "z@0000000f#3", "z@0000000f#4", "z@0000000f#5", "z@0000000f#6", "z@0000000f#7", "z@0000000f#8", "z@0000000f#9", "z@0000000f#10", "z@0000000f#11"}, keys)
	require.Equal(t, 0, lines[7].PeakStep)
	require.Equal(t, 10, lines[17].PeakStep)
	// The v1 keys, for a comparison with a v1 file: by name, in input
	// order.
	require.Equal(t, []string{"a#2", "a#1", "a.x", "b#1", "b#2", "c", "odd name#@|"}, v1[:7])
	require.Equal(t, "z#11", v1[17])
}

// keyed returns lines with the keys given (NAME@SIGNATURE[#K]), temp
// growing with the index so that each line is told apart.
func keyed(keys ...string) []Line {
	var out []Line
	for _, k := range keys {
		out = append(out, line(k, 100*mib))
	}
	return out
}

func TestCompareKeys(t *testing.T) {
	// jit_scan compiled once for 480x480; the next run compiles it for a
	// second shape too, and XLA renumbers every dump. The key does not
	// see the numbers: one module added, the others the same.
	golden := &File{Version: 2, Lines: keyed("jit_scan@aaaaaaaa", "jit_step@cccccccc")}
	golden.Lines[0].lineNo, golden.Lines[1].lineNo = 3, 4
	now := keyed("jit_scan@aaaaaaaa", "jit_scan@bbbbbbbb", "jit_step@cccccccc")
	r := Compare("g.peak", golden, now, Tolerance{})
	require.Equal(t, []string{
		"module jit_scan@aaaaaaaa: ok (temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB)",
		"module jit_scan@bbbbbbbb: added, not in the golden file: temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB; another compile of jit_scan, beside jit_scan@aaaaaaaa in the golden file",
		"module jit_step@cccccccc: ok (temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB)",
	}, sentences(r))
	require.True(t, r.Failed(), "an added module fails")
	require.Equal(t, "1 of 3 modules out of tolerance of g.peak: 2 same, 1 added; a module added or removed fails the check until the golden file is updated", r.Summary())
	require.Regexp(t, `(?m)^\+[\s\x{a0}]+"jit_scan@bbbbbbbb": {$`, r.Diff)
	require.NotRegexp(t, `(?m)^[-+][\s\x{a0}]+"jit_step`, r.Diff)

	// The other way: the second compile is gone.
	r = Compare("g.peak", &File{Version: 2, Lines: now}, golden.Lines, Tolerance{})
	require.Equal(t, "module jit_scan@bbbbbbbb: removed, in the golden file (line 0) but not among the modules; this run's compile of jit_scan is jit_scan@aaaaaaaa", sentences(r)[1])
	require.Equal(t, "1 of 3 modules out of tolerance of g.peak: 2 same, 1 removed; a module added or removed fails the check until the golden file is updated", r.Summary())

	// The only compile of jit_step with another signature (its batch
	// doubled): the same module, its figures compared.
	grown := line("jit_step@dddddddd", 200*mib)
	r = Compare("g.peak", golden, []Line{now[0], grown}, Tolerance{})
	require.Equal(t, []string{
		"module jit_scan@aaaaaaaa: ok (temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB)",
		"module jit_step@dddddddd: temp grew 100.0% (100.00MiB → 200.00MiB), total grew 8.9% (1.10GiB → 1.20GiB) and lower bound grew 8.9% (1.10GiB → 1.20GiB), over the 0% tolerance; entry signature changed: the golden file has the module as jit_step@cccccccc (line 4)",
	}, sentences(r))
	require.Equal(t, Grew, r.Verdicts[1].Kind)
	require.Equal(t, "1 of 2 modules out of tolerance of g.peak: 1 same, 1 grew", r.Summary())
	require.Contains(t, r.Diff, `"jit_step@dddddddd": {`)
	require.Regexp(t, `(?m)^-[\s\x{a0}]+Key:\s+"jit_step@cccccccc",$`, r.Diff)
	// Same figures, new signature: within tolerance, and said.
	r = Compare("g.peak", golden, []Line{now[0], line("jit_step@dddddddd", 100*mib)}, Tolerance{})
	require.False(t, r.Failed())
	require.Equal(t, "module jit_step@dddddddd: ok, same figures; entry signature changed: the golden file has the module as jit_step@cccccccc (line 4)", sentences(r)[1])
	require.Equal(t, "2 modules within tolerance of g.peak: 1 same, 1 changed within tolerance", r.Summary())

	// Two compiles of jit_scan, one of which changed: which one is
	// unknown, so one added and one removed.
	r = Compare("g.peak", &File{Version: 2, Lines: keyed("jit_scan@aaaaaaaa", "jit_scan@bbbbbbbb")}, keyed("jit_scan@aaaaaaaa", "jit_scan@eeeeeeee"), Tolerance{})
	require.Equal(t, []Kind{Same, Removed, Added}, verdictKinds(r))

	// Two compiles of one signature, then one: paired by order.
	r = Compare("g.peak", &File{Version: 2, Lines: keyed("f@aaaaaaaa#1", "f@aaaaaaaa#2")}, keyed("f@aaaaaaaa"), Tolerance{})
	require.Equal(t, []string{
		"module f@aaaaaaaa: ok (temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB); the golden file has the module as f@aaaaaaaa#1 (line 0)",
		"module f@aaaaaaaa#2: removed, in the golden file (line 0) but not among the modules; this run's compile of f is f@aaaaaaaa",
	}, sentences(r))
}

func verdictKinds(r *Report) []Kind {
	var out []Kind
	for _, v := range r.Verdicts {
		out = append(out, v.Kind)
	}
	return out
}

func TestCompareV1(t *testing.T) {
	// A v1 file keyed by name: the run is compared by the keys v1 gave
	// it (NAME, NAME#K in input order), and the summary says to update.
	f, err := Parse("old.peak", []byte("# hlomem peak v1 target=gpu algorithm=xla schedule=default\n"+
		"jit_a keep 1073741824 0 1073741824 7\n"+
		"jit_b#1 keep 1178599424 104857600 1178599424 7\n"+
		"jit_b#2 keep 1178599424 104857600 1178599424 7\n"))
	require.NoError(t, err)
	now := []Line{
		{Module: "jit_b", Signature: "00000002", Schedule: "keep", LowerBound: gib + 100*mib, Temp: 100 * mib, Total: gib + 100*mib, PeakStep: 7},
		{Module: "jit_a", Signature: "00000001", Schedule: "keep", LowerBound: gib, Total: gib, PeakStep: 7},
		{Module: "jit_b", Signature: "00000001", Schedule: "keep", LowerBound: gib + 200*mib, Temp: 200 * mib, Total: gib + 200*mib, PeakStep: 7},
	}
	assignKeys(now)
	Sort(now)
	r := Compare("old.peak", f, now, Tolerance{})
	require.Equal(t, 1, r.Version)
	require.Equal(t, []string{
		"module jit_a: ok (temp 0B, total 1.00GiB, lower bound 1.00GiB)",
		"module jit_b#1: ok (temp 100.00MiB, total 1.10GiB, lower bound 1.10GiB)",
		"module jit_b#2: temp grew 100.0% (100.00MiB → 200.00MiB), total grew 8.9% (1.10GiB → 1.20GiB) and lower bound grew 8.9% (1.10GiB → 1.20GiB), over the 0% tolerance",
	}, sentences(r))
	require.Equal(t, "1 of 3 modules out of tolerance of old.peak: 2 same, 1 grew; old.peak is format v1, which keys modules by name alone: update it to key them by name and entry signature (v2)", r.Summary())
	// The keys' format is no change of a line.
	require.NotContains(t, r.Diff, "Key")
	require.Contains(t, r.Diff, `"jit_b#2": {`)
}
