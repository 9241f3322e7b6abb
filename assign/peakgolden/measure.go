package peakgolden

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
)

// TopBuffers is how many of the largest buffers live at the peak a Line
// lists.
const TopBuffers = 5

// DefaultAlgorithm packs the temp heaps when Options.Algorithm is "":
// XLA's own heap algorithm, so that the temp figure is the one XLA
// allocates for the module, and deterministic.
const DefaultAlgorithm = "xla"

// Options are the assignment options the figures depend on; the zero value
// is hlomem peak's default: GPU, XLA's heap algorithm, the module's own
// schedule when XLA scheduled it and the best of hlomem's otherwise.
type Options struct {
	// Target is the backend; the zero Target is GPU. For TPU, arrays
	// without a tiled layout get tpu-v4's, as hlomem assign does by default.
	Target assign.Target
	// Algorithm is the temp-heap packer (assign.Options.Algorithm); ""
	// means DefaultAlgorithm. The time-budgeted "auto" and "exact" are
	// refused: a golden figure must not depend on the machine's load.
	Algorithm string
	// Schedule is the scheduler (schedule.Names): ""
	// keeps a scheduled module's order and picks the best otherwise.
	Schedule string
	// XLARules are the live-range rules (liveness.Rules); "" means the
	// current (2026). ExecutionThreads, when set, limits the analysis
	// to those threads (liveness.Settings). The header records both when
	// they are not the defaults.
	XLARules         liveness.Rules
	ExecutionThreads []string
}

// Check refuses options that cannot give a golden file (an unknown
// packer or scheduler, or one whose figures depend on timing), so that a
// caller can refuse them before it reads any input.
func (o Options) Check() error {
	_, err := o.resolved()
	return err
}

// resolved fills in the defaults and refuses what cannot give
// deterministic figures.
func (o Options) resolved() (Options, error) {
	if o.Target.Name == "" {
		o.Target = assign.GPU
	}
	if o.Algorithm == "" {
		o.Algorithm = DefaultAlgorithm
	}
	switch o.Algorithm {
	case "auto", "exact":
		return o, fmt.Errorf("algorithm %q searches within a time budget, so its figures may change from run to run; use xla (the default), portfolio or another greedy packer", o.Algorithm)
	}
	if _, ok := pack.PackerNamed(o.Algorithm); !ok {
		var names []string
		for _, n := range pack.Algorithms() {
			if n != "auto" && n != "exact" {
				names = append(names, n)
			}
		}
		return o, fmt.Errorf("unknown algorithm %q (want one of %s)", o.Algorithm, strings.Join(names, ", "))
	}
	if err := schedule.Check(o.Schedule); err != nil {
		return o, err
	}
	r, err := liveness.ParseRules(string(o.XLARules))
	if err != nil {
		return o, err
	}
	o.XLARules = r
	return o, nil
}

// settings are the liveness settings of opts (resolved).
func (o Options) settings() liveness.Settings {
	return liveness.Settings{XLARules: o.XLARules, ExecutionThreads: o.ExecutionThreads}
}

// Buffer is one of the largest buffers live at a module's peak.
type Buffer struct {
	// Name is the defining instruction's name, with the shape index when
	// the value is a tuple element ("custom-call.5{1}").
	Name string
	// Shape is the value's shape without layout or spaces.
	Shape string
	Bytes int64
}

// String gives the buffer as sentences name it: fusion.42 f32[8,4096] 128.00KiB.
func (b Buffer) String() string {
	return b.Name + " " + b.Shape + " " + assign.HumanBytes(b.Bytes)
}

// Line is one module's figures.
type Line struct {
	// Module is the module's name (HloModule NAME).
	Module string
	// Key names the module in the golden file: NAME@SIGNATURE (key.go,
	// package doc); in a line read from a v1 file, NAME or NAME#K.
	Key string
	// Signature fingerprints the entry computation's parameter and result
	// shapes (Signature); "" in a line read from a v1 file.
	Signature string
	// Schedule is the schedule the figures are for: keep (the module's
	// order), list, dfs or postorder.
	Schedule   string
	LowerBound int64 // assign.Stats.LowerBound
	Temp       int64 // assign.Stats.TempBytes
	Total      int64 // assign.Stats.TotalBytes
	// PeakStep is the step of the plan's peak (Assignment.Peak), -1 when
	// nothing occupies memory.
	PeakStep int
	// Top are the largest of what occupies memory at PeakStep, largest
	// first (Assignment.Peak), each named after its largest buffer.
	Top []Buffer

	// Source is the file the module came from; it is not written.
	Source string
	// lineNo is the line of a parsed golden file, 0 otherwise.
	lineNo int
	// v1Key is the key format v1 gave the module (NAME, or NAME#K in
	// input order), to compare a run with a v1 file.
	v1Key string
}

// Field is one of the byte figures of a Line on which a verdict rests.
type Field string

// The fields, as the golden file's header names them.
const (
	LowerBound Field = "lower_bound"
	Temp       Field = "temp"
	Total      Field = "total"
)

// Fields lists the fields in the order sentences give them.
var Fields = []Field{Temp, Total, LowerBound}

// label is the field's name in a sentence.
func (f Field) label() string {
	if f == LowerBound {
		return "lower bound"
	}
	return string(f)
}

// Value returns the field's figure in l.
func (l *Line) Value(f Field) int64 {
	switch f {
	case LowerBound:
		return l.LowerBound
	case Temp:
		return l.Temp
	case Total:
		return l.Total
	}
	panic("peakgolden: unknown field " + string(f))
}

// Measure parses every module of files, assigns each with opts and returns
// its Line, keyed (Line.Key) and sorted by key (Sort). Files are read and
// measured on up to GOMAXPROCS goroutines, each file's modules dropped
// once measured; the lines do not depend on it. An error names the module's file and name,
// unless it carries a position in the input; with several, the first
// file's is returned. Cancelling ctx returns its error at once.
func Measure(ctx context.Context, files []string, opts Options) ([]Line, error) {
	opts, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	ctx = liveness.WithSettings(ctx, opts.settings())
	perFile := make([][]Line, len(files))
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				perFile[i], errs[i] = measureFile(ctx, files[i], opts)
			}
		}()
	}
	go func() {
		defer close(next)
		for _, i := range largestFirst(files) {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	// Parsing and assigning a module do not watch ctx: when it is
	// cancelled, return at once and leave the modules in flight to
	// finish on their own, their results unread.
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var lines []Line
	for i := range files {
		if errs[i] != nil {
			return nil, errs[i]
		}
		lines = append(lines, perFile[i]...)
	}
	assignKeys(lines)
	Sort(lines)
	return lines, nil
}

// largestFirst returns the indices of files, largest file first (ties,
// and files it cannot stat, in order): started first, the longest jobs do
// not keep one goroutine busy after the others are done.
func largestFirst(files []string) []int {
	size := make([]int64, len(files))
	order := make([]int, len(files))
	for i, f := range files {
		order[i] = i
		if fi, err := os.Stat(f); err == nil {
			size[i] = fi.Size()
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return size[order[a]] > size[order[b]] })
	return order
}

// measureFile parses one file and measures its modules in order.
func measureFile(ctx context.Context, file string, opts Options) ([]Line, error) {
	mods, err := hlo.ParseFileContext(ctx, file)
	if err != nil {
		return nil, err
	}
	lines := make([]Line, len(mods))
	for i, m := range mods {
		// Before measuring: preparing a module may rewrite it.
		sig := Signature(m)
		if lines[i], err = measure(ctx, m, file, opts); err != nil {
			return nil, err
		}
		lines[i].Signature = sig
	}
	return lines, nil
}

// measure assigns one module and sums it up.
func measure(ctx context.Context, m *hlo.Module, source string, opts Options) (l Line, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
		if err != nil && !isInputError(err) {
			err = fmt.Errorf("%s: module %s: %w", source, m.Name, err)
		}
	}()
	// XLA's heap (or a greedy packer), no plan's cost weighing the
	// search: the figures depend on nothing but the module.
	r, err := compile.Compile(ctx, m, compile.Options{Target: opts.Target, Scheduler: opts.Schedule,
		Assign: assign.Options{Algorithm: opts.Algorithm}})
	if err != nil {
		return l, err
	}
	a, as := r.Analysis, r.Assignment
	step, _, at := as.Peak()
	l = Line{
		Module:     m.Name,
		Schedule:   scheduleName(a.Schedule),
		LowerBound: as.Stats.LowerBound,
		Temp:       as.Stats.TempBytes,
		Total:      as.Stats.TotalBytes,
		PeakStep:   step,
		Source:     source,
	}
	if l.Module == "" {
		// No name (the parser names even a module without its HloModule
		// line after its entry): name it after its file, in one word of
		// the golden file.
		base := filepath.Base(source)
		l.Module = strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) || r == '|' || r == '#' {
				return '_'
			}
			return r
		}, strings.TrimSuffix(base, filepath.Ext(base)))
	}
	// One entry per occupant of memory at the peak (an allocation, or a
	// region of the temp allocation), named after its largest buffer.
	for _, o := range at {
		if len(l.Top) == TopBuffers {
			break
		}
		v := assign.LargestValue(o.Buffers[0])
		name := v.Inst.Name
		if len(v.Index) > 0 {
			name += v.Index.String()
		}
		l.Top = append(l.Top, Buffer{Name: name, Shape: shapeText(v.Shape), Bytes: o.Bytes})
	}
	return l, nil
}

// scheduleName names the schedule as --schedule does.
func scheduleName(s *liveness.Schedule) string {
	if s == nil || s.Name == "module order" {
		return schedule.Keep
	}
	return s.Name
}

// shapeText prints a shape as one word: no layout, no spaces.
func shapeText(s hlo.Shape) string {
	return strings.ReplaceAll(s.StringNoLayout(), " ", "")
}

// isInputError reports whether err carries a position in the input.
func isInputError(err error) bool {
	var list hlo.ErrorList
	var one *hlo.Error
	return errors.As(err, &list) || errors.As(err, &one)
}
