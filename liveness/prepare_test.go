package liveness

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

// TestPrepareMatchesSteps: Prepare gives the analysis of flattening,
// copy insertion (unscheduled modules), Analyze, the scheduler and the
// interference repair done one by one (keep, the default, list in turn), on every corpus module of up
// to 5,000 instructions and the paired dumps; and it refuses what they
// refuse, with the same error.
func TestPrepareMatchesSteps(t *testing.T) {
	n := 0
	for _, f := range corpusFiles(t, preparedCorpus...) {
		one, err := hlo.ParseFile(f)
		if err != nil {
			continue
		}
		two, err := hlo.ParseFile(f)
		require.NoError(t, err)
		for i, m := range one {
			if m.NumInstructions() > 5000 {
				continue
			}
			sched := []string{SchedKeep, "", SchedList}[n%3]
			a, err := Prepare(m, sched)
			require.NoError(t, err, f)
			m2 := two[i]
			_, err = hlo.FlattenCallGraph(m2)
			require.NoError(t, err)
			var b *Analysis
			if m2.IsScheduled {
				b, err = Analyze(m2, Options{})
			} else {
				b, _, err = AnalyzeInsertingCopies(m2)
			}
			require.NoError(t, err)
			switch {
			case sched == SchedList:
				require.NoError(t, b.Reschedule(List(b)))
			}
			var r *SearchResult
			if sched == "" && !m2.IsScheduled {
				r, err = Search(context.Background(), b, SearchOptions{})
				require.NoError(t, err)
			}
			b, changed, err := repairInterference(m2, b)
			require.NoError(t, err, f)
			if changed && r != nil && r.NeedsCopies {
				// Once its copies are in, the search goes on from there.
				r, err = Search(context.Background(), b, SearchOptions{})
				require.NoError(t, err)
				b, _, err = repairInterference(m2, b)
				require.NoError(t, err, f)
			}
			b.Search = r
			var x, y bytes.Buffer
			require.NoError(t, a.WriteJSON(&x))
			require.NoError(t, b.WriteJSON(&y))
			require.Equal(t, y.String(), x.String(), filepath.Base(f))
			n++
		}
	}
	require.Greater(t, n, 300)

	for _, src := range []string{
		"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, a)\n}\n",
		"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] frobnicate(p)\n}\n",
		"HloModule m\nENTRY e {\n  ROOT p = f32[?] parameter(0)\n}\n",
	} {
		m, err := hlo.ParseModule("bad.hlo", src)
		if err != nil {
			continue // refused by the parser already
		}
		_, err = Prepare(m, "")
		require.Error(t, err, src)
		m2, _ := hlo.ParseModule("bad.hlo", src)
		_, want := hlo.FlattenCallGraph(m2)
		if want == nil {
			_, _, want = AnalyzeInsertingCopies(m2)
		}
		require.Error(t, want)
		require.EqualError(t, err, want.Error(), src)
	}
	_, err := Prepare(nil, "")
	require.Error(t, err)
	m, err := hlo.ParseModule("m.hlo", "HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")
	require.NoError(t, err)
	_, err = Prepare(m, "magic")
	require.ErrorContains(t, err, `unknown scheduler "magic"`)
}

// TestRepairDonatedInvariantLeaf: a donated parameter that a while carries
// unchanged (a loop-invariant slot) while its buffer, the output it is
// donated to, takes the loop's accumulator before the loop starts. The
// body reads the parameter after the accumulator's initial value is
// written over it; the repair must copy the parameter where the loop state
// is built (the read is in the body, which only the while hands it to).
// Simplify removes the frontend's copy of the parameter and leaves exactly
// this in the llama31 fp8 corpus modules.
func TestRepairDonatedInvariantLeaf(t *testing.T) {
	for _, sched := range []string{"", SchedList, SchedDFS, SchedPostOrder} {
		ms, err := hlo.ParseFile(filepath.Join("testdata", "donated_invariant.hlo"))
		require.NoError(t, err)
		a, err := Prepare(ms[0], sched)
		require.NoError(t, err, sched)
		require.Empty(t, a.interference(), sched)
		// The copy feeds the loop state: p1 is read only at its copy.
		var p1 *Value
		for _, v := range a.Values {
			if v.Inst.Name == "p1" {
				p1 = v
			}
		}
		require.NotNil(t, p1)
		tup := ms[0].Entry.Instruction("t")
		require.NotNil(t, tup)
		require.Equal(t, hlo.OpCopy, tup.Operands[2].Opcode, sched)
		require.Same(t, p1.Inst, tup.Operands[2].Operands[0], sched)
	}
}
