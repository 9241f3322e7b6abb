package fusion

import (
	"context"
	"fmt"
	"sort"

	"github.com/hlomem/hlomem/hlo"
)

// Run fuses m in place: producers into consumers (loop fusion, and input
// fusion into reductions and scatters), then sibling fusions that read the
// same operand into multi-output fusions, in every computation that runs
// in its caller's thread. Every decision carries its reason (Options.
// Explain). Fusion must not raise the peak: unless Options.NoGuard is set,
// Run compares Options.Measure of the fused module with the unfused one's
// and declines, one by one, the fusions that raise it. The result is valid
// HLO in XLA's form (fused computations with parameters and a root, fusion
// instructions with kind= and calls=); changed == false leaves m as it
// was.
//
// Run stops, returning ctx's error, once ctx is done (the guard measures
// the module again and again; each measure stops too); m may then be left
// partly fused, valid or not: discard it.
func Run(ctx context.Context, m *hlo.Module, opts Options) (changed bool, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !opts.NoGuard && opts.Measure == nil {
		return false, ErrNoMeasure
	}
	return runFrom(ctx, m, opts.Before, opts)
}

// runFrom is Run. With the guard on and orig set (a clone of the module
// before the simplification passes that made m), the measure kept is
// orig's: when the simplified module, even unfused, measures above it, m
// goes back to orig (the passes are undone) and is fused from there.
func runFrom(ctx context.Context, m, orig *hlo.Module, opts Options) (changed bool, err error) {
	if m == nil || m.Entry == nil {
		return false, nil
	}
	if err := hlo.VerifyContext(ctx, m); err != nil {
		return false, err
	}
	forbid := map[[2]string]bool{}
	var refused []Decision
	var f *fuser
	checked := false // m is settled and a clone of it was prepared
	if opts.NoGuard {
		f = runFuser(ctx, m, opts, forbid, -1)
	} else {
		var undone bool
		f, refused, checked, undone = guarded(ctx, m, orig, opts, forbid)
		changed = undone
	}
	if err := ctx.Err(); err != nil {
		return changed, err
	}
	if opts.Explain != nil {
		for _, d := range refused {
			opts.Explain(d)
		}
		for _, d := range f.log {
			opts.Explain(d)
		}
	}
	if f.made == 0 {
		return changed, nil
	}
	if checked {
		// liveness verified the clone it prepared.
		return true, nil
	}
	settle(m)
	if err := hlo.Verify(m); err != nil {
		return true, fmt.Errorf("fusion: internal error: the fused module does not verify: %w", err)
	}
	return true, nil
}

// guarded fuses m keeping its measure (Options.Measure: the lower bound, and a cost) from
// rising above orig's (m's own when orig is nil), and returns the fuser
// that made the fusions kept and the decisions the guard declined. The
// unfused module is measured on a clone of its own while m itself is fused
// with every fusion the rules allow; a clone of the result is measured in
// turn, and when it is not above the unfused measure (the usual case) m is
// done. Otherwise m goes back to its unfused form and the guard searches
// for the fusions to decline. checked reports that m is the fused module
// measured, settled, and that a clone of it was prepared (which verifies
// it); undone, that m went back to orig.
func guarded(ctx context.Context, m, orig *hlo.Module, opts Options, forbid map[[2]string]bool) (f *fuser, refused []Decision, checked, undone bool) {
	pre := m.Clone() // m unfused
	if orig == nil {
		orig = pre
	}
	baseCh := make(chan measured, 1)
	go func() {
		x, err := measureClone(ctx, orig, opts, false)
		baseCh <- measured{x, err}
	}()
	// all is the measure of m fused with every fusion the rules allow.
	var all measured
	measureFused := func() {
		settle(m)
		all.x, all.err = measureClone(ctx, m, opts, true)
	}
	f = runFuser(ctx, m, opts, forbid, -1)
	if f.made > 0 || orig != pre {
		measureFused()
	}
	base := <-baseCh
	if base.err != nil {
		// The unfused module cannot be prepared (liveness refuses it):
		// there is no bound to keep, and buffer assignment of the fused
		// module will say why.
		return f, []Decision{{Computation: m.Entry.Name, Kind: "loop",
			Reason: fmt.Sprintf("no lower-bound guard: the unfused module has no lower bound (%v)", base.err)}}, false, false
	}
	if f.made == 0 && orig == pre || all.err == nil && !all.x.above(base.x) {
		return f, nil, f.made > 0, false
	}
	if orig != pre {
		// Did the passes before fusion raise it on their own?
		px, perr := measureClone(ctx, pre, opts, false)
		if perr != nil || px.above(base.x) {
			refused = append(refused, Decision{Computation: m.Entry.Name, Kind: "simplify",
				Reason: "the simplification passes " + raises(base.x, px, perr) + ": undone, the module is fused as it came"})
			undone = true
			pre = orig
			restore(m, pre.Clone())
			f = runFuser(ctx, m, opts, forbid, -1)
			measureFused()
			if f.made == 0 || all.err == nil && !all.x.above(base.x) {
				return f, refused, f.made > 0, true
			}
		}
	}
	// Back to the unfused module, then search.
	restore(m, pre.Clone())
	limit, declined := guard(ctx, m, pre, opts, base.x, forbid, f, all.x, all.err)
	refused = append(refused, declined...)
	return runFuser(ctx, m, opts, forbid, limit), refused, false, undone
}

// restore makes m the module fresh is (a clone of m as it was).
func restore(m, fresh *hlo.Module) {
	*m = *fresh
	for _, c := range m.Computations {
		c.Module = m
	}
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

// guard finds which fusions to decline so that the measure stays at or
// below base: while the fused module's measure rises, it finds by
// bisection the first fusion after which it does, and forbids it. first
// and its measure (or error) are the fusion of m with nothing forbidden,
// already made. It returns the number of fusions to make (-1: all the
// rules allow) and the declined decisions with their figures.
func guard(ctx context.Context, m, orig *hlo.Module, opts Options, base measure, forbid map[[2]string]bool, first *fuser, firstX measure, firstErr error) (int, []Decision) {
	var refused []Decision
	// trial fuses a clone of orig (m unfused), making at most limit
	// fusions, and measures the result in place with by: the clone is its
	// own. A fused module that cannot be prepared measures as raising the
	// bound.
	trial := func(limit int, by MeasureFunc) (*fuser, measure, error) {
		c := orig.Clone()
		f := runFuser(ctx, c, opts, forbid, limit)
		settle(c)
		x, err := measureWith(ctx, c, by)
		return f, x, err
	}
	// above reports whether the first k fusions raise the measure kept
	// (a module that cannot be prepared does), and what it measured.
	above := func(k int) (bool, measured) {
		_, x, err := trial(k, opts.Measure)
		return err != nil || x.above(base), measured{x, err}
	}
	p := &prober{opts: opts, orig: orig, trial: trial}
	// lo fusions are known not to raise the measure: after a culprit at
	// k is forbidden, the first k-1 decisions stay as they were, so the
	// next search starts past them.
	lo := 0
	for round := 0; ; round++ {
		if ctx.Err() != nil {
			return lo, refused // the caller returns the context's error
		}
		f, x, xerr := first, firstX, firstErr
		if round > 0 {
			f, x, xerr = trial(-1, opts.Measure)
		}
		if xerr == nil && !x.above(base) {
			return -1, refused
		}
		// The smallest k > lo whose first k fusions raise the measure,
		// and what prefix k measured: found by the probe and confirmed
		// under the measure kept when Options.Probe is set, else (or when
		// the two disagree) by bisection under the measure kept.
		k, r, ok := p.culprit(ctx, lo, f.made, above)
		if !ok {
			found := map[int]measured{}
			k = firstRaising(ctx, lo, f.made, func(k int) bool {
				up, xk := above(k)
				found[k] = xk
				return up
			})
			r = found[k]
		}
		if k > f.made {
			// No prefix raises it on its own: the sibling order or a
			// non-monotone measure. Keep the prefix known to be safe
			// rather than guess.
			refused = append(refused, Decision{Computation: m.Entry.Name, Kind: "loop", Reason: fmt.Sprintf("fusing %s and no single fusion is to blame: only the first %d fusions are kept", raises(base, x, xerr), lo)})
			return lo, refused
		}
		d := nthFused(f.log, k)
		if round >= maxGuardRounds {
			refused = append(refused, Decision{Computation: d.Computation, Kind: d.Kind, Producer: d.Producer, Consumer: d.Consumer,
				Reason: fmt.Sprintf("it and every later fusion are left out: after %d declined fusions the fused module still measures above the unfused one (%s)", round, base)})
			return k - 1, refused
		}
		lo = k - 1
		forbid[[2]string{d.Producer, d.Consumer}] = true
		refused = append(refused, Decision{Computation: d.Computation, Kind: d.Kind, Producer: d.Producer, Consumer: d.Consumer,
			Reason: "fusing it " + raises(base, r.x, r.err)})
	}
}

// prober finds the guard's culprit with Options.Probe, a cheaper measure
// (the same preparation under a heuristic scheduler where the pipeline
// searches): the bisection's many measurements are the probe's, and only
// its answer is measured with the measure kept. The answer stands when
// prefix k raises the measure kept and prefix k-1 does not: k is then a
// point where the prefixes cross from safe to raising, which is what
// bisection under the measure kept finds (the same point whenever the
// prefixes' measures rise monotonically, bisection's own premise).
// Otherwise the guard bisects under the measure kept.
type prober struct {
	opts  Options
	orig  *hlo.Module
	trial func(limit int, by MeasureFunc) (*fuser, measure, error)
	base  *measured // the probe's measure of orig, once taken
}

func (p *prober) culprit(ctx context.Context, lo, made int, above func(k int) (bool, measured)) (int, measured, bool) {
	if p.opts.Probe == nil || made <= lo {
		return 0, measured{}, false
	}
	if p.base == nil {
		// As the guard's own base: orig's clone, settled.
		x, err := measureClone(ctx, p.orig, Options{Measure: p.opts.Probe}, false)
		p.base = &measured{x, err}
	}
	if p.base.err != nil {
		return 0, measured{}, false
	}
	k := firstRaising(ctx, lo, made, func(k int) bool {
		_, x, err := p.trial(k, p.opts.Probe)
		return err != nil || x.above(p.base.x)
	})
	if k > made || ctx.Err() != nil {
		return 0, measured{}, false
	}
	up, r := above(k)
	if !up {
		return 0, measured{}, false
	}
	if k-1 > lo {
		if before, _ := above(k - 1); before {
			return 0, measured{}, false
		}
	}
	return k, r, true
}

// firstRaising returns the smallest k in (lo, made] whose first k
// fusions raise a measure (raises(k)), by bisection: made+1 when none
// does. Once ctx is done it stops, its answer meaningless (the caller
// returns the context's error).
func firstRaising(ctx context.Context, lo, made int, raises func(k int) bool) int {
	return lo + 1 + sort.Search(max(made-lo, 0), func(i int) bool {
		return ctx.Err() != nil || raises(lo+i+1)
	})
}

// measured is a measure, or why the module has none.
type measured struct {
	x   measure
	err error
}

// measure is what the guard keeps from rising: the lower bound and the
// cost Options.Measure gives (0 without one).
type measure struct {
	lb, cost int64
	hasCost  bool
}

func (x measure) above(base measure) bool { return x.lb > base.lb || x.cost > base.cost }

func (x measure) String() string {
	if x.hasCost {
		return fmt.Sprintf("lower bound %d bytes, cost %d bytes", x.lb, x.cost)
	}
	return fmt.Sprintf("lower bound %d bytes", x.lb)
}

// raises says how x (or err, a module that cannot be prepared) is above
// base: "raises the lower bound from X to Y bytes".
func raises(base, x measure, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("leaves a module liveness cannot prepare (%v)", err)
	case x.lb > base.lb:
		return fmt.Sprintf("raises the lower bound from %d to %d bytes", base.lb, x.lb)
	default:
		return fmt.Sprintf("raises the cost (Options.Cost) from %d to %d bytes", base.cost, x.cost)
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

// measureClone is measureModule of a clone of m with its users in parse
// order (settle; settled says m is already): the module m's printed text
// would parse to.
func measureClone(ctx context.Context, m *hlo.Module, opts Options, settled bool) (measure, error) {
	c := m.Clone()
	if !settled {
		settle(c)
	}
	return measureWith(ctx, c, opts.Measure)
}

// measureWith measures m in place with by.
func measureWith(ctx context.Context, m *hlo.Module, by MeasureFunc) (measure, error) {
	x, err := by(ctx, m)
	if err != nil {
		return measure{}, err
	}
	return measure{lb: x.LowerBound, cost: x.Cost, hasCost: x.HasCost}, nil
}
