package pack

// Pack is the entry point: it validates the problem, splits it into one
// instance per color (instance.go), runs the chosen packer on each, and maps
// the item offsets back onto the buffers.
//
// The default packer, auto, spends effort only where it pays. The portfolio
// costs milliseconds and is within a fraction of a percent of the lower
// bound on most real traces; when it is not at the target (the capacity, or
// without one the lower bound) the skyline descents run, which often close
// the last percent on large traces; and when those miss too, the exact
// search takes what remains of the budget: on small instances the whole
// branch-and-bound, on large ones descents over the large items only. The
// lower bound is cheap and always reported, so a caller can see how far a
// packing can still be from optimal (PACKING.md, ideas 1 and 3).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultBudget is the time the exact search may take when Options.Budget is 0.
const DefaultBudget = 10 * time.Second

// Options tunes Pack. The zero value packs with "auto", no capacity and the
// default budget.
type Options struct {
	// Algorithm names the packer (see Algorithms); "" means "auto".
	Algorithm string

	// Capacity, when positive, is the number of bytes each color may use.
	// The exact search then decides whether everything fits instead of
	// minimising the height, and Pack reports a *CapacityError when the best
	// packing found does not fit.
	Capacity int64

	// Budget bounds the wall time spent after the portfolio, by "auto"
	// (skyline descents, exact search) and "exact"; 0 means DefaultBudget
	// and a negative value means no work beyond the portfolio. The other
	// packers ignore it. Cancelling the context also stops the search,
	// which then returns the best packing found so far.
	Budget time.Duration

	// Workers bounds how many greedy packers the portfolio runs at once;
	// 0 means GOMAXPROCS.
	Workers int

	// Gap, when positive, is the relative distance from the lower bound
	// (1e-5: ten bytes per megabyte) within which "auto" and "exact" do
	// not start the descents they use on instances too large for the
	// whole exact search (over 5,000 items): those cost seconds on tens of
	// thousands of items and rarely gain more. Smaller instances are
	// searched until optimal or out of budget whatever the gap.
	Gap float64
}

// Packer is one packing algorithm, as XLA's HeapAlgorithm is: it places
// the items of one instance (one color of a Problem, each must-share group
// merged into one item) and reports the height it reached. Pack looks the
// packer up by Options.Algorithm (PackerNamed) and runs it on every
// instance. The interface is sealed: the packers are this package's.
type Packer interface {
	// Name is the Options.Algorithm that selects the packer.
	Name() string
	// pack places the items of in. pc carries the options, the lower
	// bound to aim at and the deadline of any search; the packing must
	// honour fixed items.
	pack(ctx context.Context, in *instance, pc *packContext) (*heapResult, error)
}

// packers is the registry, in the order Algorithms lists the names: the
// composite packers, then every greedy and skyline packer on its own.
var packers = func() []Packer {
	vs := allVariants()
	ps := []Packer{autoPacker{}, portfolioPacker{"portfolio", vs}, exactPacker{}, portfolioPacker{"xla", vs[:2:2]}, largePacker{}}
	for _, v := range append(vs, skylineVariants()...) {
		ps = append(ps, variantPacker{v})
	}
	return ps
}()

// PackerNamed returns the packer that Options.Algorithm name selects.
func PackerNamed(name string) (Packer, bool) {
	for _, p := range packers {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Algorithms returns the names Options.Algorithm accepts.
func Algorithms() []string {
	names := make([]string, len(packers))
	for i, p := range packers {
		names[i] = p.Name()
	}
	return names
}

// Pack assigns offsets to the buffers of p with the packer opts.Algorithm.
// Each color is packed on its own. The packing always passes Check. When
// opts.Capacity is set and some color does not fit, Pack returns the best
// packing found together with a *CapacityError for the first such color.
func Pack(ctx context.Context, p *Problem, opts Options) (*Solution, error) {
	start := time.Now()
	algo := opts.Algorithm
	if algo == "" {
		algo = "auto"
	}
	run, ok := PackerNamed(algo)
	if !ok {
		return nil, CheckAlgorithm(algo)
	}
	lay, err := normalize(p)
	if err != nil {
		return nil, err
	}
	budget := opts.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	var deadline time.Time
	if budget > 0 {
		deadline = start.Add(budget)
	}
	sol := &Solution{Packing: Packing{Offsets: make([]int64, len(p.Buffers))}}
	results := make([]*heapResult, len(lay.insts))
	var algos []string
	for k, in := range lay.insts {
		lb := in.lowerBound()
		// The search aims at the alignment-aware bound, which is never
		// below lb and proves more packings optimal.
		alb := max(lb, in.alignedLowerBound())
		r, err := runSafely(ctx, run, in, &packContext{opts: opts, lb: alb, deadline: deadline, budget: budget > 0})
		if err != nil {
			var fe *fixedOverlapError
			if errors.As(err, &fe) {
				return nil, lay.fixedOverlap(p, k, fe)
			}
			return nil, err
		}
		if r.height <= alb {
			r.optimal = true
		}
		results[k] = r
		sol.Heaps = append(sol.Heaps, Heap{Color: in.color, Height: r.height, LowerBound: lb, Optimal: r.optimal})
		sol.Nodes += r.nodes
		name := algo
		if r.algo != algo {
			name += "/" + r.algo
		}
		if len(algos) == 0 || algos[len(algos)-1] != name {
			algos = append(algos, name)
		}
	}
	sol.Algorithm = strings.Join(algos, ",")
	for i := range p.Buffers {
		if it := lay.item[i]; it >= 0 {
			sol.Offsets[i] = results[lay.inst[i]].off[it]
		} else {
			sol.Offsets[i] = lay.offset[i]
		}
	}
	sol.Elapsed = time.Since(start)
	if opts.Capacity > 0 {
		for _, h := range sol.Heaps {
			if h.Height > opts.Capacity {
				return sol, &CapacityError{Color: h.Color, Need: h.Height, Limit: opts.Capacity}
			}
		}
	}
	return sol, nil
}

// CheckAlgorithm returns nil for a packer name Pack accepts ("" is auto)
// and otherwise an error wrapping ErrUnknownAlgorithm that lists them.
func CheckAlgorithm(name string) error {
	if _, ok := PackerNamed(name); ok || name == "" {
		return nil
	}
	return fmt.Errorf("%w %q (want one of %s)", ErrUnknownAlgorithm, name, strings.Join(Algorithms(), ", "))
}

// runSafely runs a packer, turning a panic into an error that names it: a
// bug in one packer must not bring down a program that packs many problems.
func runSafely(ctx context.Context, p Packer, in *instance, pc *packContext) (r *heapResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			r, err = nil, fmt.Errorf("pack: internal error in packer %s: %v", p.Name(), v)
		}
	}()
	return p.pack(ctx, in, pc)
}

// fixedOverlap turns a fixedOverlapError of instance k into an InvalidError
// naming two buffers.
func (lay *layout) fixedOverlap(p *Problem, k int, fe *fixedOverlapError) error {
	name := func(item int) (int, string) {
		for i := range p.Buffers {
			if int(lay.inst[i]) == k && int(lay.item[i]) == item {
				return i, p.Buffers[i].ID
			}
		}
		return -1, "?"
	}
	_, a := name(fe.a)
	ib, b := name(fe.b)
	return &InvalidError{Buffer: ib, Msg: fmt.Sprintf("buffers %q and %q are fixed at overlapping offsets while both live", a, b)}
}

// packContext is what every packer gets besides the instance.
type packContext struct {
	opts     Options
	lb       int64     // the best lower bound known (alignment-aware)
	deadline time.Time // zero when no exact search may run
	budget   bool
}

// withinGap reports whether height h is within Options.Gap of the lower
// bound (never without a capacity to meet).
func (pc *packContext) withinGap(h int64) bool {
	if pc.opts.Capacity > 0 || pc.opts.Gap <= 0 {
		return false
	}
	return h <= pc.lb+int64(pc.opts.Gap*float64(pc.lb))
}

// autoPacker is "auto" (packAuto).
type autoPacker struct{}

func (autoPacker) Name() string { return "auto" }
func (autoPacker) pack(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	return packAuto(ctx, in, pc)
}

// exactPacker is "exact" (packExact).
type exactPacker struct{}

func (exactPacker) Name() string { return "exact" }
func (exactPacker) pack(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	return packExact(ctx, in, pc)
}

// portfolioPacker keeps the lowest of its variants: "portfolio" runs every
// greedy one, "xla" XLA's two (bestfit-size and bestfit-lifetime).
type portfolioPacker struct {
	name     string
	variants []variant
}

func (p portfolioPacker) Name() string { return p.name }
func (p portfolioPacker) pack(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	if p.name == "portfolio" {
		return greedyBest(ctx, in, pc.opts.Workers)
	}
	return portfolio(ctx, in, p.variants, pc.opts.Workers)
}

// greedyBest is the portfolio of every greedy packer, which from
// layeredItems items packs in layers (layered.go): the long-lived items by
// the portfolio, the rest swept around them.
func greedyBest(ctx context.Context, in *instance, workers int) (*heapResult, error) {
	if len(in.items) >= layeredItems {
		return portfolio(ctx, in, largeVariants(in), workers)
	}
	return portfolio(ctx, in, allVariants(), workers)
}

// largePacker is "large": the portfolio's packers for large instances
// (largeVariants), at any size.
type largePacker struct{}

func (largePacker) Name() string { return "large" }
func (largePacker) pack(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	return portfolio(ctx, in, largeVariants(in), pc.opts.Workers)
}

// variantPacker runs one greedy or skyline variant on its own.
type variantPacker struct{ v variant }

func (p variantPacker) Name() string { return p.v.name }
func (p variantPacker) pack(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	off := make([]int64, len(in.items))
	// The bound never stops the run unless ctx ends it.
	var bound atomic.Int64
	bound.Store(math.MaxInt64)
	stop := context.AfterFunc(ctx, func() { bound.Store(-1) })
	defer stop()
	h, ok, err := p.v.run(in, off, &bound, nil)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errFixedSkyline
	}
	return &heapResult{off: off, height: h, algo: p.v.name}, nil
}

// packAuto runs the portfolio, then, while the result is above the target
// (the capacity when there is one, else the lower bound), the skyline
// descents and the exact search, within the budget. On a large instance
// the skyline descents join the portfolio's pool, behind the greedy
// packers: a greedy packing at the lower bound stops them before they
// start, and otherwise they keep both cores busy while the last greedy
// runs finish.
func packAuto(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	if len(in.items) >= layeredItems {
		r, err := greedyBest(ctx, in, pc.opts.Workers)
		if err != nil || pc.met(r) || !pc.budget {
			return r, err
		}
		if r = pc.skyline(ctx, in, r); pc.met(r) {
			return r, nil
		}
		return exactImprove(ctx, in, pc, r)
	}
	vs := allVariants()
	merged := pc.budget && len(in.items) >= parallelItems && pc.opts.Capacity <= 0
	var start []int
	if merged {
		// The slower skyline runs start first, so the greedy ones fill
		// the cores around them; they stay behind the greedy ones in the
		// list, so a greedy packing at the lower bound still stops them.
		g := len(vs)
		vs = append(vs, skylineVariantsUntil(pc.stop(ctx))...)
		for k := g; k < len(vs); k++ {
			start = append(start, k)
		}
		for k := 0; k < g; k++ {
			start = append(start, k)
		}
	}
	r, err := portfolioRun(ctx, in, vs, pc.opts.Workers, math.MaxInt64, pc.lb, start)
	if err != nil {
		return nil, err
	}
	if pc.met(r) || !pc.budget {
		return r, nil
	}
	if !merged {
		r = pc.skyline(ctx, in, r)
		if pc.met(r) {
			return r, nil
		}
	}
	return exactImprove(ctx, in, pc, r)
}

// packExact runs the portfolio for a warm start, then the exact search.
func packExact(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	r, err := greedyBest(ctx, in, pc.opts.Workers)
	if err != nil {
		return nil, err
	}
	if pc.met(r) || !pc.budget {
		return r, nil
	}
	return exactImprove(ctx, in, pc, r)
}

// met reports whether r needs no more work: it fits the capacity, or,
// without one, it reaches the lower bound.
func (pc *packContext) met(r *heapResult) bool {
	if pc.opts.Capacity > 0 {
		return r.height <= pc.opts.Capacity
	}
	return r.height <= pc.lb
}

// stop reports whether the search must end: the context is done or the
// budget spent.
func (pc *packContext) stop(ctx context.Context) func() bool {
	return func() bool { return ctx.Err() != nil || time.Now().After(pc.deadline) }
}

// skyline runs the skyline packers against r and returns the better result.
func (pc *packContext) skyline(ctx context.Context, in *instance, r *heapResult) *heapResult {
	s, err := portfolioBelow(ctx, in, skylineVariantsUntil(pc.stop(ctx)), pc.opts.Workers, r.height)
	if err != nil || s == nil {
		return r
	}
	return s
}
