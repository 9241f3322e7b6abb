// Package boundtest holds the brute-force oracle for liveness's lower
// bound, for the tests of liveness and of the schedulers that check the
// bound under their orders.
package boundtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// Brute recomputes Analysis.LowerBoundWith(nil, share) (LowerBound when
// share is nil) step by step from its definition, pair by pair: the
// oracle the bound's tests hold it to. It is quadratic; for tests only.
func Brute(a *liveness.Analysis, share liveness.ShareFunc) int64 {
	var best, own int64
	for _, b := range a.Buffers {
		if a.OwnsMemory(b) {
			own += b.Size
		}
	}
	ending := make([][]*liveness.Value, a.EndTime()+1)
	starting := make([][]*liveness.Value, a.EndTime()+1)
	for _, v := range a.Values {
		if v.Scheduled {
			ending[v.Range.End] = append(ending[v.Range.End], v)
			starting[v.Range.Start] = append(starting[v.Range.Start], v)
		}
	}
	for t := 0; t <= a.EndTime(); t++ {
		var between, during int64
		cross := map[*liveness.Buffer]bool{}
		for _, b := range a.Buffers {
			if a.OwnsMemory(b) {
				continue
			}
			in, live := false, false
			for _, v := range b.Values {
				if !v.Scheduled {
					continue
				}
				r := v.Range
				in = in || r.Start <= t-1 && r.End >= t
				live = live || r.Contains(t)
				cross[b] = cross[b] || r.Start < t && r.End > t
			}
			if in {
				between += b.Size
			}
			if live {
				during += b.Size
			}
		}
		give, take := map[*liveness.Buffer]int64{}, map[*liveness.Buffer]int64{}
		for _, x := range ending[t] {
			for _, y := range starting[t] {
				if a.OwnsMemory(x.Buffer) || a.OwnsMemory(y.Buffer) ||
					x.Buffer == y.Buffer || cross[x.Buffer] || cross[y.Buffer] || y.Inst.Opcode == hlo.OpCopy {
					continue
				}
				ok := false
				for _, op := range y.Inst.Operands {
					if share == nil {
						ok = ok || op == x.Inst || op == x.EndPosition.Inst
						continue
					}
					ok = ok || op == x.Inst && share(x.Inst, x.Index, y.Inst, y.Index) ||
						op == x.EndPosition.Inst && share(op, x.EndPosition.Index, y.Inst, y.Index)
				}
				if ok {
					s := min(x.Buffer.Size, y.Buffer.Size)
					give[x.Buffer] = max(give[x.Buffer], s)
					take[y.Buffer] = max(take[y.Buffer], s)
				}
			}
		}
		var g, k int64
		for _, s := range give {
			g += s
		}
		for _, s := range take {
			k += s
		}
		best = max(best, between, during-min(g, k))
	}
	return best + own
}

// Check checks a's LowerBound and LowerBoundWith (under
// liveness.CanShareOperandBufferWithUser) against Brute, and the bound's
// proof: every listed buffer live at its Time, their sizes less the
// savings making the bound, never more than every buffer apart.
func Check(t testing.TB, a *liveness.Analysis) {
	t.Helper()
	with := a.LowerBoundWith(nil, liveness.CanShareOperandBufferWithUser)
	require.Equal(t, Brute(a, liveness.CanShareOperandBufferWithUser), with.Bytes, "LowerBoundWith against its definition")
	lb := a.LowerBound(nil)
	require.Equal(t, Brute(a, nil), lb.Bytes, "LowerBound against its definition")
	require.LessOrEqual(t, lb.Bytes, with.Bytes, "a stricter reuse rule never lowers the bound")
	var sum int64
	for _, b := range lb.Live {
		sum += b.Size
		live := a.OwnsMemory(b)
		for _, v := range b.Values {
			live = live || v.Scheduled && v.Range.Contains(lb.Time)
		}
		require.True(t, live, "buffer %d listed at the bound is not live at %d", b.ID, lb.Time)
	}
	require.Equal(t, lb.Bytes, sum-lb.Saved, "the listed buffers make the bound")
	var all int64
	for _, b := range a.Buffers {
		all += b.Size
	}
	require.LessOrEqual(t, lb.Bytes, all, "the bound never exceeds every buffer apart")
}
