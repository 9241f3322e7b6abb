package schedule

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// scheduledDAG returns random DAG seed of n instructions (randomDAGWith,
// smallOut) with its copies as a module XLA scheduled, in the order the
// named heuristic gives it.
func scheduledDAG(t *testing.T, seed uint64, n int, smallOut bool, order string) *hlo.Module {
	t.Helper()
	m, err := hlo.ParseModule("m.hlo", randomDAGWith(seed, n, smallOut))
	require.NoError(t, err)
	_, err = hlo.FlattenCallGraph(m)
	require.NoError(t, err)
	a, _, err := liveness.AnalyzeInsertingCopies(m)
	require.NoError(t, err)
	s, err := ByName(context.Background(), a, order, Options{})
	require.NoError(t, err)
	s.Apply(m)
	m2, err := hlo.ParseModule("m.hlo", m.String()) // as the user's file gives it
	require.NoError(t, err)
	require.True(t, m2.IsScheduled)
	return m2
}

// entryOrder is the names of a's entry computation in schedule order.
func entryOrder(a *liveness.Analysis) []string {
	var out []string
	for _, in := range a.Schedule.Sequence(a.Module.Entry) {
		out = append(out, in.Name)
	}
	return out
}

func textOrder(m *hlo.Module) []string {
	var out []string
	for _, in := range m.Entry.Instructions {
		out = append(out, in.Name)
	}
	return out
}

// TestSearchStartsFromOwnOrder: on a module XLA scheduled, search and
// optimal start from its own order and leave it only for one with a lower
// bound; a heuristic whose bound ties it does not replace it (on jit_scan
// list did, and its plan took 225 MiB more).
func TestSearchStartsFromOwnOrder(t *testing.T) {
	ties, left := 0, 0
	for seed := range uint64(60) {
		for _, order := range []string{PostOrder, DFS} {
			// Half of them with outputs that weigh, whose peak is often
			// the last step, which every order ties.
			m := scheduledDAG(t, seed, 12+int(seed%20), seed%2 == 0, order)
			keep, err := prepare(m.Clone(), Keep)
			require.NoError(t, err)
			own := keep.LowerBound(nil).Bytes
			for _, sched := range []string{Search, Optimal} {
				a, r, err := prepareSearched(m.Clone(), sched, Options{Budget: 20_000})
				require.NoError(t, err)
				name := fmt.Sprintf("seed %d from %s, %s", seed, order, sched)
				lb := a.LowerBound(nil).Bytes
				require.LessOrEqual(t, lb, own, name)
				require.True(t, a.Search.Heuristic == Keep || a.Search.Start < own, "%s: starts from %s (%d), not from the own order (%d)", name, a.Search.Heuristic, a.Search.Start, own)
				for _, c := range r.Candidates {
					if c.Name != Keep && !c.NeedsCopies && c.LowerBound == own && !slices.Equal(c.Schedule.Sequence(a.Module.Entry), a.Module.Entry.Instructions) {
						ties++
					}
				}
				if lb == own {
					require.True(t, a.Search.OwnOrder, name)
					require.Equal(t, textOrder(a.Module), entryOrder(a), "%s: a tie keeps the module's own order", name)
				} else {
					left++
					require.False(t, a.Search.OwnOrder, name)
				}
			}
		}
	}
	require.Positive(t, ties, "no heuristic tied a module's own order: the test tests nothing")
	require.Positive(t, left, "no search beat a module's own order")
	t.Logf("%d heuristic orders tied the module's own, %d searches left it", ties, left)
}

// TestSearchCostKeepsOwnOrder: given Options.Cost, search and
// optimal leave a scheduled module's own order only for an order whose
// cost is no higher; the result is never above the own order in cost nor
// in bound.
func TestSearchCostKeepsOwnOrder(t *testing.T) {
	kept, taken := 0, 0
	for seed := range uint64(40) {
		m := scheduledDAG(t, seed, 12+int(seed%20), true, PostOrder)
		own := textOrder(m)
		isOwn := func(a *liveness.Analysis) bool { return slices.Equal(entryOrder(a), own) }
		for _, sched := range []string{Search, Optimal} {
			name := fmt.Sprintf("seed %d, %s", seed, sched)
			plain, err := prepareWith(m.Clone(), sched, Options{Budget: 20_000})
			require.NoError(t, err)
			if plain.Search.OwnOrder {
				continue // nothing beat it on the bound: no cost is asked
			}
			// A cost under which every other order is dearer: the own
			// order stays, and says so.
			calls := 0
			dear := func(a *liveness.Analysis) (int64, error) {
				calls++
				if isOwn(a) {
					return 1000, nil
				}
				return 1001, nil
			}
			a, err := prepareWith(m.Clone(), sched, Options{Budget: 20_000, Cost: dear})
			require.NoError(t, err)
			require.Positive(t, calls, name)
			require.True(t, isOwn(a), "%s: the own order costs less", name)
			require.True(t, a.Search.OwnOrder, name)
			require.False(t, a.Search.Proven, name)
			require.Equal(t, a.LowerBound(nil).Bytes, a.Search.LowerBound, name)
			kept++
			// A cost that ties: the lower bound decides, and the order
			// found stays (the same as without a cost).
			same := func(*liveness.Analysis) (int64, error) { return 1000, nil }
			b, err := prepareWith(m.Clone(), sched, Options{Budget: 20_000, Cost: same})
			require.NoError(t, err)
			require.Equal(t, entryOrder(plain), entryOrder(b), name)
			require.Equal(t, plain.LowerBound(nil).Bytes, b.LowerBound(nil).Bytes, name)
			require.False(t, b.Search.OwnOrder, name)
			taken++
		}
	}
	require.Positive(t, kept, "no search left a module's own order: the test tests nothing")
	t.Logf("%d searches kept the own order under the cost, %d took theirs", kept, taken)
}

// TestSearchCostError: a cost that fails fails the preparation.
func TestSearchCostError(t *testing.T) {
	for seed := range uint64(40) {
		m := scheduledDAG(t, seed, 12+int(seed%20), true, PostOrder)
		plain, err := prepareWith(m.Clone(), Search, Options{Budget: 20_000})
		require.NoError(t, err)
		if plain.Search.OwnOrder {
			continue
		}
		fail := func(*liveness.Analysis) (int64, error) { return 0, fmt.Errorf("no plan") }
		_, err = prepareWith(m.Clone(), Search, Options{Budget: 20_000, Cost: fail})
		require.ErrorContains(t, err, "no plan")
		return
	}
	t.Fatal("no search left a module's own order")
}

// TestOptimalCostWeighsSearch: given Options.Cost, optimal weighs
// its first phase's order (Search's) against its own on any module, so
// that its plan never costs more than Search's. A cost that prefers a
// higher bound makes it return Search's order wherever its own is lower.
func TestOptimalCostWeighsSearch(t *testing.T) {
	weighed := 0
	for seed := range uint64(40) {
		m, err := hlo.ParseModule("m.hlo", randomDAGWith(seed, 14+int(seed%16), true))
		require.NoError(t, err)
		name := fmt.Sprintf("seed %d", seed)
		search, err := prepare(m.Clone(), Search)
		require.NoError(t, err)
		opt, err := prepareWith(m.Clone(), Optimal, Options{Budget: 20_000})
		require.NoError(t, err)
		higher := func(a *liveness.Analysis) (int64, error) { return -a.LowerBound(nil).Bytes, nil }
		b, err := prepareWith(m.Clone(), Optimal, Options{Budget: 20_000, Cost: higher})
		require.NoError(t, err)
		if opt.LowerBound(nil).Bytes == search.LowerBound(nil).Bytes {
			require.Equal(t, opt.LowerBound(nil).Bytes, b.LowerBound(nil).Bytes, name)
			continue
		}
		weighed++
		require.Equal(t, search.LowerBound(nil).Bytes, b.LowerBound(nil).Bytes, "%s: Search's order costs less", name)
		require.Equal(t, entryOrder(search), entryOrder(b), name)
		require.False(t, b.Search.Proven, name)
		require.False(t, b.Search.OwnOrder, name)
	}
	require.Positive(t, weighed, "optimal never beat search: the test tests nothing")
	t.Logf("%d modules where optimal's order and Search's were weighed", weighed)
}
