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
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/remat"
	"github.com/hlomem/hlomem/schedule"
)

// tableModule is one module of the cross-algorithm table: scheduled, with
// the plan function of its target.
type tableModule struct {
	name string
	m    *hlo.Module
	plan remat.PlanFunc
	// target is the plan's target (the shadow check plans again with it).
	target assign.Target
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
		out = append(out, tableModule{name: name, m: scheduled(t, m, target), plan: planFor(target), target: target})
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

// trainingModules are the corpus' training steps and models (hlo/), not
// compiled by XLA: scheduled by XLA's heuristic (DefaultMemoryScheduler),
// planned for the GPU.
func trainingModules(t testing.TB) []tableModule {
	var out []tableModule
	for _, f := range corpus.Files(t,
		"hlo/neuron/mlp__mlp_dp_final.hlo",
		"hlo/neuron/gpt__gpt2_tp-1.hlo",
		"hlo/neuron/bert__bert_dp_graph_4.hlo",
		"hlo/xla/backends__cpu__benchmarks__hlo__dlrm_keras_jax_f32_train_step.hlo",
		"hlo/xla/backends__cpu__benchmarks__hlo__resnet50_keras_jax_f32.hlo",
		"hlo/xla/tools__benchmarks__hlo__nv_maxtext_1n1g_jit_train_step_before_optimization.hlo") {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.ParseModule(f, string(src))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r, err := compile.Compile(context.Background(), m, compile.Options{Until: "schedule", Scheduler: schedule.Heuristic})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r.Analysis.Schedule.Apply(r.Module)
		r.Module.IsScheduled = true
		name := strings.TrimSuffix(filepath.Base(f), ".hlo")
		name = name[strings.LastIndex(name, "__")+2:]
		out = append(out, tableModule{name: name, m: r.Module, plan: planFor(assign.GPU), target: assign.GPU})
	}
	return out
}

// TestFitCorpusTable runs both algorithms on every paired module and the
// bundled examples at 90%, 80%, 70% and 60% of the module's plan total.
// Every rewrite verifies and round-trips, and its plan passes the shadow
// check; when a pass says it fits, the
// rewritten module's plan, made again from its text, is within the limit
// and equals the figure the pass gave. The plan algorithm reaches every
// limit XLA's reaches, and on the median module (of those both fit) adds
// no more FLOPs. The table is logged (go test -run TestFitCorpusTable -v).
func TestFitCorpusTable(t *testing.T) {
	ctx := context.Background()
	pcts := []int64{90, 80, 70, 60}
	type cell struct {
		fits    bool
		added   int64
		share   float64
		reached float64 // total after / total before
		refuse  bool
	}
	type row struct {
		name  string
		cells map[string][]cell
	}
	var rows []row
	elapsed := map[string]time.Duration{}
	paired := tableModules(t)
	training := trainingModules(t)
	for _, tm := range append(paired, training...) {
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
				checkFit(t, fmt.Sprintf("%s %s %d%%", tm.name, algo, pct), res, tm)
				r.cells[algo] = append(r.cells[algo], cell{fits: res.Fits, added: res.AddedFLOPs, share: res.AddedShare(),
					reached: float64(res.TotalAfter) / float64(res.TotalBefore)})
			}
		}
		rows = append(rows, r)
	}
	// The tables, and the claims.
	var b strings.Builder
	b.WriteString("paired dumps and bundled examples, then the corpus' training steps:\n")
	for _, set := range [][]row{rows[:len(paired)], rows[len(paired):]} {
		fmt.Fprintf(&b, "| limit | xla fits | plan fits | plan only | xla only | median total reached xla | plan | both fit: median added FLOPs xla | plan |\n|---|---|---|---|---|---|---|---|---|\n")
		for i, pct := range pcts {
			var fx, fp, onlyP, onlyX int
			var sx, sp, rx, rp []float64
			for _, r := range set {
				x, p := r.cells[remat.XLA][i], r.cells[remat.Plan][i]
				if !x.refuse {
					rx = append(rx, 100*x.reached)
				}
				rp = append(rp, 100*p.reached)
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
					sx, sp = append(sx, x.share), append(sp, p.share)
				}
			}
			mx, mp := median(sx), median(sp)
			fmt.Fprintf(&b, "| %d%% | %d/%d | %d/%d | %d | %d | %.1f%% | %.1f%% | %s | %s |\n", pct, fx, len(set), fp, len(set), onlyP, onlyX,
				median(rx), median(rp), pctOrDash(mx), pctOrDash(mp))
			if len(sx) > 0 && mp > mx {
				t.Errorf("at %d%% the plan algorithm's median added FLOPs %.3f%% exceed XLA's %.3f%%", pct, mp, mx)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| training module | instructions | total | 90%: xla | plan | 80%: xla | plan | 70%: xla | plan | 60%: xla | plan |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for k, r := range rows[len(paired):] {
		tm := training[k]
		total, _ := tm.plan(ctx, tm.m)
		fmt.Fprintf(&b, "| %s | %d | %s |", r.name, tm.m.NumInstructions(), assign.HumanBytes(total))
		for i := range pcts {
			for _, algo := range []string{remat.XLA, remat.Plan} {
				c := r.cells[algo][i]
				mark := ""
				if c.fits {
					mark = " fits"
				}
				fmt.Fprintf(&b, " %.1f%%%s, +%.2f%% FLOPs |", 100*c.reached, mark, c.share)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "time: xla %v, plan %v\n", elapsed[remat.XLA].Round(time.Millisecond), elapsed[remat.Plan].Round(time.Millisecond))
	t.Log("\n" + b.String())
}

func pctOrDash(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3f%%", x)
}

// checkFit holds what every Fit result must: the rewrite verifies and
// round-trips, its total is what planning it again from its text gives,
// and Fits says whether that is within the limit.
func checkFit(t *testing.T, what string, res *remat.FitResult, tm tableModule) {
	t.Helper()
	plan := tm.plan
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
	if len(res.Recomputed) == 0 {
		return
	}
	// The runtime's proof: the rewrite's plan passes the shadow check
	// (these modules' cuBLAS and cuDNN custom calls have no evaluator, so
	// their numbers are checked on the bundled examples and random modules
	// instead: plan_test.go, FuzzFit, remat.txtar).
	r, err := compile.Compile(context.Background(), back, compile.Options{Target: tm.target})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	sh, err := exec.Shadow(context.Background(), r.Assignment)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if sh.Violation != nil {
		t.Errorf("%s: shadow check: %v", what, sh.Violation)
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
