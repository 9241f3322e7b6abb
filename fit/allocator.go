package fit

import (
	"context"
	"fmt"
	"strings"

	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// minFraction and maxFraction bound the search over
// XLA_PYTHON_CLIENT_MEM_FRACTION, in hundredths (JAX takes the fraction
// as a decimal; the lever proposes two decimals).
const minFraction, maxFraction = 1, 100

// allocatorLever measures the client's settings: JAX's default pool, the
// smallest memory fraction that fits (binary search over hundredths, each
// candidate a real run on the client model), preallocation off and the
// platform allocator. The plan does not change; only the client does.
func (t *target) allocatorLever(ctx context.Context, m *hlo.Module, v *Verdict) (*Lever, error) {
	l := &Lever{Name: "allocator", Cost: "none"}
	if t.tpu != nil {
		l.Why = "a TPU has no client allocator settings: the program gets the chip's HBM"
		return l, nil
	}
	as := t.plan // the verdict's plan: the lever changes the client only
	l.Applies, l.Total, l.Limit = true, as.Stats.DeviceBytes, v.Limit
	fitsWith := func(cfg gpu.ClientConfig) (deviceRun, error) { return t.run(ctx, as, cfg) }

	def := gpu.DefaultConfig()
	dr, err := fitsWith(def)
	if err != nil {
		return nil, err
	}
	l.Details = append(l.Details, fmt.Sprintf("JAX's default pool (BFC, 75%% preallocated, limit %d bytes): %s", dr.limit, fitWord(dr.fits)))

	if err := t.fractionSearch(ctx, l, fitsWith); err != nil {
		return nil, err
	}
	if err := t.alternatives(l, v, fitsWith); err != nil {
		return nil, err
	}
	return l, nil
}

// fractionSearch finds the smallest memory fraction, in hundredths, with
// the current allocator and preallocation, at which the run fits.
func (t *target) fractionSearch(ctx context.Context, l *Lever, fitsWith func(gpu.ClientConfig) (deviceRun, error)) error {
	if t.cfg.Allocator == gpu.Platform {
		l.Details = append(l.Details, "the platform allocator takes the whole device: "+gpu.EnvOldMemFraction+" does not apply to it")
		return nil
	}
	base := t.cfg
	base.UnifiedMemory = false
	at := func(h int) (deviceRun, error) {
		c := base
		c.MemFraction = float64(h) / 100
		return fitsWith(c)
	}
	top, err := at(maxFraction)
	if err != nil {
		return err
	}
	best := -1
	if top.fits {
		lo, hi := minFraction, maxFraction // hi fits
		for lo < hi {
			if err := ctx.Err(); err != nil {
				return err
			}
			mid := (lo + hi) / 2
			d, err := at(mid)
			if err != nil {
				return err
			}
			if d.fits {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		best = hi
	}
	if best > 0 {
		cfg := base
		cfg.MemFraction = float64(best) / 100
		d, err := fitsWith(cfg)
		if err != nil {
			return err
		}
		l.Fits, l.Limit, l.config = d.fits, d.limit, &cfg
		f := fraction(cfg.MemFraction)
		l.Change = []string{"set before importing jax: " + gpu.EnvOldMemFraction + "=" + f}
		l.Details = append(l.Details, fmt.Sprintf("smallest %s that fits: %s (limit %d bytes)", gpu.EnvOldMemFraction, f, d.limit))
		l.Commands = append(l.Commands, fmt.Sprintf("hlomem run --device=%s --mem-fraction=%s %s", t.name, f, t.file))
	} else {
		cfg := base
		cfg.MemFraction = 1
		l.Limit, l.config = top.limit, &cfg
		l.Change = []string{"set before importing jax: " + gpu.EnvOldMemFraction + "=1.00 (not enough alone)"}
		l.Details = append(l.Details, fmt.Sprintf("no %s up to 1.00 fits: the run needs %d bytes, 1.00 gives %d", gpu.EnvOldMemFraction, top.need, top.limit))
		l.Commands = append(l.Commands, fmt.Sprintf("hlomem run --device=%s --mem-fraction=1.00 %s", t.name, t.file))
	}
	return nil
}

// alternatives runs preallocation off and the other allocator, each over
// the current settings.
func (t *target) alternatives(l *Lever, v *Verdict, fitsWith func(gpu.ClientConfig) (deviceRun, error)) error {
	// Preallocation off and the platform allocator (or, when the
	// platform allocator is the current one, BFC), each over the current
	// settings.
	type alt struct {
		line, flag string
		set        func(*gpu.ClientConfig)
	}
	alts := []alt{{gpu.EnvPreallocate + "=false", "--preallocate=false", func(c *gpu.ClientConfig) { c.Preallocate = false }}}
	if t.cfg.Allocator == gpu.Platform {
		alts = append(alts, alt{gpu.EnvAllocator + "=bfc", "--allocator=bfc", func(c *gpu.ClientConfig) { c.Allocator = gpu.BFCKind }})
	} else {
		alts = append(alts, alt{gpu.EnvAllocator + "=platform", "--allocator=platform", func(c *gpu.ClientConfig) { c.Allocator = gpu.Platform }})
	}
	for _, alt := range alts {
		c := t.cfg
		alt.set(&c)
		d, err := fitsWith(c)
		if err != nil {
			return err
		}
		same := "does not change the outcome"
		if d.fits != v.Fits {
			same = "changes the outcome"
		}
		l.Details = append(l.Details, fmt.Sprintf("%s: %s (limit %d bytes), %s", alt.line, fitWord(d.fits), d.limit, same))
		l.Commands = append(l.Commands, fmt.Sprintf("hlomem run --device=%s %s %s", t.name, alt.flag, t.file))
		if d.fits && !l.Fits {
			cc := c
			l.Fits, l.Limit, l.config = true, d.limit, &cc
			l.Change = []string{"set before importing jax: " + alt.line}
		}
	}
	return nil
}

func fitWord(b bool) string {
	if b {
		return "fits"
	}
	return "does not fit"
}

// flagsOf is cfg as hlomem run's flags.
func flagsOf(cfg gpu.ClientConfig) string {
	return strings.Join([]string{
		"--mem-fraction=" + fraction(cfg.MemFraction),
		fmt.Sprintf("--preallocate=%v", cfg.Preallocate),
		"--allocator=" + allocName(cfg.Allocator),
	}, " ")
}
