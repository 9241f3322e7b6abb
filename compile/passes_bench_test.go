package compile_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/fusion"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/cputime"
	"github.com/hlomem/hlomem/internal/hlogen"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/report"
	"github.com/hlomem/hlomem/schedule"
)

// passSizes are the sizes BenchmarkPass measures; HLOMEM_PASS_SIZES (a
// comma-separated list) replaces them, for a quicker run while developing.
// HLOMEM_PASS_NOLIMIT=1 runs every pass at every size, past the limits
// below (to measure a capped pass once).
var passSizes = []int{1_000, 10_000, 100_000, 1_000_000}

// passSeed is the seed of every generated module.
const passSeed = 1

// downstream is the scheduler the passes after the schedule pass
// (analysis, assign, check, shadow) get their input from: XLA's
// DefaultMemoryScheduler, which runs at every size, so that their curves
// do not depend on the search's own limits (the pipeline's default, the
// search, is measured by schedule-search).
const downstream = schedule.Heuristic

// BenchmarkPass times each pass of the pipeline alone on modules made by
// internal/hlogen (shapes chain, dag, loops, calls; 10^3 to 10^6
// instructions; seed passSeed): BenchmarkPass/<pass>/<shape>/n=<N>. Each
// pass's input is prepared by the passes before it, outside the timer, as
// the pipeline (Compile) prepares it, and each pass is the function its
// pipeline step calls. It reports per instruction of the generated module
// (metric "instrs"): the time ("µs/instr"), the process's CPU time
// ("cpu-µs/instr": user and system, every goroutine, the garbage
// collector's included; steadier than the time on a shared machine, and
// above it for a pass that runs in parallel), the bytes allocated
// (runtime.MemStats.TotalAlloc, "B/instr") and the peak of the heap
// (runtime/metrics' heap objects, live and not yet swept, sampled every
// 2 ms) above its level when the pass started ("peak-heap-B/instr").
//
// The passes, in pipeline order: parse (hlo.Parse of the text), verify
// (hlo.Verify), flatten (hlo.FlattenCallGraphContext), simplify, cse, dce
// (fusion's), fusion (fusion.Run with its guard, Measure and Probe as
// the pipeline's fusion pass sets them for the default scheduler, Before
// the module before simplify), copy-insertion
// (liveness.InsertCopiesUnscheduled), schedule-<name> (schedule.Apply
// with each scheduler, on the analysis copy insertion left),
// analysis (liveness.Analyze under the heuristic's schedule), assign
// (assign.Assign, default options: the auto packer), check (assign.Check),
// shadow (exec.Shadow, the plan's proof) and report (report.Build without
// what-ifs and WriteText: it runs the whole pipeline, with PlanCost, as
// hlomem report does; up to reportLimit). schedule-optimal runs up to optimalLimit
// instructions only: the exact search is meant for small modules (it
// searches computations of at most schedule.OptimalBlocks instructions
// whole, and past that its CPU timeout, 60 s, sets its time).
//
// Loops run shape by shape and size by size, every pass of a module
// before the next module, so that the prepared inputs are made once per
// module (and once per -count run of a pass only where the pass changes
// its input).
func BenchmarkPass(b *testing.B) {
	sizes := passSizes
	if s := os.Getenv("HLOMEM_PASS_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("HLOMEM_PASS_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, shape := range hlogen.Shapes {
		for _, n := range sizes {
			st := &stages{shape: shape, n: n}
			for _, p := range passBenches {
				b.Run(fmt.Sprintf("%s/%s/n=%d", p.name, shape, n), func(b *testing.B) {
					if p.limit > 0 && n > p.limit && os.Getenv("HLOMEM_PASS_NOLIMIT") == "" {
						b.Skip(p.why)
					}
					p.run(b, st)
				})
				st.release(b, p.name)
			}
		}
	}
}

// optimalLimit is the largest module schedule-optimal runs on.
const optimalLimit = 10_000

// fusionLimit is the largest module fusion (with its guard) runs on, and
// fusionWhy why: measured at 10^4 the guard takes 3 to 36 s a module.
const fusionLimit = 10_000

// reportLimit is the largest module report runs on, and reportWhy why.
const reportLimit = 100_000

const reportWhy = "report.Build runs the whole pipeline first (the search with the plan's total as its cost, assign, check): one run took 47 s on the 10^6 chain and minutes on the dag, past this target's 20 minutes at 3 runs; the pipeline's passes are measured on their own above"

const fusionWhy = "fusion's guard, once the fused module measures above the unfused one (every shape here at 10^4), declines culprits one by one for up to 16 rounds, each a bisection of log2(fusions) trials that fuses and prepares the whole module again: about 16 x 17 full passes at 10^5, minutes a module"

type passBench struct {
	name string
	// limit, when set, is the largest n the pass is measured at, why the
	// reason.
	limit int
	why   string
	run   func(b *testing.B, st *stages)
}

var passBenches = []passBench{
	{name: "parse", run: func(b *testing.B, st *stages) {
		src := []byte(st.text(b))
		timePass(b, st, func() {}, func() {
			if _, err := hlo.Parse("gen.hlo", src); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "verify", run: func(b *testing.B, st *stages) {
		m := st.parsed(b)
		timePass(b, st, func() {}, func() {
			if err := hlo.Verify(m); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "flatten", run: func(b *testing.B, st *stages) {
		var m *hlo.Module
		timePass(b, st, func() { m = st.parsed(b).Clone() }, func() {
			if _, err := hlo.FlattenCallGraphContext(context.Background(), m); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "simplify", run: func(b *testing.B, st *stages) {
		var m *hlo.Module
		timePass(b, st, func() { m = st.flat(b).Clone() }, func() {
			if _, err := fusion.Simplify(m); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "cse", run: func(b *testing.B, st *stages) {
		var m *hlo.Module
		timePass(b, st, func() { m = st.simplified(b).Clone() }, func() {
			if _, err := fusion.CSE(m); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "dce", run: func(b *testing.B, st *stages) {
		var m *hlo.Module
		timePass(b, st, func() { m = st.csed(b).Clone() }, func() {
			if _, err := fusion.DCE(m); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "fusion", limit: fusionLimit, why: fusionWhy, run: func(b *testing.B, st *stages) {
		ctx := context.Background()
		// As compile's fusion pass, for the default options: the
		// pipeline's measure under its scheduler (the search, for an
		// unscheduled module), the probe under the heuristic.
		o := fusion.Options{
			Measure: compile.FusionMeasure(ctx, compile.Options{}),
			Probe:   compile.FusionMeasure(ctx, compile.Options{Scheduler: schedule.Heuristic}),
		}
		var m *hlo.Module
		timePass(b, st, func() {
			m = st.optimized(b).Clone()
			o.Before = st.flat(b).Clone()
		}, func() {
			if _, err := fusion.Run(ctx, m, o); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "copy-insertion", run: func(b *testing.B, st *stages) {
		var m *hlo.Module
		timePass(b, st, func() { m = st.flat(b).Clone() }, func() {
			if _, _, err := liveness.InsertCopiesUnscheduled(context.Background(), m, liveness.CheckVerified); err != nil {
				b.Fatal(err)
			}
		})
	}},
	schedulerBench(schedule.Keep, 0, ""),
	schedulerBench(schedule.PostOrder, 0, ""),
	schedulerBench(schedule.DFS, 0, ""),
	schedulerBench(schedule.List, 0, ""),
	schedulerBench(schedule.Heuristic, 0, ""),
	schedulerBench(schedule.Search, 0, ""),
	schedulerBench(schedule.Optimal, optimalLimit, "the exact search is meant for small modules: it searches computations of at most schedule.OptimalBlocks instructions whole, and past 10^4 instructions its CPU timeout (60 s) sets its time"),
	{name: "analysis", run: func(b *testing.B, st *stages) {
		var m *hlo.Module
		var s *liveness.Schedule
		timePass(b, st, func() { m, s = cloneScheduled(st.laid(b)) }, func() {
			if _, err := liveness.Analyze(m, liveness.Options{Schedule: s}); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "assign", run: func(b *testing.B, st *stages) {
		a := st.laid(b)
		timePass(b, st, func() {}, func() {
			if _, err := assign.Assign(context.Background(), a, assign.Options{Target: assign.GPU}); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "check", run: func(b *testing.B, st *stages) {
		as := st.plan(b)
		timePass(b, st, func() {}, func() {
			if err := assign.Check(as); err != nil {
				b.Fatal(err)
			}
		})
	}},
	{name: "shadow", run: func(b *testing.B, st *stages) {
		as := st.plan(b)
		timePass(b, st, func() {}, func() {
			r, err := exec.Shadow(context.Background(), as)
			if err != nil {
				b.Fatal(err)
			}
			if r.Violation != nil {
				b.Fatalf("the shadow run finds the plan unsafe: %v", r.Violation)
			}
		})
	}},
	{name: "report", limit: reportLimit, why: reportWhy, run: func(b *testing.B, st *stages) {
		m := st.parsed(b)
		timePass(b, st, func() {}, func() {
			r, err := report.Build(context.Background(), m, report.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.WriteText(io.Discard); err != nil {
				b.Fatal(err)
			}
		})
	}},
}

// schedulerBench is the schedule pass (schedule.Apply) with the named
// scheduler, on the analysis copy insertion leaves.
func schedulerBench(name string, limit int, why string) passBench {
	return passBench{name: "schedule-" + name, limit: limit, why: why, run: func(b *testing.B, st *stages) {
		var a *liveness.Analysis
		timePass(b, st, func() { a = st.unscheduled(b) }, func() {
			if _, _, err := schedule.Apply(context.Background(), a, name, schedule.Options{}); err != nil {
				b.Fatal(err)
			}
		})
	}}
}

// timePass runs pass b.N times, each after prep (outside the timer), and
// reports its time, allocated bytes and peak heap per instruction.
func timePass(b *testing.B, st *stages, prep, pass func()) {
	n := st.instructions(b)
	var elapsed, cpu time.Duration
	cpuOK := true
	var alloc, peak uint64
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		prep()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		stop := samplePeak()
		b.StartTimer()
		c0, ok0 := cputime.Process()
		start := time.Now()
		pass()
		elapsed += time.Since(start)
		c1, ok1 := cputime.Process()
		b.StopTimer()
		cpu += c1 - c0
		cpuOK = cpuOK && ok0 && ok1
		p := stop()
		runtime.ReadMemStats(&after)
		alloc += after.TotalAlloc - before.TotalAlloc
		peak = max(peak, p)
	}
	per := float64(b.N) * float64(n)
	b.ReportMetric(elapsed.Seconds()*1e6/per, "µs/instr")
	if cpuOK {
		b.ReportMetric(cpu.Seconds()*1e6/per, "cpu-µs/instr")
	}
	b.ReportMetric(float64(alloc)/per, "B/instr")
	b.ReportMetric(float64(peak)/float64(n), "peak-heap-B/instr")
	b.ReportMetric(float64(n), "instrs")
}

// samplePeak samples the heap's objects (live and not yet swept) every
// 2 ms until the returned function is called, which returns the peak
// above the level at the start.
func samplePeak() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	base := read()
	var peak atomic.Uint64
	peak.Store(base)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if v := read(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		if v := read(); v > peak.Load() {
			peak.Store(v)
		}
		return peak.Load() - base
	}
}

// stages are one generated module's inputs to each pass, made on first
// use and kept (unchanged: a pass that changes its input gets a clone).
type stages struct {
	shape string
	n     int

	src     string
	mod     *hlo.Module // parsed, verified
	flatM   *hlo.Module // flattened
	simpM   *hlo.Module // simplified
	cseM    *hlo.Module // and CSE
	optM    *hlo.Module // and DCE: fusion's input
	copied  *hlo.Module // flattened, copies inserted
	laidA   *liveness.Analysis
	planned *assign.Assignment
}

func (st *stages) text(b *testing.B) string {
	if st.src == "" {
		st.src = hlogen.Module(st.shape, st.n, passSeed)
	}
	return st.src
}

func (st *stages) parsed(b *testing.B) *hlo.Module {
	if st.mod == nil {
		m, err := hlo.ParseModule("gen.hlo", st.text(b))
		if err != nil {
			b.Fatal(err)
		}
		if err := hlo.Verify(m); err != nil {
			b.Fatal(err)
		}
		st.mod = m
	}
	return st.mod
}

// instructions is the generated module's instruction count, the unit of
// every per-instruction figure.
func (st *stages) instructions(b *testing.B) int { return st.parsed(b).NumInstructions() }

func (st *stages) flat(b *testing.B) *hlo.Module {
	if st.flatM == nil {
		m := st.parsed(b).Clone()
		if _, err := hlo.FlattenCallGraphContext(context.Background(), m); err != nil {
			b.Fatal(err)
		}
		st.flatM = m
	}
	return st.flatM
}

func (st *stages) simplified(b *testing.B) *hlo.Module {
	if st.simpM == nil {
		m := st.flat(b).Clone()
		if _, err := fusion.Simplify(m); err != nil {
			b.Fatal(err)
		}
		st.simpM = m
	}
	return st.simpM
}

func (st *stages) csed(b *testing.B) *hlo.Module {
	if st.cseM == nil {
		m := st.simplified(b).Clone()
		if _, err := fusion.CSE(m); err != nil {
			b.Fatal(err)
		}
		st.cseM = m
	}
	return st.cseM
}

func (st *stages) optimized(b *testing.B) *hlo.Module {
	if st.optM == nil {
		m := st.csed(b).Clone()
		if _, err := fusion.DCE(m); err != nil {
			b.Fatal(err)
		}
		st.optM = m
	}
	return st.optM
}

// unscheduled is a fresh analysis, without live ranges, of the module
// after copy insertion (the schedule pass's input; each scheduler changes
// it, so each gets its own).
func (st *stages) unscheduled(b *testing.B) *liveness.Analysis {
	if st.copied == nil {
		m := st.flat(b).Clone()
		if _, _, err := liveness.InsertCopiesUnscheduled(context.Background(), m, liveness.CheckVerified); err != nil {
			b.Fatal(err)
		}
		st.copied = m
	}
	a, err := liveness.AnalyzeUnscheduled(context.Background(), st.copied.Clone(), liveness.CheckVerified)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// laid is the analysis laid out under the downstream scheduler.
func (st *stages) laid(b *testing.B) *liveness.Analysis {
	if st.laidA == nil {
		a, _, err := schedule.Apply(context.Background(), st.unscheduled(b), downstream, schedule.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st.laidA = a
	}
	return st.laidA
}

func (st *stages) plan(b *testing.B) *assign.Assignment {
	if st.planned == nil {
		as, err := assign.Assign(context.Background(), st.laid(b), assign.Options{Target: assign.GPU})
		if err != nil {
			b.Fatal(err)
		}
		st.planned = as
	}
	return st.planned
}

// release drops the inputs no pass after the named one reads, so that
// the collector does not scan them through the rest of the module's
// passes (at 10^6 instructions each prepared module is hundreds of MB).
func (st *stages) release(b *testing.B, pass string) {
	switch pass {
	case "fusion":
		st.simpM, st.cseM, st.optM = nil, nil, nil
	case "schedule-" + schedule.Optimal:
		if st.copied != nil {
			st.laid(b) // from copied, before it goes
		}
		st.flatM, st.copied = nil, nil
	case "shadow":
		st.laidA, st.planned = nil, nil
	}
}

// cloneScheduled returns a clone of a's module and a's schedule over the
// clone's instructions (Clone keeps computations and instructions in
// order).
func cloneScheduled(a *liveness.Analysis) (*hlo.Module, *liveness.Schedule) {
	m := a.Module.Clone()
	s := liveness.NewSchedule(a.Schedule.Name)
	for ci, c := range a.Module.Computations {
		seq, ok := a.Schedule.Lookup(c)
		if !ok {
			continue
		}
		nc := m.Computations[ci]
		ix := hlo.NewInstructionIndex(c)
		out := make([]*hlo.Instruction, len(seq))
		for i, in := range seq {
			out[i] = nc.Instructions[ix.Of(in)]
		}
		s.Set(nc, out)
	}
	return m, s
}
