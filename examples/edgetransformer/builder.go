package main

import (
	"fmt"
	"strconv"
	"strings"
)

// A small writer of HLO text: computations of instructions named and
// annotated the way JAX's lowering names them (op.N with one counter for the
// module, metadata={op_name=... source_file=... source_line=...}). It knows
// shapes only as far as it prints them; the generated module is checked by
// the project's parser and verifier in the tests, not here.

// shape is an array shape (elem and dims) or a tuple of shapes (tuple != nil).
type shape struct {
	elem  string
	dims  []int64
	tuple []shape
}

func arr(elem string, dims ...int64) shape { return shape{elem: elem, dims: dims} }

func f32(dims ...int64) shape { return arr("f32", dims...) }
func u32(dims ...int64) shape { return arr("u32", dims...) }

func (s shape) String() string {
	if s.tuple != nil {
		parts := make([]string, len(s.tuple))
		for i, t := range s.tuple {
			parts[i] = t.String()
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return s.elem + "[" + ints(s.dims) + "]"
}

// with returns s with element type elem.
func (s shape) with(elem string) shape { return arr(elem, s.dims...) }

// elements is the number of elements of an array shape.
func (s shape) elements() int64 {
	n := int64(1)
	for _, d := range s.dims {
		n *= d
	}
	return n
}

func ints(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ",")
}

// value is an instruction's result.
type value struct {
	name string
	sh   shape
}

// site is where an op comes from: its op_name and an illustrative source
// position (see model.go).
type site struct {
	opName string
	file   string
	line   int
}

type line struct {
	v    value
	text string // everything after "= shape "
	meta site
}

// module collects finished computations in definition order (callees
// before callers) and hands out unique instruction names.
type module struct {
	name   string
	comps  []string
	cache  map[string]string // computation key -> its name, to reuse a lowered callee
	serial int
}

func newModule(name string) *module {
	return &module{name: name, cache: map[string]string{}}
}

func (m *module) uniq(base string) string {
	m.serial++
	return base + "." + strconv.Itoa(m.serial)
}

// comp is a computation under construction.
type comp struct {
	m      *module
	name   string
	params []value
	lines  []line
	at     site // metadata of the ops emitted next
}

func (m *module) newComp(base string) *comp {
	return &comp{m: m, name: m.uniq(base)}
}

// param adds parameter i (in order).
func (c *comp) param(sh shape, base string) value {
	v := value{name: c.m.uniq(base), sh: sh}
	c.lines = append(c.lines, line{v: v, text: fmt.Sprintf("parameter(%d)", len(c.params))})
	c.params = append(c.params, v)
	return v
}

// op emits an instruction named after base: opcode(operands), attrs.
func (c *comp) op(sh shape, base, opcode string, operands []value, attrs string) value {
	names := make([]string, len(operands))
	for i, o := range operands {
		names[i] = "%" + o.name
	}
	text := opcode + "(" + strings.Join(names, ", ") + ")"
	if attrs != "" {
		text += ", " + attrs
	}
	v := value{name: c.m.uniq(base), sh: sh}
	c.lines = append(c.lines, line{v: v, text: text, meta: c.at})
	return v
}

// Shorthands for the opcodes the generator uses.

func (c *comp) binary(opcode string, a, b value) value {
	return c.op(a.sh, opcode, opcode, []value{a, b}, "")
}

func (c *comp) unary(opcode string, a value) value { return c.op(a.sh, opcode, opcode, []value{a}, "") }

func (c *comp) constant(elem, lit string) value {
	v := value{name: c.m.uniq("constant"), sh: arr(elem)}
	c.lines = append(c.lines, line{v: v, text: "constant(" + lit + ")"})
	return v
}

// splat is a scalar constant broadcast to sh (JAX's full-like).
func (c *comp) splat(sh shape, lit string) value {
	k := c.constant(sh.elem, lit)
	if len(sh.dims) == 0 {
		return k
	}
	return c.broadcast(k, sh, nil)
}

func (c *comp) broadcast(a value, sh shape, dims []int64) value {
	return c.op(sh, "broadcast", "broadcast", []value{a}, "dimensions={"+ints(dims)+"}")
}

func (c *comp) reshape(a value, sh shape) value {
	return c.op(sh, "reshape", "reshape", []value{a}, "")
}

func (c *comp) transpose(a value, perm []int64) value {
	dims := make([]int64, len(perm))
	for i, p := range perm {
		dims[i] = a.sh.dims[p]
	}
	return c.op(arr(a.sh.elem, dims...), "transpose", "transpose", []value{a}, "dimensions={"+ints(perm)+"}")
}

func (c *comp) convert(a value, elem string) value {
	return c.op(a.sh.with(elem), "convert", "convert", []value{a}, "")
}

// slice1 is a[i] of a rank-1 array, as JAX lowers it: slice then squeeze.
func (c *comp) slice1(a value, i int64) value {
	s := c.op(arr(a.sh.elem, 1), "slice", "slice", []value{a}, fmt.Sprintf("slice={[%d:%d]}", i, i+1))
	return c.reshape(s, arr(a.sh.elem))
}

func (c *comp) gte(t value, i int) value {
	return c.op(t.sh.tuple[i], "get-tuple-element", "get-tuple-element", []value{t}, "index="+strconv.Itoa(i))
}

func (c *comp) tuple(vs []value) value {
	sh := shape{tuple: make([]shape, len(vs))}
	for i, v := range vs {
		sh.tuple[i] = v.sh
	}
	return c.op(sh, "tuple", "tuple", vs, "")
}

// call emits a call of a finished computation (a nested jit).
func (c *comp) call(callee string, result shape, args []value) value {
	return c.op(result, "call", "call", args, "to_apply=%"+callee)
}

// dot is a dot_general.
func (c *comp) dot(a, b value, sh shape, lb, lc, rb, rc []int64) value {
	var attrs []string
	if len(lb) > 0 {
		attrs = append(attrs, "lhs_batch_dims={"+ints(lb)+"}")
	}
	attrs = append(attrs, "lhs_contracting_dims={"+ints(lc)+"}")
	if len(rb) > 0 {
		attrs = append(attrs, "rhs_batch_dims={"+ints(rb)+"}")
	}
	attrs = append(attrs, "rhs_contracting_dims={"+ints(rc)+"}")
	return c.op(sh, "dot_general", "dot", []value{a, b}, strings.Join(attrs, ", "))
}

// reduce reduces a over dims with the computation region from init.
func (c *comp) reduce(a, init value, dims []int64, region string) value {
	keep := []int64{}
	drop := map[int64]bool{}
	for _, d := range dims {
		drop[d] = true
	}
	for i, d := range a.sh.dims {
		if !drop[int64(i)] {
			keep = append(keep, d)
		}
	}
	return c.op(arr(a.sh.elem, keep...), "reduce", "reduce", []value{a, init},
		"dimensions={"+ints(dims)+"}, to_apply=%"+region)
}

// finish closes the computation with root as its ROOT and adds it to the
// module; it returns the computation's name.
func (c *comp) finish(root value, entry bool) string {
	var b strings.Builder
	if entry {
		b.WriteString("ENTRY ")
	}
	b.WriteString("%" + c.name + " (")
	for i, p := range c.params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.name + ": " + p.sh.String())
	}
	b.WriteString(") -> " + root.sh.String() + " {\n")
	for _, l := range c.lines {
		b.WriteString("  ")
		if l.v.name == root.name {
			b.WriteString("ROOT ")
		}
		b.WriteString("%" + l.v.name + " = " + l.v.sh.String() + " " + l.text)
		if l.meta.opName != "" {
			fmt.Fprintf(&b, ", metadata={op_name=%q", l.meta.opName)
			if l.meta.file != "" {
				fmt.Fprintf(&b, " source_file=%q source_line=%d", l.meta.file, l.meta.line)
			}
			b.WriteString("}")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	c.m.comps = append(c.m.comps, b.String())
	return c.name
}

// text prints the module.
func (m *module) text() string {
	return "HloModule " + m.name + "\n\n" + strings.Join(m.comps, "\n")
}

// cached returns the computation built for key, building it once with mk
// (JAX lowers a nested jit once per signature and calls it from each site).
func (m *module) cached(key string, mk func() string) string {
	if name, ok := m.cache[key]; ok {
		return name
	}
	name := mk()
	m.cache[key] = name
	return name
}
