package liveness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// xlaLiveRange is the HloLiveRange block of an XLA buffer-assignment dump.
type xlaLiveRange struct {
	header   string
	sequence []string
	ranges   []string
	peak     []string // "Live ranges at T (peak):" and its lines
}

func readXLALiveRange(t *testing.T, path string) xlaLiveRange {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var lr xlaLiveRange
	section := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "HloLiveRange"):
			lr.header, section = line, "top"
			continue
		case section == "":
			continue
		case trim == "InstructionSequence:":
			section = "seq"
			continue
		case trim == "BufferLiveRange:":
			section = "ranges"
			continue
		case strings.HasPrefix(trim, "Live ranges at"):
			section = "peak"
		case trim == "":
			section = ""
			continue
		}
		switch section {
		case "seq":
			lr.sequence = append(lr.sequence, trim)
		case "ranges":
			lr.ranges = append(lr.ranges, trim)
		case "peak":
			lr.peak = append(lr.peak, trim)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, lr.header, "%s: no HloLiveRange block", path)
	return lr
}

func ours(t *testing.T, a *Analysis, format PeakFormat) xlaLiveRange {
	t.Helper()
	var b strings.Builder
	require.NoError(t, a.WriteXLAWith(&b, XLAOptions{Peak: format}))
	path := filepath.Join(t.TempDir(), "ours.txt")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return readXLALiveRange(t, path)
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// TestLiveRangeParityCorpus holds the analysis to XLA's own HloLiveRange dump
// on every paired module of the corpus: the 27 torch-xla XLA:GPU modules,
// the 57 JAX XLA:GPU modules with loops, conditionals and async
// collectives, and the 9 JAX XLA:CPU modules with loops. The
// InstructionSequence must match line for line and the set of
// BufferLiveRange lines must be XLA's. Every range is also classified
// against XLA's (equal, longer, shorter, missing): a range shorter than
// XLA's would let a plan overwrite live data, so shorter and missing
// ranges fail even when the sets differ only there.
//
// The peak section is compared in the layout of the dump: in the current
// layout line for line (its order is by size and name); in the legacy
// layout as a set, because that layout lists values in XLA's value ID
// order, which follows XLA's in-memory computation order (valueOrder).
func TestLiveRangeParityCorpus(t *testing.T) {
	for _, set := range []struct {
		dir  string
		want int
	}{{"paired", 27}, {"paired-jax", 57}, {"paired-jax-cpu", 9}} {
		dirs := corpus.All(t, set.dir+"/*")
		require.Len(t, dirs, set.want, "found %d modules in %s, want %d", len(dirs), set.dir, set.want)
		dirs = corpus.Sample(t, dirs)
		var equal, longer int
		for _, dir := range dirs {
			t.Run(set.dir+"/"+filepath.Base(dir), func(t *testing.T) {
				hloFile := globOne(t, filepath.Join(dir, "*after_optimizations.txt"))
				baFile := globOne(t, filepath.Join(dir, "*after_optimizations-buffer-assignment.txt"))
				mods, err := hlo.ParseFile(hloFile)
				require.NoError(t, err)
				_, err = hlo.FlattenCallGraph(mods[0])
				require.NoError(t, err)
				// The paired dumps come from 2024-2025 XLA, whose
				// live ranges followed the older async rule.
				a, err := Analyze(mods[0], Options{XLARules: Rules2025})
				require.NoError(t, err)
				want := readXLALiveRange(t, baFile)
				format := PeakLegacy
				if len(want.peak) > 1 && strings.Contains(want.peak[1], "(cumulative:") {
					format = PeakCumulative
				}
				got := ours(t, a, format)
				require.Equal(t, want.header, got.header, "header")
				for i := 0; i < len(got.sequence) || i < len(want.sequence); i++ {
					var g, w string
					if i < len(got.sequence) {
						g = got.sequence[i]
					}
					if i < len(want.sequence) {
						w = want.sequence[i]
					}
					require.Equal(t, w, g, "InstructionSequence differs first at line %d", i)
				}
				c := classifyRanges(want.ranges, got.ranges)
				equal += c.equal
				longer += len(c.longer)
				require.True(t, len(c.shorter) == 0 && len(c.missing) == 0, "ranges shorter than XLA's: %v; missing: %v", c.shorter, c.missing)
				require.Empty(t, cmp.Diff(sorted(want.ranges), sorted(got.ranges)), "BufferLiveRange lines differ (-xla +ours)")
				wp, gp := want.peak, got.peak
				if format == PeakLegacy {
					wp, gp = sorted(wp), sorted(gp)
				}
				require.Empty(t, cmp.Diff(wp, gp), "peak section differs (-xla +ours)")
			})
		}
		t.Logf("%s: %d ranges equal to XLA's, %d longer, across %d modules", set.dir, equal, longer, len(dirs))
	}
}

// rangeClasses sorts each XLA range by how ours compares to it.
type rangeClasses struct {
	equal                    int
	longer, shorter, missing []string
}

// classifyRanges compares "name{index}:start-end" lines: a range of ours is
// shorter when it starts later or ends earlier than XLA's at either end.
func classifyRanges(xla, ours []string) rangeClasses {
	parse := func(lines []string) map[string][2]int {
		m := map[string][2]int{}
		for _, l := range lines {
			i := strings.LastIndexByte(l, ':')
			var s, e int
			fmt.Sscanf(l[i+1:], "%d-%d", &s, &e)
			m[l[:i]] = [2]int{s, e}
		}
		return m
	}
	x, o := parse(xla), parse(ours)
	var c rangeClasses
	for name, xr := range x {
		or, ok := o[name]
		switch {
		case !ok:
			c.missing = append(c.missing, name)
		case or == xr:
			c.equal++
		case or[0] > xr[0] || or[1] < xr[1]:
			c.shorter = append(c.shorter, fmt.Sprintf("%s ours %d-%d, XLA %d-%d", name, or[0], or[1], xr[0], xr[1]))
		default:
			c.longer = append(c.longer, name)
		}
	}
	sort.Strings(c.shorter)
	sort.Strings(c.missing)
	return c
}

func TestClassifyRanges(t *testing.T) {
	c := classifyRanges([]string{"a{}:0-5", "b{0}:2-3", "c{}:1-4", "d{}:4-9", "e{}:0-1"},
		[]string{"a{}:0-5", "b{0}:1-3", "c{}:1-3", "d{}:5-9"})
	require.Equal(t, 1, c.equal)
	require.Equal(t, []string{"b{0}"}, c.longer)
	require.Equal(t, []string{"c{} ours 1-3, XLA 1-4", "d{} ours 5-9, XLA 4-9"}, c.shorter)
	require.Equal(t, []string{"e{}"}, c.missing)
}

func globOne(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err, "want one file matching %s", pattern)
	require.Len(t, m, 1, "want one file matching %s, got %v", pattern, m)
	return m[0]
}

// TestXLALiveRangeExample reproduces hlo_live_range_test.cc: parameters
// paramA, paramX and multiply scheduled in that order, in both layouts.
func TestXLALiveRangeExample(t *testing.T) {
	m, err := hlo.ParseModule("x.hlo", `HloModule m, is_scheduled=true
ENTRY main {
  paramA = f32[4] parameter(0)
  paramX = f32[4] parameter(1)
  ROOT multiply = f32[4] multiply(paramA, paramX)
}`)
	require.NoError(t, err)
	a, err := Analyze(m, Options{})
	require.NoError(t, err)
	head := `HloLiveRange (max 3):
  InstructionSequence:
    0:paramA
    1:paramX
    2:multiply
  BufferLiveRange:
    paramA{}:0-3
    paramX{}:0-3
    multiply{}:2-3
  Live ranges at 2 (peak):
`
	for _, tc := range []struct {
		format PeakFormat
		want   string
	}{
		{PeakCumulative, head + `    multiply{}: 16 bytes (cumulative: 16 bytes)
    paramA{}: 16 bytes (cumulative: 32 bytes)
    paramX{}: 16 bytes (cumulative: 48 bytes)
  Stack trace breakdown for peak usage: 48 bytes
    main (100.0%, total: 48 bytes, current: 0 bytes, remaining: 48 bytes)
      ├── multiply (33.3%, total: 16 bytes, current: 16 bytes, remaining: 32 bytes)
      ├── paramA (33.3%, total: 16 bytes, current: 16 bytes, remaining: 16 bytes)
      └── paramX (33.3%, total: 16 bytes, current: 16 bytes, remaining: 0 bytes)
`},
		{PeakLegacy, head + `    paramA: 16 bytes
    paramX: 16 bytes
    multiply: 16 bytes
`},
	} {
		var b strings.Builder
		require.NoError(t, a.WriteXLAWith(&b, XLAOptions{Peak: tc.format}))
		require.Empty(t, cmp.Diff(tc.want, b.String()), "format %d (-want +got)", tc.format)
	}
}
