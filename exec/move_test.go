package exec

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

// movingMemory is a Memory that moves every live region on its k-th
// Allocate: each goes to a fresh region of the arena (upward, unlike a
// compacting allocator, so that no direction is taken for granted), its
// bytes copied, the old region freed, and the mover's callback told.
type movingMemory struct {
	*HostArena
	k, calls int
	live     []struct{ addr, size int64 }
	onMove   func(from, to, size int64)
	moves    int
}

var _ Mover = (*movingMemory)(nil)

func newMovingMemory(k int) *movingMemory {
	h := NewHostArena()
	h.Fill = PoisonByte
	return &movingMemory{HostArena: h, k: k}
}

func (m *movingMemory) OnMove(f func(from, to, size int64)) { m.onMove = f }

func (m *movingMemory) Allocate(size, align int64) (int64, error) {
	m.calls++
	if m.calls == m.k {
		for i, r := range m.live {
			to, err := m.HostArena.Allocate(r.size, align)
			if err != nil {
				return 0, err
			}
			buf := make([]byte, r.size)
			if err := m.ReadAt(buf, r.addr); err != nil {
				return 0, err
			}
			if err := m.WriteAt(buf, to); err != nil {
				return 0, err
			}
			if err := m.Free(r.addr); err != nil {
				return 0, err
			}
			m.live[i].addr = to
			m.moves++
			if m.onMove != nil {
				m.onMove(r.addr, to, r.size)
			}
		}
	}
	addr, err := m.HostArena.Allocate(size, align)
	if err == nil {
		m.live = append(m.live, struct{ addr, size int64 }{addr, size})
	}
	return addr, err
}

// hidden is a Memory without OnMove: a mover that tells nobody.
type hidden struct{ Memory }

const moveModule = `HloModule t

body {
  s = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[64] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[64] sine(v)
  ROOT t = (s32[], f32[64]) tuple(i2, v2)
}

cond {
  s = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  p = f32[64] parameter(0)
  q = f32[128] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[64]) tuple(z, p)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  r = f32[64] get-tuple-element(w), index=1
  x = f32[64] exponential(r)
  c = f32[192] concatenate(x, q), dimensions={0}
  n = f32[192] negate(c)
  ROOT out = (f32[192], f32[64]) tuple(n, x)
}
`

// TestExecuteFollowsMoves: on a memory that moves every region placed so
// far while Execute places the next, for each k, the run follows the
// moves through Mover and computes bit for bit what the reference run
// computes; a memory that moves without telling gives an out-of-bounds
// access instead.
func TestExecuteFollowsMoves(t *testing.T) {
	m, err := hlo.ParseModule("move.hlo", moveModule)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	ctx := context.Background()
	as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU})
	require.NoError(t, err)
	n := len(as.Allocations)
	require.GreaterOrEqual(t, n, 3, "enough allocations to move some mid-placement")
	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(3, 0)))
	ref, err := Execute(ctx, as, args, nil, Options{Reference: true})
	require.NoError(t, err)

	for k := 1; k <= n; k++ {
		mem := newMovingMemory(k)
		got, err := Execute(ctx, as, args, mem, Options{})
		require.NoError(t, err, "moves on allocation %d", k)
		require.Equal(t, k-1, mem.moves)
		require.Nil(t, mem.onMove, "Execute leaves no callback behind")
		require.Equal(t, len(ref.Outputs), len(got.Outputs))
		for i := range ref.Outputs {
			require.Equal(t, ref.Outputs[i].Data, got.Outputs[i].Data, "moves on allocation %d: output %d", k, i)
		}
	}

	_, err = Execute(ctx, as, args, hidden{newMovingMemory(n)}, Options{})
	require.ErrorIs(t, err, ErrOutOfBounds, "moved regions nobody was told of")
}

// TestMoverIgnoresOtherRegions: moves of regions the run does not own
// (here, ones allocated before it) leave its addresses alone.
func TestMoverIgnoresOtherRegions(t *testing.T) {
	m, err := hlo.ParseModule("move.hlo", moveModule)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	ctx := context.Background()
	as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU})
	require.NoError(t, err)
	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(4, 0)))
	ref, err := Execute(ctx, as, args, nil, Options{Reference: true})
	require.NoError(t, err)

	mem := newMovingMemory(4)
	for range 3 {
		_, err := mem.Allocate(1000, 256)
		require.NoError(t, err)
	}
	got, err := Execute(ctx, as, args, mem, Options{})
	require.NoError(t, err)
	require.Equal(t, 3, mem.moves, "only the foreign regions moved")
	for i := range ref.Outputs {
		require.Equal(t, ref.Outputs[i].Data, got.Outputs[i].Data, "output %d", i)
	}
}
