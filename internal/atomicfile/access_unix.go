//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// mayWrite reports whether access(2) lets this process write path.
func mayWrite(path string) bool {
	err := syscall.Access(path, 2 /* W_OK */)
	return !(errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EPERM))
}
