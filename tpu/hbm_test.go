package tpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

const (
	hbmKiB = int64(1) << 10
	hbmMiB = int64(1) << 20
	hbmGiB = int64(1) << 30
)

type moveRecord struct{ from, to, size int64 }

func newTestHBM(t testing.TB, capacity int64) (*HBM, *[]moveRecord) {
	t.Helper()
	h, err := NewHBM(capacity)
	require.NoError(t, err)
	var moves []moveRecord
	h.OnMove(func(from, to, size int64) { moves = append(moves, moveRecord{from, to, size}) })
	return h, &moves
}

func mustAllocate(t testing.TB, h *HBM, size, align int64) int64 {
	t.Helper()
	addr, err := h.Allocate(size, align)
	require.NoError(t, err, "allocate %d bytes aligned to %d", size, align)
	return addr
}

func TestNewHBMRejectsCapacity(t *testing.T) {
	for _, c := range []int64{0, -1, math.MinInt64} {
		_, err := NewHBM(c)
		require.EqualError(t, err, fmt.Sprintf("tpu: hbm capacity %d must be positive", c))
	}
}

func TestHBMAllocateFreeStats(t *testing.T) {
	h, moves := newTestHBM(t, hbmMiB)
	require.Equal(t, int64(0), mustAllocate(t, h, 1000, 0))
	require.Equal(t, int64(1024), mustAllocate(t, h, 100, 0), "the next granule")
	require.Equal(t, int64(1536), mustAllocate(t, h, 0, 0), "a 0-byte request reserves a byte of its own")
	require.Equal(t, int64(2048), mustAllocate(t, h, 512, 0))
	require.Equal(t, []Region{{0, 1000}, {1024, 100}, {1536, 1}, {2048, 512}}, h.Regions())
	require.Equal(t, HBMStats{Capacity: hbmMiB, InUse: 1613, Peak: 1613, NumAllocs: 4, Live: 4, LargestFree: hbmMiB - 2560}, h.Stats())

	require.NoError(t, h.Free(1024))
	require.EqualError(t, h.Free(1024), "tpu: hbm: free of 1024, which is not the base of a live region")
	require.Error(t, h.Free(1), "not a base")
	require.Error(t, h.Free(-512))
	require.Error(t, h.Free(hbmMiB))
	st := h.Stats()
	require.Equal(t, int64(1513), st.InUse)
	require.Equal(t, int64(1613), st.Peak)

	// First fit: the lowest gap that holds the request.
	require.Equal(t, int64(1024), mustAllocate(t, h, 512, 0))
	require.Equal(t, int64(2560), mustAllocate(t, h, 513, 0), "too large for the gap at 1024 after the last fill")
	require.Empty(t, *moves)
	require.Zero(t, h.Stats().Compactions)
	require.Equal(t, int64(6), h.Stats().NumAllocs)
}

func TestHBMAlignment(t *testing.T) {
	h, _ := newTestHBM(t, hbmMiB)
	require.Equal(t, int64(0), mustAllocate(t, h, 1, 1))
	require.Equal(t, int64(Granule), mustAllocate(t, h, 1, 256), "alignment below the granule gives the granule")
	require.Equal(t, int64(4096), mustAllocate(t, h, 1, 4096))
	require.Equal(t, int64(64*hbmKiB), mustAllocate(t, h, 10, 64*hbmKiB))
	require.Equal(t, int64(1024), mustAllocate(t, h, 3000, 0), "first fit fills the gap below")
	for _, r := range h.Regions() {
		require.Zero(t, r.Addr%Granule)
	}

	for _, bad := range []int64{3, -1, 768, math.MinInt64} {
		_, err := h.Allocate(8, bad)
		require.EqualError(t, err, fmt.Sprintf("tpu: hbm: alignment %d is not a power of two", bad))
	}
	_, err := h.Allocate(-1, 0)
	require.EqualError(t, err, "tpu: hbm: allocate -1 bytes")
	_, err = h.Allocate(math.MinInt64, 0)
	require.Error(t, err)

	// Requests that cannot fit, without overflow or panic.
	for _, c := range []struct{ size, align int64 }{
		{math.MaxInt64, 0}, {hbmMiB + 1, 0}, {1, 1 << 62}, {math.MaxInt64, 1 << 62}, {hbmMiB, hbmMiB},
	} {
		_, err := h.Allocate(c.size, c.align)
		var oom *OOMError
		require.ErrorAs(t, err, &oom, "size %d align %d", c.size, c.align)
		require.Equal(t, c.size, oom.Requested)
	}
	require.Zero(t, h.Stats().Compactions, "nothing fits, so nothing moves")

	// A huge alignment is honoured at address 0.
	e, _ := newTestHBM(t, hbmMiB)
	require.Equal(t, int64(0), mustAllocate(t, e, 1, 1<<62))
}

func TestHBMAccess(t *testing.T) {
	h, _ := newTestHBM(t, hbmMiB)
	h.Fill = 0xA5
	a := mustAllocate(t, h, 100*hbmKiB, 0) // spans two pages
	b := mustAllocate(t, h, 10, 0)
	buf := make([]byte, 100*hbmKiB)
	require.NoError(t, h.ReadAt(buf, a))
	require.Equal(t, bytes.Repeat([]byte{0xA5}, len(buf)), buf, "never written: Fill")
	pat := pattern(7, 70*hbmKiB)
	require.NoError(t, h.WriteAt(pat, a+5))
	require.NoError(t, h.ReadAt(buf, a))
	require.Equal(t, byte(0xA5), buf[4])
	require.Equal(t, pat, buf[5:5+len(pat)])
	require.Equal(t, byte(0xA5), buf[5+len(pat)])

	for _, c := range []struct {
		n    int
		addr int64
	}{
		{1, -1}, {1, math.MinInt64}, {2, a + 100*hbmKiB - 1}, {2, b - 1}, {11, b}, {1, b + 10}, {1, hbmMiB}, {1, math.MaxInt64},
	} {
		require.ErrorIs(t, h.ReadAt(make([]byte, c.n), c.addr), exec.ErrOutOfBounds, "read %d at %d", c.n, c.addr)
		require.ErrorIs(t, h.WriteAt(make([]byte, c.n), c.addr), exec.ErrOutOfBounds, "write %d at %d", c.n, c.addr)
	}
	require.NoError(t, h.Free(a))
	require.ErrorIs(t, h.ReadAt(make([]byte, 1), a), exec.ErrOutOfBounds, "a freed region")
	require.NoError(t, h.ReadAt(nil, -7), "an empty access touches nothing")

	// Freed bytes read as Fill in the next region, and the pages no live
	// region touches are gone.
	require.False(t, h.pages.Has(0), "page 0 held only the freed region")
	requirePagesLive(t, h)
	c := mustAllocate(t, h, 100*hbmKiB, 0)
	require.Equal(t, a, c)
	require.NoError(t, h.ReadAt(buf, c))
	require.Equal(t, bytes.Repeat([]byte{0xA5}, len(buf)), buf)
}

// pattern returns n bytes that differ with seed.
func pattern(seed uint64, n int64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x70))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// TestHBMCompaction: a request no gap holds slides the live regions down
// in order, with their bytes, reports each move and counts the bytes.
func TestHBMCompaction(t *testing.T) {
	const sz = 96 * hbmKiB // not a page multiple: moves cross pages
	h, moves := newTestHBM(t, 10*sz)
	h.Fill = 0x3C
	var addrs []int64
	for i := range 10 {
		addrs = append(addrs, mustAllocate(t, h, sz, 0))
		require.Equal(t, int64(i)*sz, addrs[i])
	}
	pats := map[int][]byte{}
	for i := 1; i < 10; i += 2 {
		pats[i] = pattern(uint64(i), sz)
		require.NoError(t, h.WriteAt(pats[i], addrs[i]))
	}
	for i := 0; i < 10; i += 2 {
		require.NoError(t, h.WriteAt(pattern(100, sz), addrs[i]))
		require.NoError(t, h.Free(addrs[i]))
	}
	// Region 1 keeps a partial write too: the bytes after it read as Fill.
	require.Equal(t, int64(5*sz), h.Stats().InUse)
	require.Equal(t, sz, h.Stats().LargestFree)

	big := mustAllocate(t, h, 2*sz, 0)
	st := h.Stats()
	require.Equal(t, int64(1), st.Compactions)
	require.Equal(t, int64(5*sz), st.BytesMoved, "each of the five live regions moves down")
	require.Equal(t, []moveRecord{{1 * sz, 0, sz}, {3 * sz, sz, sz}, {5 * sz, 2 * sz, sz}, {7 * sz, 3 * sz, sz}, {9 * sz, 4 * sz, sz}}, *moves)
	require.Equal(t, 5*sz, big)
	require.Equal(t, []Region{{0, sz}, {sz, sz}, {2 * sz, sz}, {3 * sz, sz}, {4 * sz, sz}, {5 * sz, 2 * sz}}, h.Regions())
	buf := make([]byte, sz)
	for k, i := range []int{1, 3, 5, 7, 9} {
		require.NoError(t, h.ReadAt(buf, int64(k)*sz))
		require.Equal(t, pats[i], buf, "region %d's bytes at its new address", i)
	}
	buf = make([]byte, 2*sz)
	require.NoError(t, h.ReadAt(buf, big))
	require.Equal(t, bytes.Repeat([]byte{0x3C}, len(buf)), buf, "the new region holds no stale byte")
	requirePagesLive(t, h)

	// Alignment is kept: a region asked with 64 KiB alignment slides down
	// to the next multiple of 64 KiB, not to the end of the one below.
	g, gm := newTestHBM(t, 8*64*hbmKiB)
	require.Equal(t, int64(0), mustAllocate(t, g, 1000, 0))
	p := mustAllocate(t, g, 64*hbmKiB, 0)
	y := mustAllocate(t, g, 1000, 64*hbmKiB)
	require.Equal(t, []int64{1024, 128 * hbmKiB}, []int64{p, y})
	require.NoError(t, g.WriteAt(pattern(9, 1000), y))
	require.NoError(t, g.Free(p))
	w := mustAllocate(t, g, 400000, 0)
	require.Equal(t, []moveRecord{{128 * hbmKiB, 64 * hbmKiB, 1000}}, *gm)
	require.Equal(t, int64(64*hbmKiB+1024), w)
	b := make([]byte, 1000)
	require.NoError(t, g.ReadAt(b, 64*hbmKiB))
	require.Equal(t, pattern(9, 1000), b)
	requirePagesLive(t, g)
}

// requirePagesLive checks that every backed page holds a byte of a live
// region: the memory costs what the live regions touch.
func requirePagesLive(t testing.TB, h *HBM) {
	t.Helper()
	for p := range h.pages.All() {
		lo, hi := p*exec.PageSize, (p+1)*exec.PageSize
		live := false
		for _, r := range h.Regions() {
			if r.Addr < hi && r.Addr+r.Size > lo {
				live = true
			}
		}
		require.True(t, live, "page %d backs no live region", p)
	}
}

func TestHBMOOM(t *testing.T) {
	h, moves := newTestHBM(t, hbmMiB)
	for range 4 {
		mustAllocate(t, h, 256*hbmKiB, 0)
	}
	require.NoError(t, h.Free(256*hbmKiB))
	before := h.Regions()
	_, err := h.Allocate(512*hbmKiB, 0)
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.Equal(t, OOMError{Requested: 512 * hbmKiB, Free: 256 * hbmKiB, Capacity: hbmMiB}, *oom)
	require.EqualError(t, err, "Ran out of memory in memory space hbm: allocating 524288 bytes, 262144 free of 1048576")
	require.Equal(t, before, h.Regions(), "an OOM moves nothing")
	require.Empty(t, *moves)
	require.Zero(t, h.Stats().Compactions)

	// Free memory that alignment padding eats is still an OOM, and says so.
	g, _ := newTestHBM(t, 2048)
	a := mustAllocate(t, g, 1, 0)
	mustAllocate(t, g, 1, 0)
	require.NoError(t, g.Free(a))
	_, err = g.Allocate(1600, 0)
	require.ErrorAs(t, err, &oom)
	require.Equal(t, OOMError{Requested: 1600, Free: 2047, Capacity: 2048}, *oom)
	require.EqualError(t, err, "Ran out of memory in memory space hbm: allocating 1600 bytes, 2047 free of 2048 (too little left once the regions are compacted with their alignment)")
	require.Zero(t, g.Stats().Compactions)
}

// TestHBMSucceedsWhereBFCFragments: the same workload on XLA's BFC
// allocator growing regions on demand (JAX without preallocation) and on
// the compacting HBM. Twelve 1 GiB buffers, every other one freed, then
// 1 GiB and 2 GiB: the BFC's 2 GiB request finds 5 GiB free in 1 GiB holes
// and fails for fragmentation; the HBM compacts once and succeeds.
func TestHBMSucceedsWhereBFCFragments(t *testing.T) {
	bfc, err := gpu.NewBFC(gpu.BFCOptions{Limit: 12 << 30, AllowGrowth: true, DeviceMemory: 16 << 30})
	require.NoError(t, err)
	h, moves := newTestHBM(t, 12<<30)
	type allocator struct {
		name     string
		allocate func(int64) (int64, error)
		free     func(int64) error
	}
	run := func(a allocator) error {
		var addrs []int64
		for range 12 {
			addr, err := a.allocate(hbmGiB)
			require.NoError(t, err, a.name)
			addrs = append(addrs, addr)
		}
		for i := 1; i < 12; i += 2 {
			require.NoError(t, a.free(addrs[i]), a.name)
		}
		_, err := a.allocate(hbmGiB)
		require.NoError(t, err, a.name)
		_, err = a.allocate(2 * hbmGiB)
		return err
	}
	err = run(allocator{"bfc", bfc.Allocate, bfc.Free})
	var boom *gpu.OOMError
	require.ErrorAs(t, err, &boom)
	require.True(t, boom.Fragmented(), "the BFC fails with %d bytes free", boom.Free)
	var sizes []int64
	for _, r := range bfc.Regions() {
		sizes = append(sizes, r.Size/hbmGiB)
	}
	require.Equal(t, []int64{1, 1, 2, 4, 4}, sizes, "the BFC's regions, in GiB")

	require.NoError(t, run(allocator{"hbm", func(n int64) (int64, error) { return h.Allocate(n, 0) }, h.Free}))
	st := h.Stats()
	require.Equal(t, int64(1), st.Compactions)
	require.Positive(t, st.BytesMoved)
	require.Equal(t, 4*hbmGiB, st.BytesMoved, "the regions at 4, 6, 8 and 10 GiB slide down one hole each")
	require.Len(t, *moves, 4)
	require.Equal(t, 9*hbmGiB, st.InUse)
	t.Logf("bfc: %v free, largest free block %d bytes: OOM; hbm: %d compaction, %d bytes moved in %d moves, 2 GiB placed at %d",
		boom.Free, boom.Stats.LargestFreeBlockBytes, st.Compactions, st.BytesMoved, len(*moves), h.Regions()[len(h.Regions())-1].Addr)
}

// TestExecuteOnFragmentedHBM runs the gpu fragmentation program, scaled
// down 1024 times (f32[262144] is 1 MiB), through exec.Execute on a
// 12 MiB HBM fragmented into 1 MiB holes by buffers another owner keeps:
// placing the program's allocations needs a compaction, the outputs equal
// the reference run's bit for bit, and the other owner's bytes survive.
func TestExecuteOnFragmentedHBM(t *testing.T) {
	src, err := os.ReadFile("../gpu/testdata/frag.hlo")
	require.NoError(t, err)
	small := strings.NewReplacer("268435456", "262144", "536870912", "524288").Replace(string(src))
	m, err := hlo.ParseModule("frag_small.hlo", small)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	ctx := context.Background()
	as, err := assign.Assign(ctx, a, assign.Options{Target: assign.TPU})
	require.NoError(t, err)
	var need int64
	for _, al := range as.Allocations {
		need += al.Size
		t.Logf("allocation %d: %d bytes", al.Index, al.Size)
	}
	require.LessOrEqual(t, need, 6*hbmMiB, "the program fits the free memory")

	h, _ := newTestHBM(t, 12*hbmMiB)
	h.Fill = exec.PoisonByte
	var kept []int64
	for i := range 12 {
		addr := mustAllocate(t, h, hbmMiB, 0)
		require.Equal(t, int64(i)*hbmMiB, addr)
		kept = append(kept, addr)
	}
	for i := 1; i < 12; i += 2 {
		require.NoError(t, h.Free(kept[i]))
	}
	for i := 0; i < 12; i += 2 {
		require.NoError(t, h.WriteAt(pattern(uint64(1000+i), hbmMiB), kept[i]))
	}
	require.Equal(t, hbmMiB, h.Stats().LargestFree)

	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
	ref, err := exec.Execute(ctx, as, args, nil, exec.Options{Reference: true})
	require.NoError(t, err)
	got, err := exec.Execute(ctx, as, args, h, exec.Options{})
	require.NoError(t, err)
	st := h.Stats()
	require.GreaterOrEqual(t, st.Compactions, int64(1), "the run placed its allocations only by compacting")
	require.Equal(t, len(ref.Outputs), len(got.Outputs))
	for i := range ref.Outputs {
		require.Equal(t, ref.Outputs[i].Checksum(), got.Outputs[i].Checksum(), "output %d", i)
		require.Equal(t, ref.Outputs[i].Data, got.Outputs[i].Data, "output %d", i)
	}
	t.Logf("%d allocations (%d bytes) on 6 MiB free in 1 MiB holes: %d compactions, %d bytes moved", len(as.Allocations), need, st.Compactions, st.BytesMoved)

	// The kept buffers moved with their bytes, in their order.
	next := 0
	buf := make([]byte, hbmMiB)
	for _, r := range h.Regions() {
		if r.Size != hbmMiB {
			continue
		}
		require.NoError(t, h.ReadAt(buf, r.Addr))
		if next < 6 && bytes.Equal(buf, pattern(uint64(1000+2*next), hbmMiB)) {
			next++
		}
	}
	require.Equal(t, 6, next, "every kept buffer's bytes, in order")
}

// FuzzHBM runs op sequences on a small HBM against a model kept by the
// test: every Allocate is checked against first fit computed here, every
// compaction against the sliding layout computed here, and after every op
// the regions are disjoint, aligned, within the capacity, the counters
// add up, and (after a compaction, a read or at the end) every live
// region holds what was written to it, Fill elsewhere.
func FuzzHBM(f *testing.F) {
	f.Add([]byte{0, 10, 20, 1, 0, 50, 3, 0, 2, 0, 9, 200, 1, 0, 0, 0, 0, 255, 255, 3, 3, 1, 0, 0})
	f.Add(bytes.Repeat([]byte{0, 60, 7, 1, 2, 1, 9, 80}, 12))
	f.Add([]byte{0, 255, 255, 1, 0, 255, 255, 1, 1, 0, 0, 0, 0, 255, 255, 1, 3, 0, 1, 0, 3, 0, 2, 0, 3, 0, 3, 0})
	// Found by fuzzing: the room a compaction makes is in the padding below
	// a region aligned to 64 KiB, not at the top.
	f.Add([]byte("000100020aX20\xa6070x\xa620\xef010\xfc0100021100120000000\xd5\xc68"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		const capacity = 384 * hbmKiB
		h, moves := newTestHBM(t, capacity)
		h.Fill = 0x5A
		type live struct {
			addr, size, align int64
			data              []byte // nil: never written, all Fill
		}
		var lv []*live // by address
		var numAllocs, moved, compactions, peak int64
		var wrote uint64
		checkContents := func(r *live) {
			buf := make([]byte, r.size)
			require.NoError(t, h.ReadAt(buf, r.addr))
			want := r.data
			if want == nil {
				want = bytes.Repeat([]byte{h.Fill}, int(r.size))
			}
			require.True(t, bytes.Equal(want, buf), "region at %d (%d bytes) lost its bytes", r.addr, r.size)
		}
		// fit is first fit over the model's regions, or -1.
		fit := func(rs []*live, size, align int64) int64 {
			prev := int64(0)
			for _, r := range append(rs, &live{addr: capacity}) {
				a := (prev + align - 1) / align * align
				if a+size <= r.addr {
					return a
				}
				prev = r.addr + r.size
			}
			return -1
		}
		for len(ops) >= 4 {
			op, x, y, z := ops[0], int64(ops[1]), int64(ops[2]), ops[3]
			ops = ops[4:]
			compacted := false
			switch op % 4 {
			case 0:
				size := x*y/4 + int64(z>>4)
				if z&1 != 0 {
					size = x<<9 + y
				}
				align := []int64{0, 1, 512, 2048, 64 * hbmKiB}[int(z>>1)%5]
				eff := max(align, Granule)
				want := fit(lv, max(size, 1), eff)
				// The sliding layout, should first fit fail.
				var slid []*live
				var wantMoves []moveRecord
				end := int64(0)
				for _, r := range lv {
					to := (end + r.align - 1) / r.align * r.align
					if to != r.addr {
						wantMoves = append(wantMoves, moveRecord{r.addr, to, r.size})
					}
					slid = append(slid, &live{addr: to, size: r.size})
					end = to + r.size
				}
				*moves = nil
				addr, err := h.Allocate(size, align)
				if want < 0 {
					want = fit(slid, max(size, 1), eff)
					if want < 0 {
						var oom *OOMError
						require.ErrorAs(t, err, &oom)
						require.Equal(t, max(size, 1), oom.Requested)
						require.Empty(t, *moves)
						break
					}
					compacted = true
					require.Equal(t, wantMoves, *moves, "err %v addr %d size %d align %d", err, addr, size, align)
					for i, r := range lv {
						if slid[i].addr != r.addr {
							moved += r.size
						}
						r.addr = slid[i].addr
					}
					compactions++
				} else {
					require.Empty(t, *moves)
				}
				require.NoError(t, err)
				require.Equal(t, want, addr)
				r := &live{addr: addr, size: max(size, 1), align: eff}
				i := 0
				for i < len(lv) && lv[i].addr < addr {
					i++
				}
				lv = append(lv[:i], append([]*live{r}, lv[i:]...)...)
				numAllocs++
			case 1:
				if len(lv) == 0 {
					break
				}
				i := int(x) % len(lv)
				require.NoError(t, h.Free(lv[i].addr))
				lv = append(lv[:i], lv[i+1:]...)
			case 2:
				if len(lv) == 0 {
					break
				}
				r := lv[int(x)%len(lv)]
				off := (y << 8) % r.size
				n := min(r.size-off, int64(z)*97+1)
				wrote++
				p := pattern(wrote, n)
				require.NoError(t, h.WriteAt(p, r.addr+off))
				if r.data == nil {
					r.data = bytes.Repeat([]byte{h.Fill}, int(r.size))
				}
				copy(r.data[off:], p)
			case 3:
				if len(lv) > 0 {
					r := lv[int(x)%len(lv)]
					checkContents(r)
					require.ErrorIs(t, h.ReadAt(make([]byte, r.size+1), r.addr), exec.ErrOutOfBounds)
					require.ErrorIs(t, h.WriteAt(make([]byte, 1), capacity+int64(z)), exec.ErrOutOfBounds)
					if r.size > 1 {
						require.Error(t, h.Free(r.addr+1))
					}
				}
				_, err := h.Allocate(-1-y, 0)
				require.Error(t, err)
				_, err = h.Allocate(x, 3+2*y)
				require.Error(t, err)
				require.Error(t, h.Free(-1-x))
			}
			// Invariants.
			var inUse int64
			rs := h.Regions()
			require.Len(t, rs, len(lv))
			for i, r := range lv {
				require.Equal(t, Region{r.addr, r.size}, rs[i])
				require.Zero(t, r.addr%r.align, "region at %d aligned to %d", r.addr, r.align)
				require.True(t, r.addr >= 0 && r.size > 0 && r.addr+r.size <= capacity)
				if i > 0 {
					require.LessOrEqual(t, lv[i-1].addr+lv[i-1].size, r.addr, "regions overlap")
				}
				inUse += r.size
			}
			peak = max(peak, inUse)
			largest, prev := int64(0), int64(0)
			for _, r := range append(lv, &live{addr: capacity}) {
				largest = max(largest, r.addr-prev)
				prev = r.addr + r.size
			}
			require.Equal(t, HBMStats{Capacity: capacity, InUse: inUse, Peak: peak, NumAllocs: numAllocs, Live: len(lv),
				LargestFree: largest, Compactions: compactions, BytesMoved: moved}, h.Stats())
			if compacted {
				for _, r := range lv {
					checkContents(r)
				}
			}
		}
		for _, r := range lv {
			checkContents(r)
		}
		requirePagesLive(t, h)
	})
}

// TestChipSpaces: a chip's three memories share one address space; each
// allocates within its own capacity, reads and writes reach the space an
// address is in, and a space too small fails with its name.
func TestChipSpaces(t *testing.T) {
	_, err := NewChip(Generation{HBM: 0}, 0)
	require.Error(t, err)
	_, err = NewChip(Generation{HBM: VMEMBase}, 0)
	require.Error(t, err)
	c, err := NewChip(Generation{HBM: 1 << 20, VMEM: 4096, SMEM: 1024}, 0xA5)
	require.NoError(t, err)
	h, err := c.Allocate(1000, 0)
	require.NoError(t, err)
	require.Less(t, h, VMEMBase)
	v, err := c.AllocateIn(VMEMSpace, 4000, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, v, VMEMBase)
	require.Less(t, v, SMEMBase)
	s, err := c.AllocateIn(SMEMSpace, 8, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, s, SMEMBase)
	h0, err := c.AllocateIn(HBMSpace, 10, 0)
	require.NoError(t, err)
	require.Less(t, h0, VMEMBase)
	for i, addr := range []int64{h, v, s} {
		want := []byte{byte(i + 1), byte(i + 2), byte(i + 3)}
		require.NoError(t, c.WriteAt(want, addr))
		got := make([]byte, 3)
		require.NoError(t, c.ReadAt(got, addr))
		require.Equal(t, want, got)
	}
	// Fresh bytes read as the fill, in every space.
	got := make([]byte, 2)
	require.NoError(t, c.ReadAt(got, v+100))
	require.Equal(t, []byte{0xA5, 0xA5}, got)
	require.Equal(t, int64(4000), c.VMEM().Stats().InUse)
	require.Equal(t, int64(8), c.SMEM().Stats().InUse)

	_, err = c.AllocateIn(VMEMSpace, 200, 0)
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.Equal(t, "vmem", oom.Space)
	require.Contains(t, err.Error(), "memory space vmem")
	_, err = c.AllocateIn(7, 8, 0)
	require.Error(t, err)
	// Outside every region of a space is out of bounds.
	require.ErrorIs(t, c.ReadAt(got, SMEMBase+4000), exec.ErrOutOfBounds)

	require.NoError(t, c.Free(v))
	require.NoError(t, c.Free(s))
	require.NoError(t, c.Free(h))
	require.Zero(t, c.VMEM().Stats().InUse)
	require.Error(t, c.Free(v), "freed twice")

	// A chip without SMEM takes no SMEM allocation.
	c, err = NewChip(Generation{HBM: 1 << 20}, 0)
	require.NoError(t, err)
	_, err = c.AllocateIn(SMEMSpace, 4, 0)
	require.ErrorAs(t, err, &oom)
}

// TestChipForwardsMoves: a compaction in VMEM reports its moves in the
// chip's addresses.
func TestChipForwardsMoves(t *testing.T) {
	c, err := NewChip(Generation{HBM: 1 << 20, VMEM: 4 * Granule, SMEM: 1024}, 0)
	require.NoError(t, err)
	var moves [][3]int64
	c.OnMove(func(from, to, size int64) { moves = append(moves, [3]int64{from, to, size}) })
	a, err := c.AllocateIn(VMEMSpace, Granule, 0)
	require.NoError(t, err)
	b, err := c.AllocateIn(VMEMSpace, Granule, 0)
	require.NoError(t, err)
	_, err = c.AllocateIn(VMEMSpace, Granule, 0)
	require.NoError(t, err)
	require.NoError(t, c.Free(a))
	_, err = c.AllocateIn(VMEMSpace, 2*Granule, 0)
	require.NoError(t, err)
	require.NotEmpty(t, moves)
	require.Equal(t, [3]int64{b, VMEMBase, Granule}, moves[0])
	c.OnMove(nil)
}
