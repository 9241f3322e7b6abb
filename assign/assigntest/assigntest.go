// Package assigntest gives a Go test a golden file of its program's peak
// memory, as net/http/httptest gives one a server: a team that compiles a
// JAX or torch-xla model checks in the HLO it compiles (or points the test
// at an XLA dump directory), and the test fails when a change makes the
// program need more memory, saying which buffers grew.
//
//	func TestPeakMemory(t *testing.T) {
//		assigntest.Golden(t, []string{"testdata/train_step.hlo"}, assigntest.Options{Tolerance: 0.01})
//	}
//
// The first run with HLOMEM_UPDATE=1 writes testdata/TestPeakMemory.peak
// (HLOMEM_UPDATE=1 go test -run '^TestPeakMemory$' .); review it and
// commit it. Later runs compare every module with its line there and fail
// with a sentence per module that moved, such as
//
//	module jit_train_step@8c1f0e52: temp grew 12.5% (1.20GiB → 1.35GiB), over the 1% tolerance; new at the peak: fusion.42 f32[8,4096,4096] 512.00MiB
//
// A module whose memory shrank beyond the tolerance fails too, so that the
// gain is recorded by refreshing the file. The file is the one hlomem peak
// reads and writes (hlomem peak --golden=FILE), so a CI script and a Go
// test can share it.
//
// A golden line holds, per module: its key (NAME@SIGNATURE, the module's
// name and a fingerprint of its entry parameter and result shapes, so that
// two compiles of one function are two lines), the schedule, the lower
// bound, the temp and total bytes of the assignment, the step of the peak
// and the five largest buffers live there. Figures come from XLA's own heap
// algorithm by default ("xla"): deterministic, and on XLA's dumps the temp
// allocation XLA makes. The time-budgeted packers ("auto", "exact") are
// refused, since their result may depend on the machine's load.
//
// This package registers no flag: importing it leaves the test binary's
// flags to its own package, which may well define the common -update flag.
// Golden rewrites the file under HLOMEM_UPDATE=1, the switch of every
// golden file of hlomem; a package that wants its own flag to do it passes
// it on:
//
//	var update = flag.Bool("update", false, "rewrite golden files")
//
//	func TestPeakMemory(t *testing.T) {
//		assigntest.Golden(t, paths, assigntest.Options{Update: *update})
//	}
package assigntest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/peakgolden"
	"github.com/hlomem/hlomem/internal/goldenenv"
)

// Field names a byte figure of a module's line that a tolerance applies
// to.
type Field = peakgolden.Field

// The fields a tolerance applies to.
const (
	LowerBound = peakgolden.LowerBound // liveness' lower bound of the total (assign.Stats.LowerBound)
	Temp       = peakgolden.Temp       // the temp allocation's bytes (assign.Stats.TempBytes)
	Total      = peakgolden.Total      // every allocation's bytes (assign.Stats.TotalBytes)
)

// Report is the outcome of Check: a verdict per module (its Sentence says
// what moved), go-cmp's diff of the golden lines, and a summary.
type Report = peakgolden.Report

// Options configures Golden and Check. The zero value checks a GPU
// assignment with XLA's heap algorithm, each module in its own schedule (the
// best one for a module XLA has not scheduled), exactly, against
// testdata/NAME.peak.
type Options struct {
	// File is the golden file; "" means testdata/NAME.peak beside the
	// test, NAME being the test's name with "/" as "_". Check needs it.
	File string

	// Target, Algorithm and Schedule are hlomem assign's options:
	// the zero Target is GPU (assign.CPU, assign.TPU), Algorithm "" is
	// "xla" ("portfolio" or any greedy packer of assign/pack also gives
	// deterministic figures), Schedule "" keeps a scheduled module's order
	// and picks the best otherwise (keep, list, dfs, postorder, best).
	Target    assign.Target
	Algorithm string
	Schedule  string

	// Tolerance is how far, relative to the golden figure, each field may
	// move either way before the module fails: 0.01 is 1%, 0 (the
	// default) exact.
	Tolerance float64
	// Tolerances gives fields a tolerance of their own, over Tolerance:
	// map[assigntest.Field]float64{assigntest.Total: 0.05}.
	Tolerances map[Field]float64

	// Update rewrites the golden file instead of comparing. Golden also
	// updates when HLOMEM_UPDATE is set (not "0"); it reads no flag.
	Update bool
}

// Golden assigns every module of paths (HLO files, or XLA dump directories
// as hlomem peak reads them) and compares one line per module with the
// golden file, failing t with the sentence of each module out of
// tolerance and the diff of the lines. With HLOMEM_UPDATE=1 or
// Options.Update it rewrites the file instead (through a temporary file, so
// an interrupted run leaves the old one), and logs what changed. A missing
// golden file stops the test with the command that creates it; so do a
// missing input, a module that cannot be assigned and a malformed golden
// file.
func Golden(t testing.TB, paths []string, opts Options) {
	t.Helper()
	if opts.File == "" {
		opts.File = filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".peak")
	}
	opts.Update = opts.Update || goldenenv.Set()
	r, err := check(t.Context(), paths, opts)
	var missing *peakgolden.MissingError
	if errors.As(err, &missing) {
		t.Fatalf("assigntest: %v yet; create it by running this test with %s=1 (%s=1 go test -run %s in its package), then review the file and commit it",
			err, goldenenv.Var, goldenenv.Var, runPattern(t.Name()))
	}
	if err != nil {
		t.Fatalf("assigntest: %v", err)
	}
	if !r.Failed() {
		if r.Update {
			t.Logf("assigntest: %s", r)
		}
		return
	}
	var b strings.Builder
	for _, v := range r.Verdicts {
		if v.Kind.Failed() {
			b.WriteString(v.Sentence)
			b.WriteByte('\n')
		}
	}
	b.WriteString(r.Summary())
	t.Errorf("assigntest: peak memory differs from %s:\n%s\n\ngolden lines (-golden +now):\n%s\nIf the change is intended, rerun with %s=1 (%s=1 go test -run %s) and commit the file.",
		r.File, b.String(), r.Diff, goldenenv.Var, goldenenv.Var, runPattern(t.Name()))
}

// runPattern is go test's -run pattern that selects the test called name
// (and no other), quoted for a POSIX shell: '^TestModel$/^step$'.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return "'" + strings.ReplaceAll(strings.Join(parts, "/"), "'", `'\''`) + "'"
}

// Check is Golden without a test: it compares (or with opts.Update
// rewrites) and returns the report. A module out of tolerance is not an
// error (Report.Failed says so); the errors are those that keep the check
// from being made; a golden file that does not exist yet is an error
// (errors.Is(err, fs.ErrNotExist)) unless opts.Update creates it.
func Check(ctx context.Context, paths []string, opts Options) (*Report, error) {
	r, err := check(ctx, paths, opts)
	var missing *peakgolden.MissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%w; write it with Options.Update (in a Go test, %s=1) and review it", err, goldenenv.Var)
	}
	return r, err
}

// check is Check without the advice on a missing golden file.
func check(ctx context.Context, paths []string, opts Options) (*Report, error) {
	if opts.File == "" {
		return nil, errors.New("assigntest: Options.File names no golden file")
	}
	in, err := peakgolden.Collect(paths)
	if err != nil {
		return nil, err
	}
	popts := peakgolden.Options{Target: opts.Target, Algorithm: opts.Algorithm, Schedule: opts.Schedule}
	tol := peakgolden.Tolerance{Default: opts.Tolerance, Fields: opts.Tolerances}
	return peakgolden.Check(ctx, in.Files, opts.File, popts, tol, opts.Update)
}
