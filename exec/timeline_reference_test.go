package exec

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/liveness"
	"github.com/stretchr/testify/require"
)

// TestTimelineMatchesReferenceRunCorpus holds the shadow run's Timeline to
// the memory the reference run holds, on every corpus module (paired and
// hlo/) the reference run can step through: an entry without while,
// conditional or call, so that each step of the schedule is one
// instruction it runs, a plan of at most 64 MiB (the larger ones are run by
// TestPlannedRunEqualsReferenceCorpus), and not on that test's
// referenceAllowList or referenceSlow; any other module whose reference
// run fails fails the test. The reference run (Options{Reference,
// Held}, refheld.go) counts its bytes from its own allocations and frees,
// nothing of the analysis' live ranges. The two must be equal at every
// step but for two differences between a plan and a plan-free run,
// each counted (where a scheduled module updates an entry parameter in
// place without donating it, the repair gives the update a copy, so the
// plan holds the two apart as the reference run does):
//
//   - thread-local: the plan holds the buffers of called computations'
//     parameters (a reducer's scalars) for the whole run; the reference run
//     evaluates such a computation within one step and counts nothing for
//     it. The Timeline is higher by the thread-local allocations' bytes at
//     every step.
//   - in place: where the instruction at a step puts a result in the
//     buffer of one of its operands (a dynamic-update-slice or a scatter in
//     place, an output in its donated parameter), the reference run writes
//     fresh memory and holds both at that step; the Timeline counts the
//     buffer once. Likewise where the plan puts a result over bytes of an
//     operand of another buffer read there for the last time (an
//     elementwise result taking over its dying operand's slot): the
//     Timeline counts the shared bytes once.
//
// Which of these apply is read from the plan's allocations and the
// analysis' buffers, never from its ranges.
func TestTimelineMatchesReferenceRunCorpus(t *testing.T) {
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	var mu sync.Mutex
	var runnable, compared, paired, steps, equal, threadLocalSteps, inPlaceSteps int
	skipped := map[string]int{}
	skip := func(why string) {
		mu.Lock()
		skipped[why]++
		mu.Unlock()
	}
	eachFile(t, files, func(t *testing.T, f string) {
		for _, as := range plan(t, f, assign.Options{Budget: 20 * time.Millisecond}) {
			a := as.Analysis
			seq := a.Schedule.Sequence(as.Module.Entry)
			if len(seq) != len(a.Sequence) || slices.ContainsFunc(seq, func(in *hlo.Instruction) bool {
				return in.Opcode == hlo.OpWhile || in.Opcode == hlo.OpConditional || in.Opcode == hlo.OpCall
			}) {
				skip("control flow")
				continue
			}
			if as.Stats.TotalBytes > 64<<20 {
				skip("plan over 64 MiB")
				continue
			}
			if listedReference(rel(t, f), as.Module.Name) {
				skip("on referenceAllowList or referenceSlow")
				continue
			}
			args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
			ref, err := Execute(context.Background(), as, args, nil, Options{Reference: true, Held: true})
			require.NoError(t, err, "%s: the reference run (the module is not on referenceAllowList)", f)
			mu.Lock()
			runnable++
			mu.Unlock()
			rep, err := Shadow(context.Background(), as)
			require.NoError(t, err, f)
			require.Nil(t, rep.Violation, f)
			tl := rep.Timeline
			require.Len(t, ref.Held, len(tl.Live), f)

			var threadLocal int64
			for _, al := range as.Allocations {
				if al.ThreadLocal {
					threadLocal += al.Size
				}
			}
			// In place: the buffers the instruction at each step writes
			// that hold one of its operands' values.
			type place struct {
				alloc     int
				off, size int64
			}
			slotOf := map[*liveness.Value]place{}
			for ai, al := range as.Allocations {
				for _, sl := range al.Slots {
					if sl.Value != nil && sl.Size > 0 {
						slotOf[sl.Value] = place{ai, sl.Offset, sl.Size}
					}
				}
			}
			inPlace := make([]int64, len(tl.Live))
			pos := make(map[*hlo.Instruction]int, len(seq))
			for step, in := range seq {
				pos[in] = step
				writes := map[int]bool{}
				in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
					if v := a.ValueAt(in, ix); sub.IsArray() && v != nil && v.Inst == in && v.Buffer != nil {
						writes[v.Buffer.ID] = true
					}
				})
				seen := map[int]bool{}
				for _, o := range in.Operands {
					o.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
						if w := a.ValueAt(o, ix); sub.IsArray() && w != nil && w.Buffer != nil && writes[w.Buffer.ID] && !seen[w.Buffer.ID] {
							seen[w.Buffer.ID] = true
							inPlace[step] += w.Size
						}
					})
				}
				// A result the plan puts over bytes of an operand of
				// another buffer (read there for the last time: the plan
				// is valid): the Timeline counts those bytes once.
				taken := map[int]bool{}
				in.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
					v := a.ValueAt(in, ix)
					if !sub.IsArray() || v == nil || v.Inst != in || v.Buffer == nil {
						return
					}
					pv, ok := slotOf[v]
					if !ok {
						return
					}
					for _, o := range in.Operands {
						o.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
							w := a.ValueAt(o, ix)
							if !sub.IsArray() || w == nil || w.Buffer == nil || w.Buffer == v.Buffer || taken[w.Buffer.ID] {
								return
							}
							pw, ok := slotOf[w]
							if !ok || pw.alloc != pv.alloc {
								return
							}
							if lo, hi := max(pv.off, pw.off), min(pv.off+pv.size, pw.off+pw.size); hi > lo {
								taken[w.Buffer.ID] = true
								inPlace[step] += hi - lo
							}
						})
					}
				})
			}
			eq, tls, ips := 0, 0, 0
			for step := range tl.Live {
				require.Equal(t, ref.Held[step]-inPlace[step], tl.Live[step]-threadLocal,
					"%s: step %d: the bytes the reference run holds (%d) less those it holds apart where the plan writes in place (%d), "+
						"against the Timeline's less the thread-local buffers (%d, %d)",
					f, step, ref.Held[step], inPlace[step], tl.Live[step], threadLocal)
				if ref.Held[step] == tl.Live[step] {
					eq++
				}
				if threadLocal > 0 {
					tls++
				}
				if inPlace[step] > 0 {
					ips++
				}
			}
			mu.Lock()
			compared++
			if strings.Contains(f, "/paired") {
				paired++
			}
			steps += len(tl.Live)
			equal += eq
			threadLocalSteps += tls
			inPlaceSteps += ips
			mu.Unlock()
		}
	})
	require.Equal(t, runnable, compared)
	require.GreaterOrEqual(t, compared, corpus.Enough(133, runnable))
	t.Logf("%d modules (%d paired), %d steps: the Timeline equals the reference run's bytes at %d steps; it holds thread-local buffers the reference run does not at %d, "+
		"the reference run holds apart what the plan updates in place at %d; not compared: %v",
		compared, paired, steps, equal, threadLocalSteps, inPlaceSteps, skipped)
}
