package assign

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
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

	// Budget bounds the wall time of the exact search, for "exact" and
	// "auto"; 0 means DefaultBudget and a negative value means no search.
	// The greedy packers ignore it. Cancelling the context also stops the
	// search, which then returns the best packing found so far.
	Budget time.Duration

	// Workers bounds how many greedy packers the portfolio runs at once;
	// 0 means GOMAXPROCS.
	Workers int
}

// Algorithms returns the names Options.Algorithm accepts.
func Algorithms() []string {
	names := []string{"auto", "portfolio", "exact", "xla"}
	for _, v := range append(allVariants(), skylineVariants()...) {
		names = append(names, v.name)
	}
	return names
}

// ErrUnknownAlgorithm is returned for an Options.Algorithm that Algorithms
// does not list.
var ErrUnknownAlgorithm = errors.New("assign: unknown algorithm")

// heapResult is what a packer returns for one instance.
type heapResult struct {
	off     []int64 // per item
	height  int64
	optimal bool
	algo    string
	nodes   int64
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
	run, ok := packerFor(algo)
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownAlgorithm, algo, strings.Join(Algorithms(), ", "))
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
		r, err := run(ctx, in, &packContext{opts: opts, lb: lb, deadline: deadline, budget: budget > 0})
		if err != nil {
			var fe *fixedOverlapError
			if errors.As(err, &fe) {
				return nil, lay.fixedOverlap(p, k, fe)
			}
			return nil, err
		}
		if r.height <= lb {
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
	lb       int64
	deadline time.Time // zero when no exact search may run
	budget   bool
}

// packerFunc packs one instance.
type packerFunc func(ctx context.Context, in *instance, pc *packContext) (*heapResult, error)

func packerFor(name string) (packerFunc, bool) {
	switch name {
	case "auto":
		return packAuto, true
	case "portfolio":
		return func(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
			return portfolio(in, allVariants(), pc.opts.Workers)
		}, true
	case "xla":
		return func(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
			vs := allVariants()
			return portfolio(in, []variant{vs[0], vs[1]}, pc.opts.Workers)
		}, true
	case "exact":
		return packExact, true
	}
	for _, v := range append(allVariants(), skylineVariants()...) {
		if v.name == name {
			return func(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
				off := make([]int64, len(in.items))
				h, ok, err := v.run(in, off, nil, nil)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, errFixedSkyline
				}
				return &heapResult{off: off, height: h, algo: v.name}, nil
			}, true
		}
	}
	return nil, false
}

// errFixedSkyline reports a skyline packer that could not honour fixed
// offsets: it lays items lowest first and cannot go back under a fixed item.
var errFixedSkyline = errors.New("assign: the skyline packers cannot place around these fixed offsets; use a best-fit or first-fit packer")

// variant is one greedy packer of the portfolio. run writes item offsets
// into off and returns the height; with a non-nil bound it may give up,
// returning ok == false, once its height must exceed *bound.
type variant struct {
	name string
	run  func(in *instance, off []int64, bound *atomic.Int64, pool *occPool) (h int64, ok bool, err error)
}

// allVariants returns every greedy packer, XLA's two first: the portfolio
// runs them in this order, so the likely winners set the bound early.
func allVariants() []variant {
	var vs []variant
	for _, g := range []greedyVariant{
		{bySize, bestFit}, {byLifetime, bestFit},
		{bySize, firstFit}, {byLifetime, firstFit},
		{byArea, bestFit}, {byStart, bestFit},
		{byArea, firstFit}, {byStart, firstFit},
	} {
		vs = append(vs, variant{g.name(), func(in *instance, off []int64, bound *atomic.Int64, pool *occPool) (int64, bool, error) {
			return runGreedy(in, g, off, bound, pool)
		}})
	}
	return vs
}

// skylineVariants returns the skyline packers, which auto runs after the
// portfolio: their descents cost more than a best-fit pass on the largest
// traces, and they pay off mostly where best fit is already close.
func skylineVariants() []variant { return skylineVariantsUntil(nil) }

// skylineVariantsUntil is skylineVariants with a stop condition.
func skylineVariantsUntil(stop func() bool) []variant {
	var vs []variant
	for _, o := range skylineOrders {
		vs = append(vs, variant{"skyline-" + o, func(in *instance, off []int64, bound *atomic.Int64, _ *occPool) (int64, bool, error) {
			h, ok := runSkyline(in, o, skylineTiny, off, bound, stop)
			return h, ok, nil
		}})
	}
	return vs
}

// skylineTiny is the relative size below which the skyline packers leave an
// item to their closing best-fit pass.
const skylineTiny = 1e-5

// parallelItems is the instance size from which the portfolio runs its
// packers on several goroutines; below it a whole portfolio takes well
// under a millisecond and goroutines would only add overhead.
const parallelItems = 2000

// portfolio runs every variant and keeps the lowest height; ties go to the
// earlier variant in vs. Variants run on up to workers goroutines, in the
// order of vs, sharing the best height found so far: a run that exceeds it
// stops early, since it can no longer win. Which runs stop depends on timing
// but the result does not: a stopped run was strictly worse than one that
// finished.
func portfolio(in *instance, vs []variant, workers int) (*heapResult, error) {
	return portfolioBelow(in, vs, workers, math.MaxInt64)
}

// portfolioBelow is portfolio with the shared bound starting at limit: runs
// that cannot get below it stop early. It returns nil when none got below.
func portfolioBelow(in *instance, vs []variant, workers int, limit int64) (*heapResult, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if len(in.items) < parallelItems {
		workers = 1
	}
	workers = min(workers, len(vs))
	type out struct {
		off []int64
		h   int64
		ok  bool
		err error
	}
	outs := make([]out, len(vs))
	var bound atomic.Int64
	bound.Store(limit)
	// Only the best packing so far is kept (ties to the earlier variant),
	// so at most workers+1 offset arrays are alive at once.
	var mu sync.Mutex
	best := -1
	pool := &occPool{}
	runOne := func(k int) {
		off := make([]int64, len(in.items))
		h, ok, err := vs[k].run(in, off, &bound, pool)
		mu.Lock()
		defer mu.Unlock()
		outs[k] = out{nil, h, ok, err}
		if !ok || err != nil {
			return
		}
		if best < 0 || h < outs[best].h || h == outs[best].h && k < best {
			if best >= 0 {
				outs[best].off = nil
			}
			best = k
			outs[k].off = off
		}
		for {
			b := bound.Load()
			if h >= b || bound.CompareAndSwap(b, h) {
				break
			}
		}
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				runOne(k)
			}
		}()
	}
	for k := range vs {
		next <- k
	}
	close(next)
	wg.Wait()
	for k := range outs {
		if outs[k].err != nil {
			return nil, outs[k].err
		}
	}
	if best < 0 || outs[best].h >= limit {
		return nil, nil
	}
	return &heapResult{off: outs[best].off, height: outs[best].h, algo: vs[best].name}, nil
}

// packAuto runs the portfolio, then, while the result is above the target
// (the capacity when there is one, else the lower bound), the skyline
// descents and the exact search, within the budget.
func packAuto(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	r, err := portfolio(in, allVariants(), pc.opts.Workers)
	if err != nil {
		return nil, err
	}
	if pc.met(r) || !pc.budget {
		return r, nil
	}
	r = pc.skyline(ctx, in, r)
	if pc.met(r) {
		return r, nil
	}
	return improveExact(ctx, in, pc, r)
}

// packExact runs the portfolio for a warm start, then the exact search.
func packExact(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	r, err := portfolio(in, allVariants(), pc.opts.Workers)
	if err != nil {
		return nil, err
	}
	if r.height <= pc.lb || !pc.budget {
		return r, nil
	}
	return improveExact(ctx, in, pc, r)
}

// met reports whether r needs no more work: it fits the capacity, or,
// without one, it reaches the lower bound.
func (pc *packContext) met(r *heapResult) bool {
	if pc.opts.Capacity > 0 {
		return r.height <= pc.opts.Capacity
	}
	return r.height <= pc.lb
}

// skyline runs the skyline packers against r and returns the better result.
func (pc *packContext) skyline(ctx context.Context, in *instance, r *heapResult) *heapResult {
	stop := func() bool { return ctx.Err() != nil || time.Now().After(pc.deadline) }
	s, err := portfolioBelow(in, skylineVariantsUntil(stop), pc.opts.Workers, r.height)
	if err != nil || s == nil {
		return r
	}
	return s
}

// improveExact is filled in by exact.go.
var improveExact = func(ctx context.Context, in *instance, pc *packContext, warm *heapResult) (*heapResult, error) {
	return warm, nil
}
