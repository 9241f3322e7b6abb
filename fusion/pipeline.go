package fusion

import (
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Passes returns the optimization passes that go in the preparation
// pipeline's fusion slot (liveness.PrepareOptions.Optimize), in order:
// simplify (reshapes and transposes that are bitcasts, no-op ops), cse,
// dce, fusion. The
// fusion pass's lower-bound guard uses the pipeline's scheduler unless
// opts names one.
//
// With the guard on, the passes keep the measure of the module as it came
// to the first of them: the simplify pass keeps a clone of it, and when
// simplification raised the measure the fusion pass undoes it. The passes
// of one call share that clone: run them on one module at a time.
func Passes(opts Options) []liveness.Pass {
	var orig *hlo.Module
	return []liveness.Pass{
		{Name: "simplify", Run: func(m *hlo.Module, _ liveness.PrepareOptions) (bool, error) {
			orig = nil
			if !opts.NoGuard && m != nil {
				orig = m.Clone()
			}
			return Simplify(m)
		}},
		{Name: "cse", Run: func(m *hlo.Module, _ liveness.PrepareOptions) (bool, error) { return CSE(m) }},
		{Name: "dce", Run: func(m *hlo.Module, _ liveness.PrepareOptions) (bool, error) { return DCE(m) }},
		{Name: "fusion", Run: func(m *hlo.Module, p liveness.PrepareOptions) (bool, error) {
			o := opts
			if o.Scheduler == "" {
				o.Scheduler = p.Scheduler
			}
			if o.Search.Budget == 0 && o.Search.Timeout == 0 && o.Search.Cost == nil {
				o.Search = p.Search
			}
			o.ctx = p.Context()
			from := orig
			orig = nil
			return runFrom(m, from, o)
		}},
	}
}
