package fusion_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusModule is one module of the fusion corpus: file and index of the
// module in the file.
type corpusModule struct {
	file  string
	index int
	name  string // for tables: the file's base name, #index when not the first
}

// parse returns a freshly parsed copy of the module.
func (c corpusModule) parse(t testing.TB) *hlo.Module {
	t.Helper()
	mods, err := hlo.ParseFile(c.file)
	require.NoError(t, err, c.file)
	require.Greater(t, len(mods), c.index, c.file)
	return mods[c.index]
}

// skipTally counts modules left out, by reason.
type skipTally map[string][]string

func (s skipTally) add(why, name string) { s[why] = append(s[why], name) }

func (s skipTally) log(t *testing.T) {
	whys := make([]string, 0, len(s))
	for w := range s {
		whys = append(whys, w)
	}
	sort.Strings(whys)
	for _, w := range whys {
		names := s[w]
		list := strings.Join(names, ", ")
		if len(list) > 400 {
			list = list[:400] + "..."
		}
		t.Logf("skipped %d (%s): %s", len(names), w, list)
	}
}

// fusionCorpus returns the modules the fusion tests run on: every module
// of hlo/*/*.hlo that is not scheduled and that the pipeline accepts
// unfused, and every paired/*/*before_optimizations.txt module (under
// -short, corpus.Glob's sample of them). Those left out are tallied in
// skipped.
func fusionCorpus(t *testing.T, skipped skipTally) []corpusModule {
	var out []corpusModule
	add := func(file string, needUnscheduled bool) {
		mods, err := hlo.ParseFile(file)
		if err != nil {
			skipped.add("does not parse", filepath.Base(file))
			return
		}
		for i, m := range mods {
			name := filepath.Base(file)
			if i > 0 {
				name += "#" + strconv.Itoa(i)
			}
			c := corpusModule{file: file, index: i, name: name}
			if needUnscheduled && m.IsScheduled {
				skipped.add("scheduled", name)
				continue
			}
			if needUnscheduled {
				if _, err := compile.Compile(context.Background(), m, compile.Options{Until: "schedule"}); err != nil {
					skipped.add("the pipeline refuses it unfused", name)
					continue
				}
			}
			out = append(out, c)
		}
	}
	for _, f := range corpus.Glob(t, "hlo/*/*.hlo") {
		add(f, true)
	}
	for _, f := range corpus.Glob(t, "paired/*/*before_optimizations.txt") {
		add(f, false)
	}
	return out
}

// cliFuse is what hlomem assign --fuse runs: the optimization passes,
// fusion's guard keeping the lower bound and the total of the plan from
// rising.
func cliFuse() compile.Options {
	return compile.Options{Fuse: true, PlanCost: true}
}

// fusionPasses are the pipeline's optimization passes.
var fusionPasses = map[string]bool{"simplify": true, "cse": true, "dce": true, "fusion": true}

// plan compiles m (unfused with the zero options) and returns its
// analysis, its plan and the passes that ran.
func plan(t testing.TB, m *hlo.Module, opts compile.Options) (*liveness.Analysis, *assign.Assignment, []compile.PassRun, error) {
	res, err := compile.Compile(context.Background(), m, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return res.Analysis, res.Assignment, res.Passes, nil
}

// TestFusionCorpus: on every module of the fusion corpus, the pipeline
// with fusion succeeds, leaves a valid module that prints as a fixed point
// of parse and print, and neither the lower bound nor the assigned total
// rises over the unfused pipeline's.
func TestFusionCorpus(t *testing.T) {
	skipped := skipTally{}
	mods := fusionCorpus(t, skipped)
	require.NotEmpty(t, mods)
	var rows []string
	changed, lbDown, totDown := 0, 0, 0
	start := time.Now()
	// One subtest per module, one after another: they tally.
	for _, c := range mods {
		t.Run(c.name, func(t *testing.T) {
			a0, as0, _, err := plan(t, c.parse(t), compile.Options{})
			require.NoError(t, err, "%s: unfused", c.name)
			// VerifyEach holds each pass to what it reports: the module
			// verifies after it, prints as a fixed point of parse and print,
			// and a pass reporting no change left its text as it was.
			opts := cliFuse()
			opts.VerifyEach = true
			t1start := time.Now()
			a1, as1, runs, err := plan(t, c.parse(t), opts)
			took := time.Since(t1start)
			if !assert.NoError(t, err, "%s: fused", c.name) {
				return
			}
			n := 0
			for _, r := range runs {
				if fusionPasses[r.Name] && r.Changed {
					n++
				}
			}
			require.NoError(t, hlo.Verify(a1.Module), "%s: after the fused pipeline", c.name)
			lb0, lb1 := a0.LowerBound(nil).Bytes, a1.LowerBound(nil).Bytes
			t0, t1 := as0.Stats.TotalBytes, as1.Stats.TotalBytes
			if n > 0 {
				changed++
			}
			if lb1 < lb0 {
				lbDown++
			}
			if t1 < t0 {
				totDown++
			}
			assert.LessOrEqual(t, lb1, lb0, "%s: fusion raised the lower bound", c.name)
			assert.LessOrEqual(t, t1, t0, "%s: fusion raised the assigned total", c.name)
			mark := ""
			if t1 > t0 {
				mark = "  <- total rose"
			}
			rows = append(rows, fmt.Sprintf("%-60.60s %7d %7d %15d %15d %15d %15d %8.2f%s", c.name, len(a0.Buffers), len(a1.Buffers), lb0, lb1, t0, t1, took.Seconds(), mark))
		})
	}
	t.Logf("%-60s %7s %7s %15s %15s %15s %15s %8s", "module", "buf", "buf'", "lower bound", "lower bound'", "total", "total'", "fused s")
	for _, r := range rows {
		t.Log(r)
	}
	t.Logf("%d modules in %v: fusion changed %d, lowered the bound of %d and the total of %d", len(mods), time.Since(start).Round(time.Millisecond), changed, lbDown, totDown)
	skipped.log(t)
	// Fusion must have done something on the corpus, or the checks above
	// are vacuous.
	require.Greater(t, changed, len(mods)/2)
}

var opInError = regexp.MustCompile(`cannot evaluate opcode ([a-z0-9-]+)`)

// fusedCompareWork bounds the element operations (eval.InstructionWork) of
// the unfused reference run TestFusedOutputsBitIdenticalCorpus makes: a
// count, so that the modules compared are the same on any machine.
const fusedCompareWork = 1 << 26

// TestFusedOutputsBitIdenticalCorpus: on every module of the fusion corpus whose
// unfused plan is at most 64 MiB and that the evaluator runs within
// fusedCompareWork element operations,
// the fused module computes bit for bit what the unfused one does, in the
// reference run and on the fused plan's bytes.
func TestFusedOutputsBitIdenticalCorpus(t *testing.T) {
	skipped := skipTally{}
	mods := fusionCorpus(t, skipped)
	compared := 0
	stopped := map[string]int{}
	for _, c := range mods {
		_, as0, _, err := plan(t, c.parse(t), compile.Options{})
		require.NoError(t, err, c.name)
		if as0.Stats.TotalBytes > 64<<20 {
			stopped["(plan over 64 MiB)"]++
			continue
		}
		args := eval.RandomArgs(as0.Module, rand.New(rand.NewPCG(1, 0)))
		ref, err := exec.Execute(context.Background(), as0, args, nil, exec.Options{Reference: true, MaxWork: fusedCompareWork})
		if err != nil {
			m := opInError.FindStringSubmatch(err.Error())
			switch {
			case m != nil:
				stopped[m[1]]++
			case errors.Is(err, eval.ErrStepBudget):
				stopped["(over fusedCompareWork)"]++
			default:
				msg := err.Error()
				if len(msg) > 60 {
					msg = msg[:60] + "..."
				}
				stopped["other: "+msg]++
			}
			continue
		}
		_, as1, _, err := plan(t, c.parse(t), compile.Options{Fuse: true})
		require.NoError(t, err, "%s: fused", c.name)
		p0, p1 := as0.Module.Entry.Params, as1.Module.Entry.Params
		require.Equal(t, len(p0), len(p1), "%s: fusion changed the entry's parameters", c.name)
		for i := range p0 {
			require.True(t, hlo.Compatible(p0[i].Shape, p1[i].Shape), "%s: parameter %d changed shape", c.name, i)
		}
		for _, mode := range []exec.Options{{Reference: true}, {}} {
			// A fused module computes what the unfused one does; four
			// times its work bound only catches a runaway.
			mode.MaxWork = 4 * fusedCompareWork
			got, err := exec.Execute(context.Background(), as1, args, nil, mode)
			require.NoError(t, err, "%s: fused, reference=%v", c.name, mode.Reference)
			require.Equal(t, len(ref.Outputs), len(got.Outputs), c.name)
			for i := range ref.Outputs {
				require.Equal(t, ref.Outputs[i].Checksum(), got.Outputs[i].Checksum(),
					"%s: output %d of the fused module (reference=%v) differs from the unfused one's", c.name, i, mode.Reference)
			}
		}
		compared++
	}
	type kv struct {
		k string
		n int
	}
	var list []kv
	for k, n := range stopped {
		list = append(list, kv{k, n})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].n > list[j].n || list[i].n == list[j].n && list[i].k < list[j].k })
	t.Logf("%d of %d modules compared: fused outputs equal unfused bit for bit; not run: %v", compared, len(mods), list)
	skipped.log(t)
	require.Positive(t, compared)
}

var totalRe = regexp.MustCompile(`(?m)^Total bytes used: (\d+)`)

// TestFusionAgainstXLACorpus: the fused plan of each paired module's input
// (before_optimizations) against XLA's plan of its own optimized module.
// Fusions are counted in all computations, ours after the fused pipeline
// and XLA's as lines containing " fusion(" in after_optimizations.
func TestFusionAgainstXLACorpus(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(corpus.Path(t, "paired"), "*"))
	require.NoError(t, err)
	var ratios, unfused []float64
	t.Logf("%-42s %14s %14s %14s %7s %8s %8s", "module", "unfused", "fused", "XLA", "f/XLA", "fusions", "XLA's")
	for _, d := range dirs {
		one := func(pattern string) string {
			m, err := filepath.Glob(filepath.Join(d, pattern))
			require.NoError(t, err)
			require.Len(t, m, 1, "%s: %s", d, pattern)
			return m[0]
		}
		before := one("*before_optimizations.txt")
		after := one("*after_optimizations.txt")
		dump, err := os.ReadFile(one("*-buffer-assignment.txt"))
		require.NoError(t, err)
		sm := totalRe.FindSubmatch(dump)
		require.NotNil(t, sm, "%s: no Total bytes used", d)
		xla, err := strconv.ParseInt(string(sm[1]), 10, 64)
		require.NoError(t, err)
		require.Positive(t, xla)

		c := corpusModule{file: before, name: filepath.Base(d)}
		_, as0, _, err := plan(t, c.parse(t), compile.Options{})
		require.NoError(t, err, "%s: unfused", c.name)
		_, as1, _, err := plan(t, c.parse(t), cliFuse())
		require.NoError(t, err, "%s: fused", c.name)
		ours := 0
		for _, comp := range as1.Module.Computations {
			for _, in := range comp.Instructions {
				if in.Opcode == hlo.OpFusion {
					ours++
				}
			}
		}
		text, err := os.ReadFile(after)
		require.NoError(t, err)
		theirs := 0
		for _, l := range strings.Split(string(text), "\n") {
			if strings.Contains(l, " fusion(") {
				theirs++
			}
		}
		r := float64(as1.Stats.TotalBytes) / float64(xla)
		ratios = append(ratios, r)
		unfused = append(unfused, float64(as0.Stats.TotalBytes)/float64(xla))
		t.Logf("%-42.42s %14d %14d %14d %7.3f %8d %8d", c.name, as0.Stats.TotalBytes, as1.Stats.TotalBytes, xla, r, ours, theirs)
	}
	require.NotEmpty(t, ratios)
	medianOf := func(xs []float64) float64 {
		sort.Float64s(xs)
		n := len(xs)
		if n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[n/2]
	}
	n := len(ratios)
	median, umedian := medianOf(ratios), medianOf(unfused)
	t.Logf("%d modules: fused/XLA median %.3f, max %.3f, min %.3f; unfused/XLA median %.3f, max %.3f", n, median, ratios[n-1], ratios[0], umedian, unfused[n-1])
	require.LessOrEqual(t, median, 1.10, "median of fused/XLA totals")
	require.LessOrEqual(t, ratios[n-1], 1.5, "max of fused/XLA totals")
}
