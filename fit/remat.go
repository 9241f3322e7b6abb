package fit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/remat"
)

// JAX's checkpoint policies as jax.checkpoint_policies spells them.
const (
	// PolicyDotsSaveable saves the results of dots without batch
	// dimensions and recomputes everything else: the policy when the remat
	// recomputed no dot, since the dots it kept are what that policy
	// keeps.
	PolicyDotsSaveable = "jax.checkpoint_policies.dots_with_no_batch_dims_saveable"
	// PolicyNothingSaveable saves nothing: the only named policy that
	// recomputes a dot too, so the policy when a dot (or convolution) was
	// recomputed.
	PolicyNothingSaveable = "jax.checkpoint_policies.nothing_saveable"
)

// xlaRematNote is what XLA:GPU does by itself. Source: openxla/xla
// xla/service/gpu/gpu_compiler.cc adds HloRematerialization to its
// "remat-pipeline" unconditionally, toward the scheduler's memory limit
// (gpu_hlo_schedule.cc GetSchedulerMemoryLimit, scaled by
// --xla_gpu_memory_limit_slop_factor): no flag turns it on.
const xlaRematNote = "XLA:GPU runs its own remat (HloRematerialization) by default, toward the scheduler's memory limit (--xla_gpu_memory_limit_slop_factor scales it); no flag turns it on"

// rematRounds bounds the re-plans of the remat lever: each lowers the
// remat limit by what the device run still missed.
const rematRounds = 4

// rematLever rematerializes m toward the device's limit (compile's remat
// pass, remat.Plan), lowering the remat limit by the shortfall while the
// rewritten plan does not run on the device, and names the scopes of
// what was recomputed and the checkpoint policy.
func (t *target) rematLever(ctx context.Context, m *hlo.Module, v *Verdict) (*Lever, error) {
	l := &Lever{Name: "remat"}
	if v.Fits {
		l.Why = "fits already: nothing to recompute"
		return l, nil
	}
	res, limit, fits, err := t.rematTo(ctx, m, v.Limit, remat.Plan)
	if errors.Is(err, remat.ErrUnsupported) {
		l.Why = "the remat pass refuses this module: " + err.Error()
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	l.Applies, l.Fits, l.remat = true, fits, limit
	l.Total = res.Assignment.Stats.DeviceBytes
	l.Saved, l.Limit = v.Total-l.Total, v.Limit
	rr := res.Remat
	l.Cost = fmt.Sprintf("+%d FLOPs (%.2f%% of the module's own)", rr.AddedFLOPs, rr.AddedShare())
	l.module = res.Module
	scopes, dots := recomputedScopes(res.Module, rr.Recomputed)
	policy := PolicyDotsSaveable
	if dots {
		policy = PolicyNothingSaveable
	}
	if len(rr.Recomputed) == 0 {
		l.Change = []string{"nothing was recomputed"}
	} else {
		l.Change = []string{"wrap the scopes the remat lever names in jax.checkpoint with policy=" + policy}
	}
	for _, s := range scopes {
		l.Details = append(l.Details, "recomputed in "+s)
	}
	if t.gpu != nil {
		l.Commands = append(l.Commands,
			fmt.Sprintf("hlomem assign --format=json --remat-limit=%d %s", limit, t.file),
			fmt.Sprintf("hlomem run --device=%s --remat-limit=%d %s", t.name, limit, t.file))
	} else {
		// run --device=tpu-* takes no --remat-limit: it runs the
		// rewritten module, printed by --emit, as fit judged it.
		l.Commands = append(l.Commands, t.emitCommand("remat")+" | hlomem run --device="+t.name+" -")
	}
	if t.tpu != nil {
		// No command reproduces XLA's algorithm's figure on a TPU plan.
		l.Details = append(l.Details, "XLA's algorithm: not compared on a TPU", xlaRematNote)
		return l, nil
	}
	xres, _, xfits, err := t.rematTo(ctx, m, limit, remat.XLA)
	switch {
	case errors.Is(err, remat.ErrUnsupported):
		l.Details = append(l.Details, "XLA's algorithm refuses this module")
	case err != nil:
		return nil, err
	default:
		l.Details = append(l.Details, fmt.Sprintf("XLA's algorithm at the same limit: total %d bytes, %s", xres.Assignment.Stats.DeviceBytes, fitWord(xfits)))
		l.Commands = append(l.Commands, fmt.Sprintf("hlomem assign --format=json --remat-limit=%d --remat-algo=xla %s", limit, t.file))
	}
	l.Details = append(l.Details, xlaRematNote)
	return l, nil
}

// rematTo compiles m with the remat pass toward limit, then while the
// plan does not run within the device's limit lowers the remat limit by
// the shortfall (rematRounds at most). It returns the last compile, the
// remat limit it used and whether it runs on the device.
func (t *target) rematTo(ctx context.Context, m *hlo.Module, devLimit int64, algo string) (*compile.Result, int64, bool, error) {
	limit, used := devLimit, devLimit
	var last *compile.Result
	for round := 0; round < rematRounds && limit > 0; round++ {
		used = limit
		o := t.opts
		o.Remat = &compile.RematOptions{Limit: limit, Algorithm: algo}
		r, err := compile.Compile(ctx, m.Clone(), o)
		if err != nil {
			return nil, 0, false, err
		}
		last = r
		ok, need, err := t.runs(ctx, r)
		if err != nil {
			return nil, 0, false, err
		}
		if ok {
			return r, limit, true, nil
		}
		short := need - devLimit
		if short <= 0 {
			short = devLimit / 100
		}
		limit = min(limit, r.Assignment.Stats.DeviceBytes) - short
	}
	if last == nil {
		return nil, 0, false, fmt.Errorf("fit: the device offers no memory (limit %d, %s)", devLimit, algo)
	}
	return last, used, false, nil
}

// runs reports whether r's plan runs on the device under the current
// settings, and what it needs (its peak in use; on a TPU its total).
func (t *target) runs(ctx context.Context, r *compile.Result) (bool, int64, error) {
	if t.tpu != nil {
		ok, n := t.tpuFits(r.Assignment)
		return ok, n, nil
	}
	d, err := t.run(ctx, r.Assignment, t.cfg)
	return d.fits, d.need, err
}

// recomputedScopes groups what was recomputed by the top-level op_name
// scope of the original (jit(f)/outer/... groups as jit(f)/outer), with
// their bytes and source lines, largest first; dots reports whether a dot
// or convolution was recomputed.
func recomputedScopes(m *hlo.Module, rec []remat.Recomputed) ([]string, bool) {
	byName := map[string]*hlo.Instruction{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			byName[in.Name] = in
		}
	}
	type group struct {
		bytes   int64
		n       int
		sources map[string]bool
	}
	groups := map[string]*group{}
	dots := false
	for _, r := range rec {
		in := byName[r.Original]
		scope, src := "(no op_name)", ""
		if in != nil {
			if in.Opcode == hlo.OpDot || in.Opcode == hlo.OpConvolution {
				dots = true
			}
			if in.Metadata != nil && in.Metadata.OpName != "" {
				scope = topScope(in.Metadata.OpName)
			}
			src = m.Source(in)
		}
		g := groups[scope]
		if g == nil {
			g = &group{sources: map[string]bool{}}
			groups[scope] = g
		}
		g.bytes += r.Bytes
		g.n++
		if src != "" {
			g.sources[src] = true
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if groups[keys[i]].bytes != groups[keys[j]].bytes {
			return groups[keys[i]].bytes > groups[keys[j]].bytes
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		g := groups[k]
		noun := "values"
		if g.n == 1 {
			noun = "value"
		}
		s := fmt.Sprintf("%s: %d %s, %d bytes", k, g.n, noun, g.bytes)
		if len(g.sources) > 0 {
			srcs := make([]string, 0, len(g.sources))
			for s := range g.sources {
				srcs = append(srcs, s)
			}
			sort.Strings(srcs)
			s += " at " + strings.Join(srcs, ", ")
		}
		out[i] = s
	}
	return out, dots
}

// topScope is the top-level scope of an op_name: its first component, or
// its first two when the first is the jit(...)/pjit(...) wrapper.
func topScope(op string) string {
	parts := strings.Split(op, "/")
	if len(parts) > 2 && (strings.HasPrefix(parts[0], "jit(") || strings.HasPrefix(parts[0], "pjit(")) {
		return parts[0] + "/" + parts[1]
	}
	if len(parts) > 1 {
		return parts[0]
	}
	return op
}
