package hlo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
)

func f32(dims ...int64) hlo.Shape { return hlo.ArrayShape(hlo.F32, dims...) }

var matmul = hlo.DotDims{LhsContracting: []int64{1}, RhsContracting: []int64{0}}

// TestBuilderOpcodes builds one of each form the builder infers and
// compares the module with the text XLA would print for it.
func TestBuilderOpcodes(t *testing.T) {
	b := hlo.NewBuilder("ops")
	add := b.Computation("add")
	add.Binary(hlo.OpAdd, add.Parameter("a", f32()), add.Parameter("b", f32()))
	body := b.Computation("body")
	s := body.Parameter("s", hlo.TupleShape(f32(), f32(2)))
	body.Tuple(body.Unary(hlo.OpNegate, body.GetTupleElement(s, 0)), body.GetTupleElement(s, 1))
	cond := b.Computation("cond")
	cs := cond.Parameter("s", hlo.TupleShape(f32(), f32(2)))
	cond.Compare("LT", cond.GetTupleElement(cs, 0), cond.Constant(f32(), 10))
	fused := b.Computation("fused")
	fused.Unary(hlo.OpExponential, fused.Parameter("p", f32(2, 3)))
	c := b.Entry("main")
	x := c.Parameter("x", f32(2, 3))
	y := c.Parameter("y", f32(3, 4))
	d := c.Dot(x, y, matmul)
	tr := c.Transpose(d, 1, 0)
	r := c.Reshape(tr, 8)
	sl := c.Slice(r, hlo.SliceDim{Start: 1, Limit: 7, Stride: 2})
	cat := c.Concatenate(0, sl, sl)
	sum := c.Reduce(x, c.Constant(f32(), 0), []int64{1}, add)
	bc := c.Broadcast(sum, []int64{2, 3}, 0)
	e := c.Fusion("", fused, bc)
	cv := c.Convert(e, hlo.S32)
	w := c.While(cond, body, c.Tuple(c.Constant(f32(), 0), c.Reshape(sum, 2)))
	call := c.Call(add, c.GetTupleElement(w, 0), c.Constant(f32(), 1))
	c.Tuple(cat, cv, call, c.Compare("GE", x, x))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := `HloModule ops

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.1 = f32[] add(%a, %b)
}

%body (s: (f32[], f32[2])) -> (f32[], f32[2]) {
  %s = (f32[], f32[2]{0}) parameter(0)
  %get-tuple-element = f32[] get-tuple-element(%s), index=0
  %negate = f32[] negate(%get-tuple-element)
  %get-tuple-element.1 = f32[2]{0} get-tuple-element(%s), index=1
  ROOT %tuple = (f32[], f32[2]{0}) tuple(%negate, %get-tuple-element.1)
}

%cond (s.1: (f32[], f32[2])) -> pred[] {
  %s.1 = (f32[], f32[2]{0}) parameter(0)
  %get-tuple-element.2 = f32[] get-tuple-element(%s.1), index=0
  %constant = f32[] constant(10)
  ROOT %compare = pred[] compare(%get-tuple-element.2, %constant), direction=LT
}

%fused (p: f32[2,3]) -> f32[2,3] {
  %p = f32[2,3]{1,0} parameter(0)
  ROOT %exponential = f32[2,3]{1,0} exponential(%p)
}

ENTRY %main (x: f32[2,3], y: f32[3,4]) -> (f32[6], s32[2,3], f32[], pred[2,3]) {
  %x = f32[2,3]{1,0} parameter(0)
  %y = f32[3,4]{1,0} parameter(1)
  %dot = f32[2,4]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %transpose = f32[4,2]{1,0} transpose(%dot), dimensions={1,0}
  %reshape = f32[8]{0} reshape(%transpose)
  %slice = f32[3]{0} slice(%reshape), slice={[1:7:2]}
  %concatenate = f32[6]{0} concatenate(%slice, %slice), dimensions={0}
  %constant.1 = f32[] constant(0)
  %reduce = f32[2]{0} reduce(%x, %constant.1), dimensions={1}, to_apply=%add
  %broadcast = f32[2,3]{1,0} broadcast(%reduce), dimensions={0}
  %fusion = f32[2,3]{1,0} fusion(%broadcast), kind=kLoop, calls=%fused
  %convert = s32[2,3]{1,0} convert(%fusion)
  %constant.2 = f32[] constant(0)
  %reshape.1 = f32[2]{0} reshape(%reduce)
  %tuple.1 = (f32[], f32[2]{0}) tuple(%constant.2, %reshape.1)
  %while = (f32[], f32[2]{0}) while(%tuple.1), condition=%cond, body=%body
  %get-tuple-element.3 = f32[] get-tuple-element(%while), index=0
  %constant.3 = f32[] constant(1)
  %call = f32[] call(%get-tuple-element.3, %constant.3), to_apply=%add
  %compare.1 = pred[2,3]{1,0} compare(%x, %x), direction=GE
  ROOT %tuple.2 = (f32[6]{0}, s32[2,3]{1,0}, f32[], pred[2,3]{1,0}) tuple(%concatenate, %convert, %call, %compare.1)
}
`
	if diff := cmp.Diff(want, m.String()); diff != "" {
		t.Errorf("built module (-want +got):\n%s", diff)
	}
	// The text round-trips, and IDs and users are what parsing gives.
	p, err := hlo.ParseModule("ops.hlo", m.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != m.String() {
		t.Errorf("parse(print) differs:\n%s", got)
	}
	var ids, users, pids, pusers []string
	m.Instructions(func(in *hlo.Instruction) {
		ids = append(ids, in.Name)
		users = append(users, names(in.Users))
	})
	p.Instructions(func(in *hlo.Instruction) {
		pids = append(pids, in.Name)
		pusers = append(pusers, names(in.Users))
	})
	if diff := cmp.Diff(pids, ids); diff != "" {
		t.Errorf("instructions by ID (-parsed +built):\n%s", diff)
	}
	if diff := cmp.Diff(pusers, users); diff != "" {
		t.Errorf("users (-parsed +built):\n%s", diff)
	}
	id := 0
	m.Instructions(func(in *hlo.Instruction) {
		if in.ID != id {
			t.Errorf("%s has ID %d, want %d", in.Name, in.ID, id)
		}
		id++
	})
}

func names(ins []*hlo.Instruction) string {
	var s []string
	for _, in := range ins {
		s = append(s, in.Name)
	}
	return strings.Join(s, ",")
}

// TestBuilderErrors gives each method what it must refuse: the first
// error is reported, once, and nothing panics.
func TestBuilderErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *hlo.Builder, c *hlo.ComputationBuilder)
		want  string
	}{
		{"shapes", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Binary(hlo.OpAdd, c.Parameter("a", f32(2)), c.Parameter("b", f32(3)))
		}, "computation main: add: operand 1 (b) has shape f32[3]{0}, operand 0 (a) has f32[2]{0}; broadcast one of them first"},
		{"types", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Binary(hlo.OpAdd, c.Parameter("a", f32(2)), c.Parameter("b", hlo.ArrayShape(hlo.S32, 2)))
		}, "operand 1 (b) has element type s32, operand 0 (a) has f32"},
		{"not binary", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			x := c.Parameter("a", f32(2))
			c.Binary(hlo.OpNegate, x, x)
		}, "negate: not an element-wise op of two operands"},
		{"operand count", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Add(&hlo.Instruction{Opcode: hlo.OpNegate, Operands: []*hlo.Instruction{c.Parameter("a", f32(2)), c.Parameter("b", f32(2))}})
		}, "negate: takes 1 operands, got 2"},
		{"dot", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Dot(c.Parameter("a", f32(2, 3)), c.Parameter("b", f32(4, 5)), matmul)
		}, "dot: lhs dimension 1 has size 3, rhs dimension 0 has 4"},
		{"dot dims", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Dot(c.Parameter("a", f32(2, 3)), c.Parameter("b", f32(3, 5)), hlo.DotDims{LhsContracting: []int64{7}, RhsContracting: []int64{0}})
		}, "dot: lhs dimension 7 is out of range"},
		{"reshape", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Reshape(c.Parameter("a", f32(2, 3)), 5)
		}, "do not have the same number of elements"},
		{"broadcast", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Broadcast(c.Parameter("a", f32(3)), []int64{2, 4}, 1)
		}, "operand dimension 0 has size 3, result dimension 1 has 4"},
		{"transpose", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Transpose(c.Parameter("a", f32(2, 3)), 0, 0)
		}, "is not a permutation"},
		{"slice", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Slice(c.Parameter("a", f32(4)), hlo.SliceDim{Start: 2, Limit: 9, Stride: 1})
		}, "[2:9:1] is not a slice of dimension 0"},
		{"gte", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.GetTupleElement(c.Parameter("a", f32(4)), 0)
		}, "operand a is not a tuple"},
		{"chain reports once", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			x := c.Parameter("a", f32(4))
			c.Unary(hlo.OpNegate, c.Unary(hlo.OpTanh, c.Reshape(x, 3)))
		}, "reshape: f32[4]{0} and f32[3]{0} do not have the same number of elements"},
		{"nil operand", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Unary(hlo.OpNegate, nil)
		}, "negate: operand 0 is nil"},
		{"other computation", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			o := b.Computation("other")
			c.Unary(hlo.OpNegate, o.Parameter("a", f32(4)))
		}, "operand 0 (a) is not an instruction of this computation"},
		{"call arity", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			f := b.Computation("f")
			f.Parameter("p", f32())
			c.Call(f)
		}, "call: 0 arguments for f, which takes 1 parameters"},
		{"reduce fn", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			f := b.Computation("f")
			f.Parameter("p", f32())
			c.Reduce(c.Parameter("a", f32(4)), c.Constant(f32(), 0), []int64{0}, f)
		}, "reduction f must take two f32[] parameters and return f32[]"},
		{"while cond", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			f := b.Computation("f")
			f.Parameter("p", f32())
			c.While(f, f, c.Constant(f32(), 0))
		}, "condition f returns f32[], want pred[]"},
		{"conditional", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			f := b.Computation("f")
			f.Parameter("p", f32())
			c.Conditional(c.Constant(hlo.ArrayShape(hlo.PRED), 1), []*hlo.ComputationBuilder{f}, c.Constant(f32(), 0))
		}, "a pred[] selector takes 2 branches, got 1"},
		{"constant", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Constant(f32(3), 1, 2)
		}, "constant: 2 values for shape f32[3]{0}, which has 3 elements"},
		{"shape", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Parameter("a", hlo.Shape{Elem: hlo.F32, Dims: []int64{-2}})
		}, "negative dimension"},
		{"name", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			c.Parameter("a b", f32())
		}, `"a b" is not a valid HLO name`},
		{"empty computation", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			b.Computation("empty")
			c.Parameter("a", f32())
		}, "computation empty has no instructions"},
		{"fused elsewhere", func(b *hlo.Builder, c *hlo.ComputationBuilder) {
			f := b.Computation("f")
			f.Parameter("p", f32())
			x := c.Parameter("a", f32())
			c.Tuple(c.Fusion(hlo.FusionLoop, f, x), c.Call(f, x))
		}, "call call calls f, the fused computation of fusion fusion; only fusions may call it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := hlo.NewBuilder("m")
			tc.build(b, b.Entry("main"))
			m, err := b.Build()
			if err == nil {
				t.Fatalf("Build succeeded:\n%s", m)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build error:\n%v\nwant it to contain %q", err, tc.want)
			}
			if n := strings.Count(err.Error(), "\n"); n > 0 {
				t.Errorf("Build reported %d errors, want 1:\n%v", n+1, err)
			}
		})
	}
}

func TestBuilderMisuse(t *testing.T) {
	var nb *hlo.Builder
	if _, err := nb.Build(); !errors.Is(err, hlo.ErrBuild) {
		t.Errorf("nil Builder: Build error %v, want ErrBuild", err)
	}
	var nc *hlo.ComputationBuilder
	if nc.Parameter("a", f32()) != nil || nc.Unary(hlo.OpNegate, nil) != nil || nc.Computation() != nil {
		t.Error("nil ComputationBuilder made an instruction")
	}
	b := hlo.NewBuilder("m")
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "no entry computation") {
		t.Errorf("Build without entry: %v", err)
	}
	b = hlo.NewBuilder("m")
	c := b.Entry("main")
	x := c.Parameter("x", f32())
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	if c.Unary(hlo.OpNegate, x) != nil {
		t.Error("a built Builder added an instruction")
	}
	if _, err := b.Build(); !errors.Is(err, hlo.ErrBuild) || !strings.Contains(err.Error(), "already built") {
		t.Errorf("second Build: %v", err)
	}
}
