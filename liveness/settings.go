package liveness

// Settings: which of XLA's live-range rules an analysis follows, and on
// which execution threads it runs.
//
// XLA's HloLiveRange changed how it times values inside an asynchronous
// context (xla/hlo/utils/hlo_live_range.cc, CalculateBufferStartEndMap).
// Both forms extend such a value's end to the async-done of the chain
// that runs its context; the current form also moves its start back to
// the start of the computation that holds the chain (the caller's
// computation), because a latency-hiding schedule may start the async
// work before the instructions that precede the async-start. Rules names
// the form; the paired XLA dumps of the corpus (2024-2025) were made
// under the older one.
//
// Execution threads: XLA's analyses take a set of execution threads
// (HloDataflowAnalysis::Run, HloAliasAnalysis::Run, HloLiveRange::Run);
// a computation on a thread outside the set is left out (threads.go).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/internal/jsonw"
)

// Rules names a version of XLA's live-range rules.
type Rules string

const (
	// Rules2026 is the current rule and the default (the zero Rules):
	// a value defined in an asynchronous context (an async computation
	// and the computations flattened into it) lives from the start of
	// the computation holding the async chain to the chain's async-done.
	Rules2026 Rules = "2026"
	// Rules2025 is the older rule: such a value starts at its definition
	// and lives at least to the chain's async-done. The corpus's paired
	// XLA dumps follow it.
	Rules2025 Rules = "2025"
)

// RuleNames lists the names ParseRules accepts, the default first.
var RuleNames = []string{string(Rules2026), string(Rules2025)}

// ParseRules returns the Rules of name ("" is the default).
func ParseRules(name string) (Rules, error) {
	switch Rules(name) {
	case "", Rules2026:
		return Rules2026, nil
	case Rules2025:
		return Rules2025, nil
	}
	return "", fmt.Errorf("liveness: unknown XLA rules %q (want one of %v)", name, RuleNames)
}

// Effective returns r with the zero value resolved to the default.
func (r Rules) Effective() Rules {
	if r == "" {
		return Rules2026
	}
	return r
}

// asyncStartsAtOuter reports whether values in an asynchronous context
// start at the start of the computation holding their chain.
func (r Rules) asyncStartsAtOuter() bool { return r.Effective() != Rules2025 }

// Settings are the rules and execution threads of an analysis.
type Settings struct {
	// XLARules selects the live-range rules; the zero value is the
	// current (Rules2026).
	XLARules Rules
	// ExecutionThreads, when not empty, limits the analysis to the
	// computations on these execution threads, as XLA's analyses do
	// with execution_threads; empty means every thread.
	ExecutionThreads []string
}

// effective returns s with its zero rules resolved and its threads
// sorted and without repeats.
func (s Settings) effective() Settings {
	out := Settings{XLARules: s.XLARules.Effective()}
	if len(s.ExecutionThreads) > 0 {
		out.ExecutionThreads = slices.Clone(s.ExecutionThreads)
		slices.Sort(out.ExecutionThreads)
		out.ExecutionThreads = slices.Compact(out.ExecutionThreads)
	}
	return out
}

// options returns Options that carry s.
func (s Settings) options() Options {
	return Options{XLARules: s.XLARules, ExecutionThreads: s.ExecutionThreads}
}

// settingsKey keys the Settings a context carries.
type settingsKey struct{}

// WithSettings returns ctx carrying s: every analysis made under the
// returned context whose Options do not set them (the pipeline's, package
// compile, and those its passes derive) follows s.
func WithSettings(ctx context.Context, s Settings) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, settingsKey{}, s.effective())
}

// SettingsFrom returns the Settings ctx carries (WithSettings), or the
// defaults.
func SettingsFrom(ctx context.Context) Settings {
	if ctx != nil {
		if s, ok := ctx.Value(settingsKey{}).(Settings); ok {
			return s
		}
	}
	return Settings{}.effective()
}

// Settings returns the rules and execution threads the analysis follows.
func (a *Analysis) Settings() Settings { return a.settings }

// WriteJSONKeys writes the settings as keys of the JSON object j is in:
// "xla_rules" always, "execution_threads" when the analysis is limited to
// some threads.
func (s Settings) WriteJSONKeys(j *jsonw.Writer) {
	j.Key("xla_rules")
	j.String(string(s.XLARules.Effective()))
	if len(s.ExecutionThreads) > 0 {
		j.Key("execution_threads")
		j.BeginArray()
		for _, t := range s.ExecutionThreads {
			j.String(t)
		}
		j.EndArray()
	}
}

// String describes the settings for a text header: "XLA rules 2026",
// with the threads when set.
func (s Settings) String() string {
	out := "XLA rules " + string(s.XLARules.Effective())
	if len(s.ExecutionThreads) > 0 {
		out += ", execution threads " + strings.Join(s.ExecutionThreads, ",")
	}
	return out
}
