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

// rematAlgoDoc documents the algorithms of --algo and --remat-algo.
const rematAlgoDoc = "plan (hlomem's own: recomputes what costs the fewest FLOPs per byte over the limit, measuring the plan itself; the default) or xla (XLA:GPU's HloRematerialization: kRecompute, block size 1, run at the limit less the entry's inputs and outputs, as XLA's GPU compiler sets it)"

// rematLimitDoc documents the limit of --limit and --remat-limit.
const rematLimitDoc = "the limit on the plan's total (total_bytes of hlomem assign --format=json: parameters, outputs, temps and constants), e.g. 1500000000 or 1.5GiB"

// parseRematLimit reads a limit flag's value (bytesize: a byte count or a
// size such as 1.5GiB).
func parseRematLimit(cmd, flag, s string) (int64, error) {
	n, err := bytesize.Parse(s)
	if err != nil || n < 0 {
		return 0, flagError(cmd, "--%s=%q: want a byte count or a size such as 1.5GiB", flag, s)
	}
	return n, nil
}

// checkRematAlgo checks an algorithm flag against remat.Algorithms.
func checkRematAlgo(cmd, flag, algo string) error {
	if algo == "" {
		return nil
	}
	return oneOf(cmd, flag, algo, remat.Algorithms)
}

// rematFlags are --remat-limit and --remat-algo of assign, run and report.
type rematFlags struct{ limit, algo string }

func (f *rematFlags) register(fs *flagSet) {
	fs.StringVar(&f.limit, "remat-limit", "", "BYTES|SIZE", "rematerialize (recompute values before later uses) before planning until "+rematLimitDoc+"; exit 2 when it cannot be reached")
	fs.StringVar(&f.algo, "remat-algo", "", "plan|xla", "with --remat-limit, the algorithm: "+rematAlgoDoc)
}

// options returns the pipeline's remat options (nil without
// --remat-limit).
func (f *rematFlags) options(cmd string) (*compile.RematOptions, error) {
	if err := checkRematAlgo(cmd, "remat-algo", f.algo); err != nil {
		return nil, err
	}
	if f.limit == "" {
		if f.algo != "" {
			return nil, flagError(cmd, "--remat-algo needs --remat-limit")
		}
		return nil, nil
	}
	n, err := parseRematLimit(cmd, "remat-limit", f.limit)
	if err != nil {
		return nil, err
	}
	return &compile.RematOptions{Limit: n, Algorithm: f.algo}, nil
}

// rematLine says in one line what the remat pass did to module m: what
// it recomputed and the FLOPs that adds, the plan's totals against the
// limit, or XLA's message when the limit was not reached.
func rematLine(cmd string, m *hlo.Module, res *remat.FitResult) string {
	h := assign.HumanBytes
	s := fmt.Sprintf("hlomem %s: %s: remat (%s): recomputed %s, +%d FLOPs (%.2f%% of the module's own %d); total %s (%d bytes) -> %s (%d bytes), limit %s (%d bytes)",
		cmd, m.Name, res.Algorithm, count(len(res.Recomputed), "value", "values"), res.AddedFLOPs, res.AddedShare(), res.FLOPs,
		h(res.TotalBefore), res.TotalBefore, h(res.TotalAfter), res.TotalAfter, h(res.Limit), res.Limit)
	if res.Fits {
		return s + ": fits"
	}
	return s + ": " + res.Message
}

// rematted collects the remat lines of a command's modules and the exit
// error of the first limit not reached.
type rematted struct {
	cmd        string
	stderr     io.Writer
	infeasible string
}

// note writes r's remat line, if the pass ran.
func (x *rematted) note(m *hlo.Module, r *compile.Result) {
	if r.Remat == nil {
		return
	}
	fmt.Fprintln(x.stderr, rematLine(x.cmd, m, r.Remat))
	if !r.Remat.Fits && x.infeasible == "" {
		x.infeasible = fmt.Sprintf("hlomem %s: %s: %s", x.cmd, m.Name, r.Remat.Message)
		if x.stderr != io.Discard {
			// The line above says it.
			x.infeasible = fmt.Sprintf("hlomem %s: %s: the plan's total is over the remat limit", x.cmd, m.Name)
		}
	}
}

// after returns err, or without one x.err().
func (x *rematted) after(err error) error {
	if err != nil {
		return err
	}
	return x.err()
}

// err is exit 2 with the first message, when a limit was not reached.
func (x *rematted) err() error {
	if x.infeasible == "" {
		return nil
	}
	return &exitError{code: exitInfeasible, msg: x.infeasible}
}

// rematCmdFlags defines the flags of hlomem remat on fs and returns its
// run func.
func rematCmdFlags(fs *flagSet, e *env) func(args []string) error {
	limit := fs.String("limit", "", "BYTES|SIZE", rematLimitDoc+", the plan as hlomem assign makes it with the same --target, --packer and --schedule")
	algo := fs.String("algo", remat.Plan, "plan|xla", "the algorithm: "+rematAlgoDoc)
	explain := fs.Bool("explain", false, "print the totals and a table of what was recomputed (bytes, steps freed, added FLOPs, op_name, source line) instead of the module")
	target := fs.String("target", "", "gpu|cpu|tpu", targetFlag)
	packer := fs.String("packer", "auto", "NAME", "packer of the plan whose total is measured (hlomem assign's --algo; see hlomem pack)")
	sched := addScheduleFlags(fs, "scheduler of a module XLA has not scheduled (a scheduled one keeps its order): ")
	return func(args []string) error {
		file, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if *limit == "" {
			return flagError("remat", "say the limit: --limit=BYTES or SIZE (e.g. 2GiB)")
		}
		n, err := parseRematLimit("remat", "limit", *limit)
		if err != nil {
			return err
		}
		if err := oneOf("remat", "algo", *algo, remat.Algorithms); err != nil {
			return err
		}
		if err := checkTarget("remat", *target); err != nil {
			return err
		}
		if err := checkAlgo("remat", *packer); err != nil {
			return err
		}
		if err := checkSchedule("remat", *sched.name); err != nil {
			return err
		}
		tgt, note := targetFor("remat", *target, file)
		if note != "" {
			fmt.Fprintln(e.stderr, note)
		}
		// The pipeline of hlomem assign --remat-limit: its plan's total is
		// the one fitted.
		opts := compileOptions(sched, false, true)
		opts.Target, opts.Assign = tgt, assign.Options{Algorithm: *packer}
		opts.Remat = &compile.RematOptions{Limit: n, Algorithm: *algo}
		x := &rematted{cmd: "remat", stderr: io.Discard}
		return x.after(eachCompiled(e, file, opts, splitMarker, func(w io.Writer, m *hlo.Module, r *compile.Result) error {
			if *explain {
				writeRematExplain(w, m, r.Remat)
			} else if _, err := io.WriteString(w, r.Module.String()); err != nil {
				return err
			}
			x.note(m, r)
			return nil
		}))
	}
}

// writeRematExplain prints what the pass did: the plan's totals against
// the limit, then each recomputed value with its bytes, the steps it no
// longer occupies, the FLOPs its recomputation adds, its op_name and
// source line; the added FLOPs (FitResult.AddedFLOPs) as a share of the
// module's own.
func writeRematExplain(w io.Writer, m *hlo.Module, res *remat.FitResult) {
	h := assign.HumanBytes
	fmt.Fprintf(w, "module %s: total %s (%d bytes) -> %s (%d bytes), limit %s (%d bytes), algorithm %s: ", m.Name,
		h(res.TotalBefore), res.TotalBefore, h(res.TotalAfter), res.TotalAfter, h(res.Limit), res.Limit, res.Algorithm)
	if res.Fits {
		fmt.Fprintln(w, "fits")
	} else {
		fmt.Fprintln(w, "does not fit")
	}
	find := cloneFinder(m, res.Module)
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
		rows = append(rows, []string{"%" + r.Original, "%" + r.Clone, h(r.Bytes), fmt.Sprint(r.StepsFreed), fmt.Sprint(flops), opName, src})
	}
	if len(res.Recomputed) == 0 {
		fmt.Fprintln(w, "nothing recomputed")
	} else {
		for _, row := range rows {
			fmt.Fprintln(w, "  "+strings.Join(row, "\t"))
		}
	}
	fmt.Fprintf(w, "added FLOPs: %d, %.2f%% of the module's own %d", res.AddedFLOPs, res.AddedShare(), res.FLOPs)
	if cost.Module(m).Loop {
		fmt.Fprint(w, " (a loop of unknown trip count counted once)")
	}
	fmt.Fprintln(w)
	if res.Message != "" {
		fmt.Fprintln(w, res.Message)
	}
}

// cloneFinder finds an instruction by computation and name in the input m
// or the rewritten module out; clones keep their originals' metadata. A
// clone recomputed again may be gone from out (its own clone replaced
// it): it is its original's op.
func cloneFinder(m, out *hlo.Module) func(comp, name string) *hlo.Instruction {
	byName := map[string]*hlo.Instruction{}
	for _, mod := range []*hlo.Module{m, out} {
		for _, c := range mod.Computations {
			for _, in := range c.Instructions {
				if byName[c.Name+"/"+in.Name] == nil {
					byName[c.Name+"/"+in.Name] = in
				}
			}
		}
	}
	return func(comp, name string) *hlo.Instruction {
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
}
