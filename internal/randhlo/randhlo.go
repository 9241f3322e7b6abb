// Package randhlo generates random, valid HLO modules for property tests:
// element-wise chains, broadcasts, reductions, tuples, dynamic-update-slice
// fusions, calls, while loops, conditionals and control dependencies, over
// a handful of array shapes. The same seed always gives the same module.
package randhlo

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Options sizes a generated module; the zero value gives small modules.
type Options struct {
	// Instructions is the approximate number of entry instructions (default 20).
	Instructions int
	// Scheduled marks the module is_scheduled=true (its text order is a
	// valid schedule either way).
	Scheduled bool
}

type gen struct {
	rng   *rand.Rand
	comps []string // computations written before the entry
	n     int      // name counter
	depth int      // nesting of called computations being generated
}

var shapes = []string{"f32[16]", "f32[64]", "f32[8,8]", "f32[256]", "f32[4,32]"}

// Generate returns the text of a random module for seed.
func Generate(seed uint64, opts Options) string {
	if opts.Instructions <= 0 {
		opts.Instructions = 20
	}
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	entry := g.body("main", opts.Instructions, 2, true)
	var out strings.Builder
	out.WriteString("HloModule rand_" + fmt.Sprint(seed))
	if opts.Scheduled {
		out.WriteString(", is_scheduled=true")
	}
	out.WriteString("\n\n")
	out.WriteString(`%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

`)
	for _, c := range g.comps {
		out.WriteString(c)
		out.WriteString("\n")
	}
	out.WriteString(entry)
	return out.String()
}

func (g *gen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s.%d", prefix, g.n)
}

type val struct{ name, shape string }

// body writes a computation with nparams parameters of random shapes (or
// the given ones) and about n instructions, returning its text.
func (g *gen) body(cname string, n, nparams int, entry bool) string {
	var lines []string
	var vals []val
	for i := 0; i < nparams; i++ {
		s := shapes[g.rng.IntN(len(shapes))]
		v := val{g.name("p"), s}
		lines = append(lines, fmt.Sprintf("  %%%s = %s parameter(%d)", v.name, s, i))
		vals = append(vals, v)
	}
	return g.finish(cname, n, vals, lines, entry, "")
}

// finish adds n random instructions over vals and a root, and wraps the
// computation. rootShape, when set, forces the root's shape.
func (g *gen) finish(cname string, n int, vals []val, lines []string, entry bool, rootShape string) string {
	pick := func(shape string) (val, bool) {
		var cands []val
		for _, v := range vals {
			if v.shape == shape {
				cands = append(cands, v)
			}
		}
		if len(cands) == 0 {
			return val{}, false
		}
		// Prefer recent values so chains form.
		k := len(cands) - 1 - int(g.rng.ExpFloat64()*2)%len(cands)
		return cands[max(k, 0)], true
	}
	add := func(v val, line string) {
		lines = append(lines, line)
		vals = append(vals, v)
	}
	var last string
	for i := 0; i < n; i++ {
		base := vals[g.rng.IntN(len(vals))]
		if !strings.HasPrefix(base.shape, "f32[") || strings.HasPrefix(base.shape, "f32[]") {
			continue
		}
		switch r := g.rng.IntN(100); {
		case r < 35:
			other, _ := pick(base.shape)
			op := []string{"add", "multiply", "subtract", "maximum"}[g.rng.IntN(4)]
			v := val{g.name(op), base.shape}
			add(v, fmt.Sprintf("  %%%s = %s %s(%%%s, %%%s)", v.name, v.shape, op, base.name, other.name))
		case r < 55:
			op := []string{"negate", "exponential", "sqrt", "copy"}[g.rng.IntN(4)]
			v := val{g.name(op), base.shape}
			ctrl := ""
			if last != "" && g.rng.IntN(8) == 0 {
				ctrl = fmt.Sprintf(", control-predecessors={%%%s}", last)
			}
			add(v, fmt.Sprintf("  %%%s = %s %s(%%%s)%s", v.name, v.shape, op, base.name, ctrl))
		case r < 63:
			z := g.name("zero")
			lines = append(lines, fmt.Sprintf("  %%%s = f32[] constant(0)", z))
			dims := strings.Count(base.shape, ",") + 1
			all := make([]string, dims)
			for d := range all {
				all[d] = fmt.Sprint(d)
			}
			red := val{g.name("reduce"), "f32[]"}
			lines = append(lines, fmt.Sprintf("  %%%s = f32[] reduce(%%%s, %%%s), dimensions={%s}, to_apply=%%add", red.name, base.name, z, strings.Join(all, ",")))
			target := shapes[g.rng.IntN(len(shapes))]
			v := val{g.name("broadcast"), target}
			add(v, fmt.Sprintf("  %%%s = %s broadcast(%%%s), dimensions={}", v.name, target, red.name))
		case r < 70:
			other, _ := pick(shapes[g.rng.IntN(len(shapes))])
			if other.name == "" {
				continue
			}
			t := val{g.name("tuple"), fmt.Sprintf("(%s, %s)", base.shape, other.shape)}
			lines = append(lines, fmt.Sprintf("  %%%s = %s tuple(%%%s, %%%s)", t.name, t.shape, base.name, other.name))
			k := g.rng.IntN(2)
			s := []string{base.shape, other.shape}[k]
			v := val{g.name("gte"), s}
			add(v, fmt.Sprintf("  %%%s = %s get-tuple-element(%%%s), index=%d", v.name, s, t.name, k))
		case r < 77 && base.shape == "f32[256]":
			g.dusFusion(&lines, &vals, base)
		case g.depth >= 2:
			v := val{g.name("neg"), base.shape}
			add(v, fmt.Sprintf("  %%%s = %s negate(%%%s)", v.name, v.shape, base.name))
		case r < 84:
			g.depth++
			g.call(&lines, &vals, base)
			g.depth--
		case r < 91:
			g.depth++
			g.while(&lines, &vals, base)
			g.depth--
		default:
			g.depth++
			g.conditional(&lines, &vals, base)
			g.depth--
		}
		last = vals[len(vals)-1].name
	}
	root := vals[len(vals)-1]
	if rootShape != "" {
		if v, ok := pick(rootShape); ok {
			root = v
		} else {
			v := val{g.name("root"), rootShape}
			z := g.name("c")
			lines = append(lines, fmt.Sprintf("  %%%s = f32[] constant(1)", z))
			lines = append(lines, fmt.Sprintf("  %%%s = %s broadcast(%%%s), dimensions={}", v.name, rootShape, z))
			root = v
		}
	} else if entry && len(vals) > 2 {
		// A tuple root makes several outputs.
		a, b := vals[len(vals)-1], vals[g.rng.IntN(len(vals))]
		v := val{g.name("out"), fmt.Sprintf("(%s, %s)", a.shape, b.shape)}
		lines = append(lines, fmt.Sprintf("  %%%s = %s tuple(%%%s, %%%s)", v.name, v.shape, a.name, b.name))
		root = v
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "  %"+root.name+" = ") {
			lines[i] = "  ROOT " + strings.TrimPrefix(lines[i], "  ")
			break
		}
	}
	head := "%" + cname + " {\n"
	if entry {
		head = "ENTRY " + head
	}
	return head + strings.Join(lines, "\n") + "\n}\n"
}

func (g *gen) dusFusion(lines *[]string, vals *[]val, base val) {
	fname := g.name("fused_dus")
	g.comps = append(g.comps, fmt.Sprintf(`%%%s {
  %%b = f32[256] parameter(0)
  %%u = f32[16] parameter(1)
  %%i = s32[] parameter(2)
  ROOT %%d = f32[256] dynamic-update-slice(%%b, %%u, %%i)
}
`, fname))
	up, ok := pickShape(*vals, "f32[16]")
	if !ok {
		return
	}
	idx := g.name("idx")
	*lines = append(*lines, fmt.Sprintf("  %%%s = s32[] constant(%d)", idx, g.rng.IntN(200)))
	v := val{g.name("dus"), "f32[256]"}
	*lines = append(*lines, fmt.Sprintf("  %%%s = f32[256] fusion(%%%s, %%%s, %%%s), kind=kLoop, calls=%%%s", v.name, base.name, up.name, idx, fname))
	*vals = append(*vals, v)
}

func pickShape(vals []val, s string) (val, bool) {
	for i := len(vals) - 1; i >= 0; i-- {
		if vals[i].shape == s {
			return vals[i], true
		}
	}
	return val{}, false
}

func (g *gen) call(lines *[]string, vals *[]val, base val) {
	cname := g.name("callee")
	p := val{"x." + cname, base.shape}
	text := g.finish(cname, 3+g.rng.IntN(4), []val{p}, []string{fmt.Sprintf("  %%%s = %s parameter(0)", p.name, p.shape)}, false, base.shape)
	g.comps = append(g.comps, text)
	v := val{g.name("call"), base.shape}
	*lines = append(*lines, fmt.Sprintf("  %%%s = %s call(%%%s), to_apply=%%%s", v.name, v.shape, base.name, cname))
	*vals = append(*vals, v)
}

func (g *gen) while(lines *[]string, vals *[]val, base val) {
	state := fmt.Sprintf("(s32[], %s)", base.shape)
	cond, body := g.name("cond"), g.name("body")
	g.comps = append(g.comps, fmt.Sprintf(`%%%s {
  %%s.%s = %s parameter(0)
  %%i.%s = s32[] get-tuple-element(%%s.%s), index=0
  %%n.%s = s32[] constant(3)
  ROOT %%lt.%s = pred[] compare(%%i.%s, %%n.%s), direction=LT
}
`, cond, cond, state, cond, cond, cond, cond, cond, cond))
	s, i, x := "s."+body, "i."+body, "x."+body
	pre := []string{
		fmt.Sprintf("  %%%s = %s parameter(0)", s, state),
		fmt.Sprintf("  %%%s = s32[] get-tuple-element(%%%s), index=0", i, s),
		fmt.Sprintf("  %%%s = %s get-tuple-element(%%%s), index=1", x, base.shape, s),
		fmt.Sprintf("  %%one.%s = s32[] constant(1)", body),
		fmt.Sprintf("  %%ni.%s = s32[] add(%%%s, %%one.%s)", body, i, body),
	}
	inner := g.finish(body, 2+g.rng.IntN(4), []val{{x, base.shape}}, pre, false, base.shape)
	// Make the body's root the loop state: replace the ROOT line.
	ls := strings.Split(strings.TrimSuffix(inner, "}\n"), "\n")
	rootName := ""
	for k, l := range ls {
		if strings.HasPrefix(l, "  ROOT %") {
			rest := strings.TrimPrefix(l, "  ROOT ")
			rootName = strings.TrimPrefix(strings.SplitN(rest, " ", 2)[0], "%")
			ls[k] = "  " + rest
		}
	}
	ls = append(ls, fmt.Sprintf("  ROOT %%t.%s = %s tuple(%%ni.%s, %%%s)", body, state, body, rootName))
	g.comps = append(g.comps, strings.Join(ls, "\n")+"\n}\n")
	z, init, w, out := g.name("zero"), g.name("init"), g.name("while"), g.name("wout")
	*lines = append(*lines,
		fmt.Sprintf("  %%%s = s32[] constant(0)", z),
		fmt.Sprintf("  %%%s = %s tuple(%%%s, %%%s)", init, state, z, base.name),
		fmt.Sprintf("  %%%s = %s while(%%%s), condition=%%%s, body=%%%s", w, state, init, cond, body),
		fmt.Sprintf("  %%%s = %s get-tuple-element(%%%s), index=1", out, base.shape, w))
	*vals = append(*vals, val{out, base.shape})
}

func (g *gen) conditional(lines *[]string, vals *[]val, base val) {
	var branches []string
	for k := 0; k < 2; k++ {
		bn := g.name("branch")
		p := val{"x." + bn, base.shape}
		branches = append(branches, bn)
		g.comps = append(g.comps, g.finish(bn, 1+g.rng.IntN(3), []val{p}, []string{fmt.Sprintf("  %%%s = %s parameter(0)", p.name, p.shape)}, false, base.shape))
	}
	pr, v := g.name("pred"), val{g.name("cond"), base.shape}
	*lines = append(*lines,
		fmt.Sprintf("  %%%s = pred[] constant(%v)", pr, g.rng.IntN(2) == 0),
		fmt.Sprintf("  %%%s = %s conditional(%%%s, %%%s, %%%s), true_computation=%%%s, false_computation=%%%s", v.name, v.shape, pr, base.name, base.name, branches[0], branches[1]))
	*vals = append(*vals, v)
}
