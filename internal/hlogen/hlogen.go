// Package hlogen generates seeded HLO modules of a given shape and about a
// given number of instructions, as inputs for benchmarks that measure how
// the passes grow from 10^3 to 10^6 instructions. The modules are not
// scheduled (no is_scheduled), so the schedulers have work; they parse
// with hlo.Parse and pass hlo.Verify. The same shape, size and seed always
// give the same text.
//
// The shapes (Shapes):
//
//   - "chain": one long element-wise chain over f32[1024], with a skip
//     connection now and then (a value read again a few to a few hundred
//     steps later), so that some values live long.
//   - "dag": a wide DAG in the entry: many independent branches fanned
//     out from the parameters, each a run of element-wise ops, dots,
//     reductions and broadcasts over square arrays of varied sizes, joined
//     now and then across branches (fan-in) and summed at the end. The
//     text interleaves the branches at random, so its order is a poor
//     schedule.
//   - "loops": while loops with large bodies, nested two deep inside
//     each top-level loop, each body a chain over its loop state.
//   - "calls": a deep call graph: computations calling computations
//     (call) in a random tree, tens of levels deep at 10^6, some leaf
//     computations called from two sites (so flattening clones them).
//
// The count is NumInstructions of the parsed module (every computation's
// instructions), within a few percent of n for n >= 1000.
package hlogen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Shapes lists the shapes Module accepts.
var Shapes = []string{"chain", "dag", "loops", "calls"}

// Module returns the text of a module of the given shape with about n
// instructions, drawn from seed. It panics on an unknown shape.
func Module(shape string, n int, seed int64) string {
	g := &gen{rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))}
	n = max(n, 50)
	var body string
	switch shape {
	case "chain":
		body = g.chain(n)
	case "dag":
		body = g.dag(n)
	case "loops":
		body = g.loops(n)
	case "calls":
		body = g.calls(n)
	default:
		panic(fmt.Sprintf("hlogen: unknown shape %q (want one of %s)", shape, strings.Join(Shapes, ", ")))
	}
	var out strings.Builder
	out.Grow(len(body) + 256)
	fmt.Fprintf(&out, "HloModule gen_%s_%d_%d\n\n", shape, n, seed)
	out.WriteString(addComp)
	out.WriteString(body)
	return out.String()
}

// addComp is the reductions' scalar computation (3 instructions).
const addComp = `%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

`

const addCompInstructions = 3

type gen struct {
	rng *rand.Rand
	id  int // name counter, module-wide
	// comps are the computations written so far (callees before callers).
	comps strings.Builder
}

// comp is a computation being written.
type comp struct {
	g     *gen
	lines strings.Builder
	count int // instructions written
}

func (g *gen) newComp() *comp { return &comp{g: g} }

// add writes `%name = shape text` and returns the name.
func (c *comp) add(prefix, shape, format string, args ...any) string {
	return c.line("  ", prefix, shape, format, args...)
}

// root writes the root instruction.
func (c *comp) root(prefix, shape, format string, args ...any) string {
	return c.line("  ROOT ", prefix, shape, format, args...)
}

// line writes one instruction after lead and returns its name.
func (c *comp) line(lead, prefix, shape, format string, args ...any) string {
	c.g.id++
	name := fmt.Sprintf("%s.%d", prefix, c.g.id)
	fmt.Fprintf(&c.lines, "%s%%%s = %s ", lead, name, shape)
	fmt.Fprintf(&c.lines, format, args...)
	c.lines.WriteByte('\n')
	c.count++
	return name
}

// text wraps the computation as head (`%name` or `ENTRY %name`).
func (c *comp) text(head string) string {
	return head + " {\n" + c.lines.String() + "}\n\n"
}

var unary = []string{"negate", "exponential", "tanh", "sqrt", "abs", "sine", "log", "cosine"}
var binary = []string{"add", "multiply", "subtract", "maximum", "minimum"}

func (g *gen) unary() string  { return unary[g.rng.IntN(len(unary))] }
func (g *gen) binary() string { return binary[g.rng.IntN(len(binary))] }

// chainOps writes k element-wise instructions over x (of shape s) as a
// chain, each reading the one before and now and then (skip) a value of
// the chain from a few to a few hundred steps back; it returns the last.
func (c *comp) chainOps(x, s string, k int, skip int) string {
	hist := []string{x}
	for i := 0; i < k; i++ {
		if skip > 0 && c.g.rng.IntN(skip) == 0 && len(hist) > 1 {
			back := 1 + int(c.g.rng.ExpFloat64()*32)%len(hist)
			y := hist[len(hist)-back]
			x = c.add(c.g.binary(), s, "%s(%%%s, %%%s)", binary[c.g.rng.IntN(len(binary))], x, y)
		} else {
			op := c.g.unary()
			x = c.add(op, s, "%s(%%%s)", op, x)
		}
		hist = append(hist, x)
		if len(hist) > 512 {
			hist = hist[256:]
		}
	}
	return x
}

func (g *gen) chain(n int) string {
	const s = "f32[1024]"
	c := g.newComp()
	p := c.add("p", s, "parameter(0)")
	q := c.add("q", s, "parameter(1)")
	x := c.add("add", s, "add(%%%s, %%%s)", p, q)
	x = c.chainOps(x, s, n-addCompInstructions-c.count-1, 6)
	c.root("out", s, "negate(%%%s)", x)
	return c.text("ENTRY %main")
}

// sq is a square f32 array of side k.
func sq(k int) string { return fmt.Sprintf("f32[%d,%d]", k, k) }

func (g *gen) dag(n int) string {
	sides := []int{8, 16, 32, 64, 128}
	c := g.newComp()
	// Parameters: an input and a weight per side.
	in := map[int]string{}
	w := map[int]string{}
	for i, k := range sides {
		in[k] = c.add("in", sq(k), "parameter(%d)", 2*i)
		w[k] = c.add("w", sq(k), "parameter(%d)", 2*i+1)
	}
	zero := c.add("zero", "f32[]", "constant(0)")
	width := min(max(8, n/200), 4096)
	type branch struct {
		x    string
		side int
	}
	br := make([]branch, width)
	for i := range br {
		// Fan-out: each branch starts from a parameter.
		k := sides[g.rng.IntN(len(sides))]
		br[i] = branch{in[k], k}
	}
	bySide := map[int][]int{} // branches by current side, refreshed now and then
	refresh := func() {
		clear(bySide)
		for i, b := range br {
			bySide[b.side] = append(bySide[b.side], i)
		}
	}
	refresh()
	// The end: each branch reduced to a scalar (2 instructions with its
	// zero shared) and the scalars summed (width-1), then the root.
	tail := 2*width + 1
	budget := n - addCompInstructions - tail
	for step := 0; c.count < budget; step++ {
		if step%64 == 0 {
			refresh()
		}
		i := g.rng.IntN(width)
		b := &br[i]
		s := sq(b.side)
		switch r := g.rng.IntN(100); {
		case r < 45:
			op := g.unary()
			b.x = c.add(op, s, "%s(%%%s)", op, b.x)
		case r < 65:
			// Fan-in: combine with another branch of the same side.
			j := i
			if same := bySide[b.side]; len(same) > 0 {
				j = same[g.rng.IntN(len(same))]
			}
			if br[j].side != b.side {
				j = i
			}
			op := g.binary()
			b.x = c.add(op, s, "%s(%%%s, %%%s)", op, b.x, br[j].x)
		case r < 77:
			b.x = c.add("dot", s, "dot(%%%s, %%%s), lhs_contracting_dims={1}, rhs_contracting_dims={0}", b.x, w[b.side])
		case r < 87:
			// Reduce a row and broadcast it back.
			red := c.add("reduce", fmt.Sprintf("f32[%d]", b.side), "reduce(%%%s, %%%s), dimensions={1}, to_apply=%%add", b.x, zero)
			b.x = c.add("broadcast", s, "broadcast(%%%s), dimensions={0}", red)
		default:
			// Change size: reduce to a scalar, broadcast to another side,
			// scaled by that side's input.
			red := c.add("reduce", "f32[]", "reduce(%%%s, %%%s), dimensions={0,1}, to_apply=%%add", b.x, zero)
			k := sides[g.rng.IntN(len(sides))]
			bc := c.add("broadcast", sq(k), "broadcast(%%%s), dimensions={}", red)
			b.side = k
			b.x = c.add("multiply", sq(k), "multiply(%%%s, %%%s)", bc, in[k])
		}
	}
	sum := ""
	for _, b := range br {
		red := c.add("sum", "f32[]", "reduce(%%%s, %%%s), dimensions={0,1}, to_apply=%%add", b.x, zero)
		if sum == "" {
			sum = red
		} else {
			sum = c.add("add", "f32[]", "add(%%%s, %%%s)", sum, red)
		}
	}
	c.root("out", "f32[]", "negate(%%%s)", sum)
	return g.comps.String() + c.text("ENTRY %main")
}

// loopState is the loops' state: a counter and an array.
const loopArray = "f32[64,64]"
const loopState = "(s32[], " + loopArray + ")"

func (g *gen) loops(n int) string {
	// Top-level loop nests of about per instructions each, in sequence in
	// the entry, with a few element-wise steps between them.
	per := min(n, 20000)
	nests := max(1, (n+per/2)/per)
	per = (n - addCompInstructions) / nests
	c := g.newComp()
	x := c.add("p", loopArray, "parameter(0)")
	for i := 0; i < nests; i++ {
		x = c.chainOps(x, loopArray, 3, 0)
		// 4 instructions here, the rest in the loop's computations.
		x = g.while(c, x, per-7, 0)
	}
	c.root("out", loopArray, "negate(%%%s)", x)
	return g.comps.String() + c.text("ENTRY %main")
}

// while writes, in c, a while loop over x whose condition and body have
// about budget instructions together (the body holding a nested loop when
// depth allows), and returns the loop's array out.
func (g *gen) while(c *comp, x string, budget, depth int) string {
	id := g.id
	g.id++
	cond := fmt.Sprintf("cond.%d", id)
	body := fmt.Sprintf("body.%d", id)
	cc := g.newComp()
	s := cc.add("s", loopState, "parameter(0)")
	i := cc.add("i", "s32[]", "get-tuple-element(%%%s), index=0", s)
	trips := cc.add("n", "s32[]", "constant(%d)", 2+g.rng.IntN(3))
	cc.root("lt", "pred[]", "compare(%%%s, %%%s), direction=LT", i, trips)
	bc := g.newComp()
	s = bc.add("s", loopState, "parameter(0)")
	i = bc.add("i", "s32[]", "get-tuple-element(%%%s), index=0", s)
	y := bc.add("x", loopArray, "get-tuple-element(%%%s), index=1", s)
	one := bc.add("one", "s32[]", "constant(1)")
	ni := bc.add("ni", "s32[]", "add(%%%s, %%%s)", i, one)
	own := budget - cc.count - bc.count - 1
	if depth < 2 && own > 60 {
		// Half of the body in a nested loop, between two chains.
		inner := own / 2
		own -= inner
		y = bc.chainOps(y, loopArray, own/2, 5)
		y = g.while(bc, y, inner-4, depth+1)
		own -= own / 2
	}
	y = bc.chainOps(y, loopArray, max(own, 1), 5)
	bc.root("t", loopState, "tuple(%%%s, %%%s)", ni, y)
	g.comps.WriteString(cc.text("%" + cond))
	g.comps.WriteString(bc.text("%" + body))
	z := c.add("zero", "s32[]", "constant(0)")
	init := c.add("init", loopState, "tuple(%%%s, %%%s)", z, x)
	w := c.add("while", loopState, "while(%%%s), condition=%%%s, body=%%%s", init, cond, body)
	return c.add("wout", loopArray, "get-tuple-element(%%%s), index=1", w)
}

func (g *gen) calls(n int) string {
	sides := []int{16, 32, 64}
	c := g.newComp()
	k := sides[g.rng.IntN(len(sides))]
	x := c.add("p", sq(k), "parameter(0)")
	// Leaves that may be called again from a second site, by side.
	leaves := map[int][]string{}
	x = g.callee(c, x, k, n-addCompInstructions-3, 0, leaves)
	c.root("out", sq(k), "negate(%%%s)", x)
	return g.comps.String() + c.text("ENTRY %main")
}

// callee writes in c a call of a new computation over x (of side k)
// whose subtree has about budget instructions, and returns the call's
// result.
func (g *gen) callee(c *comp, x string, k, budget, depth int, leaves map[int][]string) string {
	s := sq(k)
	name := fmt.Sprintf("f.%d", g.id)
	g.id++
	f := g.newComp()
	y := f.add("x", s, "parameter(0)")
	x0 := y
	budget -= 2 // the parameter and the root
	own := min(budget, 8+g.rng.IntN(40))
	rest := budget - own
	// Split the rest among 1 to 3 children, unevenly, so that the tree is
	// deep on some paths.
	var parts []int
	if rest > 4 {
		nc := 1 + g.rng.IntN(3)
		ws := make([]float64, nc)
		var tot float64
		for i := range ws {
			ws[i] = g.rng.ExpFloat64()
			tot += ws[i]
		}
		left := rest
		for i := range ws {
			p := int(float64(rest) * ws[i] / tot)
			if i == nc-1 {
				p = left
			}
			left -= p
			parts = append(parts, p)
		}
	} else {
		own += rest
	}
	chunk := own / (len(parts) + 1)
	for _, p := range parts {
		y = f.chainOps(y, s, chunk, 4)
		own -= chunk
		if p < 5 {
			y = f.chainOps(y, s, p, 4)
			continue
		}
		// A child (its call is one instruction of p).
		y = g.callee(f, y, k, p-1, depth+1, leaves)
	}
	y = f.chainOps(y, s, max(own-1, 0), 4)
	reused := false
	if rs := leaves[k]; len(parts) == 0 && len(rs) > 0 && g.rng.IntN(4) == 0 {
		// Call an earlier leaf again: flattening clones it. Its
		// instructions are counted once in the text.
		y = f.add("call", s, "call(%%%s), to_apply=%%%s", y, rs[g.rng.IntN(len(rs))])
		reused = true
	} else {
		y = f.add("multiply", s, "multiply(%%%s, %%%s)", y, x0)
	}
	f.root("r", s, "add(%%%s, %%%s)", y, x0)
	g.comps.WriteString(f.text("%" + name))
	if len(parts) == 0 && !reused && f.count < 24 {
		leaves[k] = append(leaves[k], name)
	}
	return c.add("call", s, "call(%%%s), to_apply=%%%s", x, name)
}
