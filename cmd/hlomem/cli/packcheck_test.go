package cli

import (
	"strconv"

	"github.com/hlomem/hlomem/internal/packcheck"
	"github.com/rogpeppe/go-internal/testscript"
)

// packcheck PROBLEM SOLUTION HEIGHT runs the outside checker beside the
// corpus (internal/packcheck: ../shared/tools/packcheck.py, no code shared
// with hlomem) on a packing hlomem printed, and requires it to accept the
// packing at the given height. It exists ([cmd:packcheck]) where python3
// and the checker are found, and always under packcheck.EnvRequire (CI),
// so that there a missing checker fails instead of skipping.
func init() {
	checker, findErr := packcheck.Find()
	if findErr != nil && !packcheck.Required() {
		return
	}
	scriptCmds["packcheck"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: packcheck problem.csv solution.csv height")
		}
		ts.Check(findErr)
		r, err := checker.Check(ts.MkAbs(args[0]), ts.MkAbs(args[1]))
		ts.Check(err)
		if strconv.FormatInt(r.Height, 10) != args[2] {
			ts.Fatalf("packcheck.py: %s, want height %s", r.Output, args[2])
		}
		ts.Logf("packcheck.py: %s", r.Output)
	}
}
