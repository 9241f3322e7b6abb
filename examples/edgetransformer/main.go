// Command edgetransformer prints the HLO module JAX would lower Haiku's
// init of an Edge Transformer to, before optimisation: the parameter
// initialisation, the forward pass init runs to discover the parameters
// (dead under jit: the root returns only the parameters), and nested jits
// (jnp.einsum, jax.nn.softmax, jax.nn.relu, the PRNG) as calls.
//
//	go run ./examples/edgetransformer --nodes=N [--batch=B --hidden=D --heads=H --layers=L] > FILE.hlo
//	go run ./examples/edgetransformer --table=a100-80gb [--batch=B ...]
//
// The second form searches the largest node counts whose init fits the
// GPU without jit (hlomem's eager model, each release rule) and prints the
// table beside the jitted peaks.
//
// It models the case of dm-haiku issue #778 (an un-jitted init running out
// of memory at 414 nodes); ../../README.md's "eager vs jit" section says
// how the module is used.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hlomem/hlomem/gpu"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "edgetransformer:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("edgetransformer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.Int64Var(&cfg.nodes, "nodes", 0, "number of graph nodes n (required)")
	fs.Int64Var(&cfg.batch, "batch", 1, "batch size b")
	fs.Int64Var(&cfg.hidden, "hidden", 192, "hidden size d")
	fs.Int64Var(&cfg.heads, "heads", 12, "attention heads h (d must be a multiple)")
	fs.Int64Var(&cfg.layers, "layers", 1, "Edge Transformer layers")
	table := fs.String("table", "", "instead of a module, search the largest node counts that fit on this GPU (e.g. a100-80gb) op by op and print the eager-vs-jit table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *table != "" {
		dev, err := gpu.DeviceByName(*table)
		if err != nil {
			return err
		}
		if cfg.nodes == 0 {
			cfg.nodes = 1 // checked by generate; the search sets it
		}
		return writeTable(context.Background(), stdout, cfg, dev)
	}
	text, _, err := generate(cfg)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}
