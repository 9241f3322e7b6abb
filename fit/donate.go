package fit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
)

// Donation is one entry argument whose buffer the program could be handed
// (what jax.jit's donate_argnums does).
//
// Param numbers the argument as the entry computation does: parameter(N).
// JAX lowers a jitted function's arguments by flattening the pytree of
// (args, kwargs) into leaves, each leaf one entry parameter in order, so
// Param is the flat leaf index. donate_argnums names top-level positional
// arguments: donating argument i donates every leaf of args[i] (its
// parameters are consecutive; metadata op_name spells the leaf's path,
// e.g. "args[0]['w']" or "params['w']", whose leading name or index is the
// argument to list in donate_argnums / donate_argnames). jax.jit drops
// the leaves the function never reads (keep_unused=False, the default), so
// parameter N is the N-th leaf among those kept: the op_name path, when
// present, is the surer link back to the Python argument. With tuple_args
// (many arguments), JAX passes all leaves in one tuple parameter: then
// ParamIndex {k} is leaf k.
type Donation struct {
	Param      int64          // entry parameter number: the flat argument (leaf) index
	ParamIndex hlo.ShapeIndex // within a tuple parameter, else {}
	// Name is JAX's name of the argument, from the parameter's metadata
	// op_name or its instruction name when either gives one, else "".
	Name  string
	Bytes int64
	// Output is the entry output index the argument is aliased to
	// (input_output_alias, may-alias as JAX emits it): in Module when
	// Donated, else when donated alone; nil when no output matches and the
	// argument is only made a buffer_donor.
	Output hlo.ShapeIndex
	// Saved is Before less the plan's total with this argument alone
	// donated (its own re-plan). It may be 0 (a buffer_donor nothing
	// reuses) or negative (copies the donation needs cost more than it
	// frees).
	Saved int64
	// Donated says the argument is in the set Module and After donate
	// (DonateResult.After); Output is then the output it has there.
	Donated bool
}

// DonateResult is what donating the entry's arguments does to the plan.
type DonateResult struct {
	// Module is the original (a clone) with input_output_alias and
	// buffer_donor entries added for the arguments of Args marked Donated.
	Module *hlo.Module
	// Args is each donatable argument, largest saving first (then the
	// larger buffer, then parameter order). Every donatable argument is
	// listed, whatever its saving.
	Args []Donation
	// Before is the plan's total of the module as given. After is the
	// total with the arguments of Args marked Donated donated: the set
	// kept by adding the arguments one by one, largest saving first, each
	// only when the re-plan with it is lower than without. Donating every
	// argument is not always better (an alias can need a copy as large as
	// what it frees, and JAX's matching of many arguments can pair an
	// argument with an output a later one would have served better), so
	// All is that total, which may exceed Before. All's plan passes
	// assign.Check but is not held to the shadow check (see donatePlan):
	// it is a figure, not a plan Donate proposes.
	Before, After int64
	All           int64
	// Skipped are the arguments whose donation the pipeline could not
	// plan, each with the reason; they are not in Args nor in Module.
	Skipped []string
}

// donateLeaf is one donatable array leaf of an entry parameter.
type donateLeaf struct {
	param int64
	index hlo.ShapeIndex
	shape hlo.Shape
	bytes int64
}

// donateCand is one donation to make: the alias to output, or with output
// nil the buffer donor.
type donateCand struct {
	donateLeaf
	output hlo.ShapeIndex
}

// Donate lists the entry arguments of m that can be donated, adds each to
// the module (an input_output_alias to an output, or a buffer_donor when no
// output is left to match), and measures each by re-planning: the module
// with that argument alone donated, and with the arguments worth donating
// together (After) and with all of them (All). m is not changed.
//
// Which argument goes to which output is what JAX and XLA would make of
// donate_argnums (donateMatch). Arguments already aliased or already buffer
// donors are the user's donations and are skipped; outputs already
// aliased take no other. An argument no output matches becomes a
// buffer_donor: XLA's GPU and CPU buffer assignment reuse only parameters
// aliased to an output (BufferAllocation::is_readonly), so its re-plan
// shows that such a donation saves nothing (JAX does not even pass it on:
// it warns "Some donated buffers were not usable").
//
// Safety: each donated module is planned by compile.Compile with opts. A
// module XLA has not scheduled goes through the pipeline's copy insertion,
// which adds the copies a donated parameter needs (one read after its
// output is written in place gets a copy). A scheduled module
// (is_scheduled=true) skips copy insertion; its schedule pass (the
// module's own order) repairs every interference the new alias causes
// with a copy (liveness's interference repair), so the donated module is
// planned with those copies and the saving shown is net of them. Every
// donated plan must pass the shadow check too (donatePlan). A donation the
// pipeline cannot plan, or whose plan fails the shadow check, is left out
// (Skipped).
func Donate(ctx context.Context, m *hlo.Module, opts compile.Options) (res *DonateResult, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if m == nil || m.Entry == nil {
		return nil, errors.New("fit: donate: no module")
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("fit: donate: %s: internal error: %v", m.Name, r)
		}
	}()
	if err := hlo.Verify(m); err != nil {
		return nil, err
	}
	before, err := donatePlan(ctx, m, opts, nil, false)
	if err != nil {
		return nil, err
	}
	res = &DonateResult{Before: before, After: before, All: before}
	var leaves []donateLeaf
	// Each leaf donated alone is planned on its own clone of m: as many
	// at once as there are processors, then taken in order.
	all := donateLeaves(m)
	totals, errs := make([]int64, len(all)), make([]error, len(all))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var panicked any // a worker's panic, raised again here for the recover above
	for range min(runtime.GOMAXPROCS(0), len(all)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				func() {
					defer func() {
						if r := recover(); r != nil {
							mu.Lock()
							panicked = r
							mu.Unlock()
						}
					}()
					if errs[i] = ctx.Err(); errs[i] == nil {
						totals[i], errs[i] = donatePlan(ctx, m, opts, donateMatch(m, []donateLeaf{all[i]}), true)
					}
				}()
			}
		}()
	}
	for i := range all {
		next <- i
	}
	close(next)
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	for i, l := range all {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cands := donateMatch(m, []donateLeaf{l})
		total, err := totals[i], errs[i]
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Skipped = append(res.Skipped, fmt.Sprintf("parameter %d at %s: %v", l.param, l.index, err))
			continue
		}
		leaves = append(leaves, l)
		res.Args = append(res.Args, Donation{
			Param: l.param, ParamIndex: l.index, Name: donateName(m.Entry.Params[l.param]),
			Bytes: l.bytes, Output: cands[0].output, Saved: before - total,
		})
	}
	slices.SortStableFunc(res.Args, func(x, y Donation) int {
		if c := cmp.Compare(y.Saved, x.Saved); c != 0 {
			return c
		}
		return cmp.Compare(y.Bytes, x.Bytes)
	})
	if len(leaves) > 0 {
		if res.All, err = donatePlan(ctx, m, opts, donateMatch(m, leaves), false); err != nil {
			return nil, fmt.Errorf("fit: donate: planning %s with every argument donated: %w", m.Name, err)
		}
	}
	chosen, err := donateChoose(ctx, m, opts, res)
	if err != nil {
		return nil, err
	}
	res.Module = donateApply(m, chosen)
	return res, nil
}

// donateChoose adds the arguments of res.Args with a positive saving one
// by one, largest first, keeping each whose addition lowers the re-planned
// total; it sets res.After, marks the kept arguments Donated (their Output
// the one the set's matching gives) and returns the set's donations.
func donateChoose(ctx context.Context, m *hlo.Module, opts compile.Options, res *DonateResult) ([]donateCand, error) {
	var set []donateLeaf
	var best []donateCand
	for i, d := range res.Args {
		if d.Saved <= 0 {
			break
		}
		try := append(slices.Clone(set), donateLeaf{param: d.Param, index: d.ParamIndex})
		try = donateLeavesOf(m, try)
		cands := donateMatch(m, try)
		total, err := donatePlan(ctx, m, opts, cands, true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue // the set without it stands
		}
		if total < res.After {
			set, best, res.After = try, cands, total
			res.Args[i].Donated = true
		}
	}
	for i := range res.Args {
		for _, c := range best {
			if res.Args[i].Donated && c.param == res.Args[i].Param && c.index.Equal(res.Args[i].ParamIndex) {
				res.Args[i].Output = c.output
			}
		}
	}
	return best, nil
}

// donatePlan is the plan's total of a clone of m with cands donated,
// planned by the pipeline with opts (which checks it, assign.Check). With
// shadow, the plan must also pass the runtime's shadow check (exec.Shadow),
// or the donation is refused: the runtime writes an entry parameter at its
// place in the schedule, so a parameter the schedule puts after the output
// aliased to it is written (a dead argument: found by FuzzDonate) would
// clobber that output there, though XLA's ordering holds every parameter
// from the start.
func donatePlan(ctx context.Context, m *hlo.Module, opts compile.Options, cands []donateCand, shadow bool) (int64, error) {
	r, err := compile.Compile(ctx, donateApply(m, cands), opts)
	if err != nil {
		return 0, err
	}
	if r.Assignment == nil {
		return 0, fmt.Errorf("fit: donate: the pipeline made no plan of %s (Options.Until %q)", m.Name, opts.Until)
	}
	if shadow {
		sh, err := exec.Shadow(ctx, r.Assignment)
		if err != nil {
			return 0, err
		}
		if sh.Violation != nil {
			return 0, fmt.Errorf("fit: donate: the donated plan fails the shadow check: %v", sh.Violation)
		}
	}
	return r.Assignment.Stats.TotalBytes, nil
}

// donateApply returns a clone of m with cands added to its
// input_output_alias (may-alias, as JAX emits donations) or buffer_donor.
func donateApply(m *hlo.Module, cands []donateCand) *hlo.Module {
	c := m.Clone()
	for _, d := range cands {
		if d.output != nil {
			c.InputOutputAlias = append(c.InputOutputAlias, hlo.IOAlias{
				Output: append(hlo.ShapeIndex{}, d.output...), Param: d.param, ParamIndex: append(hlo.ShapeIndex{}, d.index...), Kind: hlo.MayAlias})
		} else {
			c.BufferDonors = append(c.BufferDonors, hlo.BufferDonor{Param: d.param, ParamIndex: append(hlo.ShapeIndex{}, d.index...)})
		}
	}
	return c
}

// donateLeaves lists the donatable leaves of m's entry parameters in
// parameter order, each parameter's leaves in shape-index order: array
// leaves of static shape not aliased nor donated already.
func donateLeaves(m *hlo.Module) []donateLeaf {
	var out []donateLeaf
	for _, p := range m.Entry.Params {
		p.Shape.ForEachSubshape(func(s hlo.Shape, ix hlo.ShapeIndex) {
			n, ok := donateSize(s)
			if !ok || donateTaken(m, p.ParameterNumber, ix) {
				return
			}
			out = append(out, donateLeaf{param: p.ParameterNumber, index: append(hlo.ShapeIndex{}, ix...), shape: s, bytes: n})
		})
	}
	return out
}

// donateLeavesOf returns the leaves of set as donateLeaves describes them,
// in donateLeaves' order (the order JAX sees the arguments in).
func donateLeavesOf(m *hlo.Module, set []donateLeaf) []donateLeaf {
	var out []donateLeaf
	for _, l := range donateLeaves(m) {
		if slices.ContainsFunc(set, func(x donateLeaf) bool { return x.param == l.param && x.index.Equal(l.index) }) {
			out = append(out, l)
		}
	}
	return out
}

func donateTaken(m *hlo.Module, p int64, ix hlo.ShapeIndex) bool {
	for _, a := range m.InputOutputAlias {
		if a.Param == p && a.ParamIndex.Equal(ix) {
			return true
		}
	}
	for _, d := range m.BufferDonors {
		if d.Param == p && d.ParamIndex.Equal(ix) {
			return true
		}
	}
	return false
}

// donateOutput is an array leaf of the entry's result not aliased yet.
type donateOutput struct {
	index hlo.ShapeIndex // never nil: {} is the result itself
	shape hlo.Shape
	bytes int64
}

func donateOutputs(m *hlo.Module) []donateOutput {
	var out []donateOutput
	root := m.Entry.Root.Shape
	root.ForEachSubshape(func(s hlo.Shape, ix hlo.ShapeIndex) {
		n, ok := donateSize(s)
		if !ok || slices.ContainsFunc(m.InputOutputAlias, func(a hlo.IOAlias) bool { return a.Output.Equal(ix) }) {
			return
		}
		out = append(out, donateOutput{append(hlo.ShapeIndex{}, ix...), s, n})
	})
	return out
}

// donateMatch pairs the donated leaves set (in donateLeaves' order) with
// outputs as jax.jit's donate_argnums and XLA do:
//
//  1. JAX (jax/_src/interpreters/mlir.py, _set_up_aliases): each output,
//     in order, is aliased to the first donated argument not yet aliased
//     of the same shape and element type, in the same memory space
//     (input_output_alias);
//  2. JAX again: each argument left, in order, whose element count and
//     memory space an output not aliased has (each output once) is passed
//     to XLA as a buffer donor;
//  3. XLA (optimize_input_output_buffer_alias.cc, Build, with registered
//     buffer donors only): per memory space, those donors and the outputs
//     not aliased, each sorted by byte size, largest first (stable), are
//     paired with two pointers on equal size into aliases; dynamic shapes
//     never alias.
//
// An argument paired with nothing is a buffer_donor (output nil).
func donateMatch(m *hlo.Module, set []donateLeaf) []donateCand {
	out := make([]donateCand, len(set))
	for i, l := range set {
		out[i] = donateCand{donateLeaf: l}
	}
	outs := donateOutputs(m)
	if donateDynamic(m.Entry.Root.Shape) {
		return out
	}
	aliased := make([]bool, len(outs))
	for j, o := range outs {
		for i := range out {
			c := &out[i]
			if c.output == nil && c.shape.Elem == o.shape.Elem && slices.Equal(c.shape.Dims, o.shape.Dims) &&
				c.shape.MemorySpace() == o.shape.MemorySpace() {
				c.output, aliased[j] = o.index, true
				break
			}
		}
	}
	counted := slices.Clone(aliased)
	var donors []*donateCand
	for i := range out {
		c := &out[i]
		if c.output != nil {
			continue
		}
		n, _ := c.shape.Elements()
		for j, o := range outs {
			if k, _ := o.shape.Elements(); !counted[j] && k == n && o.shape.MemorySpace() == c.shape.MemorySpace() {
				counted[j] = true
				donors = append(donors, c)
				break
			}
		}
	}
	var donees []donateOutput
	for j, o := range outs {
		if !aliased[j] {
			donees = append(donees, o)
		}
	}
	slices.SortStableFunc(donors, func(x, y *donateCand) int { return cmp.Compare(y.bytes, x.bytes) })
	slices.SortStableFunc(donees, func(x, y donateOutput) int { return cmp.Compare(y.bytes, x.bytes) })
	usedDonee := make([]bool, len(donees))
	for _, space := range donateSpaces(donors) {
		var ds []*donateCand
		for _, d := range donors {
			if d.shape.MemorySpace() == space {
				ds = append(ds, d)
			}
		}
		var es []int
		for j, e := range donees {
			if e.shape.MemorySpace() == space && !usedDonee[j] {
				es = append(es, j)
			}
		}
		for i, j := 0, 0; i < len(ds) && j < len(es); {
			switch e := donees[es[j]]; {
			case ds[i].bytes > e.bytes:
				i++
			case ds[i].bytes < e.bytes:
				j++
			default:
				ds[i].output, usedDonee[es[j]] = e.index, true
				i++
				j++
			}
		}
	}
	return out
}

// donateSpaces lists the memory spaces of cs, in first-seen order.
func donateSpaces(cs []*donateCand) []int64 {
	var out []int64
	for _, c := range cs {
		if s := c.shape.MemorySpace(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// donateSize is the byte size of an array leaf that may be donated: not
// a tuple, token or opaque value, no dynamic dimension (XLA never aliases
// those).
func donateSize(s hlo.Shape) (int64, bool) {
	if !s.IsArray() || s.Dynamic != nil && slices.Contains(s.Dynamic, true) {
		return 0, false
	}
	n, err := hlo.BufferSize(s)
	return n, err == nil
}

// donateDynamic reports whether any leaf of s has a dynamic dimension
// (XLA's Shape::is_dynamic: then no output is aliased).
func donateDynamic(s hlo.Shape) bool {
	dyn := false
	s.ForEachSubshape(func(sub hlo.Shape, _ hlo.ShapeIndex) {
		if sub.Dynamic != nil && slices.Contains(sub.Dynamic, true) {
			dyn = true
		}
	})
	return dyn
}

// donateGeneric matches the instruction names that number an argument
// rather than name it: JAX's "Arg_0.1", torch-xla's "p0.1", a builder's
// "param.3" or "parameter.3".
var donateGeneric = regexp.MustCompile(`^(?i:arg_?\d*|args|p\d*|param\d*|parameter\d*|input\d*)$`)

// donateName is the argument's name as JAX spells it: the parameter's
// metadata op_name when that is a name (JAX writes the pytree path there,
// "args[0]['w']" or "params"; an op_name with a scope "jit(f)/..." or
// equal to op_type, as torch-xla's "xla__device_data", names an operation
// instead), else its instruction name without the numeric suffixes when
// that is not a generic one ("Arg_0.1"), else "".
func donateName(p *hlo.Instruction) string {
	if md := p.Metadata; md != nil && md.OpName != "" && !strings.Contains(md.OpName, "/") && md.OpName != md.OpType {
		return md.OpName
	}
	name := p.Name
	for {
		i := strings.LastIndexByte(name, '.')
		if i <= 0 || strings.Trim(name[i+1:], "0123456789") != "" {
			break
		}
		name = name[:i]
	}
	if donateGeneric.MatchString(name) {
		return ""
	}
	return name
}
