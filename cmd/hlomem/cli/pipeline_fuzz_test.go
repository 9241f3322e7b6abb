package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/rogpeppe/go-internal/txtar"
)

// pipelineOptions are the assignments FuzzPipeline makes of every module:
// XLA's own heap, the default packer with a short search, and the
// portfolio, across the three targets. Budgets stay small so that each
// input runs in milliseconds.
var pipelineOptions = []assign.AssignOptions{
	{Target: "gpu", Algorithm: "xla"},
	{Target: "cpu", Algorithm: "auto", Budget: 10 * time.Millisecond},
	{Target: "tpu", Algorithm: "portfolio", Budget: 10 * time.Millisecond},
}

// pipelineSeedLimit bounds the size of the corpus modules FuzzPipeline
// starts from, which keeps each execution fast.
const pipelineSeedLimit = 16 << 10

var inlineHLO = regexp.MustCompile("(?s)`(HloModule .*?)`")

// FuzzPipeline feeds modules through the whole pipeline as hlomem assign
// runs it: parse, verify, flatten the call graph, prepare (copy insertion
// for an unscheduled module, then the default scheduler; analyzeModule),
// analyse, assign with each of pipelineOptions, CheckAssignment and the
// packing checks, and every output format. It fails on a panic, on a plan
// that does not pass the checks, and on a module that hlo.Verify accepts
// but the later stages refuse with anything other than a positioned input
// error (an unknown opcode, a shape without a size): what Verify lets
// through must be planned, or refused with a position. A module Verify
// rejects goes through the pipeline all the same, which must refuse it
// without panicking.
//
// Seeds: the small modules of the corpus, the modules of the tests of hlo,
// liveness and assign, those of this package's scripts and the demo.
func FuzzPipeline(f *testing.F) {
	for _, s := range pipelineSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		mods, err := hlo.Parse("fuzz.hlo", src)
		if err != nil {
			return
		}
		for _, m := range mods {
			runPipeline(t, m)
		}
	})
}

// runPipeline takes one parsed module through the pipeline and fails t as
// FuzzPipeline says.
func runPipeline(t *testing.T, m *hlo.Module) {
	t.Helper()
	verr := hlo.Verify(m)
	a, err := analyzeModule(m, "")
	if err != nil {
		if verr == nil && !isInputError(err) {
			t.Fatalf("module %s passes hlo.Verify, then the pipeline fails without a position: %v", m.Name, err)
		}
		return
	}
	if verr != nil {
		t.Fatalf("module %s fails hlo.Verify (%v), yet the pipeline analysed it", m.Name, verr)
	}
	if err := a.WriteXLA(io.Discard); err != nil {
		t.Fatalf("liveness xla output: %v", err)
	}
	if err := a.WriteJSON(io.Discard); err != nil {
		t.Fatalf("liveness json output: %v", err)
	}
	for _, opts := range pipelineOptions {
		as, err := assign.Assign(context.Background(), a, opts)
		if err != nil {
			t.Fatalf("%s/%s: the analysed module is not assigned: %v", opts.Target, opts.Algorithm, err)
		}
		if err := assign.CheckAssignment(as); err != nil {
			t.Fatalf("%s/%s: invalid plan: %v", opts.Target, opts.Algorithm, err)
		}
		for _, h := range as.Heaps {
			if err := assign.Check(h.Problem, h.Solution.Packing); err != nil {
				t.Fatalf("%s/%s: invalid temp heap: %v", opts.Target, opts.Algorithm, err)
			}
			if h.Solution.Height() < h.LowerBound {
				t.Fatalf("%s/%s: heap height %d below its lower bound %d", opts.Target, opts.Algorithm, h.Solution.Height(), h.LowerBound)
			}
		}
		for _, w := range []func(io.Writer) error{as.WriteXLA, as.WriteReport, as.WriteJSON, as.WriteTempCSV} {
			if err := w(io.Discard); err != nil {
				t.Fatalf("%s/%s: output: %v", opts.Target, opts.Algorithm, err)
			}
		}
	}
}

// isInputError reports whether err carries a position in the input.
func isInputError(err error) bool {
	var list hlo.ErrorList
	var one *hlo.Error
	return errors.As(err, &list) || errors.As(err, &one)
}

// pipelineSeeds gathers FuzzPipeline's seeds.
func pipelineSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	add := func(b []byte) {
		if len(b) <= pipelineSeedLimit {
			seeds = append(seeds, b)
		}
	}
	if d := corpus.Dir(); d != "" {
		for _, pat := range []string{"hlo/*/*.hlo", "paired/*/*after_optimizations.txt",
			"paired-jax/*/*after_optimizations.txt", "paired-jax-cpu/*/*after_optimizations.txt"} {
			files, _ := filepath.Glob(filepath.Join(d, pat))
			for _, file := range files {
				if st, err := os.Stat(file); err == nil && st.Size() <= pipelineSeedLimit {
					if b, err := os.ReadFile(file); err == nil {
						add(b)
					}
				}
			}
		}
	}
	for _, dir := range []string{"../../../hlo", "../../../liveness", "../../../assign"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			for _, m := range inlineHLO.FindAllSubmatch(b, -1) {
				add(m[1])
			}
		}
	}
	scripts, _ := filepath.Glob("testdata/script/*.txtar")
	for _, file := range scripts {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasSuffix(f.Name, ".hlo") {
				add(f.Data)
			}
		}
	}
	if b, err := os.ReadFile("../../../testdata/demo.hlo"); err == nil {
		add(b)
	}
	if len(seeds) == 0 {
		tb.Fatal("no seeds found")
	}
	return seeds
}
