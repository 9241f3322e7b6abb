package hlo

import (
	"os"
	"testing"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

func TestSourceLocation(t *testing.T) {
	text := `HloModule m

FileNames
1 "model.py"
2 "lib/layers.py"

FunctionNames
1 "f"
2 "g"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=2 end_column=9}
2 {file_name_id=2 function_name_id=2 line=42 end_line=42 column=4 end_column=17}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}

ENTRY e {
  p = f32[4]{0} parameter(0), metadata={op_name="jit(f)/p" source_file="direct.py" source_line=7}
  a = f32[4]{0} add(p, p), metadata={op_name="jit(f)/add" stack_frame_id=2}
  b = f32[4]{0} multiply(a, a), metadata={op_name="jit(f)/mul" stack_frame_id=9}
  ROOT c = f32[4]{0} negate(b)
}
`
	m, err := ParseModule("s.hlo", text)
	require.NoError(t, err)
	want := map[string]string{"p": "direct.py:7", "a": "lib/layers.py:42", "b": "", "c": ""}
	for _, in := range m.Entry.Instructions {
		require.Equal(t, want[in.Name], m.Source(in), in.Name)
	}
	require.Equal(t, "", m.Source(nil))
	var nilMod *Module
	require.Equal(t, "direct.py:7", nilMod.Source(m.Entry.Instructions[0]))
}

// TestSourceLocationCorpus resolves a stack frame of a JAX dump from the
// corpus to its file and line.
func TestSourceLocationCorpus(t *testing.T) {
	path := corpus.Path(t, "hlo/xla/backends__cpu__benchmarks__hlo__bench_mass_matrix_35.hlo")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	m, err := ParseModule(path, string(src))
	require.NoError(t, err)
	found := 0
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Metadata != nil && in.Metadata.StackFrameID > 0 {
				require.NotEmpty(t, m.Source(in), in.Name)
				found++
			}
		}
	}
	require.Positive(t, found)
}

func TestParseShape(t *testing.T) {
	s, err := ParseShape("x", "f32[8,128]{1,0}")
	require.NoError(t, err)
	n, err := ByteSize(s)
	require.NoError(t, err)
	require.Equal(t, int64(8*128*4), n)
	s, err = ParseShape("x", "(s32[], bf16[4])")
	require.NoError(t, err)
	require.True(t, s.IsTuple())
	for _, bad := range []string{"", "f32[", "f32[2] extra", "q99[2]", "f32[-1]"} {
		_, err := ParseShape("x", bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "x:1:", bad)
	}
}
