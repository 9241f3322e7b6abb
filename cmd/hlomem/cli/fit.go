package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/fit"
)

// fitFlags defines the flags of hlomem fit on fs and returns its run func.
func fitFlags(fs *flagSet, e *env) func(args []string) error {
	device := fs.String("device", "", "NAME", "the device, as hlomem run --device names it: a100-40gb, a100-80gb, h100-80gb, h200, custom:SIZE, or a TPU generation (tpu-v4, ...); the client settings are the environment's XLA_PYTHON_CLIENT_* as run reads them")
	format := fs.String("format", "text", "text|json", "output: text or json (the same figures)")
	emit := fs.String("emit", "", "LEVER", "instead of the report, print the module a lever changed (donation, offload, remat) or the combination's (combination), for hlomem assign or run to read from a pipe: the commands fit prints reproduce those levers' figures so")
	return func(args []string) error {
		path, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if *device == "" {
			return flagError("fit", "say which device: --device=NAME")
		}
		if err := oneOf("fit", "format", *format, []string{"text", "json"}); err != nil {
			return err
		}
		if *emit != "" {
			if err := oneOf("fit", "emit", *emit, []string{"donation", "offload", "remat", "combination"}); err != nil {
				return err
			}
		}
		inputs, err := fitInputs(e, path)
		if err != nil {
			return err
		}
		ctx := e.ctx
		progress := newProgress(e.stderr)
		defer progress.done()
		var reports []*fit.Report
		for i, in := range inputs {
			tgt, note := targetFor("fit", "", in.file)
			if note != "" {
				// fit has no --target: the dump's name decides, as for run.
				fmt.Fprintln(e.stderr, strings.TrimSuffix(note, " (--target to change)"))
			}
			// run --device's pipeline, so that every printed command
			// reproduces its figure.
			c := compileOptions(scheduleFlags{name: new(string), budget: new(int64)}, false, true)
			c.Target, c.Assign = tgt, assign.Options{Algorithm: "auto"}
			progress.say(fmt.Sprintf("fit %d/%d %s", i+1, len(inputs), in.m.Name))
			r, err := fit.Analyze(ctx, in.m, fit.Options{Device: *device, Compile: c, Getenv: os.Getenv, File: inputName(in.file)})
			if err != nil {
				if ctx.Err() != nil {
					return errors.New("hlomem fit: interrupted; nothing written")
				}
				if errors.Is(err, fit.ErrDevice) {
					return flagError("fit", "--device: %v", err)
				}
				return moduleError(inputName(in.file), in.m, err)
			}
			reports = append(reports, r)
		}
		progress.done()
		if *emit != "" {
			for i, r := range reports {
				m, ok := r.Emitted(*emit)
				if !ok {
					return fmt.Errorf("hlomem fit: %s: the %s lever changes no module here", inputs[i].m.Name, *emit)
				}
				if i > 0 {
					e.stdout.WriteString("\n// -----\n\n")
				}
				e.stdout.WriteString(m.String())
			}
			return nil
		}
		l := headed
		if *format == "json" {
			l = jsonArray
		}
		out := newModuleOutput(e.stdout, l, len(reports))
		fits := true
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
			fits = fits && r.Verdict.Fits
		}
		if err := out.finish(); err != nil {
			return err
		}
		if !fits {
			return &exitError{code: exitInfeasible, msg: "hlomem fit: does not fit as it is on " + *device}
		}
		return nil
	}
}

// fitInputs returns the modules of path: those of an HLO file (or
// standard input), or of each module's best dump in a directory.
func fitInputs(e *env, path string) ([]reportInput, error) {
	files, err := inputFiles(e, "fit", path)
	if err != nil {
		return nil, err
	}
	return loadInputs(e, files)
}
