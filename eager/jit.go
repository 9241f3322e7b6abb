package eager

import (
	"context"
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// JitResult is the same function compiled whole and run once on a fresh
// client: its arguments put, the program run.
type JitResult struct {
	Program *gpu.Program
	// Peak is the allocator's peak bytes in use over the run (arguments,
	// outputs and the program's temps), the measure Result.Peak uses.
	Peak int64
	// OOM is set when the run did not fit.
	OOM *gpu.OOMError
}

// Fits reports whether the jitted run fitted.
func (j *JitResult) Fits() bool { return j.OOM == nil }

// Jit plans m whole through the pipeline (copts, which should fuse: that
// is what jax.jit does, dead-code elimination of the unused included)
// and runs it on c, which should be fresh.
func Jit(ctx context.Context, m *hlo.Module, c *gpu.Client, copts compile.Options) (*JitResult, error) {
	if m == nil || m.Entry == nil {
		return nil, errors.New("eager: no module")
	}
	if c == nil {
		return nil, errors.New("eager: no device client")
	}
	r, err := compile.Compile(ctx, m.Clone(), copts)
	if err != nil {
		return nil, err
	}
	return JitPlan(ctx, m.Name, r.Assignment, c)
}

// JitPlan is Jit of a plan made already: the program of as, named name
// (the module's), run on c, which should be fresh.
func JitPlan(ctx context.Context, name string, as *assign.Assignment, c *gpu.Client) (*JitResult, error) {
	if c == nil {
		return nil, errors.New("eager: no device client")
	}
	p, err := gpu.NewProgram(name, as)
	if err != nil {
		return nil, err
	}
	j := &JitResult{Program: p}
	var args []string
	for _, l := range p.Params {
		if _, err := c.Put(l.Name, l.Bytes, l.Shape.String()); err != nil {
			return j, j.failed(c, err)
		}
		args = append(args, l.Name)
	}
	if _, err := c.Run(ctx, p, args, nil); err != nil {
		return j, j.failed(c, err)
	}
	j.Peak = c.Stats().PeakBytesInUse
	return j, nil
}

func (j *JitResult) failed(c *gpu.Client, err error) error {
	var oom *gpu.OOMError
	if !errors.As(err, &oom) {
		return err
	}
	j.OOM, j.Peak = oom, c.Stats().PeakBytesInUse
	return nil
}

// Comparison is a function run op by op and compiled whole on the same
// device model.
type Comparison struct {
	Eager *Result
	Jit   *JitResult
}

// Ratio is the eager peak over the jitted one (0 when the jitted peak is).
func (c *Comparison) Ratio() float64 {
	if c.Jit == nil || c.Jit.Peak == 0 {
		return 0
	}
	return float64(c.Eager.Peak) / float64(c.Jit.Peak)
}

// Compare runs m op by op and jitted, each on a client newClient makes
// (fresh, the same configuration). opts.Compile plans both.
func Compare(ctx context.Context, m *hlo.Module, newClient func() (*gpu.Client, error), opts Options) (*Comparison, error) {
	ce, err := newClient()
	if err != nil {
		return nil, err
	}
	e, err := Run(ctx, m, ce, opts)
	if err != nil {
		return nil, fmt.Errorf("eager run: %w", err)
	}
	cj, err := newClient()
	if err != nil {
		return nil, err
	}
	j, err := Jit(ctx, m, cj, opts.Compile)
	if err != nil {
		return nil, fmt.Errorf("jitted run: %w", err)
	}
	return &Comparison{Eager: e, Jit: j}, nil
}
