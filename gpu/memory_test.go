package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/randhlo"
)

func newTestBFC(t testing.TB, limit int64) *BFC {
	t.Helper()
	a, err := NewBFC(BFCOptions{Limit: limit})
	require.NoError(t, err)
	return a
}

// TestMemory: a Memory over BFC hands out the allocator's addresses,
// holds bytes at them, refuses accesses outside its live regions (bytes
// past a request included, though the chunk is rounded up), and reads
// Fill from bytes a freed region left, when the allocator hands them out
// again.
func TestMemory(t *testing.T) {
	bfc := newTestBFC(t, 16<<20)
	m := NewMemory(bfc, 0xA5)
	require.Same(t, Allocator(bfc), m.Allocator())

	a, err := m.Allocate(1000, 256)
	require.NoError(t, err)
	b, err := m.Allocate(100, 0)
	require.NoError(t, err)
	require.Equal(t, a+1024, b, "BFC's best fit: the next chunk, after a's rounded 1024 bytes")
	require.Equal(t, int64(2), bfc.Stats().NumAllocs)

	got := make([]byte, 4)
	require.NoError(t, m.ReadAt(got, a))
	require.Equal(t, []byte{0xA5, 0xA5, 0xA5, 0xA5}, got, "never written")
	require.NoError(t, m.WriteAt([]byte{1, 2, 3, 4}, a+996))
	require.NoError(t, m.WriteAt([]byte{9, 8, 7}, b))
	require.NoError(t, m.ReadAt(got, a+996))
	require.Equal(t, []byte{1, 2, 3, 4}, got)

	for _, c := range []struct {
		addr int64
		n    int
	}{
		{a + 997, 4},  // past a's 1000 bytes, inside its 1024-byte chunk
		{a + 1000, 1}, // the rounding
		{b + 100, 1},  // past b
		{a - 1, 2},    // below the first region
		{b + 4096, 1}, // free arena
	} {
		require.ErrorIs(t, m.ReadAt(make([]byte, c.n), c.addr), exec.ErrOutOfBounds, "read %d at %#x", c.n, c.addr)
		require.ErrorIs(t, m.WriteAt(make([]byte, c.n), c.addr), exec.ErrOutOfBounds, "write %d at %#x", c.n, c.addr)
	}
	require.NoError(t, m.ReadAt(nil, b+100), "an empty access is always in bounds")

	// Freed bytes read as Fill when BFC hands them out again; b, on the
	// same page, keeps its own.
	require.NoError(t, m.Free(a))
	require.ErrorIs(t, m.ReadAt(got, a), exec.ErrOutOfBounds, "a freed region")
	require.Error(t, m.Free(a), "a double free")
	a2, err := m.Allocate(1000, 256)
	require.NoError(t, err)
	require.Equal(t, a, a2, "BFC reuses the freed chunk")
	require.NoError(t, m.ReadAt(got, a2+996))
	require.Equal(t, []byte{0xA5, 0xA5, 0xA5, 0xA5}, got)
	got3 := make([]byte, 3)
	require.NoError(t, m.ReadAt(got3, b))
	require.Equal(t, []byte{9, 8, 7}, got3)

	// An alignment above BFC's granule.
	c, err := m.Allocate(10, 1<<16)
	require.NoError(t, err)
	require.Zero(t, c%(1<<16))
	require.NoError(t, m.WriteAt(make([]byte, 10), c))
	require.NoError(t, m.Free(c))

	_, err = m.Allocate(-1, 0)
	require.Error(t, err)
	_, err = m.Allocate(1, 3)
	require.Error(t, err)
	var oom *OOMError
	_, err = m.Allocate(32<<20, 256)
	require.ErrorAs(t, err, &oom, "more than the arena: the allocator's OOM")

	require.NoError(t, m.Free(a2))
	require.NoError(t, m.Free(b))
	require.Zero(t, bfc.Stats().BytesInUse)
	require.Zero(t, m.pages.Len(), "no page outlives the regions")
}

// TestMemoryOtherAllocators: the platform and cuda_async allocators back
// a Memory too.
func TestMemoryOtherAllocators(t *testing.T) {
	plat, err := NewPlatform(PlatformOptions{Limit: 1 << 30})
	require.NoError(t, err)
	pool, err := NewCudaAsync(CudaAsyncOptions{Limit: 1 << 30})
	require.NoError(t, err)
	for _, al := range []Allocator{plat, pool} {
		m := NewMemory(al, 0)
		a, err := m.Allocate(3000, 256)
		require.NoError(t, err, al.Name())
		require.NoError(t, m.WriteAt(bytes.Repeat([]byte{7}, 3000), a), al.Name())
		got := make([]byte, 3000)
		require.NoError(t, m.ReadAt(got, a), al.Name())
		require.Equal(t, bytes.Repeat([]byte{7}, 3000), got, al.Name())
		require.ErrorIs(t, m.ReadAt(got[:1], a+3000), exec.ErrOutOfBounds, al.Name())
		require.NoError(t, m.Free(a), al.Name())
		require.Zero(t, al.Stats().BytesInUse, al.Name())
	}
}

// planFor prepares and assigns a module for the GPU.
func planFor(t testing.TB, name, text string) *assign.Assignment {
	t.Helper()
	m, err := hlo.ParseModule(name, text)
	require.NoError(t, err)
	planned, err := compile.Compile(context.Background(), m, compile.Options{Assign: assign.Options{Target: assign.GPU, Budget: 20 * time.Millisecond}})
	require.NoError(t, err)
	as := planned.Assignment
	require.NoError(t, err)
	return as
}

// runOnBFC runs as through exec.Execute on mem and on the default host
// arena, and requires the same outputs,
// bit for bit, as each other and as the reference run's; mem is fresh (it
// holds no region), its allocator may hold others' allocations.
func runOnBFC(t *testing.T, name string, as *assign.Assignment, mem *Memory) {
	t.Helper()
	ctx := context.Background()
	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
	ref, err := exec.Execute(ctx, as, args, nil, exec.Options{Reference: true})
	require.NoError(t, err, name)
	host, err := exec.Execute(ctx, as, args, nil, exec.Options{})
	require.NoError(t, err, name)
	before := mem.Allocator().Stats()
	got, err := exec.Execute(ctx, as, args, mem, exec.Options{})
	require.NoError(t, err, name)
	require.Len(t, got.Outputs, len(ref.Outputs), name)
	for i := range ref.Outputs {
		require.Equal(t, ref.Outputs[i].Shape.String(), got.Outputs[i].Shape.String(), "%s: output %d", name, i)
		require.True(t, bytes.Equal(host.Outputs[i].Data, got.Outputs[i].Data), "%s: output %d differs from the host arena's", name, i)
		require.True(t, bytes.Equal(ref.Outputs[i].Data, got.Outputs[i].Data), "%s: output %d differs from the reference run's", name, i)
	}
	require.Equal(t, host.Steps, got.Steps, name)
	// Every allocation of the plan was asked of the allocator once.
	st := mem.Allocator().Stats()
	require.Equal(t, int64(len(as.Allocations)), st.NumAllocs-before.NumAllocs, name)
	require.Len(t, mem.regions, len(as.Allocations), name)
	var want int64
	for _, al := range as.Allocations {
		want += RoundBytes(max(al.Size, 1))
	}
	require.GreaterOrEqual(t, st.BytesInUse-before.BytesInUse, want, "%s: the plan's allocations, each rounded as BFC rounds (or handed a whole chunk)", name)
}

// TestExecuteOnBFC: plans run through exec.Execute on a Memory over the
// BFC arena compute what they compute on the host arena and without a
// plan, bit for bit: the repository's demo and transformer modules, the
// gpu fragmentation program scaled down, and random modules (element-wise
// chains, reductions, tuples, in-place updates, calls, while loops,
// conditionals).
func TestExecuteOnBFC(t *testing.T) {
	for _, path := range []string{"../testdata/demo.hlo", "../testdata/transformer.hlo"} {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		as := planFor(t, path, string(src))
		runOnBFC(t, path, as, NewMemory(newTestBFC(t, 1<<30), exec.PoisonByte))
	}
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		name := fmt.Sprintf("rand_%d", seed)
		src := randhlo.Generate(seed, randhlo.Options{Instructions: 10 + int(seed%30)})
		as := planFor(t, name, src)
		runOnBFC(t, name, as, NewMemory(newTestBFC(t, 64<<20), exec.PoisonByte))
	}
}

// TestExecuteOnClientArena: the plan's allocations share a client's BFC
// arena with the arrays the user keeps on the device: they go around
// them, and a plan that does not fit beside them fails with the
// allocator's *OOMError, as the device would.
func TestExecuteOnClientArena(t *testing.T) {
	src, err := os.ReadFile("testdata/frag.hlo")
	require.NoError(t, err)
	// The fragmentation program scaled down 1024 times (f32[262144] is
	// 1 MiB).
	small := strings.NewReplacer("268435456", "262144", "536870912", "524288").Replace(string(src))
	as := planFor(t, "frag_small.hlo", small)
	var largest int64
	for _, al := range as.Allocations {
		largest = max(largest, al.Size)
	}

	dev := Device{Name: "custom", Memory: 64 << 20}
	cfg := DefaultConfig()
	cfg.Preallocate, cfg.MemFraction = true, 1
	c, err := NewClient(dev, cfg, ClientOptions{})
	require.NoError(t, err)
	var kept []*Array
	for i := range 8 {
		a, err := c.Put(fmt.Sprintf("w%d", i), 3<<20, "f32[786432]")
		require.NoError(t, err)
		kept = append(kept, a)
	}
	m := NewMemory(c.Alloc, exec.PoisonByte)
	runOnBFC(t, "frag_small beside 8 arrays", as, m)
	for _, a := range kept {
		require.ErrorIs(t, m.ReadAt(make([]byte, 1), a.Addr()), exec.ErrOutOfBounds, "%s is the client's, not the run's", a.Name)
	}

	// Arrays in every free block that could hold the plan's largest
	// allocation: an OOM.
	for i := 0; c.Stats().LargestFreeBlockBytes >= largest; i++ {
		_, err := c.Put(fmt.Sprintf("filler%d", i), c.Stats().LargestFreeBlockBytes, "")
		require.NoError(t, err)
	}
	_, err = exec.Execute(context.Background(), as, eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0))), NewMemory(c.Alloc, exec.PoisonByte), exec.Options{})
	var oom *OOMError
	require.True(t, errors.As(err, &oom), "got %v", err)
}
