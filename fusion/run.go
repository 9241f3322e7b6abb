package fusion

import (
	"fmt"
	"sort"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Run fuses m in place: producers into consumers (loop fusion, and input
// fusion into reductions and scatters), then sibling fusions that read the
// same operand into multi-output fusions, in every computation that runs
// in its caller's thread. Every decision carries its reason (Options.
// Explain). Fusion must not raise the peak: unless Options.NoGuard is set,
// Run compares the lower bound of the fused module with the unfused one's
// (under Options.Scheduler) and declines, one by one, the fusions that
// raise it. The result is valid HLO in XLA's form (fused computations with
// parameters and a root, fusion instructions with kind= and calls=);
// changed == false leaves m as it was.
func Run(m *hlo.Module, opts Options) (changed bool, err error) {
	if m == nil || m.Entry == nil {
		return false, nil
	}
	if err := hlo.Verify(m); err != nil {
		return false, err
	}
	forbid := map[[2]string]bool{}
	var refused []Decision
	limit := -1
	if !opts.NoGuard {
		src := m.String()
		base, err := copyBound(m.File, src, opts.Scheduler)
		if err != nil {
			// The unfused module cannot be prepared (liveness refuses
			// it): there is no bound to keep, and buffer assignment of
			// the fused module will say why.
			refused = append(refused, Decision{Computation: m.Entry.Name, Kind: "loop",
				Reason: fmt.Sprintf("no lower-bound guard: the unfused module has no lower bound (%v)", err)})
		} else {
			limit, refused, err = guard(m, src, opts, base, forbid)
			if err != nil {
				return false, err
			}
		}
	}
	f := &fuser{b: newBuilder(m), opts: opts, forbid: forbid, limit: limit}
	f.run()
	if opts.Explain != nil {
		for _, d := range refused {
			opts.Explain(d)
		}
		for _, d := range f.log {
			opts.Explain(d)
		}
	}
	if f.made == 0 {
		return false, nil
	}
	settle(m)
	if err := hlo.Verify(m); err != nil {
		return true, fmt.Errorf("fusion: internal error: the fused module does not verify: %w", err)
	}
	return true, nil
}

// maxGuardRounds bounds the fusions the guard declines one by one; past
// it, the guard keeps the longest prefix of fusions that does not raise
// the lower bound.
const maxGuardRounds = 16

// settle puts a fused module's Users back in parse order and renumbers
// it, so that it is scheduled as its printed text would be.
func settle(m *hlo.Module) {
	for _, c := range m.Computations {
		c.RebuildUsers()
	}
	m.Renumber()
}

// guard finds which fusions to decline so that the lower bound stays at or
// below base: it fuses a copy of m (src is m's text) and, while the bound
// rises, finds by bisection the first fusion after which it does, and
// forbids it. It returns the number of fusions to make (-1: all the rules
// allow) and the declined decisions with their figures.
func guard(m *hlo.Module, src string, opts Options, base int64, forbid map[[2]string]bool) (int, []Decision, error) {
	var refused []Decision
	// trial fuses a fresh copy of m, making at most limit fusions, and
	// measures the result in place: the copy is its own.
	trial := func(limit int) (*fuser, int64, error) {
		c, err := parseCopy(m.File, src)
		if err != nil {
			return nil, 0, err
		}
		f := &fuser{b: newBuilder(c), opts: opts, forbid: forbid, limit: limit}
		f.run()
		settle(c)
		lb, err := bound(c, opts.Scheduler)
		return f, lb, err
	}
	for round := 0; ; round++ {
		f, lb, err := trial(-1)
		if err != nil {
			return 0, nil, err
		}
		if lb <= base {
			return -1, refused, nil
		}
		// The smallest k whose first k fusions raise the bound; bounds
		// remembers what each prefix measured.
		var failErr error
		bounds := map[int]int64{}
		k := sort.Search(f.made, func(k int) bool {
			if failErr != nil {
				return true
			}
			_, lbk, err := trial(k + 1)
			if err != nil {
				failErr = err
				return true
			}
			bounds[k+1] = lbk
			return lbk > base
		}) + 1
		if failErr != nil {
			return 0, nil, failErr
		}
		if k > f.made {
			// No prefix raises it on its own: the sibling order or a
			// non-monotone bound. Keep no fusion at all rather than
			// guess.
			refused = append(refused, Decision{Computation: m.Entry.Name, Kind: "loop", Reason: fmt.Sprintf("fusing raises the lower bound from %d to %d bytes and no single fusion is to blame: nothing fused", base, lb)})
			return 0, refused, nil
		}
		d := nthFused(f.log, k)
		if round >= maxGuardRounds {
			refused = append(refused, Decision{Computation: d.Computation, Kind: d.Kind, Producer: d.Producer, Consumer: d.Consumer,
				Reason: fmt.Sprintf("it and every later fusion are left out: after %d declined fusions the lower bound still rises above %d bytes", round, base)})
			return k - 1, refused, nil
		}
		// The search measured prefix k: it found the bound above base there.
		lbk := bounds[k]
		forbid[[2]string{d.Producer, d.Consumer}] = true
		refused = append(refused, Decision{Computation: d.Computation, Kind: d.Kind, Producer: d.Producer, Consumer: d.Consumer,
			Reason: fmt.Sprintf("fusing it raises the lower bound from %d to %d bytes", base, lbk)})
	}
}

// nthFused returns the k-th (1-based) decision that fused.
func nthFused(log []Decision, k int) Decision {
	for _, d := range log {
		if d.Fused {
			if k--; k == 0 {
				return d
			}
		}
	}
	return Decision{}
}

// parseCopy parses src, the text of one module, into a copy of its own.
func parseCopy(file, src string) (*hlo.Module, error) {
	mods, err := hlo.Parse(file, []byte(src))
	if err != nil || len(mods) != 1 {
		return nil, fmt.Errorf("fusion: copying the module: %v", err)
	}
	return mods[0], nil
}

// copyBound is bound of a copy of the module whose text is src.
func copyBound(file, src, scheduler string) (int64, error) {
	c, err := parseCopy(file, src)
	if err != nil {
		return 0, err
	}
	return bound(c, scheduler)
}

// bound prepares m as buffer assignment would (copies, schedule), in
// place, and returns its lower bound.
func bound(m *hlo.Module, scheduler string) (int64, error) {
	a, err := liveness.PrepareWith(m, liveness.PrepareOptions{Scheduler: scheduler})
	if err != nil {
		return 0, err
	}
	return a.LowerBound(nil).Bytes, nil
}
