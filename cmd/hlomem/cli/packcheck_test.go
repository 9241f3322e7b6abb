package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/rogpeppe/go-internal/testscript"
)

// packcheck PROBLEM SOLUTION HEIGHT runs the outside checker beside the
// corpus (../shared/tools/packcheck.py, no code shared with hlomem) on a
// packing hlomem printed, and requires it to accept the packing at the
// given height. It exists ([cmd:packcheck]) where python3 and the checker
// are found, and always when HLOMEM_REQUIRE_PACKCHECK is set (CI), so that
// there a missing checker fails instead of skipping.
func init() {
	python, perr := exec.LookPath("python3")
	script := ""
	if d := corpus.Dir(); d != "" {
		script = filepath.Join(filepath.Dir(d), "tools", "packcheck.py")
	}
	_, serr := os.Stat(script)
	if (perr != nil || serr != nil) && os.Getenv("HLOMEM_REQUIRE_PACKCHECK") == "" {
		return
	}
	scriptCmds["packcheck"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: packcheck problem.csv solution.csv height")
		}
		if perr != nil || serr != nil {
			ts.Fatalf("the outside packing checker cannot run (python3: %v; %q: %v)", perr, script, serr)
		}
		out, err := exec.Command(python, script, "check", ts.MkAbs(args[0]), ts.MkAbs(args[1])).CombinedOutput()
		if err != nil {
			ts.Fatalf("packcheck.py refuses the packing: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`^ok n=\d+ height=` + regexp.QuoteMeta(args[2]) + ` `).Match(out) {
			ts.Fatalf("packcheck.py: %s, want height %s", out, args[2])
		}
		ts.Logf("packcheck.py: %s", out)
	}
}
