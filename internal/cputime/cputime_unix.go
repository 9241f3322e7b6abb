//go:build unix

// Package cputime reads the CPU time the process has used, where the
// system says (getrusage on Unix): the schedulers' search cutoff counts it,
// and the benchmarks report it beside wall time on a shared machine.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time the process has used, user and system.
func Process() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
