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
func Passes(opts Options) []liveness.Pass {
	return []liveness.Pass{
		{Name: "simplify", Run: func(m *hlo.Module, _ liveness.PrepareOptions) (bool, error) { return Simplify(m) }},
		{Name: "cse", Run: func(m *hlo.Module, _ liveness.PrepareOptions) (bool, error) { return CSE(m) }},
		{Name: "dce", Run: func(m *hlo.Module, _ liveness.PrepareOptions) (bool, error) { return DCE(m) }},
		{Name: "fusion", Run: func(m *hlo.Module, p liveness.PrepareOptions) (bool, error) {
			o := opts
			if o.Scheduler == "" {
				o.Scheduler = p.Scheduler
			}
			return Run(m, o)
		}},
	}
}
