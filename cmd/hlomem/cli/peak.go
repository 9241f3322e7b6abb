package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/peakgolden"
	"github.com/hlomem/hlomem/internal/atomicfile"
)

// runPeak prints the peak-memory table of every module of the paths (the
// golden file's format, package assign/peakgolden), or checks them
// against --golden, or rewrites it with --update.
// peakFlags defines the flags of hlomem peak on fs and returns its run func.
func peakFlags(fs *flagSet, e *env) func(args []string) error {
	golden := fs.String("golden", "", "FILE", "golden file to check against (or to write with --update)")
	update := fs.Bool("update", false, "rewrite the --golden file with this run's figures instead of checking")
	tolPct := fs.Float64("tolerance", 0, "PCT", "how far, in percent of the golden figure, lower bound, temp and total bytes may move either way (1 = 1%); 0 is exact")
	target := fs.String("target", "", "gpu|cpu|tpu", targetFlag+" (one target for every input)")
	algo := fs.String("algo", peakgolden.DefaultAlgorithm, "NAME", "packer for the temp heaps: xla (XLA's heap, the default), portfolio or another greedy packer; auto and exact are refused, their result depends on timing")
	sched := fs.String("schedule", "", "NAME", "scheduler: "+scheduleFlag)
	live := addLiveFlags(fs)
	return func(args []string) error {
		paths, err := parseFiles(fs, args)
		if err != nil {
			return err
		}
		if len(paths) == 0 {
			fs.Usage()
			return &exitError{code: exitFailure, msg: "hlomem peak: want at least one HLO file or XLA dump directory"}
		}
		switch {
		case *update && *golden == "":
			return errors.New("hlomem peak: --update rewrites the --golden file; say which with --golden=FILE")
		case *tolPct != 0 && *golden == "":
			return errors.New("hlomem peak: --tolerance applies to a check against --golden=FILE")
		case *tolPct < 0 || math.IsNaN(*tolPct) || math.IsInf(*tolPct, 0):
			return fmt.Errorf("hlomem peak: --tolerance must be a percentage of at least 0, got %v", *tolPct)
		}
		if err := checkTarget("peak", *target); err != nil {
			return err
		}
		if err := checkSchedule("peak", *sched); err != nil {
			return err
		}
		if *update {
			if err := atomicfile.Check(*golden); err != nil {
				return flagError("peak", "--golden: %v", err)
			}
		}
		ls, err := live.settings("peak")
		if err != nil {
			return err
		}
		// The golden file's header records the rules and threads when
		// they are not the defaults.
		opts := peakgolden.Options{Algorithm: *algo, Schedule: *sched, XLARules: ls.XLARules, ExecutionThreads: ls.ExecutionThreads}
		if err := opts.Check(); err != nil {
			return flagError("peak", "%v", err)
		}
		in, err := peakgolden.Collect(paths)
		if err != nil {
			return fmt.Errorf("hlomem peak: %w", err)
		}
		for _, d := range in.Dirs {
			fmt.Fprintf(e.stderr, "hlomem peak: %s\n", d.Note())
		}
		for _, p := range in.Repeated {
			fmt.Fprintf(e.stderr, "hlomem peak: %s: read already from an earlier path, not again\n", p)
		}
		tgt, note, err := peakTarget(*target, in.Files)
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintln(e.stderr, note)
		}
		opts.Target = tgt
		// An interrupt stops the run before anything is written: the golden
		// file is written last, through a temporary file renamed into place.
		ctx := e.ctx
		if *golden == "" {
			lines, err := peakgolden.Measure(ctx, in.Files, opts)
			if err != nil {
				return peakError(ctx, err)
			}
			return peakgolden.Write(e.stdout, opts, lines)
		}
		r, err := peakgolden.Check(ctx, in.Files, *golden, opts, peakgolden.Tolerance{Default: *tolPct / 100}, *update)
		if err != nil {
			return peakError(ctx, err)
		}
		if _, err := e.stdout.WriteString(r.String()); err != nil {
			return err
		}
		if r.Failed() {
			// The verdicts are the result: they reach stdout with exit 1.
			return &exitError{code: exitFailure, keepOutput: true,
				msg: "hlomem peak: out of tolerance; if the change is intended, rerun with --update and commit " + *golden}
		}
		return nil
	}
}

// peakTarget is the one target peak plans every input for: --target's,
// else the one XLA's dump file names of the inputs agree on, else gpu;
// note says so when the names decided.
func peakTarget(flag string, files []string) (assign.Target, string, error) {
	if flag != "" {
		t, _ := assign.TargetByName(flag)
		return t, "", nil
	}
	said := map[string]int{}
	var names []string
	for _, f := range files {
		if t := dumpTarget(f); t != "" {
			if said[t] == 0 {
				names = append(names, t)
			}
			said[t]++
		}
	}
	switch len(names) {
	case 0:
		return assign.GPU, "", nil
	case 1:
		t, _ := assign.TargetByName(names[0])
		return t, fmt.Sprintf("hlomem peak: planned for %s, as XLA's dump file names say (--target to change)", names[0]), nil
	}
	sort.Strings(names)
	var counts []string
	for _, n := range names {
		counts = append(counts, fmt.Sprintf("%d for %s", said[n], n))
	}
	return assign.Target{}, "", flagError("peak", "XLA's dump file names say the inputs were compiled for different targets (%s); a golden file holds one: check each set on its own, or say which with --target", strings.Join(counts, ", "))
}

// peakError prints an error with a position in the input (an HLO file, a
// golden file) as it is, FILE:LINE[:COL]: message, and others after the
// command's name.
func peakError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("hlomem peak: interrupted; nothing written")
	}
	var pe *peakgolden.ParseError
	if isInputError(err) || errors.As(err, &pe) {
		return err
	}
	var me *peakgolden.MissingError
	if errors.As(err, &me) {
		return fmt.Errorf("hlomem peak: %w; write it with --update (hlomem peak --golden=%s --update PATH...) and review it", err, me.Path)
	}
	return fmt.Errorf("hlomem peak: %w", err)
}
