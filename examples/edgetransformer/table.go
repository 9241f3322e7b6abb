package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eager"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
)

// outcome is init at one node count on one device: without jit under each
// release rule, and jitted.
type outcome struct {
	nodes         int64
	held, lastUse *eager.Result
	jit           *eager.JitResult
}

// evaluate plans init at cfg.nodes op by op (under the release rules
// asked for) and jitted, each on a fresh client of dev with JAX's
// defaults (75% preallocated BFC pool).
func evaluate(ctx context.Context, cfg config, dev gpu.Device, rules ...eager.Release) (outcome, error) {
	o := outcome{nodes: cfg.nodes}
	text, _, err := generate(cfg)
	if err != nil {
		return o, err
	}
	m, err := hlo.ParseModule(fmt.Sprintf("edgetransformer-%d.hlo", cfg.nodes), text)
	if err != nil {
		return o, err
	}
	newClient := func() (*gpu.Client, error) { return gpu.NewClient(dev, gpu.DefaultConfig(), gpu.ClientOptions{}) }
	copts := compile.Options{Fuse: true}
	for _, rule := range rules {
		c, err := newClient()
		if err != nil {
			return o, err
		}
		r, err := eager.Run(ctx, m, c, eager.Options{Release: rule, Compile: copts, LiveAt: -1})
		if err != nil {
			return o, err
		}
		if rule == eager.Held {
			o.held = r
		} else {
			o.lastUse = r
		}
	}
	c, err := newClient()
	if err != nil {
		return o, err
	}
	o.jit, err = eager.Jit(ctx, m, c, copts)
	return o, err
}

// largestFitting finds by bisection the largest node count in [1, hi]
// whose op-by-op init fits under rule (fitting is monotone in the node
// count: every array grows with it); 0 when none does.
func largestFitting(ctx context.Context, cfg config, dev gpu.Device, rule eager.Release, hi int64) (int64, error) {
	fits := func(n int64) (bool, error) {
		c := cfg
		c.nodes = n
		o, err := evaluate(ctx, c, dev, rule)
		if err != nil {
			return false, err
		}
		if rule == eager.Held {
			return o.held.Fits(), nil
		}
		return o.lastUse.Fits(), nil
	}
	lo := int64(0) // fits (vacuously)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// writeTable searches the crossings on dev and prints the table the case
// implies around them and at 500, 1,000 and 2,000 nodes, then what the
// first op to fail is and what is alive then.
func writeTable(ctx context.Context, w io.Writer, cfg config, dev gpu.Device) error {
	held, err := largestFitting(ctx, cfg, dev, eager.Held, 2000)
	if err != nil {
		return err
	}
	last, err := largestFitting(ctx, cfg, dev, eager.LastUse, 2000)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Edge Transformer init (batch %d, hidden %d, %d heads, %d layer(s), f32) on %s (%s), JAX's default pool (75%% preallocated, BFC)\n",
		cfg.batch, cfg.hidden, cfg.heads, cfg.layers, dev.Name, assign.HumanBytes(dev.Memory))
	fmt.Fprintf(w, "largest node count that fits without jit: %d (results held until init returns), %d (freed at their last use)\n\n", held, last)
	set := map[int64]bool{500: true, 1000: true, 2000: true}
	for _, n := range []int64{held, held + 1, last, last + 1} {
		if n > 0 {
			set[n] = true
		}
	}
	var nodes []int64
	for n := range set {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	fmt.Fprintln(w, "| nodes | peak without jit (held) | peak without jit (last use) | peak with jit | fits without jit (held / last use) | fits with jit |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---|---|")
	var crossing outcome
	for _, n := range nodes {
		c := cfg
		c.nodes = n
		o, err := evaluate(ctx, c, dev, eager.Held, eager.LastUse)
		if err != nil {
			return err
		}
		if n == held+1 {
			crossing = o
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s / %s | %s |\n", n, peakCell(o.held.Peak, o.held.OOM), peakCell(o.lastUse.Peak, o.lastUse.OOM),
			peakCell(o.jit.Peak, o.jit.OOM), yesNo(o.held.Fits()), yesNo(o.lastUse.Fits()), yesNo(o.jit.Fits()))
	}
	if r := crossing.held; r != nil && r.OOM != nil {
		in := r.FailedInst()
		fmt.Fprintf(w, "\nAt %d nodes (held), the first op to fail is step %d, %%%s (%s) %s, asking %s; alive then (%d arrays), largest first:\n",
			crossing.nodes, r.FailedStep, in.Name, in.OpName(), opName(in), assign.HumanBytes(r.OOM.Requested), len(r.Live))
		for i, a := range r.Live {
			if i == 5 {
				fmt.Fprintf(w, "  ... %d more\n", len(r.Live)-5)
				break
			}
			fmt.Fprintf(w, "  %s %s %s %s\n", a.Name, a.Shape.String(), assign.HumanBytes(a.Bytes), a.OpName)
		}
	}
	return nil
}

func opName(in *hlo.Instruction) string {
	if in.Metadata == nil || in.Metadata.OpName == "" {
		return ""
	}
	return fmt.Sprintf("op_name=%q", in.Metadata.OpName)
}

func peakCell(peak int64, oom *gpu.OOMError) string {
	if oom != nil {
		return fmt.Sprintf("OOM asking %s (%s in use)", assign.HumanBytes(oom.Requested), assign.HumanBytes(oom.Stats.BytesInUse))
	}
	return assign.HumanBytes(peak)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
