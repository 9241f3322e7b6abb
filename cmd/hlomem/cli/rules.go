package cli

import (
	"strings"

	"github.com/hlomem/hlomem/liveness"
)

// xlaRulesFlag documents --xla-rules, shared by the commands that compute
// live ranges.
const xlaRulesFlag = "XLA's live-range rules: 2026 (current: a value inside an async computation lives from the start of the computation holding its async-start to its async-done) or 2025 (older XLA, e.g. the 2024-2025 dumps: from its definition to the async-done)"

// executionThreadsFlag documents --execution-threads.
const executionThreadsFlag = "analyse only the computations on these execution threads, comma-separated (XLA's execution_threads): others hold no values and are not scheduled, and an async-start onto another thread defines its own outputs; default every thread"

// liveFlags are --xla-rules and --execution-threads, shared by liveness,
// assign, report, peak and run.
type liveFlags struct {
	rules, threads *string
}

// addLiveFlags defines --xla-rules and --execution-threads on fs.
func addLiveFlags(fs *flagSet) liveFlags {
	return liveFlags{
		rules:   fs.String("xla-rules", string(liveness.Rules2026), strings.Join(liveness.RuleNames, "|"), xlaRulesFlag),
		threads: fs.String("execution-threads", "", "T[,T...]", executionThreadsFlag),
	}
}

// settings checks the flags and returns the liveness settings they ask
// for.
func (f liveFlags) settings(cmd string) (liveness.Settings, error) {
	if err := oneOf(cmd, "xla-rules", *f.rules, liveness.RuleNames); err != nil {
		return liveness.Settings{}, err
	}
	var threads []string
	if *f.threads != "" {
		for _, t := range strings.Split(*f.threads, ",") {
			if t = strings.TrimSpace(t); t == "" {
				return liveness.Settings{}, flagError(cmd, "--execution-threads: an empty thread name in %q", *f.threads)
			}
			threads = append(threads, t)
		}
	}
	return liveness.Settings{XLARules: liveness.Rules(*f.rules), ExecutionThreads: threads}, nil
}

// apply checks the flags and makes their settings those of every analysis
// the command's pipeline makes (liveness.WithSettings on e.ctx).
func (f liveFlags) apply(cmd string, e *env) error {
	s, err := f.settings(cmd)
	if err != nil {
		return err
	}
	e.ctx = liveness.WithSettings(e.ctx, s)
	return nil
}
