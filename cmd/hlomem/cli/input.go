package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/hlomem/hlomem/hlo"
)

// Every command reads one input, FILE, or standard input when FILE is "-";
// messages then name it stdinName. Reading is bounded (hlo.MaxSourceSize,
// pack.MaxCSVSize), so /dev/zero or an endless pipe gives an error
// rather than exhausting memory.

// TuneGC, when set (the hlomem binary sets it; in-process tests do not),
// lets commands tune the garbage collector to their input (tuneGC).
var TuneGC bool

// bigModule is the instruction count from which tuneGC trades collector
// time for memory.
const bigModule = 250_000

// tuneGC runs the collector twice as often (GOGC=50) for inputs of
// bigModule instructions or more, unless GOGC or GOMEMLIMIT says
// otherwise: the heap then grows to 1.5 times what is live rather than
// twice. On the 10^6-instruction chain the peak drops from 1.9 to 1.4 GB
// for a few percent more time; smaller inputs keep Go's default, which is
// faster.
func tuneGC(instructions int) {
	if !TuneGC || instructions < bigModule || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(50)
}

// stdinName names standard input in messages, as in "<stdin>:3:7: ...".
const stdinName = "<stdin>"

// inputName is the name messages give to the input file.
func inputName(file string) string {
	if file == "-" {
		return stdinName
	}
	return file
}

// openInput opens file for reading, or returns standard input for "-". A
// directory is refused here, so that the message says so rather than
// reporting a failed read.
func openInput(e *env, file string) (io.ReadCloser, error) {
	if file == "-" {
		return io.NopCloser(e.stdin), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory, not a file", file)
	}
	return f, nil
}

// loadModules parses every module of file ("-" for standard input) and,
// if verify is set, verifies each; errors carry FILE:LINE:COL positions.
func loadModules(e *env, file string, verify bool) ([]*hlo.Module, error) {
	var mods []*hlo.Module
	var err error
	if file == "-" {
		mods, err = hlo.ParseReaderContext(e.ctx, stdinName, e.stdin)
	} else {
		mods, err = hlo.ParseFileContext(e.ctx, file)
	}
	if err != nil {
		return nil, err
	}
	n := 0
	for _, m := range mods {
		n += m.NumInstructions()
	}
	tuneGC(n)
	if verify {
		var all hlo.ErrorList
		for _, m := range mods {
			if err := hlo.VerifyContext(e.ctx, m); err != nil {
				if e.ctx.Err() != nil {
					return nil, err
				}
				all = append(all, err.(hlo.ErrorList)...)
			}
		}
		if err := all.Err(); err != nil {
			return nil, err
		}
	}
	return mods, nil
}
