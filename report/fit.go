package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/hlomem/hlomem/fit"
	"github.com/hlomem/hlomem/hlo"
)

// FitWhatIf is a fit row's outcome (Lever{"fit", DEVICE}): hlomem fit's
// cheapest combination of the user's levers on the device (fit.Analyze),
// WhatIf.Total its plan's total, WhatIf.Command the run that shows it.
type FitWhatIf struct {
	Device string
	// Levers are the combination's levers in the order applied (none
	// when the module fits as it is); Fits whether the combination fits;
	// Need what its run holds on the client, Limit the client's limit;
	// Why says why no combination fits.
	Levers      []string
	Fits        bool
	Need, Limit int64
	Why         string
}

// planFit runs hlomem fit's analysis of m on the lever's device.
func (l Lever) planFit(ctx context.Context, m *hlo.Module, opts Options, w WhatIf) WhatIf {
	c := opts.Compile
	c.Remat = nil
	fo := fit.Options{Device: l.Value, Compile: c, Getenv: opts.Getenv, File: opts.File}
	if p := opts.plan; p != nil && opts.Compile.Remat == nil && opts.Compile.PlanCost && opts.Compile.Until == "" && opts.Compile.Spaces == nil {
		// fit plans m with c as this report planned it: the plan is
		// this report's.
		fo.Plan = p.Assignment
	}
	rep, err := fit.Analyze(ctx, m, fo)
	if err != nil {
		w.Err = err.Error()
		return w
	}
	cb := rep.Combination
	w.Total = cb.Total
	w.Fit = &FitWhatIf{Device: l.Value, Levers: cb.Levers, Fits: cb.Fits, Need: cb.Need, Limit: cb.Limit, Why: cb.Why}
	if len(cb.Commands) > 0 {
		w.Command = strings.Fields(cb.Commands[0])
	}
	return w
}

// fitVs is a fit row's outcome in words.
func fitVs(w WhatIf) string {
	f := w.Fit
	names := "as it is"
	if len(f.Levers) > 0 {
		names = "with " + strings.Join(f.Levers, " + ")
	}
	if !f.Fits {
		return fmt.Sprintf("does not fit on %s even with every lever: the run needs %d bytes of %d", f.Device, f.Need, f.Limit)
	}
	return fmt.Sprintf("fits on %s %s: the run needs %d bytes of %d", f.Device, names, f.Need, f.Limit)
}
