// Command edgetransformer prints the HLO module JAX would lower Haiku's
// init of an Edge Transformer to, before optimisation: the parameter
// initialisation, the forward pass init runs to discover the parameters
// (dead under jit: the root returns only the parameters), and nested jits
// (jnp.einsum, jax.nn.softmax, jax.nn.relu, the PRNG) as calls.
//
//	go run ./examples/edgetransformer --nodes=N [--batch=B --hidden=D --heads=H --layers=L] > FILE.hlo
//
// It models the case of dm-haiku issue #778 (an un-jitted init running out
// of memory at 414 nodes); ../../README.md's "eager vs jit" section says
// how the module is used.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	text, _, err := generate(cfg)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}
