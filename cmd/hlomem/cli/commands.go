package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// command is one subcommand of hlomem.
type command struct {
	name    string
	summary string // one line, for hlomem help
	args    string // the positional arguments, as the usage line shows them
	// flags is the command's flag-set builder: it defines the command's
	// flags on fs and returns the command's run func, which parses args
	// into them and runs the command. It has no other effect, so help
	// calls it on a flag set of its own to write the usage line.
	flags func(fs *flagSet, e *env) (run func(args []string) error)
}

// commands is the table of subcommands, in the order hlomem help lists
// them.
var commands = []*command{
	{
		name:    "assign",
		summary: "XLA-style buffer assignment; xla = XLA's buffer-assignment text, report = its memory-usage report",
		args:    "FILE.hlo",
		flags:   assignFlags,
	},
	{
		name:    "fit",
		summary: "will it fit on a device: the verdict under the client's settings, then the user's levers (allocator settings, donation, host offload, remat, jit), each measured by a re-plan and a run on the device model, cheapest first, and the cheapest combination that fits; exit 0 when it fits as it is, 2 when it does not (whether or not a combination makes it fit)",
		args:    "FILE.hlo|DUMPDIR",
		flags:   fitFlags,
	},
	{
		name:    "fmt",
		summary: "print every module in FILE in canonical HLO text (modules separated by // -----)",
		args:    "FILE.hlo",
		flags:   fmtFlags,
	},
	{
		name:    "fuse",
		summary: "simplify and fuse every module of FILE and print the result; --explain prints each decision and its reason instead",
		args:    "FILE.hlo",
		flags:   fuseFlags,
	},
	{
		name:    "liveness",
		summary: "live ranges of every buffer; --format=xla matches XLA's HloLiveRange dump",
		args:    "FILE.hlo",
		flags:   livenessFlags,
	},
	{
		name:    "pack",
		summary: "pack a raw offset-assignment problem (MiniMalloc CSV)",
		args:    "FILE.csv",
		flags:   packFlags,
	},
	{
		name:    "peak",
		summary: "peak memory per module of HLO files and XLA dump directories; with --golden a regression check for CI (exit 1 out of tolerance)",
		args:    "PATH...",
		flags:   peakFlags,
	},
	{
		name:    "remat",
		summary: "rematerialize (recompute values before later uses) until the plan's total fits a limit, with hlomem's algorithm or XLA's HloRematerialization, and print the rewritten module; --explain prints what was recomputed and the FLOPs it adds; exit 2 when the limit cannot be reached",
		args:    "FILE.hlo",
		flags:   rematCmdFlags,
	},
	{
		name:    "report",
		summary: "what a module's memory goes to: totals, the peak and what occupies memory there with source lines, what a schedule, fusion or packer would save, XLA's own plan beside hlomem's; a memory viewer in HTML, SVG charts, a pprof profile",
		args:    "FILE.hlo|DUMPDIR",
		flags:   reportFlags,
	},
	{
		name:    "run",
		summary: "run the plan: --verify checks byte ownership at every step; --inputs/--arg evaluate it and compare with a plan-free run; --device runs a session on a modelled GPU or a program on a TPU-like chip (exit 2 on out of memory)",
		args:    "FILE.hlo...",
		flags:   runFlags,
	},
}

// lookup returns the command called name, nil when there is none.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usage is c's usage line after "hlomem NAME ": every flag, in the order
// c defines them, then the positional arguments.
func (c *command) usage() string {
	fs := newFlagSet(c, &env{})
	c.flags(fs, &env{})
	return fs.usageLine()
}

// flagSet is a command's flag set. Each flag is defined with the
// placeholder its value has in the usage line, which is written from the
// flags themselves (usageLine), so it names every flag the command has
// and no other.
type flagSet struct {
	*flag.FlagSet
	cmd  *command
	docs []flagDoc // in the order the flags are defined
}

// flagDoc is a flag as the usage line shows it: [--name=placeholder].
type flagDoc struct {
	name, placeholder string
}

// newFlagSet returns a flag set for command c whose errors name the
// command and whose usage (-h) is its usage line and its flags.
func newFlagSet(c *command, e *env) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("hlomem "+c.name, flag.ContinueOnError), cmd: c}
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hlomem %s %s\n", c.name, fs.usageLine())
		fs.PrintDefaults()
	}
	return fs
}

// usageLine writes the flags as [--name=PLACEHOLDER] in the order they
// were defined, a bool as [--name] (as [--name=false] when it is true by
// default), then the command's positional arguments. A flag defined
// around flagSet's methods, without a placeholder, is a bug.
func (fs *flagSet) usageLine() string {
	var b strings.Builder
	documented := map[string]bool{}
	for _, d := range fs.docs {
		documented[d.name] = true
		f := fs.Lookup(d.name)
		switch {
		case d.placeholder != "":
			fmt.Fprintf(&b, "[--%s=%s] ", d.name, d.placeholder)
		case f.DefValue == "true":
			fmt.Fprintf(&b, "[--%s=false] ", d.name)
		default:
			fmt.Fprintf(&b, "[--%s] ", d.name)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			panic(fmt.Sprintf("cli: %s: flag --%s has no placeholder: define it with a flagSet method", fs.Name(), f.Name))
		}
	})
	return b.String() + fs.cmd.args
}

func (fs *flagSet) doc(name, placeholder string) {
	fs.docs = append(fs.docs, flagDoc{name, placeholder})
}

// Bool defines a bool flag; the usage line shows it without a value.
func (fs *flagSet) Bool(name string, value bool, usage string) *bool {
	fs.doc(name, "")
	return fs.FlagSet.Bool(name, value, usage)
}

// BoolVar defines a bool flag stored in p.
func (fs *flagSet) BoolVar(p *bool, name string, value bool, usage string) {
	fs.doc(name, "")
	fs.FlagSet.BoolVar(p, name, value, usage)
}

// String defines a string flag whose value the usage line shows as
// placeholder.
func (fs *flagSet) String(name, value, placeholder, usage string) *string {
	fs.doc(name, placeholder)
	return fs.FlagSet.String(name, value, usage)
}

// StringVar defines a string flag stored in p.
func (fs *flagSet) StringVar(p *string, name, value, placeholder, usage string) {
	fs.doc(name, placeholder)
	fs.FlagSet.StringVar(p, name, value, usage)
}

// Int defines an int flag.
func (fs *flagSet) Int(name string, value int, placeholder, usage string) *int {
	fs.doc(name, placeholder)
	return fs.FlagSet.Int(name, value, usage)
}

// IntVar defines an int flag stored in p.
func (fs *flagSet) IntVar(p *int, name string, value int, placeholder, usage string) {
	fs.doc(name, placeholder)
	fs.FlagSet.IntVar(p, name, value, usage)
}

// Int64 defines an int64 flag.
func (fs *flagSet) Int64(name string, value int64, placeholder, usage string) *int64 {
	fs.doc(name, placeholder)
	return fs.FlagSet.Int64(name, value, usage)
}

// Uint64 defines a uint64 flag.
func (fs *flagSet) Uint64(name string, value uint64, placeholder, usage string) *uint64 {
	fs.doc(name, placeholder)
	return fs.FlagSet.Uint64(name, value, usage)
}

// Float64 defines a float64 flag.
func (fs *flagSet) Float64(name string, value float64, placeholder, usage string) *float64 {
	fs.doc(name, placeholder)
	return fs.FlagSet.Float64(name, value, usage)
}

// Duration defines a time.Duration flag.
func (fs *flagSet) Duration(name string, value time.Duration, placeholder, usage string) *time.Duration {
	fs.doc(name, placeholder)
	return fs.FlagSet.Duration(name, value, usage)
}

// Func defines a flag that calls fn with each value it is given.
func (fs *flagSet) Func(name, placeholder, usage string, fn func(string) error) {
	fs.doc(name, placeholder)
	fs.FlagSet.Func(name, usage, fn)
}
