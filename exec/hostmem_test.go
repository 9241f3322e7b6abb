package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

// hostRun is what a child process reports of one run: the estimate, and
// the memory the run took (the peak resident set's growth over the
// resident set before it; the heap's growth as the Go runtime saw it).
type hostRun struct {
	Module    string       `json:"module"`
	Estimate  HostEstimate `json:"estimate"`
	PeakRSS   int64        `json:"peak_rss"`
	HeapGrown int64        `json:"heap_grown"`
	Err       string       `json:"err,omitempty"`
}

// The child side of TestHostBytesBoundsMeasured: with
// HLOMEM_HOSTMEM_CHILD=FILE (and HLOMEM_HOSTMEM_MODULE=K, the module's
// index in FILE), plan the module, estimate, run it as hlomem run
// --verify --inputs=random --print does, and print what it took.
func TestHostBytesChild(t *testing.T) {
	file := os.Getenv("HLOMEM_HOSTMEM_CHILD")
	if file == "" {
		t.Skip("run by TestHostBytesBoundsMeasured")
	}
	k, _ := strconv.Atoi(os.Getenv("HLOMEM_HOSTMEM_MODULE"))
	r := hostChild(t, file, k)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	fmt.Printf("HOSTMEM %s\n", b)
}

func hostChild(t *testing.T, file string, k int) hostRun {
	plans := plan(t, file, assign.Options{Budget: 20 * time.Millisecond})
	if k >= len(plans) {
		return hostRun{Err: "no such module"}
	}
	as := plans[k]
	r := hostRun{Module: as.Module.Name}
	est, err := HostBytes(as, HostOptions{Reference: true, Planned: true, Shadow: true, Print: true})
	require.NoError(t, err)
	r.Estimate = est
	if est.Total > 4<<30 {
		r.Err = "not run: estimated over 4 GiB"
		return r
	}
	runtime.GC()
	debug.FreeOSMemory()
	require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
	rss0 := procStatus(t, "VmRSS")
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = func() error {
		if _, err := Shadow(ctx, as); err != nil {
			return err
		}
		args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
		want, err := Execute(ctx, as, args, nil, Options{Reference: true})
		if err != nil {
			return err
		}
		got, err := Execute(ctx, as, args, nil, Options{})
		if err != nil {
			return err
		}
		for i := range want.Outputs {
			if want.Outputs[i].Checksum() != got.Outputs[i].Checksum() {
				return fmt.Errorf("output %d differs", i)
			}
			if err := got.Outputs[i].WriteText(io.Discard); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		r.Err = err.Error()
	}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	r.PeakRSS = procStatus(t, "VmHWM") - rss0
	r.HeapGrown = int64(ms1.HeapSys) - int64(ms0.HeapInuse)
	return r
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return n << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// runHostChild runs module k of file in a child process and returns its
// report.
func runHostChild(t *testing.T, file string, k int) hostRun {
	cmd := osexec.Command(os.Args[0], "-test.run=^TestHostBytesChild$", "-test.v")
	cmd.Env = append(os.Environ(), "HLOMEM_HOSTMEM_CHILD="+file, "HLOMEM_HOSTMEM_MODULE="+strconv.Itoa(k))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(string(out), "\n") {
		if j, ok := strings.CutPrefix(line, "HOSTMEM "); ok {
			var r hostRun
			require.NoError(t, json.Unmarshal([]byte(j), &r))
			return r
		}
	}
	t.Fatalf("child said nothing: %s", out)
	return hostRun{}
}

// TestHostBytesBoundsMeasured: on corpus modules of every kind (loops,
// scatter, fusions, convolutions, dots, random modules, tiled layouts) the
// estimate of a run as hlomem run --verify --inputs=random --print makes
// it is at least the memory the run took, measured in a process of its
// own as the growth of the peak resident set (Linux's VmHWM, reset before
// the run), and at most 16 times that beside the 128 MiB margin the
// estimate always adds (measured over the 160 corpus modules the
// evaluator runs: 1.8 to 12 times on the 36 that take over 32 MiB,
// median 5).
func TestHostBytesBoundsMeasured(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measures the resident set through /proc/self")
	}
	if testing.Short() {
		t.Skip("runs modules in processes of their own")
	}
	tiled := filepath.Join(t.TempDir(), "tiled.hlo")
	require.NoError(t, os.WriteFile(tiled, []byte(`HloModule tiled, is_scheduled=true
ENTRY e {
  p = f32[1000,1000]{1,0:T(8,128)} parameter(0)
  n = f32[1000,1000]{1,0:T(8,128)} negate(p)
  x = f32[1000,1000]{1,0:T(8,128)} exponential(n)
  t = f32[1000,1000]{0,1:T(8,128)} copy(x)
  ROOT r = f32[1000,1000]{0,1:T(8,128)} sqrt(t)
}
`), 0o644))
	files := []string{
		corpus.Path(t, "paired-jax/module_0035.jit_scatter.0103/module_0035.jit_scatter.sm_8.0_gpu_after_optimizations.txt"),
		corpus.Path(t, "paired-jax/module_0042.jit_species_structure_factors.0037/module_0042.jit_species_structure_factors.sm_8.0_gpu_after_optimizations.txt"),
		corpus.Path(t, "hlo/xla/backends__cpu__benchmarks__hlo__bench_scan_N2000_M3.hlo"),
		corpus.Path(t, "hlo/xla/backends__cpu__benchmarks__hlo__depthwise_conv_3x3_1x256x56x56_bf16.hlo"),
		corpus.Path(t, "hlo/xla/backends__cpu__benchmarks__hlo__xnn.parallel_dots.optimized.hlo"),
		corpus.Path(t, "hlo/xla/service__gpu__tests__dynamic_update_slice_inplace.hlo"),
		corpus.Path(t, "hlo/fuzz/rand_84.hlo"),
		tiled,
	}
	for _, f := range files {
		r := runHostChild(t, f, 0)
		require.Empty(t, r.Err, f)
		e := r.Estimate
		t.Logf("%s: estimate %d (live %d), measured %d (%.1fx), heap %d", filepath.Base(f), e.Total, e.Live, r.PeakRSS, float64(e.Total)/float64(r.PeakRSS), r.HeapGrown)
		require.GreaterOrEqual(t, e.Total, r.PeakRSS, "%s: %+v", f, e)
		require.LessOrEqual(t, e.Total-hostHeapSlack, 16*r.PeakRSS, "%s: %+v", f, e)
	}
}

// planText parses, prepares and assigns a module for the GPU target.
func planText(t *testing.T, text string) *assign.Assignment {
	t.Helper()
	m, err := hlo.ParseModule("m.hlo", text)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{})
	require.NoError(t, err)
	return as
}

// TestHostBytesParts holds the model on a module small enough to count
// by hand: each part counts what its run holds, and only when asked.
func TestHostBytesParts(t *testing.T) {
	as := planText(t, `HloModule parts, is_scheduled=true
ENTRY e {
  a = f32[1024] parameter(0)
  b = s8[4096] parameter(1)
  c = f32[1024] exponential(a)
  d = f32[1024] negate(c)
  ROOT t = (f32[1024], f32[1024]) tuple(c, d)
}
`)
	e, err := HostBytes(as, HostOptions{})
	require.NoError(t, err)
	require.Equal(t, HostEstimate{Total: hostHeapSlack}, e, "nothing asked, nothing counted")

	e, err = HostBytes(as, HostOptions{Reference: true})
	require.NoError(t, err)
	// The arguments, and the largest one's making: s8[4096] decoded
	// (2·8 + 2·1 + 8 bytes an element) and a word per element (16).
	require.Equal(t, int64(4096+4096+4096*(26+16)), e.Args)
	// Every instruction's bookkeeping, c and d held, and exponential's
	// (or negate's) intermediates: 2·8 + 2·4 + 8 bytes an element of its
	// operand and result.
	require.Equal(t, int64(5*hostBytesPerInstruction+4096+4096+2*1024*32), e.Reference)
	require.Zero(t, e.Arena+e.Planned+e.Shadow)
	require.Equal(t, e.Args+e.Reference, e.Live)
	require.Equal(t, 2*e.Live+hostHeapSlack, e.Total)

	e, err = HostBytes(as, HostOptions{Shadow: true})
	require.NoError(t, err)
	require.Zero(t, e.Args, "a shadow run makes no arguments")
	require.Positive(t, e.Shadow)
	require.Equal(t, e.Shadow, e.Live)

	e, err = HostBytes(as, HostOptions{Planned: true})
	require.NoError(t, err)
	require.Zero(t, e.Reference)
	// Four values of 4 KiB in a few allocations: one page each at most,
	// not their allocations' address space.
	require.GreaterOrEqual(t, e.Arena, int64(PageSize+hostBytesPerPage))
	require.LessOrEqual(t, e.Arena, int64(len(as.Allocations)+1)*(PageSize+hostBytesPerPage))
	require.Zero(t, e.Arena%(PageSize+hostBytesPerPage))
	// The planned run's outputs are read back; with the reference run too,
	// the reference's are held to be compared.
	both, err := HostBytes(as, HostOptions{Reference: true, Planned: true})
	require.NoError(t, err)
	require.Equal(t, e.Planned+8192, both.Planned)
	printed, err := HostBytes(as, HostOptions{Reference: true, Planned: true, Print: true})
	require.NoError(t, err)
	require.Greater(t, printed.Planned, both.Planned)
	text, err := HostBytes(as, HostOptions{Reference: true, ArgText: 1000})
	require.NoError(t, err)
	reference, err := HostBytes(as, HostOptions{Reference: true})
	require.NoError(t, err)
	require.Equal(t, reference.Args+10000, text.Args, "parsing counts ten bytes a byte of text")
}

// TestHostBytesArenaIsSparse: the arena counts the pages the values'
// slots touch: a plan of 10,000 small values costs a page or so each
// allocation's run of values, not a page a value; a value of 1 GiB costs
// its bytes.
func TestHostBytesArenaIsSparse(t *testing.T) {
	var b strings.Builder
	b.WriteString("HloModule many, is_scheduled=true\nENTRY e {\n  p = f32[] parameter(0)\n")
	prev := "p"
	for i := range 10000 {
		fmt.Fprintf(&b, "  v%d = f32[] negate(%s)\n", i, prev)
		prev = fmt.Sprintf("v%d", i)
	}
	fmt.Fprintf(&b, "  ROOT r = f32[] negate(%s)\n}\n", prev)
	as := planText(t, b.String())
	e, err := HostBytes(as, HostOptions{Planned: true})
	require.NoError(t, err)
	require.LessOrEqual(t, e.Arena, int64(8*(PageSize+hostBytesPerPage)), "%d allocations", len(as.Allocations))

	as = planText(t, `HloModule big, is_scheduled=true
ENTRY e {
  p = f32[268435456] parameter(0)
  ROOT r = f32[268435456] negate(p)
}
`)
	e, err = HostBytes(as, HostOptions{Planned: true})
	require.NoError(t, err)
	require.GreaterOrEqual(t, e.Arena, int64(2<<30), "two values of 1 GiB")
	require.LessOrEqual(t, e.Arena, int64(2<<30)*(PageSize+hostBytesPerPage)/PageSize+4*(PageSize+hostBytesPerPage))
}

// TestHostBytesSaturates: a module whose sizes fit int64 (4 EiB an
// array) but whose estimate does not gives an estimate no limit admits,
// never a wrapped one.
func TestHostBytesSaturates(t *testing.T) {
	m, err := hlo.ParseModule("m.hlo", `HloModule m
ENTRY e {
  a = f32[1073741824,1073741824] parameter(0)
  ROOT b = f32[1073741824,1073741824] negate(a)
}
`)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{})
	require.NoError(t, err)
	e, err := HostBytes(as, HostOptions{Reference: true, Planned: true, Shadow: true, Print: true})
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), e.Total)
	err = &HostMemoryError{Estimate: e, Limit: 8 << 30, LimitSource: "half of this machine's memory, 16.00GiB"}
	require.True(t, strings.HasPrefix(err.Error(), "the run needs an estimated more than 8.00EiB of host memory, more than the limit of 8.00GiB (half of this machine's memory, 16.00GiB): arguments more than 8.00EiB, "), err.Error())
}
