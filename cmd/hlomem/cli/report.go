package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/peakgolden"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/atomicfile"
	"github.com/hlomem/hlomem/report"
	"github.com/hlomem/hlomem/tpu"
)

// reportFlags defines the flags of hlomem report on fs and returns its run func.
func reportFlags(fs *flagSet, e *env) func(args []string) error {
	htmlOut := fs.String("html", "", "OUT.html", "write the memory viewer, one self-contained HTML page, to this file")
	svgOut := fs.String("svg", "", "OUT.svg", "write the charts (memory occupied over program order, buffers by address) as one SVG to this file (several modules: one file each, the module's name before the extension)")
	pprofOut := fs.String("pprof", "", "OUT.pb.gz", "write what occupies memory at the peak as a pprof profile to this file (several modules: one file each)")
	format := fs.String("format", "text", "text|json", "report on standard output: text or json")
	top := fs.Int("top", report.DefaultTop, "N", "how many of what occupies memory at the peak the text lists; 0 lists them all")
	whatIf := fs.Bool("what-if", true, "plan the module under each scheduler, with and without fusion, under each packer, without jit and rematerialized (the what-if table); --what-if=false reports the plan alone")
	xlaFile := fs.String("xla", "", "FILE", "XLA's buffer assignment of the module (*-buffer-assignment.txt; refused when it names another module, other instructions or other shapes); default: the one beside an *after_optimizations.txt")
	target := fs.String("target", "", "gpu|cpu|tpu", targetFlag)
	algo := fs.String("algo", "auto", "NAME", "packer for the temp heaps (see hlomem pack)")
	budget := fs.Duration("budget", assign.DefaultBudget, "D", "time the search of auto and exact may take per temp heap")
	sched := addScheduleFlags(fs, "scheduler: ")
	fuse := fs.Bool("fuse", false, fuseFlag)
	device := fs.String("device", "", "NAME", "the remat what-ifs fit the plan's total under what this device offers it, the figure hlomem run --device=NAME prints as the limit: a GPU's client limit under run's client model (a100-40gb, a100-80gb, h100-80gb, h200, custom:SIZE; the environment's XLA_* settings as run reads them, else BFC over 75% of the memory), a TPU's HBM (tpu-v4, ...); default: "+fmt.Sprint(report.RematShare)+"% of the plan's total")
	var rf rematFlags
	rf.register(fs)
	live := addLiveFlags(fs)
	return func(args []string) error {
		path, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		ropts, err := rf.options("report")
		if err != nil {
			return err
		}
		rematLimit, rematLabel, err := deviceLimit(*device)
		if err != nil {
			return err
		}
		// Every flag is checked before any input is read.
		if err := oneOf("report", "format", *format, []string{"text", "json"}); err != nil {
			return err
		}
		if err := live.apply("report", e); err != nil {
			return err
		}
		if err := checkTarget("report", *target); err != nil {
			return err
		}
		if err := checkAlgo("report", *algo); err != nil {
			return err
		}
		if err := checkSchedule("report", *sched.name); err != nil {
			return err
		}
		if *budget < 0 {
			return flagError("report", "--budget must not be negative, got %v", *budget)
		}
		if *top < 0 {
			return flagError("report", "--top must be at least 0 (0 lists every buffer), got %d", *top)
		}
		for _, f := range []struct{ flag, path string }{{"html", *htmlOut}, {"svg", *svgOut}, {"pprof", *pprofOut}} {
			if f.path == "" {
				continue
			}
			if err := atomicfile.Check(f.path); err != nil {
				return flagError("report", "--%s: %v", f.flag, err)
			}
		}
		if *top == 0 {
			*top = -1 // report.Options: negative lists all
		}
		ctx := e.ctx
		// The options of a module of file: the target its name says unless
		// --target is given.
		optionsFor := func(file string) report.Options {
			tgt, note := targetFor("report", *target, file)
			if note != "" {
				fmt.Fprintln(e.stderr, note)
			}
			c := compileOptions(sched, *fuse, true)
			c.Target, c.Assign = tgt, assign.Options{Algorithm: *algo, Budget: *budget}
			c.Remat = ropts
			return report.Options{Compile: c, Top: *top, RematLimit: rematLimit, RematLimitLabel: rematLabel}
		}

		inputs, err := reportInputs(e, path, *xlaFile != "")
		if err != nil {
			return err
		}
		x := &rematted{cmd: "report", stderr: e.stderr}
		progress := newProgress(e.stderr)
		defer progress.done()
		var reports []*report.Report
		noted := map[string]report.Options{}
		for i, in := range inputs {
			o, ok := noted[in.file]
			if !ok {
				o = optionsFor(in.file)
				noted[in.file] = o
			}
			if *whatIf {
				o.WhatIf = report.WhatIfs(in.m)
				if *device != "" {
					// hlomem fit's cheapest combination on the device.
					o.WhatIf = append(o.WhatIf, report.Lever{Kind: "fit", Value: *device})
					o.Getenv = os.Getenv
				}
			}
			o.File = in.file
			if o.XLA, o.XLAFile, err = xlaBeside(in.file, *xlaFile); err != nil {
				return err
			}
			name := in.m.Name
			o.Progress = func(stage string) { progress.say(fmt.Sprintf("report %d/%d %s: %s", i+1, len(inputs), name, stage)) }
			r, err := report.Build(ctx, in.m, o)
			if err != nil {
				if ctx.Err() != nil {
					return errors.New("hlomem report: interrupted; nothing written")
				}
				return moduleError(inputName(in.file), in.m, err)
			}
			reports = append(reports, r)
			if r.Remat != nil {
				x.note(in.m, &compile.Result{Remat: r.Remat})
			}
		}
		progress.done()

		// Standard output: the text or JSON of every module.
		l := headed
		if *format == "json" {
			l = jsonArray
		}
		out := newModuleOutput(e.stdout, l, len(reports))
		for i, r := range reports {
			w, err := out.next(inputs[i].m)
			if err != nil {
				return err
			}
			if *format == "json" {
				err = r.WriteJSON(w)
			} else {
				err = r.WriteText(w)
			}
			if err != nil {
				return err
			}
		}
		if err := out.finish(); err != nil {
			return err
		}
		// The files, each whole or not at all.
		return x.after(writeReportFiles(ctx, reports, *htmlOut, *svgOut, *pprofOut))
	}
}

// deviceLimit is report --device's limit for the remat what-ifs: the
// limit hlomem run --device=name prints (a GPU client's, under the
// client model run reads from the environment; a TPU's HBM), and its
// label; 0 and "" without a device.
func deviceLimit(name string) (int64, string, error) {
	if name == "" {
		return 0, "", nil
	}
	if isTPUDevice(name) {
		gen, err := tpu.GenerationByName(name)
		if err != nil {
			return 0, "", flagError("report", "--device: %v", err)
		}
		return gen.HBM, fmt.Sprintf("%s's HBM, as hlomem run --device=%s prints it", gen.Name, name), nil
	}
	dev, err := gpu.DeviceByName(name)
	if err != nil {
		return 0, "", flagError("report", "--device: %v", err)
	}
	d := deviceFlags{device: name}
	cfg, err := d.config(os.Getenv)
	if err != nil {
		return 0, "", flagError("report", "%v", err)
	}
	c, err := gpu.NewClient(dev, cfg, gpu.ClientOptions{})
	if err != nil {
		return 0, "", flagError("report", "--device: %v", err)
	}
	return c.Stats().BytesLimit, fmt.Sprintf("%s's client limit, as hlomem run --device=%s prints it", dev.Name, name), nil
}

// reportInput is a module report reads, and its file.
type reportInput struct {
	file string
	m    *hlo.Module
}

// reportInputs returns the modules of path: those of an HLO file (or
// standard input), or of each module's best dump in a directory. oneXLA
// (--xla given) refuses an input of several modules.
func reportInputs(e *env, path string, oneXLA bool) ([]reportInput, error) {
	files, err := inputFiles(e, "report", path)
	if err != nil {
		return nil, err
	}
	several := errors.New("hlomem report: --xla names the buffer assignment of one module; this input has several")
	if oneXLA && len(files) > 1 {
		return nil, several
	}
	inputs, err := loadInputs(e, files)
	if err != nil {
		return nil, err
	}
	if oneXLA && len(inputs) > 1 {
		return nil, several
	}
	return inputs, nil
}

// inputFiles returns the HLO files of path for command cmd: path itself,
// or each module's best dump in a directory (noting on stderr what it
// chose).
func inputFiles(e *env, cmd, path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return []string{path}, nil
	}
	in, err := peakgolden.Collect([]string{path})
	if err != nil {
		return nil, fmt.Errorf("hlomem %s: %w", cmd, err)
	}
	for _, d := range in.Dirs {
		fmt.Fprintf(e.stderr, "hlomem %s: %s\n", cmd, d.Note())
	}
	if len(in.Files) == 0 {
		return nil, fmt.Errorf("hlomem %s: %s holds no HLO module", cmd, path)
	}
	return in.Files, nil
}

// loadInputs reads every module of files.
func loadInputs(e *env, files []string) ([]reportInput, error) {
	var inputs []reportInput
	for _, f := range files {
		mods, err := loadModules(e, f, true)
		if err != nil {
			return nil, err
		}
		for _, m := range mods {
			inputs = append(inputs, reportInput{file: f, m: m})
		}
	}
	return inputs, nil
}

// xlaBeside reads XLA's buffer assignment of the module of file: the
// file --xla names (flag), else the dump beside file; nil without either.
func xlaBeside(file, flag string) (*assign.XLAAssignment, string, error) {
	xf := flag
	if xf == "" {
		xf = besideXLA(file)
	}
	if xf == "" {
		return nil, "", nil
	}
	src, err := os.ReadFile(xf)
	if err != nil {
		return nil, "", fmt.Errorf("hlomem report: %w", err)
	}
	x, err := assign.ReadXLA(xf, src)
	if err != nil {
		return nil, "", err
	}
	return x, xf, nil
}

// writeReportFiles writes the viewer (html), the charts (svg) and the
// profile (pprof) of reports to the paths given ("" writes none), all
// of them whole or none; several modules get one SVG and one profile
// each.
func writeReportFiles(ctx context.Context, reports []*report.Report, htmlOut, svgOut, pprofOut string) error {
	// All the files or none: each is made whole first (atomicfile.Batch),
	// then all are put in place, so an interrupt between two of them
	// leaves every path as it was.
	var batch atomicfile.Batch
	defer batch.Abort()
	if htmlOut != "" {
		if err := batch.Add(ctx, htmlOut, func(w io.Writer) error { return report.WriteHTML(w, reports) }); err != nil {
			return fmt.Errorf("hlomem report: --html: %w", err)
		}
	}
	for _, f := range []struct {
		path  string
		write func(*report.Report, io.Writer) error
	}{{svgOut, (*report.Report).WriteSVG}, {pprofOut, (*report.Report).WritePprof}} {
		if f.path == "" {
			continue
		}
		for _, r := range reports {
			p := f.path
			if len(reports) > 1 {
				p = perModule(p, r.Module)
			}
			if err := batch.Add(ctx, p, func(w io.Writer) error { return f.write(r, w) }); err != nil {
				return fmt.Errorf("hlomem report: %w", err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := batch.Commit(); err != nil {
		return fmt.Errorf("hlomem report: %w", err)
	}
	return nil
}

// besideXLA returns the buffer-assignment dump XLA writes beside an
// *after_optimizations.txt module (the same name with
// -buffer-assignment.txt), or "" when there is none.
func besideXLA(file string) string {
	if !strings.HasSuffix(file, "after_optimizations.txt") {
		return ""
	}
	p := strings.TrimSuffix(file, ".txt") + "-buffer-assignment.txt"
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p
	}
	return ""
}

// perModule puts a module's name before a path's extension: out.svg ->
// out.NAME.svg (out.pb.gz -> out.NAME.pb.gz).
func perModule(path, module string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, module)
	dir, base := filepath.Split(path)
	ext := ""
	if i := strings.Index(base, "."); i > 0 {
		base, ext = base[:i], base[i:]
	}
	return filepath.Join(dir, base+"."+safe+ext)
}

// progress shows long work on a terminal: one line rewritten in place on
// stderr, cleared when done. On anything but a terminal it says nothing.
type progress struct {
	w     io.Writer
	shown bool
}

func newProgress(w io.Writer) *progress {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return &progress{w: w}
	}
	return &progress{}
}

func (p *progress) say(s string) {
	if p.w == nil {
		return
	}
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	fmt.Fprintf(p.w, "\r\033[K%s", s)
	p.shown = true
}

func (p *progress) done() {
	if p.w != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
