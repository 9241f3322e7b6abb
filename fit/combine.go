package fit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/remat"
)

// Combination is the cheapest combination of levers that fits: the levers
// applied cumulatively in cost order (CostOrder), each step re-planned and
// re-run on the device model, stopping at the first that fits.
type Combination struct {
	Levers []string `json:"levers"`
	// Fits reports whether the last step fits; Total and Limit are its
	// plan's total and the client's limit, Need what its run holds.
	Fits  bool  `json:"fits"`
	Total int64 `json:"total"`
	Limit int64 `json:"limit"`
	Need  int64 `json:"need"`
	// Steps says what each step did, Why why no combination fits.
	Steps    []string `json:"steps"`
	Why      string   `json:"why,omitempty"`
	Change   []string `json:"change"`
	Commands []string `json:"commands,omitempty"`
	// Settings are the client settings of the last step, as JAX's
	// environment lines (none on a TPU).
	Settings []string `json:"settings,omitempty"`
	// Module is the changed module (nil when no step changed it).
	Module *hlo.Module `json:"-"`

	config gpu.ClientConfig
}

// CostOrder is the ranking rule: levers that cost nothing at run time
// first (the client's settings, then donation), then host offload (it
// costs transfer time on the host link but no compute), then remat (it
// costs compute, FLOPs on every step). jit is not a step: the verdict is
// the jitted run's already.
var CostOrder = []string{"allocator", "donation", "offload", "remat"}

// combine applies the levers in CostOrder on m until it fits.
func (t *target) combine(ctx context.Context, m *hlo.Module, v *Verdict, levers []*Lever) (*Combination, error) {
	c := &Combination{Total: v.Total, Limit: v.Limit, Need: v.Need, Fits: v.Fits, config: t.cfg}
	if t.gpu != nil {
		c.Settings = envLines(t.cfg)
	}
	if v.Fits {
		c.Steps = []string{"fits as it is"}
		return c, nil
	}
	byName := map[string]*Lever{}
	for _, l := range levers {
		byName[l.Name] = l
	}
	cur := m
	cfg := t.cfg
	var rematLimit int64
	for _, name := range CostOrder {
		l := byName[name]
		if l == nil || !l.Applies {
			continue
		}
		switch name {
		case "allocator":
			if l.config == nil {
				continue
			}
			cfg = *l.config
		case "donation", "offload":
			if l.Saved <= 0 {
				c.Steps = append(c.Steps, name+": skipped, it saves nothing alone")
				continue
			}
			next, err := t.applyModuleLever(ctx, name, cur, cfg)
			if err != nil {
				c.Steps = append(c.Steps, name+": "+err.Error())
				continue
			}
			cur = next
		case "remat":
			tt := *t
			tt.cfg = cfg
			r, rl, _, err := tt.rematTo(ctx, cur, t.limitOf(cfg), remat.Plan)
			if err != nil {
				c.Steps = append(c.Steps, "remat: "+err.Error())
				continue
			}
			cur, rematLimit = r.Module, rl
		}
		c.Levers = append(c.Levers, name)
		c.Change = append(c.Change, l.Change...)
		if err := t.measure(ctx, c, cur, cfg); err != nil {
			return nil, err
		}
		c.Steps = append(c.Steps, fmt.Sprintf("+%s: total %d bytes, needs %d of %d: %s", name, c.Total, c.Need, c.Limit, fitWord(c.Fits)))
		if c.Fits {
			break
		}
	}
	if cur != m {
		c.Module = cur
	}
	c.config = cfg
	if t.gpu != nil {
		c.Settings = envLines(cfg)
	}
	if !c.Fits {
		c.Why = fmt.Sprintf("none of the levers is enough: with all of them the run needs %d bytes of %d", c.Need, c.Limit)
	}
	c.Commands = t.combinationCommands(c, cfg, rematLimit)
	return c, nil
}

// applyModuleLever applies donation or offload to cur.
func (t *target) applyModuleLever(ctx context.Context, name string, cur *hlo.Module, cfg gpu.ClientConfig) (*hlo.Module, error) {
	if name == "donation" {
		r, err := Donate(ctx, cur, t.opts)
		if err != nil {
			return nil, err
		}
		return r.Module, nil
	}
	lim := t.limitOf(cfg)
	r, err := Offload(ctx, cur, lim, t.opts, t.name)
	if err != nil {
		return nil, err
	}
	return r.Module, nil
}

func (t *target) limitOf(cfg gpu.ClientConfig) int64 {
	if t.tpu != nil {
		return t.tpu.HBM
	}
	c, err := gpu.NewClient(*t.gpu, cfg, gpu.ClientOptions{})
	if err != nil {
		return gpu.RoundLimit(cfg.Limit(*t.gpu)) // the client cannot start
	}
	return c.Stats().BytesLimit
}

// measure re-plans cur and re-runs it under cfg, into c. A module the
// remat pass rewrote is planned in its own order.
func (t *target) measure(ctx context.Context, c *Combination, cur *hlo.Module, cfg gpu.ClientConfig) error {
	o := t.opts
	o.Remat = nil
	r, err := compile.Compile(ctx, cur.Clone(), o)
	if err != nil {
		return err
	}
	c.Total = r.Assignment.Stats.DeviceBytes
	if t.tpu != nil {
		c.Limit = t.tpu.HBM
		c.Fits, c.Need = t.tpuFits(r.Assignment)
		return nil
	}
	d, err := t.run(ctx, r.Assignment, cfg)
	if err != nil {
		return err
	}
	c.Limit, c.Need, c.Fits = d.limit, d.need, d.fits
	return nil
}

// combinationCommands reproduce the combination's figure: run with the
// client's settings and the remat limit.
func (t *target) combinationCommands(c *Combination, cfg gpu.ClientConfig, rematLimit int64) []string {
	var args []string
	args = append(args, "hlomem run --device="+t.name)
	if t.gpu != nil {
		args = append(args, flagsOf(cfg))
	}
	if rematLimit > 0 {
		args = append(args, fmt.Sprintf("--remat-limit=%d", rematLimit))
	}
	args = append(args, t.file)
	for _, n := range c.Levers {
		if n == "donation" || n == "offload" {
			// The module the steps made, remat included: run it as it
			// is (its order is its schedule), read from the pipe.
			args = append(args[:0:0], "hlomem run --device="+t.name)
			if t.gpu != nil {
				args = append(args, flagsOf(cfg))
			}
			return []string{t.emitCommand("combination") + " | " + strings.Join(append(args, "-"), " ")}
		}
	}
	return []string{strings.Join(args, " ")}
}

// moduleCommands reproduce a donation or offload lever's figures from
// the module it made, printed by hlomem fit --emit and read from the
// pipe: its plan's total (assign; device_bytes when part of it is in
// host memory) and its run on the device under the current settings.
func (t *target) moduleCommands(name string) []string {
	run := "hlomem run --device=" + t.name
	if t.gpu != nil {
		run += " " + flagsOf(t.cfg)
	}
	emit := t.emitCommand(name)
	return []string{emit + " | hlomem assign --format=json -", emit + " | " + run + " -"}
}

// donateLever measures Donate (donate.go): each argument's saving is its
// own re-plan.
func (t *target) donateLever(ctx context.Context, m *hlo.Module, v *Verdict) (*Lever, error) {
	l := &Lever{Name: "donation", Cost: "none"}
	r, err := Donate(ctx, m, t.opts)
	if err != nil {
		l.Why = "cannot apply: " + err.Error()
		return l, nil
	}
	if len(r.Args) == 0 {
		l.Why = "no entry argument can be donated"
		return l, nil
	}
	l.Applies, l.Total, l.Saved, l.Limit, l.module = true, r.After, r.Before-r.After, v.Limit, r.Module
	// donate_argnums names the arguments of the donated set (the module
	// the figures come from); the others are listed, each with what it
	// would save alone.
	var nums []string
	for _, a := range r.Args {
		kept := "not in the donated set"
		if a.Donated {
			kept = "donated"
			if !slices.Contains(nums, fmt.Sprint(a.Param)) {
				nums = append(nums, fmt.Sprint(a.Param))
			}
		}
		l.Details = append(l.Details, fmt.Sprintf("argument %d %s: %d bytes, saves %d alone; %s", a.Param, a.Name, a.Bytes, a.Saved, kept))
	}
	tuple := strings.Join(nums, ", ")
	if len(nums) == 1 {
		tuple += ","
	}
	l.Change = []string{fmt.Sprintf("jax.jit(f, donate_argnums=(%s))", tuple)}
	if len(nums) == 0 {
		l.Change = []string{"no argument's donation makes the plan smaller"}
	}
	l.Fits = t.fitsModule(ctx, r.Module)
	l.Commands = t.moduleCommands(l.Name)
	return l, nil
}

// offloadLever measures Offload (offload.go) toward the device limit.
func (t *target) offloadLever(ctx context.Context, m *hlo.Module, v *Verdict) (*Lever, error) {
	l := &Lever{Name: "offload"}
	if v.Fits {
		l.Why = "fits already: nothing to offload"
		return l, nil
	}
	r, err := Offload(ctx, m, v.Limit, t.opts, t.name)
	if err != nil {
		l.Why = "cannot apply: " + err.Error()
		return l, nil
	}
	if len(r.Arrays) == 0 {
		l.Why = "no array is untouched in the peak region"
		return l, nil
	}
	var secs float64
	for _, a := range r.Arrays {
		secs += a.Seconds
		l.Details = append(l.Details, fmt.Sprintf("%s (%s) %d bytes, %.6f s", a.Name, a.Kind, a.Bytes, a.Seconds))
	}
	l.Applies, l.Total, l.Saved, l.Limit, l.module = true, r.After, r.Before-r.After, v.Limit, r.Module
	l.Cost = fmt.Sprintf("%.6f s of transfers at %.3g bytes/s", secs, r.Bandwidth)
	l.Change = []string{`memory_kind="pinned_host" for the arrays the offload lever names`}
	l.Fits = t.fitsModule(ctx, r.Module)
	l.Commands = t.moduleCommands(l.Name)
	return l, nil
}

// fitsModule re-plans m and runs it under the current settings.
func (t *target) fitsModule(ctx context.Context, m *hlo.Module) bool {
	c := &Combination{}
	if err := t.measure(ctx, c, m, t.cfg); err != nil {
		return false
	}
	return c.Fits
}
