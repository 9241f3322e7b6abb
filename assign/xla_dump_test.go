package assign

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// usedValues splits the "Used values:" section of a buffer-assignment
// dump into its entries, keyed by their first line, the value's label
// <ID name{index} @color>, and returns the labels in order.
func usedValues(t *testing.T, dump string) (entries map[string]string, labels []string) {
	t.Helper()
	i := strings.Index(dump, "\nUsed values:\n")
	require.GreaterOrEqual(t, i, 0, "no \"Used values:\" section in the dump")
	sec := dump[i+len("\nUsed values:\n"):]
	if j := strings.Index(sec, "\n\n"); j >= 0 {
		sec = sec[:j+1]
	}
	entries = map[string]string{}
	for len(sec) > 0 {
		j := strings.Index(sec, "\n<")
		entry := sec
		if j >= 0 {
			entry = sec[:j+1]
		}
		sec = sec[len(entry):]
		label := entry[:strings.IndexByte(entry, '\n')]
		_, dup := entries[label]
		require.False(t, dup, "value %s listed twice", label)
		entries[label] = entry
		labels = append(labels, label)
	}
	return entries, labels
}

// entryParts splits a Used values entry into its label, positions, uses
// and "from instruction" line.
func entryParts(entry string) (label string, positions, uses []string, from string) {
	lines := strings.Split(strings.TrimSuffix(entry, "\n"), "\n")
	label, from = lines[0], lines[len(lines)-1]
	body := lines[1 : len(lines)-1] // " positions:", ..., " uses:", ...
	u := slices.Index(body, " uses:")
	return label, body[1:u], body[u+1:], from
}

// splitAttrs splits an instruction line at the ", " that separate its
// attributes, outside brackets and quotes: the head (name, shape, opcode
// and operands) and then one element per attribute.
func splitAttrs(line string) []string {
	var parts []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quoted:
			if c == '\\' {
				i++
			} else if c == '"' {
				quoted = false
			}
		case c == '"':
			quoted = true
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth--
		case c == ',' && depth == 0 && strings.HasPrefix(line[i:], ", "):
			parts = append(parts, line[start:i])
			start = i + 2
		}
	}
	return append(parts, line[start:])
}

// usedEntry is one entry of the "Used values:" section: its label as
// printed, <ID name{index} @color>, and its text with the ID taken out of
// the label.
type usedEntry struct{ label, body string }

// byValue is the "Used values:" section of dump by the value each entry
// describes, name{index} of its label: the defining instruction and
// shape index, which XLA's value IDs stand for; and those keys in the
// section's order.
func byValue(t *testing.T, what, dump string) (map[string]usedEntry, []string) {
	t.Helper()
	entries, labels := usedValues(t, dump)
	out := make(map[string]usedEntry, len(labels))
	var keys []string
	for _, label := range labels {
		id, rest, ok := strings.Cut(strings.TrimPrefix(label, "<"), " ")
		require.True(t, ok && isDigits(id), "%s: label %q", what, label)
		key, _, _ := strings.Cut(rest, " ")
		_, dup := out[key]
		require.False(t, dup, "%s: two values of %s", what, key)
		out[key] = usedEntry{label, "<" + rest + strings.TrimPrefix(entries[label], label)}
		keys = append(keys, key)
	}
	return out, keys
}

// TestPairedUsedValuesCorpus holds the "Used values" section of the XLA dump to
// XLA's own on every paired module, assigned with --algo=xla so that the
// allocations, and so the set of used values, are XLA's.
//
// Entries are matched by the value they describe, its defining instruction
// and shape index (name{index} in the label), not by XLA's value ID: the
// analysis does not always reproduce XLA's numbering of non-phi values
// (the in-memory computation order that decides it is not in the text).
// Every one of XLA's values must have its entry in ours, and every entry
// must be XLA's line for line, the ID apart, which is counted and
// reported; so is what the text does not determine or the printer does
// not reproduce:
//
//   - positions or uses in another order: XLA lists positions in its
//     in-memory post-order of computations and instructions and uses in
//     each instruction's in-memory user order, as unrecorded as the
//     numbering; the lines themselves must be XLA's;
//   - attributes in another order on the "from instruction" line: the
//     canonical printer puts typed attributes (dimensions, to_apply)
//     before the verbatim ones, where XLA prints a collective's
//     channel_id and replica_groups first (an async op printed in XLA's
//     short form, all-to-all-start(...), included: its wrapped op's
//     attributes come first, hlo.PrintOptions.AsyncSugar).
func TestPairedUsedValuesCorpus(t *testing.T) {
	var modules, total, same, sameText, otherID, order, attrOrder int
	for _, set := range []struct {
		dir, target string
		n           int
	}{{"paired", "gpu", 27}, {"paired-jax", "gpu", 57}, {"paired-jax-cpu", "cpu", 9}} {
		dirs := corpus.All(t, set.dir+"/*")
		require.Len(t, dirs, set.n, "%s: %d modules, want %d", set.dir, len(dirs), set.n)
		dirs = corpus.Sample(t, dirs)
		setTotal, setSame, setOtherID, whole := 0, 0, 0, 0
		for _, dir := range dirs {
			name := set.dir + "/" + filepath.Base(dir)
			text, err := os.ReadFile(globOne(t, filepath.Join(dir, "*after_optimizations-buffer-assignment.txt")))
			require.NoError(t, err)
			mods, err := hlo.ParseFile(globOne(t, filepath.Join(dir, "*after_optimizations.txt")))
			require.NoError(t, err)
			as := assignPaired(t, mods[0], Options{Algorithm: "xla", Target: mustTarget(t, set.target)})
			var dump strings.Builder
			require.NoError(t, as.WriteXLA(&dump))
			ours, _ := byValue(t, name+" (ours)", dump.String())
			xla, keys := byValue(t, name+" (XLA)", string(text))
			require.Len(t, ours, len(xla), "%s: %d used values, XLA %d", name, len(ours), len(xla))
			n := 0
			for _, key := range keys {
				want := xla[key]
				got, ok := ours[key]
				require.True(t, ok, "%s: XLA's value %s has no entry in ours", name, want.label)
				if got.label != want.label {
					setOtherID++
				}
				if got.body == want.body {
					if got.label == want.label {
						n++
					} else {
						sameText++
					}
					continue
				}
				gl, gp, gu, gf := entryParts(got.body)
				wl, wp, wu, wf := entryParts(want.body)
				sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
				ok = gl == wl && slices.Equal(sorted(gp), sorted(wp)) && slices.Equal(sorted(gu), sorted(wu))
				if ok && (!slices.Equal(gp, wp) || !slices.Equal(gu, wu)) {
					order++
				}
				if gf != wf {
					ga, wa := splitAttrs(gf), splitAttrs(wf)
					switch {
					case ga[0] == wa[0] && slices.Equal(sorted(ga[1:]), sorted(wa[1:])):
						attrOrder++
					default:
						ok = false
					}
				}
				if !ok {
					require.Failf(t, "value differs from XLA's", "%s: value %s, ours %s (-xla +ours):\n%s", name, want.label, got.label,
						cmp.Diff(strings.Split(want.body, "\n"), strings.Split(got.body, "\n")))
				}
			}
			if n == len(xla) {
				whole++
			}
			setTotal += len(xla)
			setSame += n
		}
		t.Logf("%s: %d used values compared, all matched to ours by instruction and shape index; %d carry another ID than XLA's; "+
			"%d are XLA's entry byte for byte, ID included; the whole section is XLA's on %d of %d modules",
			set.dir, setTotal, setOtherID, setSame, whole, len(dirs))
		modules += len(dirs)
		total += setTotal
		same += setSame
		otherID += setOtherID
	}
	t.Logf("%d paired modules: %d used values compared; %d (%.0f%%) carry another ID than XLA's; %d (%.0f%%) are XLA's entry byte for byte, ID included, "+
		"and %d more but for the ID; of the others, %d list their positions or uses in another order, %d print attributes in another order",
		modules, total, otherID, 100*float64(otherID)/float64(max(total, 1)), same, 100*float64(same)/float64(max(total, 1)), sameText, order, attrOrder)
}

// TestUsedValuesElideLargeConstants: the "from instruction:" line prints a
// constant's literal only for an array of at most 10 elements, and {...}
// otherwise, as XLA's HloInstruction::ToString does by default; a large
// constant's literal (hundreds of megabytes in real dumps) is never
// written out.
func TestUsedValuesElideLargeConstants(t *testing.T) {
	m, err := hlo.ParseModule("c.hlo", `HloModule c, is_scheduled=true
ENTRY e {
  small = f32[3]{0} constant({1, 2, 3})
  ten = s32[10]{0} constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
  large = f32[11]{0} constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
  a = f32[3]{0} negate(small)
  b = f32[11]{0} negate(large)
  c = s32[10]{0} negate(ten)
  ROOT t = (f32[3]{0}, f32[11]{0}, s32[10]{0}) tuple(a, b, c)
}`)
	require.NoError(t, err)
	as := assignModule(t, m, Options{})
	var b strings.Builder
	require.NoError(t, as.WriteXLA(&b))
	out := b.String()
	require.Contains(t, out, " from instruction: %small = f32[3]{0} constant({1, 2, 3})\n")
	require.Contains(t, out, " from instruction: %ten = s32[10]{0} constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})\n")
	require.Contains(t, out, " from instruction: %large = f32[11]{0} constant({...})\n")
	require.NotContains(t, out, "constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})")
}
