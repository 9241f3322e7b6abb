// Command hlomem does XLA-style buffer assignment in the open: it parses HLO
// modules, computes live ranges, packs buffers and reports memory use.
// The implementation lives in package cli so that tests run it in-process.
package main

import (
	"os"

	"github.com/hlomem/hlomem/cmd/hlomem/cli"
)

func main() {
	cli.TuneGC = true
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
