//go:build !linux

package cli

import "os"

// isTerminal reports whether f is a character device other than the null
// device: the best guess without the platform's terminal calls.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	return f.Name() != os.DevNull
}
