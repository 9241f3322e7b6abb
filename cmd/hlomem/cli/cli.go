// Package cli implements the hlomem command line. Main is the whole program;
// cmd/hlomem only forwards to it, so tests run every command in-process.
//
// Every command writes its output into a spool (memory, then an unlinked
// temporary file beyond 32 MiB) that reaches stdout only when the command
// succeeded, so a failing run prints no partial output.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/atomicfile"
)

// Exit codes shared by every command.
const (
	exitOK          = 0
	exitFailure     = 1   // bad input, bad flags, internal errors
	exitInfeasible  = 2   // a well-formed request that cannot be met (e.g. capacity)
	exitInterrupted = 130 // stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it)
)

// Interrupts. The first SIGINT or SIGTERM cancels the command's context:
// every stage (reading, parsing, verifying, preparing and its searches,
// fusion's guard, packing, evaluation, writing) watches it and stops, no
// output file is written or replaced, standard output is dropped, and
// hlomem prints "hlomem CMD: interrupted; nothing written" and exits 130.
// A second signal exits at once (removing the temporary files of output
// files being written).

// exit ends the process on a second interrupt; tests replace it.
var exit = os.Exit

// commandStarted, when set (by tests), is called once a command's
// interrupts are watched, before it reads its input.
var commandStarted func()

// interruptSignals are the signals that stop a command.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// watchInterrupts cancels the context it returns on the first interrupt
// and exits on the second, until stop is called.
func watchInterrupts(stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, interruptSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			atomicfile.Abandon()
			fmt.Fprintln(stderr, "hlomem: interrupted twice; exiting at once")
			exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// env carries a command's context and its input and output streams.
type env struct {
	// ctx is cancelled by an interrupt: every stage of the command stops.
	ctx    context.Context
	stdin  io.Reader
	stdout *spool    // copied to the real stdout only on success
	stderr io.Writer // diagnostics, written immediately
	// passes: --passes asks for each pipeline pass's time on stderr.
	passes bool
}

// passesFlag defines --passes on fs for the commands that run the
// pipeline.
func (e *env) passesFlag(fs *flagSet) {
	fs.BoolVar(&e.passes, "passes", false, "print each pipeline pass as it ends on stderr: its name, its time, whether it changed the module")
}

// tracePasses returns the pipeline's trace for module m with --passes,
// nil without.
func (e *env) tracePasses(m *hlo.Module) func(compile.PassRun) {
	if !e.passes {
		return nil
	}
	return func(r compile.PassRun) {
		changed := ""
		if r.Changed {
			changed = " (changed the module)"
		}
		fmt.Fprintf(e.stderr, "hlomem: %s: pass %-18s %9.3f ms%s\n", m.Name, r.Name, float64(r.Elapsed.Microseconds())/1000, changed)
	}
}

// exitError asks Main to exit with a specific code after printing msg.
type exitError struct {
	code int
	msg  string
	// keepOutput: the output is the command's complete result although
	// it fails (the verdicts of a failed check), so it is printed.
	keepOutput bool
}

func (e *exitError) Error() string { return e.msg }

// Main runs hlomem with args (without the program name) and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			writeUsage(stderr)
			return exitFailure
		}
		writeUsage(stdout)
		return exitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "hlomem: unknown command %q\n", args[0])
		writeUsage(stderr)
		return exitFailure
	}
	ctx, stop := watchInterrupts(stderr)
	defer stop()
	if commandStarted != nil {
		commandStarted()
	}
	e := &env{ctx: ctx, stdin: stdin, stdout: &spool{ctx: ctx}, stderr: stderr}
	defer e.stdout.close()
	err := runInterruptible(ctx, c, e, args[1:])
	if ctx.Err() != nil {
		// Whatever the command returned, it was stopped: nothing of it
		// is printed.
		fmt.Fprintf(stderr, "hlomem %s: interrupted; nothing written\n", c.name)
		return exitInterrupted
	}
	if err != nil {
		var ee *exitError
		code := exitFailure
		if errors.As(err, &ee) {
			code = ee.code
		}
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		// Partial output is dropped on failure, except for commands that
		// explicitly return an exitError carrying a result (exit 2 keeps
		// its report, a failed check its verdicts). The result comes
		// first, the message about it after, as one stream (2>&1) shows
		// them.
		if ee != nil && (ee.code == exitInfeasible || ee.keepOutput) {
			e.stdout.copyTo(ctx, stdout)
		}
		if msg := err.Error(); msg != "" {
			if !strings.HasSuffix(msg, "\n") {
				msg += "\n"
			}
			io.WriteString(stderr, msg)
		}
		return code
	}
	if err := e.stdout.copyTo(ctx, stdout); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "\nhlomem %s: interrupted while printing its output\n", c.name)
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "hlomem: writing output: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// interruptGrace is how long an interrupted command may take to notice
// and return. Every stage watches the context, most within a few
// milliseconds; one that takes longer (a single step of a very large
// module) is left behind: Main returns and the process exits. It cannot
// write a file any more: output files are renamed into place only while
// the context is live (atomicfile.WriteContext), and its standard output
// is dropped.
var interruptGrace = time.Second

// runInterruptible runs the command; once ctx is done it waits at most
// interruptGrace for it to return.
func runInterruptible(ctx context.Context, c *command, e *env, args []string) error {
	done := make(chan error, 1)
	go func() { done <- runProtected(c, e, args) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(interruptGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return ctx.Err()
	}
}

// runProtected defines the command's flags, runs it and turns a panic (a
// bug) into an error that names the command, so the user gets a message
// and exit status 1.
func runProtected(c *command, e *env, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hlomem %s: internal error: %v", c.name, r)
		}
	}()
	return c.flags(newFlagSet(c, e), e)(args)
}

func writeUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: hlomem COMMAND [flags] FILE")
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "FILE \"-\" reads standard input. With several modules in FILE, every format")
	fmt.Fprintln(w, "gives one document: json an array of per-module objects, csv one table")
	fmt.Fprintln(w, "with a module column.")
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
		fmt.Fprintf(w, "            hlomem %s %s\n", c.name, c.usage())
	}
}

// parseArgs parses flags and requires exactly one positional argument, the
// input file. Flags may come before or after the file.
func parseArgs(fs *flagSet, args []string) (string, error) {
	pos, err := parseFiles(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", &exitError{code: exitFailure, msg: fmt.Sprintf("%s: want exactly one input file, got %d", fs.Name(), len(pos))}
	}
	return pos[0], nil
}

// parseFiles parses flags and returns the positional arguments, flags
// coming before or after them.
//
// A flag the flag set cannot parse (an unknown flag, a value of the wrong
// type) is an error naming the command and the flag, with the command's
// usage line; -h prints the full usage.
func parseFiles(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(out)
				usage()
				return nil, err
			}
			// The flag package names flags with one dash; hlomem's usage
			// writes two, as either parses.
			msg := strings.Replace(err.Error(), " -", " --", 1)
			line := fmt.Sprintf("\nusage: %s %s (%s -h lists the flags)", fs.Name(), fs.usageLine(), fs.Name())
			return nil, &exitError{code: exitFailure, msg: fs.Name() + ": " + msg + line}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return pos, nil
}
