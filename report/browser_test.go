package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// EnvRequireBrowser makes the browser test fail, rather than skip, when no
// Chromium is installed; .ci/run sets it after installing Debian's.
const EnvRequireBrowser = "HLOMEM_REQUIRE_BROWSER"

// chromium returns the path of a Chromium (or Chrome) binary, or skips the
// test (fails under EnvRequireBrowser).
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(EnvRequireBrowser) != "" {
		t.Fatalf("no chromium on PATH, and %s is set (apt-get install chromium)", EnvRequireBrowser)
	}
	t.Skipf("no chromium on PATH: the memory viewer is not loaded in a browser (apt-get install chromium; .ci/run does, and sets %s)", EnvRequireBrowser)
	return ""
}

// headless runs Chromium headless on the file with extra flags and returns
// its standard output and error.
func headless(t testing.TB, bin, file string, flags ...string) (string, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir()}, flags...)
	args = append(args, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	require.NoError(t, err, "chromium: %s", errb.String())
	return out.String(), errb.String(), took
}

var bodyAttr = regexp.MustCompile(`<body([^>]*)>`)

// attr is the value of attribute name in an HTML start tag's attributes.
func attr(attrs, name string) (string, bool) {
	m := regexp.MustCompile(`\b` + name + `="([^"]*)"`).FindStringSubmatch(attrs)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// loadInBrowser writes r's viewer, loads it in headless Chromium in a
// window 1400 pixels wide and checks that the script ran without error
// and found one rectangle per buffer (hlomem's and XLA's), that neither
// the page nor its charts scroll sideways, that the console shows no
// error, and saves a screenshot; it returns the page's size, the in-page milliseconds to
// the end of its script and the wall time of the load.
func loadInBrowser(t testing.TB, bin string, r *Report, name string) (size int64, pageMS int, wall time.Duration) {
	t.Helper()
	dir := t.TempDir()
	page := filepath.Join(dir, name+".html")
	var b bytes.Buffer
	require.NoError(t, r.WriteHTML(&b))
	require.NoError(t, os.WriteFile(page, b.Bytes(), 0o644))
	want := len(r.Buffers)
	if r.XLA != nil {
		want += len(r.XLA.Buffers)
	}
	require.Equal(t, want, rectCount(b.String()), "rectangles in the page")

	dom, logs, took := headless(t, bin, page, "--dump-dom", "--window-size=1400,900")
	m := bodyAttr.FindStringSubmatch(dom)
	require.NotNil(t, m, "no <body> in the DOM Chromium dumped")
	if e, ok := attr(m[1], "data-error"); ok {
		t.Fatalf("the page's script failed: %s", e)
	}
	rendered, ok := attr(m[1], "data-rendered")
	require.True(t, ok)
	require.Equal(t, strconv.Itoa(want), rendered, "buffer rectangles the page's script found")
	// The viewer fits a window 1400 pixels wide: neither the page nor its
	// charts scroll sideways.
	over, ok := attr(m[1], "data-overflow")
	require.True(t, ok, "the script did not measure the page's width")
	require.Equal(t, "0", over, "pixels the viewer scrolls sideways in a window 1400 pixels wide")
	ms, ok := attr(m[1], "data-ms")
	require.True(t, ok, "the script did not finish")
	pageMS, err := strconv.Atoi(ms)
	require.NoError(t, err)
	// The console: Chromium logs the page's messages as CONSOLE lines.
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") && (strings.Contains(line, "Uncaught") || strings.Contains(line, "rror")) {
			t.Errorf("console error: %s", line)
		}
	}
	shot := filepath.Join(dir, name+".png")
	headless(t, bin, page, "--screenshot="+shot, "--window-size=1400,1600", "--hide-scrollbars")
	fi, err := os.Stat(shot)
	require.NoError(t, err, "no screenshot")
	require.Positive(t, fi.Size())
	t.Logf("%s: %d bytes of HTML, %d buffer rectangles, script done %d ms after navigation, load %v; screenshot %s",
		name, len(b.Bytes()), want, pageMS, took.Round(time.Millisecond), shot)
	return int64(b.Len()), pageMS, took
}

// TestViewerInBrowser loads the memory viewer of the bundled example in
// headless Chromium.
func TestViewerInBrowser(t *testing.T) {
	bin := chromium(t)
	loadInBrowser(t, bin, transformerReport(t), "transformer")
}

// TestLargestViewerInBrowserCorpus: the viewer of the largest corpus module
// (Mixtral, 43,714 instructions) stays under 20 MB and loads in Chromium:
// the script finds every rectangle, nothing scrolls sideways, the console
// shows no error. How long it takes is BenchmarkLargestViewerInBrowser's
// to say (a wall clock belongs in a benchmark, not in a check a loaded
// machine fails).
func TestLargestViewerInBrowserCorpus(t *testing.T) {
	bin := chromium(t)
	largest, m := largestCorpusModule(t)
	r, err := Build(context.Background(), m, Options{})
	require.NoError(t, err)
	size, pageMS, wall := loadInBrowser(t, bin, r, "largest")
	t.Logf("%s (%d instructions): HTML %.1f MB, rendered in %d ms (%v with the browser's start)",
		filepath.Base(largest), m.NumInstructions(), float64(size)/1e6, pageMS, wall.Round(time.Millisecond))
	require.Less(t, size, int64(20<<20), "HTML size")
}

// BenchmarkLargestViewerInBrowser loads the viewer of the largest corpus
// module in headless Chromium and reports the milliseconds its script
// takes to draw it (render-ms) and the load with the browser's start
// (load-ms).
func BenchmarkLargestViewerInBrowser(b *testing.B) {
	bin := chromium(b)
	_, m := largestCorpusModule(b)
	r, err := Build(context.Background(), m, Options{})
	require.NoError(b, err)
	var render, load float64
	for i := 0; i < b.N; i++ {
		_, ms, wall := loadInBrowser(b, bin, r, fmt.Sprintf("largest-%d", i))
		render += float64(ms)
		load += float64(wall.Milliseconds())
	}
	b.ReportMetric(render/float64(b.N), "render-ms")
	b.ReportMetric(load/float64(b.N), "load-ms")
}

// largestCorpusModule returns the largest HLO file of the corpus and its
// module.
func largestCorpusModule(t testing.TB) (string, *hlo.Module) {
	t.Helper()
	var largest string
	var most int64
	for _, f := range corpus.Glob(t, "hlo/*/*.hlo") {
		if fi, err := os.Stat(f); err == nil && fi.Size() > most {
			largest, most = f, fi.Size()
		}
	}
	return largest, parseFile(t, largest)
}

// TestXLAViewerInBrowser: the viewer of a paired module draws XLA's plan
// beside hlomem's, a rectangle per buffer in each.
func TestXLAViewerInBrowser(t *testing.T) {
	bin := chromium(t)
	r := pairedReport(t, "*module_0010*", true)
	loadInBrowser(t, bin, r, "paired-0010")
}

// TestChiViewerInBrowser: the viewer of a JAX module with long op_names
// and source paths (jit__chi_at_q_jit, issue 27) fits a window 1400
// pixels wide, XLA's plan beside hlomem's.
func TestChiViewerInBrowser(t *testing.T) {
	bin := chromium(t)
	files := corpus.Glob(t, "paired-jax/module_0159.jit__chi_at_q_jit.0042/*after_optimizations.txt")
	require.Len(t, files, 1)
	r := chiReport(t, files[0])
	loadInBrowser(t, bin, r, "chi_at_q")
}
