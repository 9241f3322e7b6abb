//go:build !unix

package compile_test

import "time"

// processCPU is unknown here.
func processCPU() (time.Duration, bool) { return 0, false }
