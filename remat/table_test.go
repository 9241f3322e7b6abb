package remat_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/remat"
)

// tableModule is one module of the cross-algorithm table: scheduled, with
// the plan function of its target.
type tableModule struct {
	name string
	m    *hlo.Module
	plan remat.PlanFunc
}

// planFor is the PlanFunc of a target: the module's call graph flattened
// (a clone), analysed in its order, assigned for the target.
func planFor(target assign.Target) remat.PlanFunc {
	return func(ctx context.Context, m *hlo.Module) (int64, error) {
		r, err := compile.Compile(ctx, m.Clone(), compile.Options{Target: target})
		if err != nil {
			return 0, err
		}
		return r.Assignment.Stats.TotalBytes, nil
	}
}

// scheduled returns m scheduled as the pipeline would (its own order when
// XLA scheduled it).
func scheduled(t testing.TB, m *hlo.Module, target assign.Target) *hlo.Module {
	t.Helper()
	r, err := compile.Compile(context.Background(), m, compile.Options{Target: target, Until: "schedule"})
	if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
	r.Analysis.Schedule.Apply(r.Module)
	r.Module.IsScheduled = true
	return r.Module
}

func tableModules(t testing.TB) []tableModule {
	var out []tableModule
	add := func(name, file string, target assign.Target) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.ParseModule(file, string(src))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, tableModule{name: name, m: scheduled(t, m, target), plan: planFor(target)})
	}
	for _, f := range []string{"demo.hlo", "transformer.hlo"} {
		add("testdata/"+f, filepath.Join("..", "testdata", f), assign.GPU)
	}
	for _, f := range corpus.Files(t, "paired/*/*_gpu_after_optimizations.txt", "paired-jax/*/*_gpu_after_optimizations.txt") {
		add(filepath.Base(filepath.Dir(f)), f, assign.GPU)
	}
	for _, f := range corpus.Files(t, "paired-jax-cpu/*/*.cpu_after_optimizations.txt") {
		add(filepath.Base(filepath.Dir(f)), f, assign.CPU)
	}
	return out
}

// TestFitCorpusTable runs both algorithms on every paired module and the
// bundled examples at 90%, 80%, 70% and 60% of the module's plan total.
// Every rewrite verifies and round-trips; when a pass says it fits, the
// rewritten module's plan, made again from its text, is within the limit
// and equals the figure the pass gave. The plan algorithm reaches every
// limit XLA's reaches, and on the median module (of those both fit) adds
// no more FLOPs. The table is logged (go test -run TestFitCorpusTable -v).
func TestFitCorpusTable(t *testing.T) {
	ctx := context.Background()
	pcts := []int64{90, 80, 70, 60}
	type cell struct {
		fits   bool
		added  int64
		share  float64
		refuse bool
	}
	type row struct {
		name  string
		cells map[string][]cell
	}
	var rows []row
	elapsed := map[string]time.Duration{}
	for _, tm := range tableModules(t) {
		r := row{name: tm.name, cells: map[string][]cell{}}
		for _, algo := range remat.Algorithms {
			for _, pct := range pcts {
				total, err := tm.plan(ctx, tm.m)
				if err != nil {
					t.Fatalf("%s: %v", tm.name, err)
				}
				limit := total * pct / 100
				start := time.Now()
				res, err := remat.Fit(ctx, tm.m, limit, remat.FitOptions{Algorithm: algo, Plan: tm.plan})
				elapsed[algo] += time.Since(start)
				if errors.Is(err, remat.ErrUnsupported) {
					r.cells[algo] = append(r.cells[algo], cell{refuse: true})
					continue
				}
				if err != nil {
					t.Fatalf("%s %s %d%%: %v", tm.name, algo, pct, err)
				}
				checkFit(t, fmt.Sprintf("%s %s %d%%", tm.name, algo, pct), res, tm.plan)
				r.cells[algo] = append(r.cells[algo], cell{fits: res.Fits, added: res.AddedFLOPs, share: res.AddedShare()})
			}
		}
		rows = append(rows, r)
	}
	// The table, and the claims.
	var b strings.Builder
	fmt.Fprintf(&b, "| limit | xla: fits | plan: fits | plan fits, xla not | xla fits, plan not | both fit: median added FLOPs xla | plan |\n|---|---|---|---|---|---|---|\n")
	for i, pct := range pcts {
		var fx, fp, onlyP, onlyX int
		var sx, sp []float64
		for _, r := range rows {
			x, p := r.cells[remat.XLA][i], r.cells[remat.Plan][i]
			if x.fits {
				fx++
			}
			if p.fits {
				fp++
			}
			if p.fits && !x.fits {
				onlyP++
			}
			if x.fits && !p.fits {
				onlyX++
				t.Errorf("%s at %d%%: XLA's algorithm fits, the plan algorithm does not", r.name, pct)
			}
			if x.fits && p.fits {
				if x.added != p.added {
					t.Logf("%s at %d%%: added FLOPs xla %d (%.4f%%), plan %d (%.4f%%)", r.name, pct, x.added, x.share, p.added, p.share)
				}
				sx, sp = append(sx, x.share), append(sp, p.share)
			}
		}
		mx, mp := median(sx), median(sp)
		fmt.Fprintf(&b, "| %d%% | %d/%d | %d/%d | %d | %d | %.3f%% | %.3f%% |\n", pct, fx, len(rows), fp, len(rows), onlyP, onlyX, mx, mp)
		if len(sx) > 0 && mp > mx {
			t.Errorf("at %d%% the plan algorithm's median added FLOPs %.3f%% exceed XLA's %.3f%%", pct, mp, mx)
		}
	}
	fmt.Fprintf(&b, "time: xla %v, plan %v\n", elapsed[remat.XLA].Round(time.Millisecond), elapsed[remat.Plan].Round(time.Millisecond))
	t.Log("\n" + b.String())
}

// checkFit holds what every Fit result must: the rewrite verifies and
// round-trips, its total is what planning it again from its text gives,
// and Fits says whether that is within the limit.
func checkFit(t *testing.T, what string, res *remat.FitResult, plan remat.PlanFunc) {
	t.Helper()
	if err := hlo.Verify(res.Module); err != nil {
		t.Fatalf("%s: rewrite invalid: %v", what, err)
	}
	out := res.Module.String()
	back, err := hlo.ParseModule("back.hlo", out)
	if err != nil || back.String() != out {
		t.Fatalf("%s: the rewrite does not round-trip: %v", what, err)
	}
	total, err := plan(context.Background(), back)
	if err != nil {
		t.Fatalf("%s: planning the rewrite: %v", what, err)
	}
	if total != res.TotalAfter {
		t.Errorf("%s: the pass says %d bytes, planning its text gives %d", what, res.TotalAfter, total)
	}
	if res.Fits != (total <= res.Limit) || res.Fits != (res.Message == "") {
		t.Errorf("%s: total %d, limit %d, fits %v, message %q", what, total, res.Limit, res.Fits, res.Message)
	}
	if res.Algorithm == remat.Plan && res.TotalAfter > res.TotalBefore {
		t.Errorf("%s: total rose %d -> %d", what, res.TotalBefore, res.TotalAfter)
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
