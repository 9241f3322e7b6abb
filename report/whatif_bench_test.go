package report

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// benchModule is one corpus module of BenchmarkReportWhatIf with the
// options hlomem report gives it.
type benchModule struct {
	name string
	m    *hlo.Module
	opts Options
}

// whatIfBenchModules reads every module the report's corpus test reads
// (every one, not the -short sample), with the options hlomem report
// plans it with: its defaults, the CPU for a paired-jax-cpu dump (as the
// file name says), XLA's plan beside an after_optimizations dump.
func whatIfBenchModules(b testing.TB) []benchModule {
	files := corpus.All(b, "hlo/*/*.hlo")
	files = append(files, corpus.All(b, "paired*/*/*after_optimizations.txt")...)
	var out []benchModule
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		mods, err := hlo.ParseString(f, string(src))
		if err != nil && strings.Contains(err.Error(), "no HLO module") {
			continue
		}
		if err != nil {
			b.Fatal(f, err)
		}
		var x *assign.XLAAssignment
		if xf := strings.TrimSuffix(f, ".txt") + "-buffer-assignment.txt"; strings.HasSuffix(f, "after_optimizations.txt") {
			xsrc, err := os.ReadFile(xf)
			if err != nil {
				b.Fatal(err)
			}
			if x, err = assign.ReadXLA(xf, xsrc); err != nil {
				b.Fatal(xf, err)
			}
		}
		for _, m := range mods {
			c := compile.Options{PlanCost: true}
			c.Target = assign.GPU
			if strings.Contains(f, "paired-jax-cpu") {
				c.Target = assign.CPU
			}
			// The file as the corpus names it, hlo/ and a paired dump's
			// directory left out.
			name, _ := filepath.Rel(corpus.Dir(), f)
			name = strings.TrimPrefix(name, "hlo/")
			if d := filepath.Dir(name); strings.HasPrefix(d, "paired") {
				name = filepath.Join(filepath.Dir(d), filepath.Base(name))
			}
			if len(mods) > 1 {
				name += "/" + m.Name
			}
			out = append(out, benchModule{name: name, m: m, opts: Options{Compile: c, XLA: x, File: f}})
		}
	}
	return out
}

// BenchmarkReportWhatIf builds every corpus module's report with the
// what-ifs hlomem report plans (WhatIfs) and without them (hlomem report
// --what-if=false), and reports the wall time of each (full-s,
// without-s), their ratio (ratio, issue 34's target: at most 3) and the
// bytes each allocated (full-MB, without-MB). One line per module:
//
//	go test ./report -run XXX -bench ReportWhatIf -benchtime 1x -count 3
//
// (-bench 'ReportWhatIf/NAME' for one module; the medians of -count 3
// are issue 34's figures.)
func BenchmarkReportWhatIf(b *testing.B) {
	ctx := context.Background()
	for _, bm := range whatIfBenchModules(b) {
		b.Run(bm.name, func(b *testing.B) {
			without := bm.opts
			full := bm.opts
			full.WhatIf = WhatIfs(bm.m)
			var tFull, tWithout time.Duration
			var aFull, aWithout uint64
			var ms runtime.MemStats
			for range b.N {
				for _, run := range []struct {
					o     Options
					t     *time.Duration
					alloc *uint64
				}{{without, &tWithout, &aWithout}, {full, &tFull, &aFull}} {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					before := ms.TotalAlloc
					t0 := time.Now()
					r, err := Build(ctx, bm.m, run.o)
					*run.t += time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					runtime.ReadMemStats(&ms)
					*run.alloc += ms.TotalAlloc - before
					if len(r.WhatIf) != len(run.o.WhatIf) {
						b.Fatalf("%d what-ifs planned of %d", len(r.WhatIf), len(run.o.WhatIf))
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(tFull.Seconds()/n, "full-s")
			b.ReportMetric(tWithout.Seconds()/n, "without-s")
			b.ReportMetric(tFull.Seconds()/tWithout.Seconds(), "ratio")
			b.ReportMetric(float64(aFull)/n/1e6, "full-MB")
			b.ReportMetric(float64(aWithout)/n/1e6, "without-MB")
		})
	}
}
