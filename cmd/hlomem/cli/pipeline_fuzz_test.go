package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/require"
)

// pipelineOptions are the assignments FuzzPipeline makes of every module:
// XLA's own heap, the default packer with a short search, and the
// portfolio, across the three targets. Budgets stay small so that each
// input runs in milliseconds.
var pipelineOptions = []assign.Options{
	{Target: assign.GPU, Algorithm: "xla"},
	{Target: assign.CPU, Algorithm: "auto", Budget: 10 * time.Millisecond},
	{Target: assign.TPU, Algorithm: "portfolio", Budget: 10 * time.Millisecond},
}

// pipelineSeedLimit bounds the size of the corpus modules FuzzPipeline
// starts from, which keeps each execution fast.
const pipelineSeedLimit = 16 << 10

var inlineHLO = regexp.MustCompile("(?s)`(HloModule .*?)`")

// FuzzPipeline feeds modules through the whole pipeline as hlomem assign
// runs it: parse, verify, flatten the call graph, prepare (copy insertion
// for an unscheduled module, then the default scheduler; compile.Compile),
// analyse, assign with each of pipelineOptions, Check and the
// packing checks, and every output format. It fails on a panic, on a plan
// that does not pass the checks, and on a module that hlo.Verify accepts
// but the later stages refuse with anything other than a positioned input
// error (an unknown opcode, a shape without a size): what Verify lets
// through must be planned, or refused with a position. A module Verify
// rejects goes through the pipeline all the same, which must refuse it
// without panicking.
//
// Seeds: the small modules of the corpus, the modules of the tests of hlo,
// liveness and assign, those of this package's scripts and the demo.
func FuzzPipeline(f *testing.F) {
	for i, s := range pipelineSeeds(f) {
		f.Add(s, []byte(nil))
		// A few edits from the start, so that the first runs already
		// exchange operands, numbers and types.
		f.Add(s, []byte{byte(i), byte(i >> 8), 7, 1, byte(i), 3, 2, byte(i), 1})
	}
	f.Fuzz(func(t *testing.T, src, edits []byte) {
		mods, err := hlo.Parse("fuzz.hlo", src)
		if err != nil {
			return
		}
		if len(edits) > 0 {
			var b strings.Builder
			for i, m := range mods {
				if i > 0 {
					b.WriteString("\n// -----\n\n")
				}
				b.WriteString(m.String())
			}
			if mods, err = hlo.ParseString("fuzz.hlo", editText(b.String(), edits)); err != nil {
				return
			}
		}
		for _, m := range mods {
			runPipeline(t, m)
		}
	})
}

// Token classes editText works on, in canonical HLO text.
var (
	editNames = regexp.MustCompile(`%[A-Za-z0-9_.\-]+`)
	editInts  = regexp.MustCompile(`\b[0-9]+\b`)
	editTypes = regexp.MustCompile(`\b(pred|s8|s32|s64|u8|u32|bf16|f16|f32|f64|token)\b`)
	editLines = regexp.MustCompile(`(?m)^  .*\n`)
)

var editTypeNames = []string{"pred", "s32", "f32", "bf16", "u8", "f64", "token", "s64"}

// editText applies edits to canonical HLO text, three bytes per edit (at
// most eight): the first picks the kind, the other two what to change and
// how. Byte mutations of the text mostly break its syntax; these edits keep
// the syntax and change the meaning, as a bad rewrite would: an operand or
// called computation replaced by another name, a number (dimension,
// index, parameter number) changed, an element type changed, an
// instruction line dropped or repeated.
func editText(text string, edits []byte) string {
	for n := 0; len(edits) >= 3 && n < 8; n, edits = n+1, edits[3:] {
		kind, a, b := edits[0]%5, int(edits[1]), int(edits[2])
		switch kind {
		case 0: // one name for another
			locs := editNames.FindAllStringIndex(text, -1)
			if len(locs) < 2 {
				continue
			}
			at, from := locs[a%len(locs)], locs[b%len(locs)]
			text = text[:at[0]] + text[from[0]:from[1]] + text[at[1]:]
		case 1: // a number
			locs := editInts.FindAllStringIndex(text, -1)
			if len(locs) == 0 {
				continue
			}
			at := locs[a%len(locs)]
			text = text[:at[0]] + strconv.Itoa(b%17) + text[at[1]:]
		case 2: // an element type
			locs := editTypes.FindAllStringIndex(text, -1)
			if len(locs) == 0 {
				continue
			}
			at := locs[a%len(locs)]
			text = text[:at[0]] + editTypeNames[b%len(editTypeNames)] + text[at[1]:]
		case 3, 4: // drop or repeat an instruction line
			locs := editLines.FindAllStringIndex(text, -1)
			if len(locs) == 0 {
				continue
			}
			at := locs[a%len(locs)]
			line := text[at[0]:at[1]]
			if kind == 3 {
				line = ""
			} else if b%2 == 1 {
				line += line
			}
			text = text[:at[0]] + line + text[at[1]:]
		}
	}
	return text
}

// runPipeline takes one parsed module through the pipeline and fails t as
// FuzzPipeline says.
func runPipeline(t *testing.T, m *hlo.Module) {
	t.Helper()
	verr := hlo.Verify(m)
	res, err := compile.Compile(context.Background(), m, compile.Options{Until: "schedule"})
	if err != nil {
		if verr == nil {
			require.True(t, isInputError(err), "module %s passes hlo.Verify, then the pipeline fails without a position: %v", m.Name, err)
		}
		return
	}
	require.NoError(t, verr, "module %s fails hlo.Verify, yet the pipeline analysed it", m.Name)
	a := res.Analysis
	require.NoError(t, a.WriteXLA(io.Discard), "liveness xla output")
	require.NoError(t, a.WriteJSON(io.Discard), "liveness json output")
	for _, opts := range pipelineOptions {
		as, err := assign.Assign(context.Background(), a, opts)
		require.NoError(t, err, "%s/%s: the analysed module is not assigned", opts.Target.Name, opts.Algorithm)
		require.NoError(t, assign.Check(as), "%s/%s: invalid plan", opts.Target.Name, opts.Algorithm)
		for _, h := range as.Heaps {
			require.NoError(t, pack.Check(h.Problem, h.Solution.Packing), "%s/%s: invalid temp heap", opts.Target.Name, opts.Algorithm)
			require.GreaterOrEqual(t, h.Solution.Height(), h.LowerBound,
				"%s/%s: heap height %d below its lower bound %d", opts.Target.Name, opts.Algorithm, h.Solution.Height(), h.LowerBound)
		}
		for _, w := range []func(io.Writer) error{as.WriteXLA, as.WriteReport, as.WriteJSON, as.WriteTempCSV} {
			require.NoError(t, w(io.Discard), "%s/%s: output", opts.Target.Name, opts.Algorithm)
		}
	}
}

// pipelineSeeds gathers FuzzPipeline's seeds.
func pipelineSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	add := func(b []byte) {
		if len(b) <= pipelineSeedLimit {
			seeds = append(seeds, b)
		}
	}
	if d := corpus.Dir(); d != "" {
		for _, pat := range []string{"hlo/*/*.hlo", "paired/*/*after_optimizations.txt",
			"paired-jax/*/*after_optimizations.txt", "paired-jax-cpu/*/*after_optimizations.txt"} {
			files, _ := filepath.Glob(filepath.Join(d, pat))
			for _, file := range files {
				if st, err := os.Stat(file); err == nil && st.Size() <= pipelineSeedLimit {
					if b, err := os.ReadFile(file); err == nil {
						add(b)
					}
				}
			}
		}
	}
	for _, dir := range []string{"../../../hlo", "../../../liveness", "../../../assign"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			for _, m := range inlineHLO.FindAllSubmatch(b, -1) {
				add(m[1])
			}
		}
	}
	scripts, _ := filepath.Glob("testdata/script/*.txtar")
	for _, file := range scripts {
		ar, err := txtar.ParseFile(file)
		require.NoError(tb, err)
		for _, f := range ar.Files {
			if strings.HasSuffix(f.Name, ".hlo") {
				add(f.Data)
			}
		}
	}
	if b, err := os.ReadFile("../../../testdata/demo.hlo"); err == nil {
		add(b)
	}
	require.NotEmpty(tb, seeds, "no seeds found")
	return seeds
}
