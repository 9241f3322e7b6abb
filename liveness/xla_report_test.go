package liveness_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// TestXLAMemoryUsageReportCorpus holds assign's memory-usage report, in
// the legacy layout the dumps have, to XLA's own -memory-usage-report.txt
// on every paired dump: the 27 torch-xla and 57 JAX XLA:GPU modules and
// the 9 JAX XLA:CPU ones. The plan is made as TestPairedAssignmentCorpus
// makes it (--algo=xla, the dump's target), with XLA's value numbering as
// TestXLABufferAssignmentCorpus gives it: the report orders equal offset
// groups by value ID, and the JAX plans only come out at XLA's offsets
// with XLA's IDs.
//
// The JAX:CPU dumps come from an XLA with the deterministic order of
// BufferAllocation::MemoryUsageReport (buffer_assignment.cc since commit
// 896d78f, 2025-10-27) and must be equal byte for byte. The torch-xla and
// JAX:GPU dumps come from an older XLA, which left the order of equal-size
// offset groups and of a row's shapes to a hash map's iteration: the same
// module compiled twice (paired-jax/module_0159 .0041 and .0042) prints them
// in different orders. Those must be equal byte for byte once that order is
// taken out (hashOrderFree); the test logs which are equal without it.
func TestXLAMemoryUsageReportCorpus(t *testing.T) {
	for _, set := range []struct {
		dir, target string
		n           int
		hashOrder   bool
	}{{"paired", "gpu", 27, true}, {"paired-jax", "gpu", 57, true}, {"paired-jax-cpu", "cpu", 9, false}} {
		dirs := corpus.All(t, set.dir+"/*")
		require.Len(t, dirs, set.n, set.dir)
		dirs = corpus.Sample(t, dirs)
		var exact, unordered []string
		for _, dir := range dirs {
			name := set.dir + "/" + filepath.Base(dir)
			as, _ := planLikeXLA(t, dir, set.target)
			var b strings.Builder
			require.NoError(t, as.WriteReportLayout(&b, assign.ReportLegacy))
			xla, err := os.ReadFile(globOne(t, filepath.Join(dir, "*-memory-usage-report.txt")))
			require.NoError(t, err)
			got, want := b.String(), string(xla)
			if got == want {
				exact = append(exact, filepath.Base(dir))
				continue
			}
			if !set.hashOrder {
				require.Failf(t, "memory-usage report differs from XLA's", "%s:\n%s", name, firstLineDiff(want, got))
			}
			known := groupTails(as)
			if g, w := hashOrderFree(got, known), hashOrderFree(want, known); g != w {
				require.Failf(t, "memory-usage report differs from XLA's beyond the order XLA left to a hash map",
					"%s (shapes sorted, rows sorted within runs of one size):\n%s", name, firstLineDiff(w, g))
			}
			unordered = append(unordered, filepath.Base(dir))
		}
		t.Logf("%s: report equal to XLA's byte for byte on %d/%d modules; equal once XLA's hash-map order is taken out on the other %d: %s",
			set.dir, len(exact), len(dirs), len(unordered), strings.Join(unordered, " "))
	}
}

// firstLineDiff names the first line where want (XLA's) and got (ours)
// differ.
func firstLineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	at := func(l []string, i int) string {
		if i < len(l) {
			return l[i]
		}
		return "(end of file)"
	}
	for i := 0; i < max(len(w), len(g)); i++ {
		if at(w, i) != at(g, i) {
			return fmt.Sprintf("line %d:\nxla:  %s\nours: %s", i+1, at(w, i), at(g, i))
		}
	}
	return "no line differs"
}

// reportRowRe splits an allocation table row into its cumulative column,
// its size, and the rest (offset, number of values, shapes).
var reportRowRe = regexp.MustCompile(`^(\t *\S+\( *\S+\); +(\S+); )(.*)$`)

// headerIndexRe reads the index of an allocation heading its table.
var headerIndexRe = regexp.MustCompile(`^allocation (\d+):`)

// groupTails returns, for each allocation of as, the tails of all its
// offset groups as hashOrderFree writes them (offset, number of values,
// shapes sorted as text), keyed by allocation index and printed group size,
// rows the percentile cut leaves out included.
func groupTails(as *assign.Assignment) map[string]bool {
	out := map[string]bool{}
	for _, al := range as.Allocations {
		type group struct {
			size   int64
			n      int
			shapes map[string]int
		}
		groups := map[int64]*group{}
		for _, s := range al.Slots {
			g := groups[s.Offset]
			if g == nil {
				g = &group{shapes: map[string]int{}}
				groups[s.Offset] = g
			}
			g.size = max(g.size, s.Size)
			g.n++
			g.shapes[s.Value.Shape.StringNoLayout()]++
		}
		for off, g := range groups {
			var shapes []string
			for text, n := range g.shapes {
				if n > 1 {
					text = strconv.Itoa(n) + "×" + text
				}
				shapes = append(shapes, text)
			}
			slices.Sort(shapes)
			tail := fmt.Sprintf("%12d; %16d; %s", off, g.n, strings.Join(shapes, ", "))
			out[tailKey(strconv.Itoa(al.Index), assign.HumanBytes(g.size), tail)] = true
		}
	}
	return out
}

func tailKey(alloc, size, tail string) string { return alloc + "|" + size + "|" + tail }

// hashOrderFree rewrites a legacy report so that what XLA before
// 2025-10-27 printed in a hash map's order no longer shows: each row's
// shapes are sorted, and within each run of consecutive rows of one size
// the rows' offset, count and shapes are sorted (a run's cumulative column
// is the same in any order). A run the percentile cut ends ("The rest N
// values ...") shows an arbitrary subset of that size's groups: its tails
// become "(cut)" when every one is a group of the allocation, as known says
// (groupTails of our plan), and stay as they are otherwise.
func hashOrderFree(report string, known map[string]bool) string {
	lines := strings.Split(report, "\n")
	type row struct{ prefix, size, rest string }
	var run []row
	alloc := ""
	out := make([]string, 0, len(lines))
	flush := func(cut bool) {
		tails := make([]string, len(run))
		for i, r := range run {
			tails[i] = r.rest
			cut = cut && known[tailKey(alloc, r.size, r.rest)]
		}
		slices.Sort(tails)
		for i, r := range run {
			if cut {
				tails[i] = "(cut)"
			}
			out = append(out, r.prefix+tails[i])
		}
		run = run[:0]
	}
	for _, l := range lines {
		m := reportRowRe.FindStringSubmatch(l)
		if m == nil {
			flush(strings.HasPrefix(l, "\tThe rest "))
			if h := headerIndexRe.FindStringSubmatch(l); h != nil {
				alloc = h[1]
			}
			out = append(out, l)
			continue
		}
		if len(run) > 0 && run[0].size != m[2] {
			flush(false)
		}
		parts := strings.SplitN(m[3], "; ", 3)
		if len(parts) == 3 {
			shapes := splitTopLevel(parts[2])
			slices.Sort(shapes)
			parts[2] = strings.Join(shapes, ", ")
		}
		run = append(run, row{m[1], m[2], strings.Join(parts, "; ")})
	}
	flush(false)
	return strings.Join(out, "\n")
}

// splitTopLevel splits a shapes list at the ", " outside brackets, braces
// and parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				out = append(out, s[start:i])
				start = i + 2
			}
		}
	}
	return append(out, s[start:])
}
