package report

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/schedule"
)

// Lever is one alternative to the plan a report shows: another schedule,
// fusion on or off, or another packer, the rest of the options as they
// are.
type Lever struct {
	// Kind is "schedule", "fusion" or "packer"; Value the scheduler
	// name, "on" or "off", or the packer name.
	Kind, Value string
}

func (l Lever) String() string { return l.Kind + "=" + l.Value }

// The schedulers and packers WhatIfs tries.
var (
	WhatIfSchedules = []string{schedule.Keep, schedule.PostOrder, schedule.DFS, schedule.List,
		schedule.Heuristic, schedule.Search, schedule.Optimal}
	WhatIfPackers = []string{"xla", "portfolio", "auto"}
)

// WhatIfOptimalLimit is the most instructions a module may have for
// WhatIfs to try the optimal scheduler.
const WhatIfOptimalLimit = 500

// WhatIfOptimalBudget is the exact search's budget (expansions) in the
// optimal what-if when the options set none: a tenth of the scheduler's
// own default, a few seconds at most, so a report stays quick. The
// lever's bound is then the best order found, proven or not.
const WhatIfOptimalBudget = schedule.DefaultOptimalBudget / 10

// WhatIfs returns the usual alternatives to a plan with opts: every
// scheduler of WhatIfSchedules (keep only for a module XLA scheduled,
// whose order is then a real schedule), fusion on and off, and every
// packer of WhatIfPackers. The plan's own choices are among them, so the
// table shows them side by side.
func WhatIfs(m *hlo.Module) []Lever {
	var out []Lever
	for _, s := range WhatIfSchedules {
		if s == schedule.Keep && (m == nil || !m.IsScheduled) {
			continue
		}
		// The exact search of every computation is for modules small
		// enough for it to finish in seconds.
		if s == schedule.Optimal && (m == nil || m.NumInstructions() > WhatIfOptimalLimit) {
			continue
		}
		out = append(out, Lever{"schedule", s})
	}
	out = append(out, Lever{"fusion", "off"}, Lever{"fusion", "on"})
	for _, p := range WhatIfPackers {
		out = append(out, Lever{"packer", p})
	}
	return out
}

// Current reports whether l is what opts already do.
func (l Lever) Current(opts Options, m *hlo.Module) bool {
	switch l.Kind {
	case "schedule":
		return l.Value == scheduleName(m, opts.Compile.Scheduler)
	case "fusion":
		return (l.Value == "on") == opts.Compile.Fuse
	case "packer":
		a := opts.Compile.Assign.Algorithm
		if a == "" {
			a = "auto"
		}
		return l.Value == a
	}
	return false
}

// plan plans m with l applied to opts, as hlomem assign plans it with
// the options of w.Command.
func (l Lever) plan(ctx context.Context, m *hlo.Module, opts Options) WhatIf {
	w := WhatIf{Lever: l}
	c := opts.Compile
	switch l.Kind {
	case "schedule":
		c.Scheduler = l.Value
		if l.Value == schedule.Optimal && c.Search.Budget == 0 {
			c.Search.Budget = WhatIfOptimalBudget
		}
	case "fusion":
		c.Fuse = l.Value == "on"
	case "packer":
		c.Assign.Algorithm = l.Value
	default:
		w.Err = fmt.Sprintf("unknown lever %q", l.Kind)
		return w
	}
	w.Command = Command(opts.File, m, c)
	as, err := plan(ctx, m, c)
	if err != nil {
		w.Err = err.Error()
		return w
	}
	w.LowerBound, w.Total = as.Stats.LowerBound, as.Stats.TotalBytes
	return w
}

// Command returns the command line (program name first) whose hlomem
// assign --format=json output gives the figures of m planned with opts:
// its lower_bound and total_bytes (for file's module m, among
// others when file holds several). It names every option that decides
// them and is not at its default, but the scheduler, the target and the
// packer always; file "" is written FILE.
func Command(file string, m *hlo.Module, opts compile.Options) []string {
	aopts := opts.Assign
	target := opts.Target.Name
	if target == "" {
		target = aopts.Target.Name // as compile reads it
	}
	if target == "" {
		target = assign.GPU.Name
	}
	algo := aopts.Algorithm
	if algo == "" {
		algo = "auto"
	}
	args := []string{"hlomem", "assign", "--format=json", "--target=" + target, "--algo=" + algo}
	if target == assign.TPU.Name {
		args = append(args, "--vmem=0") // the report assigns no memory spaces
	}
	if aopts.Budget != 0 && aopts.Budget != assign.DefaultBudget {
		args = append(args, "--budget="+aopts.Budget.String())
	}
	if aopts.Align > 0 {
		args = append(args, "--align="+strconv.FormatInt(aopts.Align, 10))
	}
	switch g := aopts.Gap; {
	case g < 0:
		args = append(args, "--gap=0") // the flag's 0: search on
	case g > 0 && g != assign.DefaultGap:
		args = append(args, "--gap="+strconv.FormatFloat(g, 'g', -1, 64))
	}
	args = append(args, "--schedule="+scheduleName(m, opts.Scheduler))
	if b := opts.Search.Budget; b != 0 {
		args = append(args, "--schedule-budget="+strconv.FormatInt(b, 10))
	}
	if opts.Fuse {
		args = append(args, "--fuse")
	}
	if file == "" {
		file = "FILE"
	} else if strings.HasPrefix(file, "-") && file != "-" {
		file = "./" + file // not a flag
	}
	return append(args, file)
}

// shellQuote returns args as one line a POSIX shell splits back into
// them: arguments of safe characters as they are, others in single
// quotes.
func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		safe := a != ""
		for _, r := range a {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
				safe = false
				break
			}
		}
		if safe {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// whatIfs plans m under every lever of opts.WhatIf, as many at once as
// there are processors, and returns the results in the levers' order.
func whatIfs(ctx context.Context, m *hlo.Module, opts Options, progress func(string)) []WhatIf {
	n := len(opts.WhatIf)
	if n == 0 {
		return nil
	}
	out := make([]WhatIf, n)
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				l := opts.WhatIf[i]
				if ctx.Err() != nil {
					out[i] = WhatIf{Lever: l, Err: ctx.Err().Error()}
					continue
				}
				out[i] = l.plan(ctx, m, opts)
				mu.Lock()
				done++
				progress(fmt.Sprintf("what if: %d of %d planned (%s)", done, n, l))
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
