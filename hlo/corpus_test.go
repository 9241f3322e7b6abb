package hlo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// corpusHLOFiles returns every HLO text file of the corpus: hlo/*/*.hlo and
// the paired before/after-optimization dumps (not their buffer-assignment
// and memory-usage reports, which are not HLO).
func corpusHLOFiles(t testing.TB) []string {
	files := corpus.Glob(t, "hlo/*/*.hlo")
	files = append(files, corpus.Glob(t, "paired/*/*before_optimizations.txt")...)
	files = append(files, corpus.Glob(t, "paired/*/*after_optimizations.txt")...)
	return files
}

// noModuleFile is the one corpus file that holds no HLO module at all.
const noModuleFile = "tools__hlo_opt__tests__list_passes.hlo"

func printAll(mods []*Module) string {
	var b strings.Builder
	for i, m := range mods {
		if i > 0 {
			b.WriteString("\n// -----\n\n")
		}
		b.WriteString(m.String())
	}
	return b.String()
}

// TestCorpusRoundTrip parses every corpus module, verifies it, prints it,
// and checks that printing is a fixed point (print(parse(print(x))) ==
// print(x)) and that the printed text keeps every instruction, attribute
// and metadata field of the source.
func TestCorpusRoundTrip(t *testing.T) {
	files := corpusHLOFiles(t)
	require.GreaterOrEqual(t, len(files), corpus.Enough(250, 1), "corpus HLO files")
	modules := 0
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			mods, err := Parse(name, src)
			if name == noModuleFile {
				require.ErrorContains(t, err, "no HLO module")
				return
			}
			require.NoError(t, err)
			modules += len(mods)
			for _, m := range mods {
				require.NoError(t, Verify(m), "module %s", m.Name)
			}
			once := printAll(mods)
			mods2, err := ParseString("printed-"+name, once)
			require.NoError(t, err, "printed text does not parse")
			require.Len(t, mods2, len(mods), "modules in the printed text")
			// Not require.Equal: its diff of a whole module would be huge.
			if twice := printAll(mods2); twice != once {
				require.Failf(t, "printing is not a fixed point", "%s", firstLineDiff(once, twice))
			}
			for i := range mods {
				require.Equal(t, mods[i].NumInstructions(), mods2[i].NumInstructions(), "module %s: instructions before and after printing", mods[i].Name)
			}
			diff := cmp.Diff(textCounts(string(src)), textCounts(once))
			require.Empty(t, diff, "printed text lost or added attributes or ops (-source +printed)")
		})
	}
	t.Logf("%d files, %d modules", len(files), modules)
}

// TestNoModuleFile holds the corpus file without a module to a clear error.
func TestNoModuleFile(t *testing.T) {
	_, err := ParseFile(corpus.Path(t, "hlo", "xla", noModuleFile))
	require.Error(t, err)
	require.True(t, strings.HasSuffix(err.Error(), ":1:1: no HLO module in file"), "got %v", err)
}

// textCounts counts the attribute keys ("name=") and opcode calls
// ("name(") of HLO text, comments removed. A key is counted only where it
// starts a word, so "op_name=" inside metadata counts but not "_name=".
func textCounts(s string) map[string]int {
	counts := map[string]int{}
	isWord := func(c byte) bool {
		return c == '_' || c == '-' || c == '.' || c == '%' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	lineStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			lineStart = true
			continue
		case c == ' ' || c == '\t':
			continue
		case lineStart && c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			i--
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if end := strings.Index(s[i:], "*/"); end >= 0 {
				i += end + 1
			}
			continue
		}
		lineStart = false
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') || i > 0 && isWord(s[i-1]) {
			continue
		}
		j := i + 1
		for j < len(s) && (isWord(s[j]) && s[j] != '.' && s[j] != '%') {
			j++
		}
		// Opcodes are lower case; "T(", "S(" and the like are layout
		// extras, which vanish with the operand shapes the printer omits.
		if j < len(s) && (s[j] == '=' || s[j] == '(' && c >= 'a' && c <= 'z') {
			counts[s[i:j+1]]++
		}
		i = j - 1
	}
	return counts
}

// firstLineDiff shows the first line where a and b differ.
func firstLineDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d vs %d lines", len(la), len(lb))
}
