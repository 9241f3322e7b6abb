package compile

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/remat"
)

// rematerializable is MakeRematerializableComputation of XLA's
// hlo_rematerialization_test_utils.h, scheduled as XLA's
// SingleComputation test (hlo_rematerialization_test.cc) has it.
const rematerializable = `HloModule single, is_scheduled=true

ENTRY %main (param: f32[1]) -> f32[1] {
  %param = f32[1]{0} parameter(0)
  %reshape = f32[] reshape(%param)
  %broadcast = f32[1024]{0} broadcast(%reshape), dimensions={}
  %negate = f32[1024]{0} negate(%broadcast)
  %concatenate = f32[2048]{0} concatenate(%negate, %negate), dimensions={0}
  %slice = f32[1]{0} slice(%concatenate), slice={[0:1]}
  %concatenate.1 = f32[1025]{0} concatenate(%broadcast, %slice), dimensions={0}
  ROOT %slice.1 = f32[1]{0} slice(%concatenate.1), slice={[0:1]}
}
`

// TestRematPass: the remat pass runs between schedule and assign and the
// plan Compile returns is the rewritten module's. XLA's
// hlo_rematerialization_test.cc, SingleComputation: at a 14KiB limit the
// broadcast is rematerialized right before concatenate.1, which reads the
// clone. remat.Fit's XLA algorithm runs XLA's pass at the plan limit less
// the entry's parameter and output (GetSchedulerMemoryLimit's
// total_io_size: 4 + 4 bytes), so a plan limit of 14KiB + 8 is XLA's
// 14KiB.
func TestRematPass(t *testing.T) {
	limit := int64(14*1024 + 8)
	m := parse(t, rematerializable)
	r, err := Compile(context.Background(), m, Options{Remat: &RematOptions{Limit: limit, Algorithm: remat.XLA}})
	require.NoError(t, err)
	var names []string
	for _, p := range r.Passes {
		names = append(names, p.Name)
		if p.Name == "remat" {
			require.True(t, p.Changed)
		}
	}
	require.Equal(t, []string{"flatten-call-graph", "copy-insertion", "schedule", "remat", "assign", "check"}, names)
	require.NotNil(t, r.Remat)
	require.True(t, r.Remat.Fits, r.Remat.Message)
	require.Empty(t, r.Remat.Message)
	require.Greater(t, r.Remat.TotalBefore, limit)
	total := r.Assignment.Stats.TotalBytes
	require.LessOrEqual(t, total, limit)
	require.Equal(t, r.Remat.TotalAfter, total, "Fit measured the very plan Compile returns")
	require.NoError(t, assign.Check(r.Assignment))
	require.Same(t, r.Module, r.Assignment.Analysis.Module)
	clone := r.Module.Entry.Instruction("broadcast.remat")
	require.NotNil(t, clone, "%s", r.Module)
	require.Same(t, clone, r.Module.Entry.Instruction("concatenate.1").Operands[0])
	require.Len(t, r.Remat.Recomputed, 1)
	require.Equal(t, "broadcast", r.Remat.Recomputed[0].Original)
	// HloCostAnalysis counts no FLOPs for a broadcast (data movement).
	require.Zero(t, r.Remat.AddedFLOPs)
	require.Nil(t, m.Entry.Instruction("broadcast.remat"), "the input module is left as it was")
}

// TestRematPassNotReached: a limit the pass cannot reach is no error of
// Compile; the result says so with XLA's warning (hlo_rematerialization.cc,
// RematerializeComputation: "Can't reduce memory use below ..." is a
// warning, the pass still succeeds), and the plan is the smallest reached.
func TestRematPassNotReached(t *testing.T) {
	m := parse(t, rematerializable)
	r, err := Compile(context.Background(), m, Options{Remat: &RematOptions{Limit: 64, Algorithm: remat.XLA}})
	require.NoError(t, err)
	require.False(t, r.Remat.Fits)
	require.Contains(t, r.Remat.Message, "Can't reduce memory use below")
	require.Equal(t, r.Remat.TotalAfter, r.Assignment.Stats.TotalBytes)
	require.Less(t, r.Remat.TotalAfter, r.Remat.TotalBefore)
	require.NoError(t, assign.Check(r.Assignment))
}

// TestRematPassFitsAlready: a module whose plan is within the limit comes
// back unchanged (remat.Fit).
func TestRematPassFitsAlready(t *testing.T) {
	m := parse(t, rematerializable)
	want := m.String()
	r, err := Compile(context.Background(), m, Options{Remat: &RematOptions{Limit: 1 << 20, Algorithm: remat.XLA}})
	require.NoError(t, err)
	require.True(t, r.Remat.Fits)
	require.Empty(t, r.Remat.Recomputed)
	require.Equal(t, r.Remat.TotalBefore, r.Assignment.Stats.TotalBytes)
	require.Equal(t, want, r.Module.String())
}

func TestRematOptionsRefused(t *testing.T) {
	for _, o := range []RematOptions{{Limit: -1}, {Limit: 1, Algorithm: "magic"}} {
		_, err := Compile(context.Background(), parse(t, rematerializable), Options{Remat: &o})
		require.True(t, errors.Is(err, ErrOptions), "%+v: %v", o, err)
	}
}
