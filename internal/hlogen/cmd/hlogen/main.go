// Command hlogen writes one seeded module of package hlogen to standard
// output, for measuring the CLI at scale:
//
//	go run ./internal/hlogen/cmd/hlogen [-scheduled] SHAPE N [SEED] > module.hlo
//
// SHAPE is one of hlogen.Shapes; N the instruction count (about); SEED
// defaults to 1. With -scheduled the module says is_scheduled=true: its
// text order, which defines every value before its uses, is then its
// schedule, and hlomem plans it without running a scheduler.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/internal/hlogen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hlogen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	scheduled := len(args) > 0 && args[0] == "-scheduled"
	if scheduled {
		args = args[1:]
	}
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: hlogen [-scheduled] SHAPE N [SEED] (SHAPE one of %v)", hlogen.Shapes)
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
	text := hlogen.Module(args[0], n, seed)
	if scheduled {
		text = markScheduled(text)
	}
	_, err = os.Stdout.WriteString(text)
	return err
}

// markScheduled adds is_scheduled=true to the module's header line.
func markScheduled(text string) string {
	head, rest, _ := strings.Cut(text, "\n")
	name, attrs, hasAttrs := strings.Cut(head, ",")
	head = name + ", is_scheduled=true"
	if hasAttrs {
		head += "," + attrs
	}
	return head + "\n" + rest
}
