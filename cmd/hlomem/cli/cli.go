// Package cli implements the hlomem command line. Main is the whole program;
// cmd/hlomem only forwards to it, so tests run every command in-process.
//
// Every command writes its output into a spool (memory, then an unlinked
// temporary file beyond 32 MiB) that reaches stdout only when the command
// succeeded, so a failing run prints no partial output.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes shared by every command.
const (
	exitOK         = 0
	exitFailure    = 1 // bad input, bad flags, internal errors
	exitInfeasible = 2 // a well-formed request that cannot be met (e.g. capacity)
)

// command is one subcommand of hlomem.
type command struct {
	name    string
	usage   string // one line: arguments and flags
	summary string
	run     func(env *env, args []string) error
}

// commands is the table of subcommands; each file of this package adds its
// entry here so that the help text lists them in one place.
var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("cli: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// env carries a command's input and output streams.
type env struct {
	stdin  io.Reader
	stdout *spool    // copied to the real stdout only on success
	stderr io.Writer // diagnostics, written immediately
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
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hlomem: unknown command %q\n", args[0])
		writeUsage(stderr)
		return exitFailure
	}
	e := &env{stdin: stdin, stdout: new(spool), stderr: stderr}
	defer e.stdout.close()
	err := runProtected(c, e, args[1:])
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
			e.stdout.copyTo(stdout)
		}
		if msg := err.Error(); msg != "" {
			if !strings.HasSuffix(msg, "\n") {
				msg += "\n"
			}
			io.WriteString(stderr, msg)
		}
		return code
	}
	if err := e.stdout.copyTo(stdout); err != nil {
		fmt.Fprintf(stderr, "hlomem: writing output: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// runProtected runs a command and turns a panic (a bug) into an error that
// names the command, so the user gets a message and exit status 1.
func runProtected(c *command, e *env, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hlomem %s: internal error: %v", c.name, r)
		}
	}()
	return c.run(e, args)
}

func writeUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: hlomem COMMAND [flags] FILE")
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "FILE \"-\" reads standard input. With several modules in FILE, every format")
	fmt.Fprintln(w, "gives one document: json an array of per-module objects, csv one table")
	fmt.Fprintln(w, "with a module column.")
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-9s %s\n", n, c.summary)
		fmt.Fprintf(w, "            hlomem %s %s\n", n, c.usage)
	}
}

// newFlagSet returns a flag set for command c whose errors name the command.
func newFlagSet(c *command, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("hlomem "+c.name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: hlomem %s %s\n", c.name, c.usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags and requires exactly one positional argument, the
// input file. Flags may come before or after the file.
func parseArgs(fs *flag.FlagSet, args []string) (string, error) {
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
func parseFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{code: exitFailure, msg: ""}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return pos, nil
}
