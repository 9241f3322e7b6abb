package liveness

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
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
	if err != nil {
		t.Fatal(err)
	}
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
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lr.header == "" {
		t.Fatalf("%s: no HloLiveRange block", path)
	}
	return lr
}

func ours(t *testing.T, a *Analysis) xlaLiveRange {
	t.Helper()
	var b strings.Builder
	if err := a.WriteXLA(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ours.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return readXLALiveRange(t, path)
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// TestPairedLiveRangeParity holds the analysis to XLA's own HloLiveRange
// dump for every paired GPU module: the InstructionSequence line for line,
// the set of BufferLiveRange lines, and the peak section.
func TestPairedLiveRangeParity(t *testing.T) {
	dirs := corpus.Glob(t, "paired/*")
	if len(dirs) != 27 {
		t.Fatalf("found %d paired modules, want 27", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			hloFile := globOne(t, filepath.Join(dir, "*after_optimizations.txt"))
			baFile := globOne(t, filepath.Join(dir, "*after_optimizations-buffer-assignment.txt"))
			mods, err := hlo.ParseFile(hloFile)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Analyze(mods[0], Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := readXLALiveRange(t, baFile)
			got := ours(t, a)
			if got.header != want.header {
				t.Errorf("header: got %q, want %q", got.header, want.header)
			}
			for i := 0; i < len(got.sequence) || i < len(want.sequence); i++ {
				var g, w string
				if i < len(got.sequence) {
					g = got.sequence[i]
				}
				if i < len(want.sequence) {
					w = want.sequence[i]
				}
				if g != w {
					t.Fatalf("InstructionSequence differs first at line %d: got %q, want %q", i, g, w)
				}
			}
			if diff := cmp.Diff(sorted(want.ranges), sorted(got.ranges)); diff != "" {
				t.Errorf("BufferLiveRange lines differ (-xla +ours):\n%s", diff)
			}
			if diff := cmp.Diff(sorted(want.peak), sorted(got.peak)); diff != "" {
				t.Errorf("peak section differs (-xla +ours):\n%s", diff)
			}
		})
	}
}

func globOne(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) != 1 {
		t.Fatalf("want one file matching %s, got %v", pattern, m)
	}
	return m[0]
}

// TestXLALiveRangeExample reproduces hlo_live_range_test.cc: parameters
// paramA, paramX and multiply scheduled in that order.
func TestXLALiveRangeExample(t *testing.T) {
	m, err := hlo.ParseModule("x.hlo", `HloModule m, is_scheduled=true
ENTRY e {
  paramA = f32[4] parameter(0)
  paramX = f32[4] parameter(1)
  ROOT multiply = f32[4] multiply(paramA, paramX)
}`)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := a.WriteXLA(&b); err != nil {
		t.Fatal(err)
	}
	want := `HloLiveRange (max 3):
  InstructionSequence:
    0:paramA
    1:paramX
    2:multiply
  BufferLiveRange:
    paramA{}:0-3
    paramX{}:0-3
    multiply{}:2-3
  Live ranges at 2 (peak):
    paramA: 16 bytes
    paramX: 16 bytes
    multiply: 16 bytes
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
