package eval_test

import (
	"fmt"
	"log"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
)

// Evaluate a module's entry computation on arguments written in XLA's
// literal syntax: each row divided by its sum, with a reduce that
// calls a computation and a broadcast back.
func ExampleComputation() {
	m, err := hlo.ParseModule("example.hlo", `HloModule example

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2,3] parameter(0)
  zero = f32[] constant(0)
  sum = f32[2] reduce(x, zero), dimensions={1}, to_apply=add
  b = f32[2,3] broadcast(sum), dimensions={0}
  ROOT r = f32[2,3] divide(x, b)
}
`)
	if err != nil {
		log.Fatal(err)
	}
	args, err := eval.ParseArgs(m, "args", "f32[2,3] {{1, 2, 5}, {2, 2, 4}}")
	if err != nil {
		log.Fatal(err)
	}
	out, err := eval.Computation(m.Entry, args)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output:
	// f32[2,3] {{0.125, 0.25, 0.625}, {0.25, 0.25, 0.5}}
}

// An instruction the evaluator cannot compute is an error naming it, never
// a guess.
func ExampleInstruction() {
	m, err := hlo.ParseModule("example.hlo", `HloModule example

ENTRY main {
  x = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target="my_kernel"
}
`)
	if err != nil {
		log.Fatal(err)
	}
	x, err := eval.ParseLiteral(m.Entry.Params[0].Shape, "{1, 2, 3, 4}")
	if err != nil {
		log.Fatal(err)
	}
	_, err = eval.Instruction(m.Entry.Root, []eval.Literal{x})
	fmt.Println(err)
	// Output:
	// c: custom-call: cannot evaluate opcode custom-call
}
