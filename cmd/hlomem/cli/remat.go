package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/cost"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/bytesize"
	"github.com/hlomem/hlomem/remat"
)

// rematFlags defines the flags of hlomem remat on fs and returns its run
// func.
func rematFlags(fs *flagSet, e *env) func(args []string) error {
	limit := fs.String("limit", "", "BYTES|SIZE", "the memory limit to fit under (XLA's memory_limit_bytes: the peak of live bytes of the entry, parameters aside, plus the outputs), e.g. 1500000000 or 1.5GiB")
	algo := fs.String("algo", "xla", "xla", "the algorithm: xla (XLA's HloRematerialization: kRecompute, block size 1, as XLA:GPU runs it)")
	explain := fs.Bool("explain", false, "print a table of what was recomputed (bytes, steps freed, added FLOPs, op_name, source line) instead of the module")
	sched := addScheduleFlags(fs, "scheduler of a module XLA has not scheduled (a scheduled one keeps its order): ")
	return func(args []string) error {
		file, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if *limit == "" {
			return flagError("remat", "say the limit: --limit=BYTES or SIZE (e.g. 2GiB)")
		}
		n, err := bytesize.Parse(*limit)
		if err != nil || n < 0 {
			return flagError("remat", "--limit=%q: want a byte count or a size such as 1.5GiB", *limit)
		}
		if *algo != "xla" {
			return flagError("remat", "--algo=%q: want xla", *algo)
		}
		if err := checkSchedule("remat", *sched.name); err != nil {
			return err
		}
		mods, err := loadModules(e, file, true)
		if err != nil {
			return err
		}
		infeasible := ""
		for i, m := range mods {
			if !m.IsScheduled {
				// The pass rewrites a sequence: schedule the module as
				// the pipeline would, then keep that order.
				r, err := compile.Compile(e.ctx, m, compile.Options{Scheduler: *sched.name, Search: sched.search(), Until: "schedule"})
				if err != nil {
					return moduleError(inputName(file), m, err)
				}
				r.Analysis.Schedule.Apply(r.Module)
				m = r.Module
			}
			res, err := remat.Rematerialize(e.ctx, m, n, remat.Options{})
			if err != nil {
				return moduleError(inputName(file), m, err)
			}
			if i > 0 {
				e.stdout.WriteString("\n// -----\n\n")
			}
			if *explain {
				writeRematExplain(e.stdout, m, res)
			} else {
				e.stdout.WriteString(res.Module.String())
			}
			if !res.Fits && infeasible == "" {
				infeasible = fmt.Sprintf("hlomem remat: %s: %s", m.Name, res.Message)
			}
		}
		if infeasible != "" {
			return &exitError{code: exitInfeasible, msg: infeasible}
		}
		return nil
	}
}

// writeRematExplain prints what the pass did: the peaks against the
// limit, then each recomputed value with its bytes, the steps it no
// longer occupies, the FLOPs its recomputation adds, its op_name and
// source line; the added FLOPs as a share of the module's own.
func writeRematExplain(w io.Writer, m *hlo.Module, res *remat.Result) {
	fmt.Fprintf(w, "module %s: peak %s (%d bytes) -> %s (%d bytes), limit %s (%d bytes): ", m.Name,
		assign.HumanBytes(res.PeakBefore), res.PeakBefore, assign.HumanBytes(res.PeakAfter), res.PeakAfter, assign.HumanBytes(res.Limit), res.Limit)
	if res.Fits {
		fmt.Fprintln(w, "fits")
	} else {
		fmt.Fprintln(w, "does not fit")
	}
	// Originals and clones (a clone may be recomputed again) by name, in
	// the input and the rewritten module; clones keep their originals'
	// metadata.
	byName := map[string]*hlo.Instruction{}
	for _, mod := range []*hlo.Module{m, res.Module} {
		for _, c := range mod.Computations {
			for _, in := range c.Instructions {
				if byName[c.Name+"/"+in.Name] == nil {
					byName[c.Name+"/"+in.Name] = in
				}
			}
		}
	}
	// A clone recomputed again may be gone from the final module (its
	// own clone replaced it): it is its original's op.
	find := func(comp, name string) *hlo.Instruction {
		for {
			if in := byName[comp+"/"+name]; in != nil {
				return in
			}
			i := strings.LastIndex(name, ".remat")
			if i < 0 {
				return nil
			}
			name = name[:i]
		}
	}
	own := cost.Module(m)
	var added int64
	rows := [][]string{{"recomputed", "clone", "bytes", "steps freed", "added FLOPs", "op_name", "source"}}
	for _, r := range res.Recomputed {
		in := find(r.Computation, r.Original)
		flops, opName, src := int64(0), "", ""
		if in != nil {
			flops = cost.Instruction(in).FLOPs
			if in.Metadata != nil {
				opName = in.Metadata.OpName
			}
			src = res.Module.Source(in)
		}
		added += flops
		rows = append(rows, []string{"%" + r.Original, "%" + r.Clone, assign.HumanBytes(r.Bytes), fmt.Sprint(r.StepsFreed), fmt.Sprint(flops), opName, src})
	}
	if len(res.Recomputed) == 0 {
		fmt.Fprintln(w, "nothing recomputed")
	} else {
		for _, row := range rows {
			fmt.Fprintln(w, "  "+strings.Join(row, "\t"))
		}
	}
	share := 0.0
	if own.FLOPs > 0 {
		share = 100 * float64(added) / float64(own.FLOPs)
	}
	fmt.Fprintf(w, "added FLOPs: %d, %.2f%% of the module's own %d", added, share, own.FLOPs)
	if own.Loop {
		fmt.Fprint(w, " (a loop of unknown trip count counted once)")
	}
	fmt.Fprintln(w)
	if res.Message != "" {
		fmt.Fprintln(w, res.Message)
	}
}
