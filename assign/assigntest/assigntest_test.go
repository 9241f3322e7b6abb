package assigntest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/assigntest"
	"github.com/hlomem/hlomem/internal/golden"
	"github.com/stretchr/testify/require"
)

// fakeTB records what Golden reports instead of failing the real test; the
// embedded testing.TB (the real test) serves the rest. Fatalf ends the
// goroutine as testing's does, so Golden runs in one of its own (run).
type fakeTB struct {
	testing.TB
	name   string
	errors []string
	fatals []string
	logs   []string
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// run calls Golden with a fresh fakeTB and returns it.
func run(t *testing.T, paths []string, opts assigntest.Options) *fakeTB {
	t.Helper()
	f := &fakeTB{TB: t, name: "TestModel/step"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		assigntest.Golden(f, paths, opts)
	}()
	<-done
	return f
}

// compareMode makes Golden compare, whatever the environment of the run.
func compareMode(t *testing.T) {
	t.Setenv(golden.EnvUpdate, "")
}

// writeModel writes the example's model with the given batch size.
func writeModel(t *testing.T, path string, batch int) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(mlp, "BATCH", strconv.Itoa(batch))), 0o644))
}

// TestGoldenRoundTrip runs Golden as a user's test would, against a temp
// directory: no file yet, record, pass, fail on growth, pass after the
// update, and a shrink that fails too.
func TestGoldenRoundTrip(t *testing.T) {
	compareMode(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "mlp.hlo")
	file := filepath.Join(dir, "mlp.peak")
	opts := assigntest.Options{File: file, Tolerance: 0.01}
	writeModel(t, model, 64)

	f := run(t, []string{model}, opts)
	// No file yet: the message says first how to create it from go test.
	require.Equal(t, []string{"assigntest: " + file + ": no such golden file yet; create it by running this test with HLOMEM_UPDATE=1 (HLOMEM_UPDATE=1 go test -run '^TestModel$/^step$' in its package), then review the file and commit it"}, f.fatals)

	t.Setenv(golden.EnvUpdate, "1")
	f = run(t, []string{model}, opts)
	require.Empty(t, f.errors)
	require.Empty(t, f.fatals)
	require.Equal(t, []string{"assigntest: wrote " + file + " (1 module)\n"}, f.logs)
	recorded, err := os.ReadFile(file)
	require.NoError(t, err)
	t.Setenv(golden.EnvUpdate, "0")

	f = run(t, []string{model}, opts)
	require.Empty(t, f.errors)
	require.Empty(t, f.fatals)
	require.Empty(t, f.logs)

	writeModel(t, model, 128)
	f = run(t, []string{model}, opts)
	require.Empty(t, f.fatals)
	require.Len(t, f.errors, 1)
	msg := f.errors[0]
	require.Contains(t, msg, "assigntest: peak memory differs from "+file+":\n"+
		"module jit_mlp@1c4feb63: temp grew 100.0% (64.0KiB → 128.0KiB), total grew 42.8% (449.0KiB → 641.0KiB) and lower bound grew 42.8% (449.0KiB → 641.0KiB), over the 1% tolerance; grew at the peak: x f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB), h f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB), bias f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB); entry signature changed: the golden file has the module as jit_mlp@6ffdd663 (line 3)\n"+
		"1 of 1 module out of tolerance of "+file+": 1 grew\n")
	require.Contains(t, msg, "golden lines (-golden +now):")
	// go-cmp's spacing is deliberately unstable: look for the fields.
	require.Regexp(t, `(?m)^-[\s\x{a0}]+Temp:\s+65536,$`, msg)
	require.Regexp(t, `(?m)^\+[\s\x{a0}]+Temp:\s+131072,$`, msg)
	require.Contains(t, msg, "rerun with HLOMEM_UPDATE=1 (HLOMEM_UPDATE=1 go test -run '^TestModel$/^step$') and commit the file.")
	// A failing comparison never writes.
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, string(recorded), string(b))

	opts.Update = true
	f = run(t, []string{model}, opts)
	require.Empty(t, f.errors)
	require.Len(t, f.logs, 1)
	require.Contains(t, f.logs[0], "module jit_mlp@1c4feb63: temp grew 100.0%")
	require.Contains(t, f.logs[0], "wrote "+file+" (1 module: 1 grew)")
	opts.Update = false
	f = run(t, []string{model}, opts)
	require.Empty(t, f.errors)

	// Back to 64: a gain beyond the tolerance fails as well, so that the
	// golden file records it.
	writeModel(t, model, 64)
	f = run(t, []string{model}, opts)
	require.Len(t, f.errors, 1)
	require.Contains(t, f.errors[0], "module jit_mlp@6ffdd663: temp shrank 50.0% (128.0KiB → 64.0KiB), total shrank 30.0% (641.0KiB → 449.0KiB) and lower bound shrank 30.0% (641.0KiB → 449.0KiB), beyond the 1% tolerance; shrank at the peak:")
	require.Contains(t, f.errors[0], "a gain: update the golden file to record it\n")
}

// TestGoldenDefaultFile: without Options.File the golden file is
// testdata/NAME.peak, NAME the test's name with "/" as "_".
func TestGoldenDefaultFile(t *testing.T) {
	compareMode(t)
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "mlp.hlo"), 64)
	t.Chdir(dir)
	f := run(t, []string{"mlp.hlo"}, assigntest.Options{Update: true})
	require.Empty(t, f.fatals)
	require.Equal(t, []string{"assigntest: wrote testdata/TestModel_step.peak (1 module)\n"}, f.logs)
	f = run(t, []string{"mlp.hlo"}, assigntest.Options{})
	require.Empty(t, f.fatals)
	require.Empty(t, f.errors)
	// An update that changes nothing leaves the file alone.
	f = run(t, []string{"mlp.hlo"}, assigntest.Options{Update: true})
	require.Equal(t, []string{"assigntest: module jit_mlp@6ffdd663: ok (temp 64.0KiB, total 449.0KiB, lower bound 449.0KiB)\ntestdata/TestModel_step.peak is up to date (1 module)\n"}, f.logs)
}

// TestGoldenTolerances: a field's own tolerance overrides Tolerance.
func TestGoldenTolerances(t *testing.T) {
	compareMode(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "mlp.hlo")
	writeModel(t, model, 64)
	file := filepath.Join(dir, "mlp.peak")
	f := run(t, []string{model}, assigntest.Options{File: file, Update: true})
	require.Empty(t, f.fatals)
	writeModel(t, model, 128) // temp +100%, total and lower bound +42.8%

	f = run(t, []string{model}, assigntest.Options{File: file, Tolerance: 0.5, Tolerances: map[assigntest.Field]float64{assigntest.Temp: 1}})
	require.Empty(t, f.errors)
	f = run(t, []string{model}, assigntest.Options{File: file, Tolerance: 1, Tolerances: map[assigntest.Field]float64{assigntest.Total: 0.4}})
	require.Len(t, f.errors, 1)
	require.Contains(t, f.errors[0], "module jit_mlp@1c4feb63: total grew 42.8% (449.0KiB → 641.0KiB), over the 40% tolerance; within tolerance: temp grew 100.0% (64.0KiB → 128.0KiB) and lower bound grew 42.8% (449.0KiB → 641.0KiB);")

	f = run(t, []string{model}, assigntest.Options{File: file, Tolerances: map[assigntest.Field]float64{"peak": 1}})
	require.Equal(t, []string{`assigntest: tolerance for unknown field "peak" (want lower_bound, temp or total)`}, f.fatals)
}

// TestGoldenOptions: the options the figures depend on are in the file's
// header; a run with others is refused, and the timed packers are refused.
func TestGoldenOptions(t *testing.T) {
	compareMode(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "mlp.hlo")
	writeModel(t, model, 64)
	file := filepath.Join(dir, "mlp.peak")
	f := run(t, []string{model}, assigntest.Options{File: file, Update: true, Target: assign.CPU, Algorithm: "portfolio", Schedule: "dfs"})
	require.Empty(t, f.fatals)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "# hlomem peak v2 target=cpu algorithm=portfolio schedule=dfs\n"), string(b))

	f = run(t, []string{model}, assigntest.Options{File: file, Target: assign.CPU, Algorithm: "portfolio"})
	require.Equal(t, []string{"assigntest: " + file + ":1: written with schedule=dfs, this run has schedule=default: run with the file's options, or rewrite it with --update"}, f.fatals)
	f = run(t, []string{model}, assigntest.Options{File: file, Algorithm: "auto"})
	require.Len(t, f.fatals, 1)
	require.Contains(t, f.fatals[0], `algorithm "auto" searches within a time budget`)

	_, err = assigntest.Check(context.Background(), []string{model}, assigntest.Options{})
	require.EqualError(t, err, "assigntest: Options.File names no golden file")
}

// TestExampleDump is the project's example of the whole round trip
// (testdata/peak, README "Catch memory regressions in CI"): an XLA dump
// directory checked against its golden file, the one hlomem peak reads
// too. HLOMEM_UPDATE=1 rewrites it, and so does this package's -update
// (from internal/golden, a test-only import), passed on as a user's own
// flag would be.
func TestExampleDump(t *testing.T) {
	assigntest.Golden(t, []string{"../../testdata/peak/dump"}, assigntest.Options{File: "../../testdata/peak/memory.peak", Update: golden.Updating()})
}
