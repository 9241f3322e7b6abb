// Package packcheck runs, for the tests, the outside packing checker that
// stands beside the shared corpus (../shared/tools/packcheck.py), which
// shares no code with hlomem: it verifies a packing in MiniMalloc's CSV
// form against its problem and prints its height and lower bound.
package packcheck

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/hlomem/hlomem/internal/corpus"
)

// EnvRequire, when set (CI sets it), makes a machine where the checker
// cannot run fail the tests that use it instead of skipping them.
const EnvRequire = "HLOMEM_REQUIRE_PACKCHECK"

// Required reports whether EnvRequire is set.
func Required() bool { return os.Getenv(EnvRequire) != "" }

// Checker is python3 and the checker's script.
type Checker struct{ python, script string }

// Find locates python3 and the checker beside the corpus, or says why it
// cannot run.
func Find() (*Checker, error) {
	d := corpus.Dir()
	if d == "" {
		return nil, errors.New("the outside packing checker cannot run: no corpus, so no ../shared/tools")
	}
	script := filepath.Join(filepath.Dir(d), "tools", "packcheck.py")
	python, err := exec.LookPath("python3")
	_, serr := os.Stat(script)
	if err != nil || serr != nil {
		return nil, fmt.Errorf("the outside packing checker cannot run (python3: %v; %s: %v)", err, script, serr)
	}
	return &Checker{python, script}, nil
}

// Result is what the checker reports of a packing it accepts.
type Result struct {
	Buffers            int
	Height, LowerBound int64
	Output             string
}

var okLine = regexp.MustCompile(`^ok n=(\d+) height=(\d+) lb=(\d+) `)

// Check runs the checker on the packing in the CSV file solution of the
// problem in the CSV file problem. A packing it refuses (an overlap, a
// buffer missing or changed) is an error holding its output.
func (c *Checker) Check(problem, solution string) (Result, error) {
	out, err := exec.Command(c.python, c.script, "check", problem, solution).CombinedOutput()
	if err != nil {
		return Result{}, fmt.Errorf("packcheck.py refuses the packing: %v\n%s", err, out)
	}
	m := okLine.FindSubmatch(out)
	if m == nil {
		return Result{}, fmt.Errorf("packcheck.py said %q", out)
	}
	r := Result{Output: string(out)}
	r.Buffers, _ = strconv.Atoi(string(m[1]))
	r.Height, _ = strconv.ParseInt(string(m[2]), 10, 64)
	r.LowerBound, _ = strconv.ParseInt(string(m[3]), 10, 64)
	return r, nil
}
