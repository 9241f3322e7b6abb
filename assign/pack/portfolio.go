package pack

// The portfolio: run several cheap packers and keep the lowest packing.
// XLA keeps the better of two best-fit orders (ChooseBestHeapAlgorithm),
// TFLite's GPU delegate two strategies, MindSpore SOMAS a grid of sortings
// and fits; on real traces the best order differs from trace to trace and
// costs milliseconds, so trying them all is the cheapest improvement there
// is (PACKING.md, idea 1).
//
// The variants run on up to Workers goroutines and share the best height
// found so far: a run whose height already exceeds it stops, since it can
// no longer win. That cuts most of the losing runs short. The result does
// not depend on timing: a stopped run was strictly worse than a finished
// one, and among finished ones the lowest height wins, ties to the earlier
// variant in the list. Only the best packing so far is kept, and the runs
// reuse one another's occupancy indexes, to bound memory on large problems.

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// errFixedSkyline reports a skyline packer that could not honour fixed
// offsets: it lays items lowest first and cannot go back under a fixed item.
var errFixedSkyline = errors.New("pack: the skyline packers cannot place around these fixed offsets; use a best-fit or first-fit packer")

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
func portfolio(ctx context.Context, in *instance, vs []variant, workers int) (*heapResult, error) {
	return portfolioBelow(ctx, in, vs, workers, math.MaxInt64)
}

// portfolioBelow is portfolio with the shared bound starting at limit: runs
// that cannot get below it stop early. It returns nil when none got below.
func portfolioBelow(ctx context.Context, in *instance, vs []variant, workers int, limit int64) (*heapResult, error) {
	return portfolioRun(ctx, in, vs, workers, limit, -1, nil)
}

// portfolioRun is portfolioBelow that also stops the variants after the
// first to finish at or below target (a lower bound; -1 for none): they
// could at best tie with it, and ties go to the earlier variant, so the
// result is the same as if they had run. The variants start in the order
// start gives (nil: the list's). The result does not depend on it: ties
// still go to the earlier variant in vs, and a variant is stopped early
// only when it can no longer win. Once ctx is done every variant stops
// (its bound drops below any height): the run returns the best packing
// the variants finished before, or ctx's error when none had.
func portfolioRun(ctx context.Context, in *instance, vs []variant, workers int, limit, target int64, start []int) (*heapResult, error) {
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
	// Each variant has its own bound: the best height so far, or -1 once
	// an earlier variant reached the target.
	bounds := make([]atomic.Int64, len(vs))
	for k := range bounds {
		bounds[k].Store(limit)
	}
	lower := func(k int, h int64) {
		for {
			b := bounds[k].Load()
			if h >= b || bounds[k].CompareAndSwap(b, h) {
				return
			}
		}
	}
	// Only the best packing so far is kept (ties to the earlier variant),
	// so at most workers+1 offset arrays are alive at once.
	var mu sync.Mutex
	best := -1
	pool := &occPool{}
	runOne := func(k int) {
		if bounds[k].Load() < 0 {
			return // outs[k] stays not ok
		}
		off := make([]int64, len(in.items))
		h, ok, err := vs[k].run(in, off, &bounds[k], pool)
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
		for j := range bounds {
			if j > k && h <= target {
				bounds[j].Store(-1)
			} else {
				lower(j, h)
			}
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for k := range bounds {
			bounds[k].Store(-1)
		}
	})
	defer stop()
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
	if start == nil {
		for k := range vs {
			next <- k
		}
	} else {
		for _, k := range start {
			next <- k
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil && best < 0 {
		return nil, err
	}
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
