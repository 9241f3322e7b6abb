package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// parse generates the module of cfg and parses and verifies it.
func parse(t *testing.T, cfg config) (*hlo.Module, []param) {
	t.Helper()
	text, params, err := generate(cfg)
	require.NoError(t, err)
	m, err := hlo.ParseModule("edgetransformer.hlo", text)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
	return m, params
}

// expectedParams is the parameter list Haiku's init returns, written out
// independently of the generator: name -> shape, for a model of hidden d.
func expectedParams(d, layers int64) map[string]string {
	p := func(dims ...int64) string { return f32(dims...).String() }
	want := map[string]string{
		"edge_transformer/~/linear/w": p(2*d, d),
		"edge_transformer/~/linear/b": p(d),
	}
	for l := int64(0); l < layers; l++ {
		s := fmt.Sprintf("edge_transformer/~/layer_%d/~/", l)
		for _, n := range []string{"left_k", "right_k", "left_v", "right_v", "output"} {
			want[s+"edge_attention/~/"+n+"/w"] = p(d, d)
		}
		want[s+"ffn/~/linear/w"], want[s+"ffn/~/linear/b"] = p(d, 2*d), p(2*d)
		want[s+"ffn/~/linear_1/w"], want[s+"ffn/~/linear_1/b"] = p(2*d, d), p(d)
		for _, n := range []string{"layer_norm", "layer_norm_1"} {
			want[s+n+"/scale"], want[s+n+"/offset"] = p(d), p(d)
		}
	}
	return want
}

func TestGeneratedModulesParseAndVerify(t *testing.T) {
	for _, nodes := range []int64{2, 3, 5} {
		for _, heads := range []int64{1, 2} {
			for _, layers := range []int64{1, 2} {
				for _, batch := range []int64{1, 2} {
					cfg := config{batch: batch, nodes: nodes, hidden: 4, heads: heads, layers: layers}
					t.Run(fmt.Sprintf("n%d_h%d_l%d_b%d", nodes, heads, layers, batch), func(t *testing.T) {
						m, params := parse(t, cfg)
						// init(rng, (node_fts, edge_fts)).
						var got []string
						for _, p := range m.Entry.Params {
							got = append(got, p.Shape.String())
						}
						b, n, d := batch, nodes, int64(4)
						require.Equal(t, []string{"u32[2]", f32(b, n, d).String(), f32(b, n, n, d).String()}, got)
						// The root returns the parameters, and nothing else.
						root := m.Entry.Root
						require.Equal(t, hlo.OpTuple, root.Opcode)
						want := expectedParams(d, layers)
						require.Len(t, root.Operands, len(want))
						require.Len(t, params, len(want))
						for i, p := range params {
							key := p.module + "/" + p.name
							require.Equal(t, want[key], root.Operands[i].Shape.String(), key)
							require.Equal(t, p.v.name, root.Operands[i].Name, key)
						}
					})
				}
			}
		}
	}
}

func TestRejectsBadSizes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{}, "--nodes=0: must be at least 1"},
		{[]string{"--nodes=4", "--heads=5"}, "--hidden=192 is not a multiple of --heads=5"},
		{[]string{"--nodes=4", "--batch=-1"}, "--batch=-1: must be at least 1"},
		{[]string{"--nodes=4000000", "--hidden=12"}, "overflow"},
		{[]string{"--nodes=4", "extra"}, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		err := run(tc.args, &out, &errOut)
		require.ErrorContains(t, err, tc.err, tc.args)
		require.Empty(t, out.String())
	}
}

// The command prints the module of its flags: the defaults are batch 1,
// hidden 192, 12 heads, 1 layer.
func TestRunDefaults(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"--nodes=7"}, &out, &errOut))
	want, _, err := generate(config{batch: 1, nodes: 7, hidden: 192, heads: 12, layers: 1})
	require.NoError(t, err)
	require.Equal(t, want, out.String())
	require.True(t, strings.HasPrefix(out.String(), "HloModule jit_init\n"))
	m, err := hlo.ParseModule("e.hlo", out.String())
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
}

// findByOpName returns the entry instructions whose op_name is name.
func findByOpName(m *hlo.Module, name string) []*hlo.Instruction {
	var out []*hlo.Instruction
	for _, in := range m.Entry.Instructions {
		if in.Metadata != nil && in.Metadata.OpName == name {
			out = append(out, in)
		}
	}
	return out
}

// val = einsum("bxahd,bayhd->bxayhd", ...) holds b·n³·d f32 elements.
func TestValBytes(t *testing.T) {
	for _, cfg := range []config{
		{batch: 1, nodes: 414, hidden: 192, heads: 12, layers: 1},
		{batch: 2, nodes: 5, hidden: 8, heads: 2, layers: 2},
	} {
		m, _ := parse(t, cfg)
		for l := int64(0); l < cfg.layers; l++ {
			name := fmt.Sprintf("jit(init)/edge_transformer/~/layer_%d/~/edge_attention/val/jit(_einsum)", l)
			ins := findByOpName(m, name)
			require.Len(t, ins, 1, name)
			require.Equal(t, hlo.OpCall, ins[0].Opcode)
			size, err := hlo.ByteSize(ins[0].Shape)
			require.NoError(t, err)
			require.Equal(t, cfg.batch*cfg.nodes*cfg.nodes*cfg.nodes*cfg.hidden*4, size)
		}
	}
}

// The root depends on no forward op: what reaches it from the entry's
// instructions is the key chain and the parameters' initialisation, so dead
// code elimination under jit removes every dot, einsum, softmax and relu,
// and nothing the size of the edge features survives.
func TestForwardPassIsDead(t *testing.T) {
	cfg := config{batch: 1, nodes: 6, hidden: 4, heads: 2, layers: 2}
	m, _ := parse(t, cfg)
	live := map[*hlo.Instruction]bool{}
	var mark func(*hlo.Instruction)
	mark = func(in *hlo.Instruction) {
		if live[in] {
			return
		}
		live[in] = true
		for _, op := range in.Operands {
			mark(op)
		}
	}
	mark(m.Entry.Root)
	dead := 0
	for _, in := range m.Entry.Instructions {
		if live[in] {
			require.NotEqual(t, hlo.OpDot, in.Opcode, in.Name)
			if in.Opcode == hlo.OpCall {
				callee := in.Callees()[0].Name
				require.True(t, strings.HasPrefix(callee, "_threefry_split") || strings.HasPrefix(callee, "_truncated_normal"), callee)
			}
			if in.Opcode != hlo.OpParameter && in.Opcode != hlo.OpTuple {
				n, _ := in.Shape.Elements()
				require.LessOrEqual(t, n, 2*cfg.hidden*cfg.hidden, in.Name)
			}
			continue
		}
		if in.Opcode == hlo.OpParameter {
			continue // node_fts and edge_fts: inputs init reads only to trace
		}
		dead++
		require.Contains(t, []hlo.Opcode{hlo.OpDot, hlo.OpCall, hlo.OpReshape, hlo.OpDivide, hlo.OpAdd,
			hlo.OpBroadcast, hlo.OpTranspose, hlo.OpConcatenate, hlo.OpReduce, hlo.OpSubtract,
			hlo.OpMultiply, hlo.OpRsqrt, hlo.OpConstant, hlo.OpSlice}, in.Opcode, in.Name)
	}
	// (The slice is the last split's new key, which no parameter uses.)
	// Per layer: five projections, three einsums, the softmax, the feed-forward
	// and two layer norms are among the dead.
	require.Greater(t, dead, int(cfg.layers)*20)
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpCall && strings.HasPrefix(in.Callees()[0].Name, "_einsum") {
			require.False(t, live[in], in.Name)
		}
	}
}
