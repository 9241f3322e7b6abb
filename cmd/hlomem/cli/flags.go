package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/schedule"
)

// Flag values are checked right after the flags are parsed, before any
// input is read: a typo is reported at once, naming the flag and listing
// what it takes, whatever the input holds.

// targets are the names --target takes.
var targets = []string{assign.GPU.Name, assign.CPU.Name, assign.TPU.Name}

// oneOf checks that --flag's value is one of valid.
func oneOf(cmd, flag, value string, valid []string) error {
	if slices.Contains(valid, value) {
		return nil
	}
	return flagError(cmd, "unknown --%s %q (want %s)", flag, value, orList(valid))
}

// flagError is a bad flag's error: exit 1, the command's name first.
func flagError(cmd, format string, args ...any) error {
	return &exitError{code: exitFailure, msg: fmt.Sprintf("hlomem "+cmd+": "+format, args...)}
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// checkTarget checks --target ("" is the default: targetFor).
func checkTarget(cmd, name string) error {
	if name == "" {
		return nil
	}
	return oneOf(cmd, "target", name, targets)
}

// checkAlgo checks --algo against the packers.
func checkAlgo(cmd, name string) error {
	if name == "" || pack.CheckAlgorithm(name) == nil {
		return nil
	}
	return flagError(cmd, "unknown --algo %q (want one of %s)", name, strings.Join(pack.Algorithms(), ", "))
}

// checkSchedule checks --schedule ("" is the default).
func checkSchedule(cmd, name string) error {
	if schedule.Check(name) == nil {
		return nil
	}
	return flagError(cmd, "unknown --schedule %q (want %s)", name, orList(schedule.Names))
}

// targetFlag documents --target, shared by several commands.
const targetFlag = "target: gpu (128-byte temp alignment, as XLA:GPU), cpu (64) or tpu (512); default: what XLA's dump file name says (*.cpu_after_optimizations.txt: cpu, *gpu_after_optimizations.txt: gpu), else gpu"

// dumpTarget is the target XLA's dump file name says the module was
// compiled for ("" when it does not say): XLA names a module's files
// module_NNNN.NAME.<platform>_after_optimizations.txt, the platform being
// cpu, or sm_X.Y_gpu for a CUDA GPU.
func dumpTarget(file string) string {
	base := filepath.Base(file)
	for _, suffix := range []string{"_after_optimizations.txt", "_after_optimizations-buffer-assignment.txt"} {
		stem, ok := strings.CutSuffix(base, suffix)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(stem, ".cpu"):
			return assign.CPU.Name
		case strings.HasSuffix(stem, "gpu"):
			return assign.GPU.Name
		}
	}
	return ""
}

// targetFor returns the target a command plans file for: the one --target
// names when given (flag is not ""), else the one XLA's dump file name
// says, else gpu; note says so when the file name decided, for stderr.
func targetFor(cmd, flag, file string) (t assign.Target, note string) {
	name := flag
	if name == "" {
		if name = dumpTarget(file); name != "" {
			note = fmt.Sprintf("hlomem %s: %s: planned for %s, as XLA's dump file name says (--target to change)", cmd, file, name)
		} else {
			name = assign.GPU.Name
		}
	}
	t, _ = assign.TargetByName(name)
	return t, note
}

// count writes n with the noun's singular or plural: "1 output", "2
// outputs".
func count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
