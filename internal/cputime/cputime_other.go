//go:build !unix

package cputime

import "time"

// Process reports that the process's CPU time is not known here: callers
// count wall-clock time instead.
func Process() (time.Duration, bool) { return 0, false }
