package liveness

// Execution threads, as XLA's analyses treat them when run on a set of
// threads (execution_threads). A computation's thread is its
// execution_thread attribute, "main" without one, except that an
// async-start gives its async computation, and every computation that
// one calls, the async-start's async_execution_thread ("main" without
// one), overriding the async threads of the async ops inside it too (the
// HLO parser's CreateAsyncStart, hlo_instructions.cc SetThreadName). With
// a set of threads:
//
//   - a computation on another thread holds no values and is not
//     flattened (HloDataflowAnalysis::InitializeInstructionValueSets and
//     Propagate skip it, HloLiveRange::FlattenSchedule returns at once);
//   - an async-start whose thread is excluded defines its outputs {1}
//     itself, and neither it nor its updates and done take the async
//     computation's root (UpdateAsyncStartValueSet and the others);
//   - a call into an excluded computation holds no values
//     (UpdateCallValueSet), and its use of its operands is not dropped,
//     its callee not being flattened.

import (
	"context"
	"strconv"

	"github.com/hlomem/hlomem/hlo"
)

// mainThread is XLA's HloInstruction::kMainExecutionThread.
const mainThread = "main"

// threadSet is a set of execution threads; nil includes every thread
// (XLA's IsThreadIncluded with an empty set).
type threadSet map[string]bool

func newThreadSet(names []string) threadSet {
	if len(names) == 0 {
		return nil
	}
	s := threadSet{}
	for _, n := range names {
		s[n] = true
	}
	return s
}

// includes is XLA's HloInstruction::IsThreadIncluded.
func (s threadSet) includes(thread string) bool { return s == nil || s[thread] }

// moduleThreads are the execution threads of a module's computations and
// async-starts.
type moduleThreads struct {
	comp  []string                    // by computation ID
	async map[*hlo.Instruction]string // by async-start
}

// threadsOf computes the threads of m's computations and async-starts.
func threadsOf(m *hlo.Module) moduleThreads {
	t := moduleThreads{comp: make([]string, len(m.Computations)), async: map[*hlo.Instruction]string{}}
	for _, c := range m.Computations {
		t.comp[c.ID] = c.ExecutionThread
		if t.comp[c.ID] == "" {
			t.comp[c.ID] = mainThread
		}
	}
	limit := len(m.Computations) + 1
	var setComp func(c *hlo.Computation, thread string, depth int)
	setAsync := func(start *hlo.Instruction, thread string, depth int) {
		t.async[start] = thread
		if w := AsyncComputation(start); w != nil {
			setComp(w, thread, depth+1)
		}
	}
	setComp = func(c *hlo.Computation, thread string, depth int) {
		if c == nil || depth > limit {
			return
		}
		t.comp[c.ID] = thread
		for _, in := range c.Instructions {
			switch in.Opcode {
			case hlo.OpAsyncStart, hlo.OpAsyncUpdate, hlo.OpAsyncDone:
				if s := hlo.AsyncChainStart(in); s != nil {
					setAsync(s, thread, depth)
				}
				continue
			}
			for _, callee := range in.Callees() {
				setComp(callee, thread, depth+1)
			}
		}
	}
	// The parser creates each async-start as it reads it: callees come
	// before their callers in the text, so an outer async-start overrides
	// what an inner one set.
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpAsyncStart {
				setAsync(in, asyncThreadAttr(in), 0)
			}
		}
	}
	return t
}

// asyncThreadAttr returns the async_execution_thread of an async-start,
// "main" without one.
func asyncThreadAttr(in *hlo.Instruction) string {
	v, ok := in.Attr("async_execution_thread")
	if !ok {
		return mainThread
	}
	if s, err := strconv.Unquote(v); err == nil {
		return s
	}
	return v
}

// excludedComputations returns, by computation ID, the computations whose
// thread set leaves out (nil when it includes every thread), and a
// function reporting whether an async op's thread is left out.
func excludedComputations(m *hlo.Module, set threadSet) (comp []bool, asyncExcluded func(*hlo.Instruction) bool) {
	if set == nil {
		return nil, func(*hlo.Instruction) bool { return false }
	}
	t := threadsOf(m)
	comp = make([]bool, len(m.Computations))
	for id, th := range t.comp {
		comp[id] = !set.includes(th)
	}
	return comp, func(in *hlo.Instruction) bool {
		s := hlo.AsyncChainStart(in)
		if s == nil {
			return false
		}
		th, ok := t.async[s]
		if !ok {
			th = mainThread
		}
		return !set.includes(th)
	}
}

// settle fixes the analysis's settings (opts first, then ctx's) and,
// with a set of threads, leaves out the computations on other threads:
// they become Unreachable, as nothing the analysis reaches runs them.
func (a *Analysis) settle(ctx context.Context, opts Options) {
	s := SettingsFrom(ctx)
	if opts.XLARules != "" {
		s.XLARules = opts.XLARules
	}
	if len(opts.ExecutionThreads) > 0 {
		s.ExecutionThreads = opts.ExecutionThreads
	}
	a.settings = s.effective()
	a.excluded, a.asyncExcluded = excludedComputations(a.Module, newThreadSet(a.settings.ExecutionThreads))
	if a.excluded == nil {
		return
	}
	for id, x := range a.excluded {
		if x {
			a.Kinds[id] = Unreachable
		}
	}
	roots := a.parallelRoots[:0]
	for _, c := range a.parallelRoots {
		if !a.excluded[c.ID] {
			roots = append(roots, c)
		}
	}
	a.parallelRoots = roots
}

// isExcluded reports whether the settings leave c out.
func (a *Analysis) isExcluded(c *hlo.Computation) bool {
	return a.excluded != nil && c != nil && c.ID >= 0 && c.ID < len(a.excluded) && a.excluded[c.ID]
}

// defines is definesAt with the rule for an async-start whose thread is
// left out: it defines its outputs {1} too, their dataflow being
// untracked (HloDataflowAnalysis::InitializeInstructionValueSets).
func (d *dataflow) defines(in *hlo.Instruction, ix hlo.ShapeIndex, sub hlo.Shape, paramDefines bool) bool {
	if in.Opcode == hlo.OpAsyncStart && len(ix) > 0 && ix[0] == 1 && d.a.asyncExcluded != nil && d.a.asyncExcluded(in) {
		return true
	}
	return definesAt(in, ix, sub, paramDefines)
}
