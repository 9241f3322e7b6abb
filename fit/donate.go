package fit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/compile"
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
// argument to list in donate_argnums / donate_argnames). With tuple_args
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
	// (input_output_alias, may-alias as JAX emits it); nil when no output
	// matches and the argument is only made a buffer_donor.
	Output hlo.ShapeIndex
	// Saved is Before less the plan's total with this argument alone
	// donated (its own re-plan). It may be 0 (a buffer_donor nothing
	// reuses) or negative (copies the donation needs cost more than it
	// frees).
	Saved int64
}

// DonateResult is what donating the entry's arguments does to the plan.
type DonateResult struct {
	// Module is the original (a clone) with input_output_alias and
	// buffer_donor entries added for every argument of Args.
	Module *hlo.Module
	// Args is each donatable argument, largest saving first (then the
	// larger buffer, then parameter order). Every donatable argument is
	// listed, whatever its saving.
	Args []Donation
	// Before and After are the plan totals without and with every
	// argument of Args donated.
	Before, After int64
	// Skipped are the arguments a donation of which the pipeline could
	// not plan, each with the reason; they are not in Args nor in Module.
	Skipped []string
}

// donateCand is one donation to make: the alias, or with Output nil the
// buffer donor.
type donateCand struct {
	param  int64
	index  hlo.ShapeIndex
	output hlo.ShapeIndex
	bytes  int64
	space  int64
}

// Donate lists the entry arguments of m that can be donated, adds each to
// the module (an input_output_alias to an output of the same size, or a
// buffer_donor when no output is left to match), and measures each by
// re-planning: the module with that argument alone donated, and with all of
// them donated. m is not changed.
//
// Which argument goes to which output follows XLA's
// OptimizeInputOutputBufferAlias (optimize_input_output_buffer_alias.cc,
// Build): per memory space, the array leaves of the parameters that are
// not aliased already and the array output leaves that are not aliased
// already, each sorted by byte size, largest first (stable), matched with
// two pointers on equal size; dynamic shapes never alias. Arguments already
// aliased or already buffer donors are the user's donations and are
// skipped. An argument no output matches becomes a buffer_donor: XLA's GPU
// and CPU buffer assignment reuse only parameters aliased to an output
// (BufferAllocation::is_readonly), so its re-plan shows what such a
// donation saves there, usually nothing (JAX warns "Some donated buffers
// were not usable").
//
// Safety: the module as given is planned by compile.Compile with opts. A
// module XLA has not scheduled goes through the pipeline's copy insertion,
// which adds the copies a donated parameter needs (one read after its
// output is written in place gets a copy). A scheduled module
// (is_scheduled=true) skips copy insertion; its schedule pass (schedule.Apply
// with the module's own order) repairs every interference the new alias
// causes with a copy (liveness's interference repair), so the donated
// module is planned with those copies, and the saving shown includes their
// cost. A donation the pipeline cannot plan is left out (Skipped).
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
	before, err := donatePlan(ctx, m, opts, nil)
	if err != nil {
		return nil, err
	}
	res = &DonateResult{Before: before}
	var kept []donateCand
	for _, c := range donateCandidates(m) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		total, err := donatePlan(ctx, m, opts, []donateCand{c})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Skipped = append(res.Skipped, fmt.Sprintf("parameter %d at %s: %v", c.param, c.index, err))
			continue
		}
		kept = append(kept, c)
		res.Args = append(res.Args, Donation{
			Param: c.param, ParamIndex: c.index, Name: donateName(m.Entry.Params[c.param]),
			Bytes: c.bytes, Output: c.output, Saved: before - total,
		})
	}
	slices.SortStableFunc(res.Args, func(x, y Donation) int {
		if c := cmp.Compare(y.Saved, x.Saved); c != 0 {
			return c
		}
		return cmp.Compare(y.Bytes, x.Bytes)
	})
	res.Module = donateApply(m, kept)
	if len(kept) == 0 {
		res.After = before
		return res, nil
	}
	if res.After, err = donatePlan(ctx, m, opts, kept); err != nil {
		return nil, fmt.Errorf("fit: donate: planning %s with every argument donated: %w", m.Name, err)
	}
	return res, nil
}

// donatePlan is the plan's total of a clone of m with cands donated,
// planned by the pipeline with opts.
func donatePlan(ctx context.Context, m *hlo.Module, opts compile.Options, cands []donateCand) (int64, error) {
	r, err := compile.Compile(ctx, donateApply(m, cands), opts)
	if err != nil {
		return 0, err
	}
	if r.Assignment == nil {
		return 0, fmt.Errorf("fit: donate: the pipeline made no plan of %s (Options.Until %q)", m.Name, opts.Until)
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

// donateCandidates lists the donatable leaves of m's entry parameters,
// each matched to an output as XLA's OptimizeInputOutputBufferAlias
// matches buffer donors (see Donate), in parameter order.
func donateCandidates(m *hlo.Module) []donateCand {
	taken := func(p int64, ix hlo.ShapeIndex) bool {
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
	var donors []*donateCand
	for _, p := range m.Entry.Params {
		p.Shape.ForEachSubshape(func(s hlo.Shape, ix hlo.ShapeIndex) {
			n, ok := donateSize(s)
			if !ok || taken(p.ParameterNumber, ix) {
				return
			}
			donors = append(donors, &donateCand{param: p.ParameterNumber, index: append(hlo.ShapeIndex{}, ix...), bytes: n, space: s.MemorySpace()})
		})
	}
	type donee struct {
		index hlo.ShapeIndex
		bytes int64
		space int64
	}
	var donees []donee
	root := m.Entry.Root.Shape
	if !root.IsUnboundedDynamic() && !donateDynamic(root) {
		root.ForEachSubshape(func(s hlo.Shape, ix hlo.ShapeIndex) {
			n, ok := donateSize(s)
			if !ok || slices.ContainsFunc(m.InputOutputAlias, func(a hlo.IOAlias) bool { return a.Output.Equal(ix) }) {
				return
			}
			// Never nil, so that the entry result itself ({}) reads as an
			// output, not as "no output".
			donees = append(donees, donee{append(hlo.ShapeIndex{}, ix...), n, s.MemorySpace()})
		})
	}
	bySize := func(x, y *donateCand) int { return cmp.Compare(y.bytes, x.bytes) }
	sorted := slices.Clone(donors)
	slices.SortStableFunc(sorted, bySize)
	slices.SortStableFunc(donees, func(x, y donee) int { return cmp.Compare(y.bytes, x.bytes) })
	spaces := map[int64]bool{}
	for _, d := range sorted {
		spaces[d.space] = true
	}
	for space := range spaces {
		var ds []*donateCand
		for _, d := range sorted {
			if d.space == space {
				ds = append(ds, d)
			}
		}
		var es []donee
		for _, e := range donees {
			if e.space == space {
				es = append(es, e)
			}
		}
		for i, j := 0, 0; i < len(ds) && j < len(es); {
			switch {
			case ds[i].bytes > es[j].bytes:
				i++
			case ds[i].bytes < es[j].bytes:
				j++
			default:
				ds[i].output = es[j].index
				i++
				j++
			}
		}
	}
	out := make([]donateCand, len(donors))
	for i, d := range donors {
		out[i] = *d
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
