package gpu

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/hlo"
)

const gib = 1 << 30

// program plans the single module of an HLO text for the GPU through
// the pipeline and makes it a client program.
func program(t testing.TB, name, text string) *Program {
	t.Helper()
	m, err := hlo.ParseModule(name, text)
	require.NoError(t, err)
	require.NoError(t, hlo.Verify(m))
	planned, err := compile.Compile(context.Background(), m, compile.Options{Assign: assign.Options{Target: assign.GPU}})
	require.NoError(t, err)
	as := planned.Assignment
	p, err := NewProgram(m.Name, as)
	require.NoError(t, err)
	return p
}

func compileFile(t testing.TB, path string) *Program {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return program(t, path, string(b))
}

// heldBytes is what the arrays on the device hold: each device buffer once.
func heldBytes(c *Client) int64 {
	held := map[*deviceBuffer]bool{}
	var n int64
	for _, a := range c.Arrays() {
		if !held[a.buf] {
			held[a.buf] = true
			n += a.buf.size
		}
	}
	return n
}

func newClient16(t testing.TB, prealloc bool) *Client {
	t.Helper()
	dev, err := DeviceByName("custom:16GiB")
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Preallocate = prealloc
	c, err := NewClient(dev, cfg, ClientOptions{Verify: true})
	require.NoError(t, err)
	return c
}

// fragment fills a 16 GiB device without preallocation with twelve 1 GiB
// arrays and deletes every other one: 6 GiB are free, in blocks of 1 GiB.
// The regions BFC grows are 1, 1, 2, 4 and 4 GiB (2 MiB doubling, the
// last what the 12 GiB limit leaves), so no free block is larger.
func fragment(t *testing.T, c *Client) {
	t.Helper()
	for i := range 12 {
		_, err := c.Put(fmt.Sprintf("a%d", i), gib, "f32[268435456]")
		require.NoError(t, err, "a%d", i)
	}
	st := c.Stats()
	require.Equal(t, int64(12*gib), st.BytesInUse)
	require.Equal(t, int64(12*gib), st.PoolBytes)
	for i := 1; i < 12; i += 2 {
		require.NoError(t, c.Delete(fmt.Sprintf("a%d", i)))
	}
	st = c.Stats()
	require.Equal(t, int64(6*gib), st.BytesInUse)
	require.Equal(t, int64(gib), st.LargestFreeBlockBytes)
	require.InDelta(t, 5.0/6, st.Fragmentation(), 1e-9)
}

// TestFragmentationWorkload: without preallocation on a 16 GiB device a
// program's 2 GiB temp allocation fails although 5 GiB are free, the OOM
// says the cause is fragmentation, and after Defragment the same run
// succeeds.
func TestFragmentationWorkload(t *testing.T) {
	c := newClient16(t, false)
	require.Equal(t, int64(0), c.Stats().BytesReserved, "nothing is reserved before the first allocation without preallocation")
	p := compileFile(t, "testdata/frag.hlo")
	require.Equal(t, int64(2*gib), p.TempBytes)
	fragment(t, c)

	_, err := c.Run(context.Background(), p, []string{"a0"}, []string{"y"})
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
	require.True(t, oom.Fragmented())
	require.Equal(t, int64(2*gib), oom.Rounded)
	require.Equal(t, int64(5*gib), oom.Free, "12 GiB limit - 6 GiB of arrays - the 1 GiB output the run had taken")
	msg := err.Error()
	for _, want := range []string{
		"Out of memory while trying to allocate 2147483648 bytes.",
		"Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)requested by op step: allocation 2 (temp, 2147483648 bytes)",
		"The cause is fragmentation: 5.00GiB is free in total",
		"but the largest free block is 1.00GiB",
		"BFCAllocator dump for GPU_0_bfc",
		"Bin (268435456):",
		"Limit:", "InUse:", "MaxInUse:", "NumAllocs:", "MaxAllocSize:", "Reserved:", "PeakReserved:", "LargestFreeBlock:",
		"What occupies memory at the peak of step (step 2 of 5, 4.00GiB), largest first:",
		`op_name="jit(step)/concatenate" at train.py:13`,
	} {
		require.Contains(t, msg, want)
	}
	// The run gave back what it took: the arrays are as before.
	require.Equal(t, int64(6*gib), c.Stats().BytesInUse)
	_, ok := c.Array("y")
	require.False(t, ok)

	rep, err := c.Defragment()
	require.NoError(t, err)
	require.Equal(t, 6, rep.Arrays)
	require.Equal(t, int64(6*gib), rep.BytesMoved)
	require.Equal(t, int64(gib), rep.LargestFreeBefore)
	require.Equal(t, int64(4*gib), rep.LargestFreeAfter)

	res, err := c.Run(context.Background(), p, []string{"a0"}, []string{"y"})
	require.NoError(t, err)
	require.Equal(t, int64(3*gib), res.Allocated)
	y, ok := c.Array("y")
	require.True(t, ok)
	require.Equal(t, int64(gib), y.Bytes)
	require.Equal(t, int64(7*gib), c.Stats().BytesInUse, "the temp is freed after the run, the output stays")
}

// TestFragmentationWorkloadFile replays the same session from a workload
// file: the OOM is the expected step, then defragment and the run succeed.
func TestFragmentationWorkloadFile(t *testing.T) {
	f, err := os.Open("testdata/frag.json")
	require.NoError(t, err)
	defer f.Close()
	w, err := ParseWorkload("testdata/frag.json", f)
	require.NoError(t, err)
	dev, err := DeviceByName(w.Device)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Preallocate = false
	c, err := NewClient(dev, cfg, ClientOptions{Verify: true})
	require.NoError(t, err)
	p := compileFile(t, "testdata/frag.hlo")
	var lines []string
	err = c.Replay(context.Background(), w, map[string]*Program{"step": p}, func(r StepResult) error {
		switch {
		case r.OOM != nil:
			lines = append(lines, fmt.Sprintf("%d oom fragmented=%v", r.Index, r.OOM.Fragmented()))
		case r.Defrag != nil:
			lines = append(lines, fmt.Sprintf("%d defragment %d", r.Index, r.Defrag.LargestFreeAfter))
		case r.Run != nil:
			lines = append(lines, fmt.Sprintf("%d run %d", r.Index, r.Run.Allocated))
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"19 oom fragmented=true", "20 defragment 4294967296", "21 run 3221225472"}, lines)

	// Without the defragment step the run is an unexpected OOM, placed in
	// the file.
	w.Steps = append(w.Steps[:19], w.Steps[20:]...)
	w.Steps[18].ExpectOOM = false
	c, err = NewClient(dev, cfg, ClientOptions{})
	require.NoError(t, err)
	err = c.Replay(context.Background(), w, map[string]*Program{"step": p}, nil)
	var se *StepError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 19, se.Index)
	require.True(t, strings.HasPrefix(err.Error(), "testdata/frag.json:"), err.Error())
	var oom *OOMError
	require.ErrorAs(t, err, &oom)
}

// TestPreallocation: with preallocation the arena (0.75 of the device,
// rounded up to 2 MiB) is reserved when the client starts, before any
// program runs; a run then takes nothing more from the device.
func TestPreallocation(t *testing.T) {
	for _, tc := range []struct {
		dev  Device
		want int64
	}{
		{Device{Name: "custom", Memory: 16 * gib}, 12 * gib},
		{A100_80GB, 61440 * mib},
		{H100_80GB, 61170 * mib}, // 0.75 × 81559 MiB = 61169.25 MiB
		{A100_40GB, 30720 * mib},
		{H200, 107830 * mib}, // 0.75 × 143771 MiB = 107828.25 MiB, up to 2 MiB
	} {
		c, err := NewClient(tc.dev, DefaultConfig(), ClientOptions{})
		require.NoError(t, err)
		st := c.Stats()
		require.Equal(t, tc.want, st.BytesReserved, tc.dev.Name)
		require.Equal(t, tc.want, st.PoolBytes, tc.dev.Name)
		require.Equal(t, tc.want, st.BytesLimit, tc.dev.Name)
		require.Equal(t, int64(0), st.BytesInUse)
		require.Equal(t, int64(1), st.DriverCalls)
	}
	c := newClient16(t, true)
	p := compileFile(t, "testdata/frag.hlo")
	_, err := c.Put("x", gib, "")
	require.NoError(t, err)
	_, err = c.Run(context.Background(), p, []string{"x"}, nil)
	require.NoError(t, err)
	st := c.Stats()
	require.Equal(t, int64(12*gib), st.BytesReserved)
	require.Equal(t, int64(1), st.DriverCalls, "a preallocated arena asks the device once")
	require.Equal(t, int64(4*gib), st.PeakBytesInUse)
	require.Equal(t, int64(2*gib), st.BytesInUse)
}

// TestRunDonation: a donated argument's buffer becomes the output's; the
// argument is gone; nothing else is allocated for that output.
func TestRunDonation(t *testing.T) {
	p := program(t, "donate.hlo", `HloModule donate, input_output_alias={ {}: (0, {}, must-alias) }

ENTRY e {
  p = f32[1024]{0} parameter(0)
  q = f32[1024]{0} parameter(1)
  ROOT a = f32[1024]{0} add(p, q)
}
`)
	require.True(t, p.Params[0].Donated)
	require.False(t, p.Params[1].Donated)
	c := newClient16(t, false)
	x, err := c.Put("x", 4096, "f32[1024]")
	require.NoError(t, err)
	_, err = c.Put("w", 4096, "f32[1024]")
	require.NoError(t, err)
	before := c.Stats().NumAllocs
	res, err := c.Run(context.Background(), p, []string{"x", "w"}, []string{"y"})
	require.NoError(t, err)
	require.Equal(t, 1, res.Donated)
	require.Equal(t, int64(0), res.Allocated)
	require.Equal(t, before, c.Stats().NumAllocs)
	_, ok := c.Array("x")
	require.False(t, ok, "a donated array is consumed")
	y, _ := c.Array("y")
	require.Equal(t, x.Addr(), y.Addr())
	require.Equal(t, int64(8192), c.Stats().BytesInUse)

	// Donating the same array twice, or passing it after donating it, is
	// refused.
	_, err = c.Put("z", 4096, "")
	require.NoError(t, err)
	_, err = c.Run(context.Background(), p, []string{"z", "z"}, nil)
	require.NoError(t, err, "a donated argument may also be read as a non-donated one earlier")
	_, err = c.Run(context.Background(), p, []string{"missing", "w"}, nil)
	require.ErrorContains(t, err, `no array named "missing"`)
	_, err = c.Run(context.Background(), p, []string{"w"}, nil)
	require.ErrorContains(t, err, "1 arguments for 2 parameter leaves")
	_, err = c.Put("small", 16, "")
	require.NoError(t, err)
	_, err = c.Run(context.Background(), p, []string{"small", "w"}, nil)
	require.ErrorContains(t, err, "is 16 bytes, the parameter needs 4096")
}

// overlapping is an allocator that hands out the same address every time:
// the client's check must catch it.
type overlapping struct{ Allocator }

func (o overlapping) Allocate(size int64) (int64, error) { return 1 << 20, nil }
func (o overlapping) Size(addr int64) (int64, bool)      { return 1 << 20, true }
func (o overlapping) Free(addr int64) error              { return nil }

func TestVerifyCatchesOverlap(t *testing.T) {
	c := newClient16(t, false)
	c.Alloc = overlapping{c.Alloc}
	p := compileFile(t, "testdata/frag.hlo")
	_, err := c.Put("x", 1024, "")
	require.NoError(t, err)
	c.arrays["x"].Bytes = gib
	_, err = c.Run(context.Background(), p, []string{"x"}, nil)
	require.ErrorContains(t, err, "handed out overlapping memory")
}

// TestAllocatorsRunTheSameSession: the session runs under each allocator;
// the platform allocator counts a driver call per allocation and release.
func TestAllocatorsRunTheSameSession(t *testing.T) {
	p := compileFile(t, "testdata/frag.hlo")
	for _, k := range []AllocatorKind{BFCKind, Platform, CudaAsync} {
		cfg := DefaultConfig()
		cfg.Allocator = k
		c, err := NewClient(Device{Name: "custom", Memory: 16 * gib}, cfg, ClientOptions{Verify: true})
		require.NoError(t, err)
		_, err = c.Put("x", gib, "")
		require.NoError(t, err, k)
		for range 3 {
			_, err = c.Run(context.Background(), p, []string{"x"}, []string{"y"})
			require.NoError(t, err, k)
		}
		st := c.Stats()
		require.Equal(t, int64(2*gib), st.BytesInUse, k)
		if k == Platform {
			// 1 put + 3 × (temp + output) allocations, 3 temp frees and 2
			// replaced outputs freed.
			require.Equal(t, int64(1+6+3+2), st.DriverCalls)
			require.Positive(t, st.DriverTime)
		}
	}
}

func TestWorkloadErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`[]`, "w.json:1:1: want a JSON object"},
		{`{"steps": [{"put": "a"}]}`, "w.json:1:12: step 1: put needs bytes or shape"},
		{"{\"steps\": [\n  {\"put\": \"a\", \"bytes\": 1},\n  {\"run\": \"p\", \"delete\": \"a\"}\n]}", "w.json:3:3: step 2: a step does one thing, this one says run and delete"},
		{`{"steps": [{"put": "a", "bytes": "12XB"}]}`, `w.json:1:12: bad byte size "12XB"`},
		{`{"steps": [{"put": "a", "bytes": -4}]}`, "w.json:1:12: bytes -4 is negative"},
		{`{"steps": [{"put": "a", "shape": "f32[2"}]}`, `w.json:1:12: step 1: shape "f32[2"`},
		{`{"steps": [{"frobnicate": 1}]}`, `w.json:1:12: unknown field "frobnicate"`},
		{`{"steps": [{"put": 3}]}`, "w.json:1:"},
		{`{"steps": [], "extra": 1}`, `w.json:1:15: unknown key "extra"`},
		{`{"device": "a100"}`, `no "steps"`},
		{`{"steps": [`, "w.json:1:12: unexpected end of the file"},
		{`{"steps": []} {}`, "w.json:1:15: text after the workload object"},
		{`{"steps": [{"defragment": false}]}`, "defragment: write true"},
		{`{"steps": [{"delete": "a", "args": []}]}`, "args and outputs belong to a run"},
	} {
		_, err := ParseWorkload("w.json", strings.NewReader(tc.text))
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), tc.want, tc.text)
	}
	w, err := ParseWorkload("w.json", strings.NewReader(`{"device": "h200", "programs": {"s": "s.hlo"}, "steps": [
		{"put": "a", "bytes": "1GiB"}, {"put": "b", "shape": "bf16[4,8]"}, {"put_params": "s"},
		{"run": "s", "args": ["a"], "outputs": ["o"]}, {"run": "s"}, {"delete": "a"}, {"defragment": true}]}`))
	require.NoError(t, err)
	require.Equal(t, "h200", w.Device)
	require.Equal(t, map[string]string{"s": "s.hlo"}, w.Programs)
	require.Len(t, w.Steps, 7)
	require.Equal(t, int64(gib), w.Steps[0].Bytes)
	require.Equal(t, int64(64), w.Steps[1].Bytes)
	require.True(t, w.Steps[3].HasArgs)
	require.False(t, w.Steps[4].HasArgs)
	require.Equal(t, []string{"put", "put", "put_params", "run", "run", "delete", "defragment"}, func() []string {
		var k []string
		for i := range w.Steps {
			k = append(k, w.Steps[i].Kind())
		}
		return k
	}())
	require.Equal(t, 2, w.Steps[1].Line)

	// Replay errors name the step.
	c := newClient16(t, false)
	err = c.Replay(context.Background(), w, nil, nil)
	require.ErrorContains(t, err, `w.json:2:70: step 3 (put_params): no program named "s"`)
}

func TestClientConfigErrors(t *testing.T) {
	_, err := NewClient(Device{Name: "x"}, DefaultConfig(), ClientOptions{})
	require.Error(t, err)
	cfg := DefaultConfig()
	cfg.MemFraction = 1.5
	_, err = NewClient(A100_80GB, cfg, ClientOptions{})
	require.ErrorContains(t, err, "unified memory")
	cfg.UnifiedMemory = true
	c, err := NewClient(A100_80GB, cfg, ClientOptions{})
	require.NoError(t, err)
	require.Equal(t, RoundLimit(int64(1.5*float64(A100_80GB.Memory))), c.Stats().BytesReserved)
	cfg = DefaultConfig()
	cfg.Allocator = "magic"
	_, err = NewClient(A100_80GB, cfg, ClientOptions{})
	require.ErrorContains(t, err, `unknown allocator "magic"`)
}

// TestREADMEWorkload: the workload the README shows is one ParseWorkload
// reads.
func TestREADMEWorkload(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "### Will it fit on my GPU?")
	require.True(t, ok)
	_, rest, ok = strings.Cut(rest, "```json\n")
	require.True(t, ok)
	doc, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	w, err := ParseWorkload("README.md", strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, w.Steps, 7)
	require.True(t, w.Steps[6].ExpectOOM)
}

// A temp in host memory (S(5), XLA's Layout::kHostMemorySpace; buffer
// assignment gives it an allocation of color 5 of its own, as
// BufferAssigner::DefaultColorer in xla/service/buffer_assignment.h colors
// by memory space) is pinned host memory: the run does not ask the
// device's allocator for it.
func TestRunHostTemp(t *testing.T) {
	p := program(t, "hosttemp.hlo", `HloModule hosttemp, is_scheduled=true

ENTRY e {
  p = f32[1024]{0} parameter(0)
  n = f32[1024]{0} negate(p)
  h = f32[1024]{0:S(5)} copy(n)
  back = f32[1024]{0} copy(h)
  ROOT a = f32[1024]{0} add(back, p)
}
`)
	as := p.Assignment
	require.Equal(t, int64(4096), as.Stats.HostBytes)
	require.Equal(t, int64(4096), p.HostTempBytes)
	var device int64
	for _, al := range as.Allocations {
		if !al.IsParameter() && !al.Constant && al.Color != assign.HostMemorySpace {
			device += al.Size
		}
	}
	c := newClient16(t, true)
	_, err := c.Put("x", 4096, "f32[1024]")
	require.NoError(t, err)
	res, err := c.Run(context.Background(), p, []string{"x"}, []string{"y"})
	require.NoError(t, err)
	require.Equal(t, device, res.Allocated, "the host temp is not the device's")
	require.Equal(t, p.TempBytes+4096, res.Allocated, "temps and the output")
}

// A parameter in host memory (S(5): what JAX's memory_kind="pinned_host"
// makes of an argument; XLA's layout.h names it Layout::kHostMemorySpace)
// is put in pinned host memory and the run reads it there: the device's
// allocator holds only the device parameter, the copy and the output.
func TestRunHostParam(t *testing.T) {
	p := program(t, "hostparam.hlo", `HloModule hostparam, is_scheduled=true

ENTRY e {
  h = f32[4096]{0:S(5)} parameter(0)
  q = f32[1024]{0} parameter(1)
  d = f32[4096]{0} copy(h)
  s = f32[1024]{0} slice(d), slice={[0:1024]}
  ROOT a = f32[1024]{0} add(s, q)
}
`)
	require.True(t, p.Params[0].Host)
	require.False(t, p.Params[1].Host)
	c := newClient16(t, true)
	w := &Workload{File: "(test)", Steps: []Step{{PutParams: p.Name}, {Run: p.Name}}}
	var inUse []int64
	err := c.Replay(context.Background(), w, map[string]*Program{p.Name: p}, func(r StepResult) error {
		inUse = append(inUse, r.Stats.BytesInUse)
		return nil
	})
	require.NoError(t, err)
	// After the put only q (4096 bytes, rounded by BFC to 256) is on the
	// device; after the run q and the output a.
	require.Equal(t, []int64{4096, 8192}, inUse)
	h, ok := c.Array("h")
	require.True(t, ok)
	require.NoError(t, c.Delete(h.Name), "a host array is deleted without touching the device")
}
