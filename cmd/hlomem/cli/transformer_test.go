package cli

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
)

// transformerHLO is the second bundled example: one decoder block's JAX
// training step (forward, backward, SGD update of the donated weights).
const transformerHLO = "../../../testdata/transformer.hlo"

// transformerLR is the learning rate of the example's update, w - lr * grad.
const transformerLR = 0.01

// TestTransformerExample runs the CLI on the example as make demo and the
// README do: it prints canonically (a fixed point), assigns with and without
// fusion, runs verified on the plan, fused and on a TPU v4, and its loss is
// a finite number.
func TestTransformerExample(t *testing.T) {
	canon := string(run(t, "fmt", transformerHLO))
	var again, errs bytes.Buffer
	code := Main([]string{"fmt", "-"}, strings.NewReader(canon), &again, &errs)
	require.Equal(t, exitOK, code, errs.String())
	require.Equal(t, canon, again.String(), "fmt of fmt's output differs from it")

	for _, args := range [][]string{
		{"assign", "--format=report", "--report-format=legacy"},
		{"assign", "--fuse", "--format=report", "--report-format=legacy"},
	} {
		out := string(run(t, append(args, transformerHLO)...))
		require.Regexp(t, `^Total bytes used: \d+ `, out, "hlomem %s", strings.Join(args, " "))
		require.Contains(t, out, "preallocated-temp")
	}

	out := string(run(t, "assign", "--format=report", transformerHLO))
	require.Regexp(t, `^Memory Space: default \(color=0\)\nTotal bytes: \d+ `, out, "the current layout groups by memory space")

	for _, args := range [][]string{
		{"run", "--verify", "--inputs=random"},
		{"run", "--verify", "--inputs=random", "--fuse"},
	} {
		out := string(run(t, append(args, transformerHLO)...))
		require.Regexp(t, `(?m)^ok: \d+ steps, `, out, "hlomem %s", strings.Join(args, " "))
		require.Regexp(t, `(?m)^ok: planned run equals reference run; `, out, "hlomem %s", strings.Join(args, " "))
	}
	out = string(run(t, "run", "--device=tpu-v4", "--verify", "--inputs=random", transformerHLO))
	require.Regexp(t, `(?m)^ok: the run on the tiled, padded buffers of HBM, VMEM and SMEM equals the reference run; `, out)

	// The loss is output 0; the 13 updated weights follow, all finite.
	out = string(run(t, "run", "--inputs=random", "--print", transformerHLO))
	m := regexp.MustCompile(`(?m)^output 0: f32\[\] (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "no scalar loss printed:\n%.2000s", out)
	loss, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.False(t, math.IsNaN(loss) || math.IsInf(loss, 0), "loss %v", loss)
	require.Greater(t, loss, 0.0)
	require.Regexp(t, `(?m)^output 13: f32\[64,128\] `, out)
	require.NotRegexp(t, `(?m)^output .*[{ ](-?inf|nan)([,}]|$)`, out)
}

// TestTransformerGradient: the example's update is an SGD step on the
// gradient of its own loss. For each weight w, the gradient the module
// applies, g = (w - w')/lr from its output w', is compared with a central
// difference of the loss along g: (L(w + eps u) - L(w - eps u)) / 2 eps, u
// = g/|g|, must be |g| within 1% (a wrong transpose, sign or
// missing term in the hand-written backward pass breaks it). Labels are in
// range; tokens keep the random ones in [-8, 8), so the embedding lookup's
// wrap-around of negative ids is in the check too.
func TestTransformerGradient(t *testing.T) {
	src, err := os.ReadFile(transformerHLO)
	require.NoError(t, err)
	mod, err := hlo.ParseModule(transformerHLO, string(src))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 11))
	args := eval.RandomArgs(mod, rng)
	require.Len(t, args, 15)
	labels := args[14]
	require.Equal(t, "s32[2,16]", labels.Shape.StringNoLayout())
	for i := 0; i < len(labels.Data); i += 4 {
		binary.LittleEndian.PutUint32(labels.Data[i:], uint32(rng.IntN(128)))
	}

	evaluate := func(args []eval.Literal) []eval.Literal {
		t.Helper()
		out, err := eval.Computation(mod.Entry, args)
		require.NoError(t, err)
		leaves := out.Leaves()
		require.Len(t, leaves, 14)
		return leaves
	}
	outs := evaluate(args)
	loss := f32s(outs[0])[0]
	t.Logf("loss %.6f", loss)
	require.False(t, math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0))

	for i := range 13 {
		name := mod.Entry.Params[i].Metadata.OpName // params['mlp']['w1'], ...
		w, w1 := f32s(args[i]), f32s(outs[i+1])
		g := make([]float64, len(w))
		var norm float64
		for j := range w {
			g[j] = (float64(w[j]) - float64(w1[j])) / transformerLR
			norm += g[j] * g[j]
		}
		norm = math.Sqrt(norm)
		require.Greater(t, norm, 1e-3, "%s: no gradient", name)
		const eps = 1e-2
		at := func(step float64) float32 {
			moved := append([]eval.Literal(nil), args...)
			v := make([]float32, len(w))
			for j := range w {
				v[j] = w[j] + float32(step*g[j]/norm)
			}
			moved[i] = literalF32(args[i].Shape, v)
			return f32s(evaluate(moved)[0])[0]
		}
		fd := (float64(at(eps)) - float64(at(-eps))) / (2 * eps)
		t.Logf("%-22s |g| %.5f, central difference %.5f", name, norm, fd)
		require.InEpsilon(t, norm, fd, 0.01, "%s: the update's gradient %.5f, the loss's slope along it %.5f", name, norm, fd)
	}
}

func f32s(l eval.Literal) []float32 {
	v := make([]float32, len(l.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(l.Data[4*i:]))
	}
	return v
}

func literalF32(s hlo.Shape, v []float32) eval.Literal {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return eval.Literal{Shape: s, Data: b}
}
