package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// The Edge Transformer's init as JAX traces it (see ../../../shared/reference
// and the README's "eager vs jit" section): Haiku's init runs the forward
// pass to discover the parameters, creating each one (split the key, draw
// it) the first time its module is called, and returns only the
// parameters. Every forward op below is therefore dead under jit.
//
// Metadata is illustrative: op_name follows JAX's scheme
// (jit(init)/<haiku module path>/<op>), with one extra path segment naming
// the Python variable an einsum or softmax is bound to (scores, att, val,
// x) the way a jax.named_scope would; source_file/source_line point at
// plausible positions in the model's Python (edge_transformer.py, one line
// per statement, the same line for every layer) and Haiku's own files. No
// real file is behind them.

// config is the model's size. extraAtt is test-only: the root then also
// returns each layer's att after the parameters.
type config struct {
	batch, nodes, hidden, heads, layers int64
	extraAtt                            bool
}

func (c config) check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"batch", c.batch}, {"nodes", c.nodes}, {"hidden", c.hidden}, {"heads", c.heads}, {"layers", c.layers}} {
		if f.v < 1 {
			return fmt.Errorf("--%s=%d: must be at least 1", f.name, f.v)
		}
	}
	if c.hidden%c.heads != 0 {
		return fmt.Errorf("--hidden=%d is not a multiple of --heads=%d", c.hidden, c.heads)
	}
	// Keep every shape's element count within int64 (val has b·n³·d).
	if float64(c.batch)*math.Pow(float64(c.nodes), 3)*float64(c.hidden) > 1<<60 {
		return errors.New("the model's shapes overflow: val's b·n³·d elements exceed 2^60")
	}
	return nil
}

// paramKind says how a parameter is initialised.
type paramKind int

const (
	kindWeight paramKind = iota // truncated normal, stddev 1/sqrt(fanIn)
	kindZeros                   // biases and layer-norm offsets
	kindOnes                    // layer-norm scales
)

// param is one of init's outputs: params[module][name].
type param struct {
	module, name string
	kind         paramKind
	fanIn        int64
	v            value
}

// gen holds the entry computation under construction.
type gen struct {
	cfg    config
	m      *module
	e      *comp
	key    value // Haiku's PRNGSequence key
	params []param
	extra  []value
}

const modelFile = "edge_transformer.py"

// at sets the metadata of the entry ops emitted next.
func (g *gen) at(scope, op, file string, line int) {
	g.e.at = site{opName: "jit(init)/" + scope + "/" + op, file: file, line: line}
}

// generate returns the HLO text of the Edge Transformer's init.
func generate(cfg config) (string, []param, error) {
	if err := cfg.check(); err != nil {
		return "", nil, err
	}
	g := &gen{cfg: cfg, m: newModule("jit_init")}
	g.e = g.m.newComp("main")
	b, n, d := cfg.batch, cfg.nodes, cfg.hidden
	// init(rng, x) with x = (node_fts, edge_fts): JAX flattens the arguments
	// into the key and the two arrays, in that order.
	g.key = g.e.param(u32(2), "rng")
	nodes := g.e.param(f32(b, n, d), "node_fts")
	edges := g.e.param(f32(b, n, n, d), "edge_fts")
	x := g.pairFeatures(nodes, edges)
	for l := int64(0); l < cfg.layers; l++ {
		x = g.layer(x, fmt.Sprintf("edge_transformer/~/layer_%d", l))
	}
	// Haiku returns params as a dict of dicts; JAX flattens a dict in sorted
	// key order, so the root lists the parameters sorted by (module, name).
	sort.SliceStable(g.params, func(i, j int) bool {
		if g.params[i].module != g.params[j].module {
			return g.params[i].module < g.params[j].module
		}
		return g.params[i].name < g.params[j].name
	})
	outs := make([]value, 0, len(g.params)+len(g.extra))
	for _, p := range g.params {
		outs = append(outs, p.v)
	}
	outs = append(outs, g.extra...)
	g.e.at = site{}
	g.e.finish(g.e.tuple(outs), true)
	return g.m.text(), g.params, nil
}

// pairFeatures: the processor's pair features, linear(concat(x_i, x_j)) +
// edge_fts, with x_i tiled along the second node axis.
func (g *gen) pairFeatures(nodes, edges value) value {
	b, n, d := g.cfg.batch, g.cfg.nodes, g.cfg.hidden
	const scope = "edge_transformer"
	g.at(scope, "tile", modelFile, 41)
	left := g.e.broadcast(nodes, f32(b, n, n, d), []int64{0, 1, 3})
	g.at(scope, "transpose", modelFile, 42)
	right := g.e.transpose(left, []int64{0, 2, 1, 3})
	g.at(scope, "concatenate", modelFile, 43)
	pair := g.e.op(f32(b, n, n, 2*d), "concatenate", "concatenate", []value{left, right}, "dimensions={3}")
	h := g.linear(pair, scope+"/~/linear", d, true, 44)
	g.at(scope, "add", modelFile, 45)
	return g.e.binary("add", h, edges)
}

// layer is one Edge Transformer layer (post-norm): attention, residual,
// layer norm, feed-forward, residual, layer norm.
func (g *gen) layer(x value, scope string) value {
	d := g.cfg.hidden
	att := g.edgeAttention(x, scope+"/~/edge_attention")
	g.at(scope, "add", modelFile, 102)
	x = g.layerNorm(g.e.binary("add", x, att), scope+"/~/layer_norm")
	h := g.linear(x, scope+"/~/ffn/~/linear", 2*d, true, 103)
	h = g.relu(h, scope+"/~/ffn", 104)
	h = g.linear(h, scope+"/~/ffn/~/linear_1", d, true, 105)
	g.at(scope, "add", modelFile, 106)
	return g.layerNorm(g.e.binary("add", x, h), scope+"/~/layer_norm_1")
}

// edgeAttention is EdgeAttention.__call__ on edge features x of (b, n, n, d).
func (g *gen) edgeAttention(x value, scope string) value {
	b, n, d, h := g.cfg.batch, g.cfg.nodes, g.cfg.hidden, g.cfg.heads
	k := d / h
	heads := f32(b, n, n, h, k)
	proj := func(name string, line int) value {
		y := g.linear(x, scope+"/~/"+name, d, false, line)
		g.at(scope, "reshape", modelFile, line)
		return g.e.reshape(y, heads)
	}
	leftK := proj("left_k", 70)
	rightK := proj("right_k", 71)
	leftV := proj("left_v", 72)
	rightV := proj("right_v", 73)

	// scores = einsum("bxahd,bayhd->bxayh", left_k, right_k) / sqrt(k)
	g.at(scope+"/scores", "jit(_einsum)", modelFile, 75)
	scores := g.e.call(g.einsumScores(), f32(b, n, n, n, h), []value{leftK, rightK})
	g.at(scope, "div", modelFile, 75)
	scores = g.e.binary("divide", scores, g.e.splat(scores.sh, fmtF(math.Sqrt(float64(k)))))
	// att = softmax(scores, axis=2)
	g.at(scope+"/att", "jit(softmax)", modelFile, 76)
	att := g.e.call(g.softmax(scores.sh), scores.sh, []value{scores})
	if g.cfg.extraAtt {
		g.extra = append(g.extra, att)
	}
	// val = einsum("bxahd,bayhd->bxayhd", left_v, right_v): no contraction.
	g.at(scope+"/val", "jit(_einsum)", modelFile, 77)
	val := g.e.call(g.einsumVal(), f32(b, n, n, n, h, k), []value{leftV, rightV})
	// x = einsum("bxayh,bxayhd->bxyhd", att, val)
	g.at(scope+"/x", "jit(_einsum)", modelFile, 78)
	out := g.e.call(g.einsumOut(), heads, []value{att, val})
	g.at(scope, "reshape", modelFile, 79)
	out = g.e.reshape(out, f32(b, n, n, d))
	return g.linear(out, scope+"/~/output", d, false, 80)
}

// einsumScores emits %_einsum for "bxahd,bayhd->bxayh": dot_general with
// batch dims (b, a, h) contracting d, then a transpose to the result order.
func (g *gen) einsumScores() string {
	b, n, h := g.cfg.batch, g.cfg.nodes, g.cfg.heads
	k := g.cfg.hidden / h
	return g.m.cached("einsum/scores", func() string {
		c := g.m.newComp("_einsum")
		l := c.param(f32(b, n, n, h, k), "Arg_0")
		r := c.param(f32(b, n, n, h, k), "Arg_1")
		c.at = site{opName: "dot_general"}
		// lhs bxahd: batch b0 a2 h3, contract d4; rhs bayhd: batch b0 a1 h3, contract d4.
		dg := c.dot(l, r, f32(b, n, h, n, n), []int64{0, 2, 3}, []int64{4}, []int64{0, 1, 3}, []int64{4})
		c.at = site{opName: "transpose"}
		// (b, a, h, x, y) -> (b, x, a, y, h)
		return c.finish(c.transpose(dg, []int64{0, 3, 1, 4, 2}), false)
	})
}

// einsumVal emits %_einsum for "bxahd,bayhd->bxayhd": nothing is
// contracted, so it is a product of the two operands broadcast to the
// result, b·n³·d elements.
func (g *gen) einsumVal() string {
	b, n, h := g.cfg.batch, g.cfg.nodes, g.cfg.heads
	k := g.cfg.hidden / h
	return g.m.cached("einsum/val", func() string {
		c := g.m.newComp("_einsum")
		l := c.param(f32(b, n, n, h, k), "Arg_0")
		r := c.param(f32(b, n, n, h, k), "Arg_1")
		res := f32(b, n, n, n, h, k)
		c.at = site{opName: "broadcast_in_dim"}
		lb := c.broadcast(l, res, []int64{0, 1, 2, 4, 5}) // b x a . h d
		rb := c.broadcast(r, res, []int64{0, 2, 3, 4, 5}) // b . a y h d
		c.at = site{opName: "mul"}
		return c.finish(c.binary("multiply", lb, rb), false)
	})
}

// einsumOut emits %_einsum for "bxayh,bxayhd->bxyhd": dot_general with batch
// dims (b, x, y, h) contracting a; the result is already in order.
func (g *gen) einsumOut() string {
	b, n, h := g.cfg.batch, g.cfg.nodes, g.cfg.heads
	k := g.cfg.hidden / h
	return g.m.cached("einsum/out", func() string {
		c := g.m.newComp("_einsum")
		att := c.param(f32(b, n, n, n, h), "Arg_0")
		val := c.param(f32(b, n, n, n, h, k), "Arg_1")
		c.at = site{opName: "dot_general"}
		batch := []int64{0, 1, 3, 4}
		return c.finish(c.dot(att, val, f32(b, n, n, h, k), batch, []int64{2}, batch, []int64{2}), false)
	})
}

// region emits the scalar reducer %region_add or %region_max once.
func (g *gen) region(op string) string {
	return g.m.cached("region/"+op, func() string {
		c := g.m.newComp("region_" + map[string]string{"add": "add", "maximum": "max"}[op])
		a := c.param(f32(), "Arg_0")
		bb := c.param(f32(), "Arg_1")
		return c.finish(c.binary(op, a, bb), false)
	})
}

// softmax emits %_softmax over axis 2, as jax.nn.softmax lowers it:
// exp(x - max) / sum.
func (g *gen) softmax(sh shape) string {
	return g.m.cached("softmax/"+sh.String(), func() string {
		regMax, regAdd := g.region("maximum"), g.region("add")
		c := g.m.newComp("_softmax")
		x := c.param(sh, "Arg_0")
		keep := []int64{0, 1, 3, 4}
		c.at = site{opName: "reduce_max"}
		mx := c.reduce(x, c.constant("f32", "-inf"), []int64{2}, regMax)
		c.at = site{opName: "sub"}
		ex := c.binary("subtract", x, c.broadcast(mx, sh, keep))
		c.at = site{opName: "exp"}
		ex = c.unary("exponential", ex)
		c.at = site{opName: "reduce_sum"}
		sum := c.reduce(ex, c.constant("f32", "0"), []int64{2}, regAdd)
		c.at = site{opName: "div"}
		return c.finish(c.binary("divide", ex, c.broadcast(sum, sh, keep)), false)
	})
}

// relu calls jax.nn.relu, a nested jit: max(x, 0).
func (g *gen) relu(x value, scope string, line int) value {
	name := g.m.cached("relu/"+x.sh.String(), func() string {
		c := g.m.newComp("relu")
		a := c.param(x.sh, "Arg_0")
		c.at = site{opName: "max"}
		return c.finish(c.binary("maximum", a, c.splat(x.sh, "0")), false)
	})
	g.at(scope, "jit(relu)", modelFile, line)
	return g.e.call(name, x.sh, []value{x})
}

// linear is hk.Linear(out, with_bias): y = x·w (+ b), w drawn from
// TruncatedNormal(1/sqrt(fan_in)), b zeros.
func (g *gen) linear(x value, module string, out int64, bias bool, line int) value {
	rank := len(x.sh.dims)
	in := x.sh.dims[rank-1]
	w := g.weight(module, in, out)
	dims := append(append([]int64(nil), x.sh.dims[:rank-1]...), out)
	g.at(module, "dot_general", "haiku/_src/basic.py", 181)
	y := g.e.dot(x, w, f32(dims...), nil, []int64{int64(rank - 1)}, nil, []int64{0})
	if !bias {
		return y
	}
	bv := g.constParam(module, "b", f32(out), kindZeros)
	g.at(module, "add", "haiku/_src/basic.py", 187)
	return g.e.binary("add", y, g.e.broadcast(bv, y.sh, []int64{int64(rank - 1)}))
}

// weight creates params[module]["w"] of (in, out).
func (g *gen) weight(module string, in, out int64) value {
	sh := f32(in, out)
	g.at(module, "split", "haiku/_src/base.py", 1064)
	key, sub := nextKey(g.e, g.key)
	g.key = key
	g.at(module, "jit(_truncated_normal)", "haiku/_src/initializers.py", 126)
	u := g.e.call(truncatedNormal(g.m, sh), sh, []value{sub})
	std := 1 / math.Sqrt(float64(in)) / truncStdCorrection
	g.at(module, "mul", "haiku/_src/initializers.py", 127)
	w := g.e.binary("multiply", u, g.e.splat(sh, fmtF(std)))
	g.at(module, "add", "haiku/_src/initializers.py", 127)
	w = g.e.binary("add", w, g.e.splat(sh, "0"))
	g.params = append(g.params, param{module: module, name: "w", kind: kindWeight, fanIn: in, v: w})
	return w
}

// constParam creates a parameter of zeros or ones (jnp.zeros / jnp.ones).
func (g *gen) constParam(module, name string, sh shape, kind paramKind) value {
	lit := "0"
	if kind == kindOnes {
		lit = "1"
	}
	g.at(module, "broadcast_in_dim", "haiku/_src/base.py", 690)
	v := g.e.splat(sh, lit)
	g.params = append(g.params, param{module: module, name: name, kind: kind, v: v})
	return v
}

// layerNorm is hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)
// on (b, n, n, d): (x - mean) · scale · rsqrt(var + 1e-5) + offset.
func (g *gen) layerNorm(x value, module string) value {
	b, n, d := g.cfg.batch, g.cfg.nodes, g.cfg.hidden
	scale := g.constParam(module, "scale", f32(d), kindOnes)
	offset := g.constParam(module, "offset", f32(d), kindZeros)
	const file = "haiku/_src/layer_norm.py"
	rows := f32(b, n, n)
	mean := func(v value) value {
		g.at(module, "reduce_sum", file, 175)
		s := g.e.reduce(v, g.e.constant("f32", "0"), []int64{3}, g.region("add"))
		g.at(module, "div", file, 175)
		return g.e.binary("divide", s, g.e.splat(rows, fmtF(float64(d))))
	}
	back := func(v value) value { return g.e.broadcast(v, x.sh, []int64{0, 1, 2}) }
	mu := mean(x)
	g.at(module, "sub", file, 176)
	centered := g.e.binary("subtract", x, back(mu))
	g.at(module, "integer_pow", file, 176)
	variance := mean(g.e.binary("multiply", centered, centered))
	g.at(module, "rsqrt", file, 186)
	inv := g.e.unary("rsqrt", g.e.binary("add", variance, g.e.splat(rows, "1e-05")))
	g.at(module, "mul", file, 186)
	inv = g.e.binary("multiply", back(inv), g.e.broadcast(scale, x.sh, []int64{3}))
	g.at(module, "mul", file, 190)
	y := g.e.binary("multiply", inv, centered)
	g.at(module, "add", file, 190)
	return g.e.binary("add", y, g.e.broadcast(offset, x.sh, []int64{3}))
}
