//go:build unix

package cli

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Named pipes let a script interrupt a command while it reads, whatever
// the machine's speed ([cmd:mkfifo] guards their use):
//
//   - mkfifo PATH makes one;
//   - holdfifo PATH waits (up to a minute) until a command opens it for
//     reading, then opens it for writing and keeps it open, writing
//     nothing, until the script ends: the command's read blocks, and the
//     script knows the command got that far.
func init() {
	// mkchardev PATH makes a character device like /dev/null (major 1,
	// minor 3) at PATH; it needs root ([root] guards its use), so that a
	// test never points a write at the machine's own /dev/null as root.
	scriptCmds["mkchardev"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mkchardev path")
		}
		ts.Check(syscall.Mknod(ts.MkAbs(args[0]), syscall.S_IFCHR|0o666, 1<<8|3))
	}
	scriptCmds["mkfifo"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mkfifo path")
		}
		ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o644))
	}
	scriptCmds["holdfifo"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: holdfifo path")
		}
		path := ts.MkAbs(args[0])
		deadline := time.Now().Add(time.Minute)
		for {
			// Opening a pipe for writing without blocking fails with
			// ENXIO while no reader has it open.
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				ts.Defer(func() { f.Close() })
				return
			}
			if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
				ts.Fatalf("holdfifo %s: %v", args[0], err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
