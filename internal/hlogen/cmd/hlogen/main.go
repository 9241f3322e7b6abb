// Command hlogen writes one seeded module of package hlogen to standard
// output, for measuring the CLI at scale:
//
//	go run ./internal/hlogen/cmd/hlogen SHAPE N [SEED] > module.hlo
//
// SHAPE is one of hlogen.Shapes; N the instruction count (about); SEED
// defaults to 1.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/hlomem/hlomem/internal/hlogen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hlogen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: hlogen SHAPE N [SEED] (SHAPE one of %v)", hlogen.Shapes)
	}
	if !slices.Contains(hlogen.Shapes, args[0]) {
		return fmt.Errorf("unknown shape %q (want one of %v)", args[0], hlogen.Shapes)
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		return fmt.Errorf("N must be a positive count, got %q", args[1])
	}
	seed := int64(1)
	if len(args) == 3 {
		if seed, err = strconv.ParseInt(args[2], 10, 64); err != nil {
			return fmt.Errorf("SEED must be an integer, got %q", args[2])
		}
	}
	_, err = os.Stdout.WriteString(hlogen.Module(args[0], n, seed))
	return err
}
