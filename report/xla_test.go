package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

const mismatchHLO = `HloModule f, is_scheduled=true
ENTRY e {
  p = f32[512]{0} parameter(0)
  a = f32[512]{0} negate(p)
  ROOT b = f32[512]{0} exponential(a)
}`

// mismatchXLA is XLA's buffer assignment of mismatchHLO, with values
// renamed or reshaped by the tests.
const mismatchXLA = `BufferAssignment:
allocation 0: size 2048, parameter 0, shape |f32[512]| at ShapeIndex {}:
 value: <0 p @0> (size=2048,offset=0): f32[512]{0}
allocation 1: size 2048, maybe-live-out:
 value: <2 b @0> (size=2048,offset=0): f32[512]{0}
allocation 2: size 8192, preallocated-temp:
 value: <1 a @0> (size=2048,offset=4096): f32[512]{0}

Total bytes used: 12288 (12.0KiB)
`

// TestXLAMismatch (issue 27, item 6): XLA's buffer assignment of another
// module is refused, naming the mismatch: a file named for another
// module, instructions the module lacks, values of another shape; the
// module's own is accepted, and the report says how many of XLA's values
// it matched.
func TestXLAMismatch(t *testing.T) {
	m, err := hlo.ParseModule("f.hlo", mismatchHLO)
	require.NoError(t, err)
	read := func(text string) *assign.XLAAssignment {
		x, err := assign.ReadXLA("ba.txt", []byte(text))
		require.NoError(t, err)
		return x
	}
	for _, tc := range []struct {
		name, file, text, want string
	}{
		{"own", "module_0001.f.sm_8.0_gpu_after_optimizations-buffer-assignment.txt", mismatchXLA, ""},
		{"own, another file name", "ba.txt", mismatchXLA, ""},
		{"another module's file", "module_0002.g.sm_8.0_gpu_after_optimizations-buffer-assignment.txt", mismatchXLA,
			"module_0002.g.sm_8.0_gpu_after_optimizations-buffer-assignment.txt is not XLA's buffer assignment of module f: its file is named for module g"},
		{"a module whose name extends f's", "module_0002.f_1.cpu_after_optimizations-buffer-assignment.txt", mismatchXLA,
			"is not XLA's buffer assignment of module f: its file is named for module f_1"},
		{"other instructions", "ba.txt", strings.ReplaceAll(strings.ReplaceAll(mismatchXLA, "<2 b @0>", "<2 fusion.3 @0>"), "<1 a @0>", "<1 add.7 @0>"),
			"ba.txt is not XLA's buffer assignment of module f: 2 of the 3 instructions it names are not in the module (add.7, fusion.3)"},
		{"other shapes", "ba.txt", strings.ReplaceAll(mismatchXLA, "(size=2048,offset=4096): f32[512]{0}", "(size=4096,offset=4096): f32[1024]{0}"),
			"ba.txt is not XLA's buffer assignment of module f: 1 of the 3 values it places for the module's instructions has another shape there (a{} f32[1024], the module has f32[512])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := read(tc.text)
			r, err := Build(context.Background(), m, Options{XLA: x, XLAFile: tc.file})
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, 3, r.XLA.Values)
				require.Equal(t, 3, r.XLA.Matched)
				var b bytes.Buffer
				require.NoError(t, r.writeSection(&b, "xla"))
				require.Contains(t, b.String(), "\n  matched 3 of 3 of XLA's values\n")
				return
			}
			require.Error(t, err)
			var mm *XLAMismatchError
			require.True(t, errors.As(err, &mm), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestXLAMismatchCorpus: every paired module accepts its own XLA
// assignment and refuses the next module's whenever the two are not the
// same program (another name, or other instructions or shapes), by the
// instructions and shapes alone too, whatever the file is called.
func TestXLAMismatchCorpus(t *testing.T) {
	files := corpus.All(t, "paired*/*/*after_optimizations.txt")
	require.Len(t, files, 93)
	files = corpus.Sample(t, files)
	mods := make([]*hlo.Module, len(files))
	xs := make([]*assign.XLAAssignment, len(files))
	for i, f := range files {
		mods[i] = parseFile(t, f)
		xf := strings.TrimSuffix(f, ".txt") + "-buffer-assignment.txt"
		src, err := os.ReadFile(xf)
		require.NoError(t, err)
		xs[i], err = assign.ReadXLA(xf, src)
		require.NoError(t, err)
		require.NoError(t, CheckXLAModule(mods[i], xs[i], xf), f)
	}
	refused := 0
	for i, m := range mods {
		j := (i + 1) % len(mods)
		err := CheckXLAModule(m, xs[j], xs[j].File)
		neutral := CheckXLAModule(m, xs[j], "xla.txt")
		if m.Name != mods[j].Name {
			var mm *XLAMismatchError
			require.True(t, errors.As(err, &mm), "%s with %s: %v", files[i], xs[j].File, err)
			require.Equal(t, mods[j].Name, mm.XLAModule, "the module the file is named for")
		}
		if neutral != nil {
			refused++
			continue
		}
		// Accepted by the instructions and shapes: the same program
		// compiled twice (only metadata differs).
		require.Equal(t, m.Name, mods[j].Name, "%s with %s", filepath.Base(files[i]), filepath.Base(xs[j].File))
		t.Logf("accepted %s with %s: the same instructions and shapes", filepath.Base(filepath.Dir(files[i])), filepath.Base(filepath.Dir(xs[j].File)))
	}
	t.Logf("refused %d of %d pairs by instructions and shapes alone", refused, len(mods))
	require.GreaterOrEqual(t, refused, corpus.Enough(81, len(mods)))
}
