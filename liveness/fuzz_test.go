package liveness

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/randhlo"
	"github.com/stretchr/testify/require"
)

var inlineModule = regexp.MustCompile("(?s)`(HloModule .*?)`")

// FuzzAnalyze feeds modules that parse, verified or not, to the analysis.
// It must never panic or hang, and what it returns must hold its
// invariants: every range inside the schedule, the ranges of one buffer
// chained without overlap, every async operation's in-flight buffers live
// from its start to its done. Seeds: the modules of this package's tests,
// small corpus modules and random modules with loops and conditionals.
func FuzzAnalyze(f *testing.F) {
	tests, _ := filepath.Glob("*_test.go")
	for _, file := range tests {
		b, _ := os.ReadFile(file)
		for _, m := range inlineModule.FindAllSubmatch(b, -1) {
			f.Add(m[1])
		}
	}
	if d := corpus.Dir(); d != "" {
		for _, pat := range []string{"hlo/fuzz/*.hlo", "paired-jax/*/*after_optimizations.txt"} {
			files, _ := filepath.Glob(filepath.Join(d, pat))
			for _, file := range files {
				if st, err := os.Stat(file); err == nil && st.Size() <= 32<<10 {
					if b, err := os.ReadFile(file); err == nil {
						f.Add(b)
					}
				}
			}
		}
	}
	for seed := uint64(0); seed < 16; seed++ {
		f.Add([]byte(randhlo.Generate(seed, randhlo.Options{Instructions: 10 + int(seed)})))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		mods, err := hlo.Parse("fuzz.hlo", src)
		if err != nil {
			return
		}
		for _, m := range mods {
			if _, err := hlo.FlattenCallGraph(m); err != nil {
				continue
			}
			a, err := Analyze(m, Options{})
			if err != nil {
				continue
			}
			checkInvariants(t, a)
		}
	})
}

// checkInvariants fails t when the analysis breaks one of its promises.
func checkInvariants(t *testing.T, a *Analysis) {
	t.Helper()
	end := a.EndTime()
	for _, v := range a.Values {
		if !v.Scheduled {
			continue
		}
		require.False(t, v.Range.Start < 0 || v.Range.End > end || v.Range.Start > v.Range.End,
			"%s: range %d-%d outside [0, %d]", v.Name(), v.Range.Start, v.Range.End, end)
	}
	for _, b := range a.Buffers {
		var prev *Value
		for _, v := range b.Values {
			if !v.Scheduled {
				continue
			}
			if prev != nil && v.Range.Start < prev.Range.End && prev.Range.Start < v.Range.End {
				// Chained ranges may touch (end == start) but not overlap.
				require.Failf(t, "overlapping ranges", "buffer %s: %s %d-%d overlaps %s %d-%d", b.Name(), prev.Name(), prev.Range.Start, prev.Range.End,
					v.Name(), v.Range.Start, v.Range.End)
			}
			prev = v
		}
	}
	for _, p := range a.AsyncPairs() {
		if p.Done == nil {
			continue
		}
		ts, td := a.Time(p.Bound), a.Time(p.Done)
		if ts < 0 || td < 0 {
			continue
		}
		for _, b := range p.InFlight() {
			r, ok := b.Range()
			require.True(t, ok && r.Start <= ts && r.End >= td, "%s..%s keeps %s in flight but it lives %v", p.Bound.Name, p.Done.Name, b.Name(), r)
		}
	}
}
