package liveness

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
)

// bruteLowerBound recomputes LowerBound step by step from its definition,
// pair by pair.
func bruteLowerBound(a *Analysis, share ShareFunc) int64 {
	var best, own int64
	for _, b := range a.Buffers {
		if a.OwnsMemory(b) {
			own += b.Size
		}
	}
	ending := make([][]*Value, a.EndTime()+1)
	starting := make([][]*Value, a.EndTime()+1)
	for _, v := range a.Values {
		if v.Scheduled {
			ending[v.Range.End] = append(ending[v.Range.End], v)
			starting[v.Range.Start] = append(starting[v.Range.Start], v)
		}
	}
	for t := 0; t <= a.EndTime(); t++ {
		var between, during int64
		cross := map[*Buffer]bool{}
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
		give, take := map[*Buffer]int64{}, map[*Buffer]int64{}
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

// checkLowerBound checks LowerBound against bruteLowerBound and its proof:
// every listed buffer live at Time, their sizes less the savings making
// the bound.
func checkLowerBound(t *testing.T, a *Analysis) {
	t.Helper()
	with := a.LowerBoundWith(nil, CanShareOperandBufferWithUser)
	require.Equal(t, bruteLowerBound(a, CanShareOperandBufferWithUser), with.Bytes, "LowerBoundWith against its definition")
	lb := a.LowerBound(nil)
	require.Equal(t, bruteLowerBound(a, nil), lb.Bytes, "LowerBound against its definition")
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

// TestLowerBoundReuse: an element-wise chain may run in place, each op
// writing over the operand it consumes, so one buffer is enough however
// long the chain besides the parameter, which keeps its own; the live
// peak counts three at every step.
func TestLowerBoundReuse(t *testing.T) {
	m, err := hlo.ParseModule("chain.hlo", `HloModule chain, is_scheduled=true
ENTRY e {
  p = f32[256] parameter(0)
  a = f32[256] negate(p)
  b = f32[256] exponential(a)
  c = f32[256] negate(b)
  ROOT d = f32[256] add(c, p)
}`)
	require.NoError(t, err)
	a, err := Analyze(m, Options{})
	require.NoError(t, err)
	lb := a.LowerBound(nil)
	// p lives throughout and one of a..d holds memory at any time.
	require.EqualValues(t, 2*1024, lb.Bytes)
	require.Len(t, lb.Live, 2)
	require.EqualValues(t, 3*1024, a.LivePeak().Bytes)
	checkLowerBound(t, a)
}

// TestLowerBoundEmpty: a module whose one value starts and ends at step 0
// still needs that value's bytes.
func TestLowerBoundEmpty(t *testing.T) {
	m, err := hlo.ParseModule("one.hlo", `HloModule one, is_scheduled=true
ENTRY e {
  ROOT p = f32[8] parameter(0)
}`)
	require.NoError(t, err)
	a, err := Analyze(m, Options{})
	require.NoError(t, err)
	lb := a.LowerBound(nil)
	require.EqualValues(t, 32, lb.Bytes, "a single point value still needs its bytes")
	require.Equal(t, 0, lb.Time)
	checkLowerBound(t, a)
}
