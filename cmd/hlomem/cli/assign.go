package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/tpu"
)

// assignFlags defines the flags of hlomem assign on fs and returns its run func.
func assignFlags(fs *flagSet, e *env) func(args []string) error {
	target := fs.String("target", "", "gpu|cpu|tpu", targetFlag)
	genName := fs.String("generation", "tpu-v4", "GEN", "with --target=tpu: the chip generation whose tiling arrays without one get, and whose SMEM --vmem uses (tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e, tpu-7x, tpu-custom:HBM[:VMEM[:SMEM]])")
	var sf spaceFlags
	sf.register(fs, false)
	algo := fs.String("algo", "auto", "NAME", "packer for the temp heaps (see hlomem pack); xla reproduces XLA")
	align := fs.Int64("align", 0, "N", "temp chunk alignment in bytes; 0 means the target's")
	budget := fs.Duration("budget", assign.DefaultBudget, "D", "time the search of auto and exact may take per temp heap")
	gap := fs.Float64("gap", assign.DefaultGap, "F", "relative distance from a temp heap's lower bound within which the search of a heap over 5,000 values stops (0: search on)")
	sched := addScheduleFlags(fs, "scheduler: ")
	fuse := fs.Bool("fuse", false, fuseFlag)
	format := fs.String("format", "xla", "xla|report|json|csv", "output: xla, report, json or csv")
	peak := fs.String("peak-format", "current", "current|legacy", peakFormatFlag)
	report := fs.String("report-format", "current", "current|legacy", reportFormatFlag)
	var rf rematFlags
	rf.register(fs)
	live := addLiveFlags(fs)
	e.passesFlag(fs)
	return func(args []string) error {
		file, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if err := live.apply("assign", e); err != nil {
			return err
		}
		ropts, err := rf.options("assign")
		if err != nil {
			return err
		}
		// Every flag is checked before the input is read.
		if err := checkTarget("assign", *target); err != nil {
			return err
		}
		if err := checkAlgo("assign", *algo); err != nil {
			return err
		}
		if err := checkSchedule("assign", *sched.name); err != nil {
			return err
		}
		if err := oneOf("assign", "format", *format, []string{"xla", "report", "json", "csv"}); err != nil {
			return err
		}
		gen, err := tpu.GenerationByName(*genName)
		if err != nil {
			return flagError("assign", "--generation: %v", err)
		}
		xopts, err := xlaOptions("assign", *peak)
		if err != nil {
			return err
		}
		if err := oneOf("assign", "report-format", *report, []string{"current", "legacy"}); err != nil {
			return err
		}
		rl := assign.ReportCurrent
		if *report == "legacy" {
			rl = assign.ReportLegacy
		}
		if *align < 0 || *align&(*align-1) != 0 {
			return flagError("assign", "--align must be a power of two (or 0 for the target's), got %d", *align)
		}
		if *gap < 0 || *gap != *gap {
			return flagError("assign", "--gap must not be negative, got %v", *gap)
		}
		if *budget < 0 {
			return flagError("assign", "--budget must not be negative, got %v (0 means the default, %v)", *budget, assign.DefaultBudget)
		}
		tgt, note := targetFor("assign", *target, file)
		isTPU := tgt.Name == assign.TPU.Name
		use := false
		if isTPU {
			if use, err = sf.apply(&gen, false); err != nil {
				return flagError("assign", "%v", err)
			}
		} else if sf.vmem != "" || sf.smem != "" || sf.minWindow != 0 {
			return flagError("assign", "--vmem, --smem and --min-window need --target=tpu")
		}
		if note != "" {
			fmt.Fprintln(e.stderr, note)
		}
		l := map[string]layout{"xla": splitMarker, "report": headed, "json": jsonArray, "csv": table}[*format]
		// --format=csv: the temp heaps of every module in one table, with
		// the module and the heap's color leading each row, and the
		// alignment column always there.
		csvw := pack.NewCSVWriter(e.stdout, pack.CSVColumns{Alignment: true}, "module", "color")
		g := *gap
		if g == 0 {
			g = -1 // Options: 0 is the default, negative none
		}
		// With --fuse, fusion keeps the total of this very plan from rising.
		opts := compileOptions(sched, *fuse, true)
		opts.Target = tgt
		opts.Assign = assign.Options{Algorithm: *algo, Align: *align, Budget: *budget, Gap: g}
		opts.Remat = ropts
		// With --remat-limit the outputs describe the rewritten module;
		// stderr says what remat did, and exit 2 when the limit was not
		// reached.
		x := &rematted{cmd: "assign", stderr: e.stderr}
		if isTPU {
			opts.Generation = &gen
			if use {
				opts.Spaces = &tpu.SpaceOptions{VMEM: gen.VMEM, SMEM: gen.SMEM, MinWindow: sf.minWindow}
			}
		}
		err = eachCompiled(e, file, opts, l, func(w io.Writer, m *hlo.Module, r *compile.Result) error {
			as := r.Assignment
			x.note(m, r)
			if err := writeAssignment(w, as, m, *format, xopts, rl, csvw); err != nil {
				return err
			}
			if isTPU && (*format == "xla" || *format == "report") {
				if _, err := io.WriteString(w, "\n"); err != nil {
					return err
				}
				if err := as.Padding().Write(w, 0); err != nil {
					return err
				}
				if r.Spaces != nil {
					return writeSpaces(w, r.Spaces, gen)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if *format == "csv" {
			err = csvw.Flush()
		}
		return x.after(err)
	}
}

// reportFormatFlag documents --report-format.
const reportFormatFlag = "layout of --format=report: current (XLA since March 2026: each memory space's total, then every allocation's offset table) or legacy (XLA from October 2024 to March 2026, the layout of most dumps: allocations by size over the total, then each with its offset table)"

// writeAssignment writes one module's plan in format.
func writeAssignment(w io.Writer, as *assign.Assignment, m *hlo.Module, format string, xopts liveness.XLAOptions, rl assign.ReportLayout, csvw *pack.CSVWriter) error {
	switch format {
	case "xla":
		return as.WriteXLAWith(w, xopts)
	case "report":
		return as.WriteReportLayout(w, rl)
	case "json":
		return as.WriteJSON(w)
	}
	for _, h := range as.Heaps {
		if err := csvw.Write(h.Problem, h.Solution.Packing, m.Name, strconv.FormatInt(h.Color, 10)); err != nil {
			return err
		}
	}
	return nil
}
