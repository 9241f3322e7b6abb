package liveness

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

// dumpValueRe matches a value line of a buffer-assignment dump:
// <ID name{index} (phi) @color>, the index present for tuple-shaped
// instructions only.
var dumpValueRe = regexp.MustCompile(`(?m)^ value: <(\d+) ([^ >{]+)(\{[0-9,]*\})?( \(phi\))? @`)

type dumpValue struct {
	id  int
	phi bool
}

// readDumpValues returns the values an XLA buffer-assignment dump lists,
// keyed as valueKey keys ours.
func readDumpValues(t *testing.T, path string) map[string]dumpValue {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]dumpValue{}
	for _, m := range dumpValueRe.FindAllStringSubmatch(string(text), -1) {
		id, _ := strconv.Atoi(m[1])
		out[m[2]+m[3]] = dumpValue{id, m[4] != ""}
	}
	return out
}

func valueKey(in *hlo.Instruction, ix hlo.ShapeIndex) string {
	if in.Shape.IsTuple() {
		return in.Name + ix.String()
	}
	return in.Name
}

// TestValueIDsCorpus holds value numbering to XLA's on every paired module. The
// phis are numbered by the propagation, in the order it creates them,
// deleted ones keeping their numbers: every phi's ID must be XLA's, and so
// must the set of phis. The other values are numbered computation by
// computation in XLA's in-memory computation order, which a dump does not
// record (valueOrder approximates it): within each computation their IDs,
// counted from the computation's first, must be XLA's, and every value XLA
// lists must exist here and be a phi exactly when XLA's is. How many values
// get XLA's absolute ID is logged.
func TestValueIDsCorpus(t *testing.T) {
	totalPhis, totalVals, sameAbs := 0, 0, 0
	for _, set := range []string{"paired", "paired-jax", "paired-jax-cpu"} {
		for _, dir := range corpus.Glob(t, set+"/*") {
			name := set + "/" + filepath.Base(dir)
			want := readDumpValues(t, globOne(t, filepath.Join(dir, "*after_optimizations-buffer-assignment.txt")))
			mods, err := hlo.ParseFile(globOne(t, filepath.Join(dir, "*after_optimizations.txt")))
			require.NoError(t, err)
			_, err = hlo.FlattenCallGraph(mods[0])
			require.NoError(t, err)
			a, err := Analyze(mods[0], Options{})
			require.NoError(t, err)
			ours := map[string]*Value{}
			for _, v := range a.Values {
				ours[valueKey(v.Inst, v.Index)] = v
			}
			// First IDs of each computation, over the values XLA lists.
			firstX, firstO := map[*hlo.Computation]int{}, map[*hlo.Computation]int{}
			for k, w := range want {
				v := ours[k]
				require.NotNil(t, v, "%s: XLA's value %s (%d) is missing", name, k, w.id)
				require.Equal(t, w.phi, v.IsPhi, "%s: %s is a phi here: %v, in XLA: %v", name, k, v.IsPhi, w.phi)
				totalVals++
				if v.XLAID == w.id {
					sameAbs++
				}
				if w.phi {
					totalPhis++
					require.Equal(t, w.id, v.XLAID, "%s: phi %s has ID %d, XLA %d", name, k, v.XLAID, w.id)
					continue
				}
				c := v.Inst.Parent
				if f, ok := firstX[c]; !ok || w.id < f {
					firstX[c] = w.id
				}
				if f, ok := firstO[c]; !ok || v.XLAID < f {
					firstO[c] = v.XLAID
				}
			}
			for k, w := range want {
				v := ours[k]
				if v == nil || w.phi || v.IsPhi {
					continue
				}
				c := v.Inst.Parent
				got, exp := v.XLAID-firstO[c], w.id-firstX[c]
				require.Equal(t, exp, got, "%s: %s is value %d of %s, in XLA %d", name, k, got, c.Name, exp)
			}
		}
	}
	t.Logf("%d values checked, %d phis with XLA's IDs; %d values (%.1f%%) have XLA's absolute ID",
		totalVals, totalPhis, sameAbs, 100*float64(sameAbs)/float64(totalVals))
}
