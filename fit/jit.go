package fit

import (
	"context"
	"fmt"

	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// JitLimit is the most top-level ops a module may have for the jit lever
// to run it op by op (each distinct op is planned on its own), as
// hlomem report's without-jit rows (report.WhatIfEagerLimit).
const JitLimit = 5000

// jitLever compares the module run op by op (JAX without jit: each op its
// own program, results held until the function returns or freed at their
// last use; eager.Compare) with the module jitted, on the client model
// under the current settings. It applies only to a module XLA has not
// compiled: a scheduled module (is_scheduled=true) is XLA's compiled
// program, which runs jitted already.
func (t *target) jitLever(ctx context.Context, m *hlo.Module, v *Verdict) (*Lever, error) {
	l := &Lever{Name: "jit", Cost: "none", Change: []string{"wrap the function in jax.jit"}}
	switch {
	case t.tpu != nil:
		l.Why = "the op-by-op model is the GPU client's; it does not run on a TPU"
		return l, nil
	case m.IsScheduled:
		l.Why = "XLA compiled this module (is_scheduled=true): it already runs jitted"
		return l, nil
	case m.Entry != nil && len(m.Entry.Instructions) > JitLimit:
		l.Why = fmt.Sprintf("not measured: %d top-level ops, over %d (hlomem run --device=%s --eager=held|last-use measures it at any size)", len(m.Entry.Instructions), JitLimit, t.name)
		return l, nil
	}
	l.Applies = true
	newClient := func() (*gpu.Client, error) { return gpu.NewClient(*t.gpu, t.cfg, gpu.ClientOptions{}) }
	copts := t.opts
	copts.Remat = nil
	// eager.Compare under each release rule, the jitted run (the same
	// under both) run once.
	cj, err := newClient()
	if err != nil {
		return nil, err
	}
	j, err := eager.Jit(ctx, m, cj, copts)
	if err != nil {
		return nil, fmt.Errorf("jitted run: %w", err)
	}
	jitPeak, jitFits := j.Peak, j.Fits()
	for _, rel := range []eager.Release{eager.Held, eager.LastUse} {
		ce, err := newClient()
		if err != nil {
			return nil, err
		}
		e, err := eager.Run(ctx, m, ce, eager.Options{Release: rel, Compile: copts, LiveAt: -1})
		if err != nil {
			return nil, fmt.Errorf("eager run: %w", err)
		}
		s := fmt.Sprintf("op by op (%s): ", rel)
		if e.Fits() {
			s += fmt.Sprintf("fits, peak %d bytes", e.Peak)
			if jitFits {
				s += fmt.Sprintf(", %d more than jitted (jit saves %d bytes)", e.Peak-jitPeak, e.Peak-jitPeak)
			}
		} else {
			s += fmt.Sprintf("does not fit (out of memory at op step %d)", e.FailedStep)
		}
		l.Details = append(l.Details, s)
		l.Commands = append(l.Commands, fmt.Sprintf("hlomem run --device=%s --eager=%s %s", t.name, rel, t.file))
	}
	l.Fits = jitFits
	l.Total, l.Limit = v.Total, v.Limit
	if jitFits {
		l.Details = append([]string{fmt.Sprintf("jitted: fits, peak %d bytes", jitPeak)}, l.Details...)
	} else {
		l.Details = append([]string{"jitted: does not fit"}, l.Details...)
	}
	return l, nil
}
