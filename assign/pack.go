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
	for _, rule := range []fitRule{bestFit, firstFit} {
		for o := range numOrders {
			names = append(names, greedyVariant{o, rule}.name())
		}
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
			return portfolio(in, []greedyVariant{{bySize, bestFit}, {byLifetime, bestFit}}, pc.opts.Workers)
		}, true
	case "exact":
		return packExact, true
	}
	for _, v := range allVariants() {
		if v.name() == name {
			return func(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
				off := make([]int64, len(in.items))
				h, _, err := runGreedy(in, v, off, nil)
				if err != nil {
					return nil, err
				}
				return &heapResult{off: off, height: h, algo: v.name()}, nil
			}, true
		}
	}
	return nil, false
}

// allVariants returns every greedy variant, XLA's two first: the portfolio
// runs them in this order, so the likely winners set the bound early.
func allVariants() []greedyVariant {
	return []greedyVariant{
		{bySize, bestFit}, {byLifetime, bestFit},
		{bySize, firstFit}, {byLifetime, firstFit},
		{byArea, bestFit}, {byStart, bestFit},
		{byArea, firstFit}, {byStart, firstFit},
	}
}

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
func portfolio(in *instance, vs []greedyVariant, workers int) (*heapResult, error) {
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
	bound.Store(math.MaxInt64)
	runOne := func(k int) {
		off := make([]int64, len(in.items))
		h, ok, err := runGreedy(in, vs[k], off, &bound)
		if !ok {
			off = nil
		}
		outs[k] = out{off, h, ok, err}
		for ok {
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
	best := -1
	for k := range outs {
		if outs[k].err != nil {
			return nil, outs[k].err
		}
		if outs[k].ok && (best < 0 || outs[k].h < outs[best].h) {
			best = k
		}
	}
	return &heapResult{off: outs[best].off, height: outs[best].h, algo: vs[best].name()}, nil
}

// packAuto runs the portfolio, then the exact search when the result is above
// the capacity or, without a capacity, above the lower bound.
func packAuto(ctx context.Context, in *instance, pc *packContext) (*heapResult, error) {
	r, err := portfolio(in, allVariants(), pc.opts.Workers)
	if err != nil {
		return nil, err
	}
	need := r.height > pc.lb
	if pc.opts.Capacity > 0 {
		need = r.height > pc.opts.Capacity
	}
	if !need || !pc.budget {
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

// improveExact is filled in by exact.go.
var improveExact = func(ctx context.Context, in *instance, pc *packContext, warm *heapResult) (*heapResult, error) {
	return warm, nil
}
