package hlo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// FuzzParse feeds arbitrary text to the parser. It must never panic, and
// whatever parses must print to text that parses and prints the same again.
// The seeds are the corpus modules of up to 64 KB plus small snippets with
// every syntax form.
func FuzzParse(f *testing.F) {
	if d := corpus.Dir(); d != "" {
		for _, pat := range []string{"hlo/*/*.hlo", "paired/*/*after_optimizations.txt"} {
			files, _ := filepath.Glob(filepath.Join(d, pat))
			for _, file := range files {
				if st, err := os.Stat(file); err == nil && st.Size() <= 64<<10 {
					if b, err := os.ReadFile(file); err == nil {
						f.Add(b)
					}
				}
			}
		}
	}
	for _, s := range []string{
		"HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}",
		"e {\n  a = f32[] exponential(f32[] parameter(0))\n}\n// -----\nf {\n  ROOT b = s32[] parameter(0)\n}",
		"HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }\nENTRY e {\n  p = (f32[2], s32[]) parameter(0)\n  ROOT g = f32[2] negate(p#0)\n}",
		"HloModule m\nENTRY e {\n  ROOT c = s32[2,2]{1,0:T(8,128)S(1)} constant({ {1, 2}, {3, 4} }), metadata={op_name=\"x\\\"y\" source_line=3}\n}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		mods, err := Parse("fuzz.hlo", src)
		if err != nil {
			return
		}
		_ = Verify(mods[0]) // must not panic either
		once := printAll(mods)
		mods2, err := ParseString("printed.hlo", once)
		require.NoError(t, err, "printed text does not parse:\n%s", once)
		if twice := printAll(mods2); twice != once {
			require.Failf(t, "printing is not a fixed point", "%s", firstLineDiff(once, twice))
		}
	})
}
