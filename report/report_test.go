package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/golden"
)

// transformerHLO is the bundled example of make demo.
const transformerHLO = "../testdata/transformer.hlo"

func parseFile(t testing.TB, path string) *hlo.Module {
	t.Helper()
	mods, err := hlo.ParseFile(path)
	require.NoError(t, err)
	require.Len(t, mods, 1)
	return mods[0]
}

// transformerReport is the report of the bundled example with every
// what-if, built once for the package's tests (it takes seconds; the
// tests read it and never change it).
func transformerReport(t testing.TB) *Report {
	t.Helper()
	transformerOnce.Do(func() {
		mods, err := hlo.ParseFile(transformerHLO)
		if err != nil {
			transformerErr = err
			return
		}
		transformerBuilt, transformerErr = Build(context.Background(), mods[0], Options{WhatIf: WhatIfs(mods[0])})
	})
	require.NoError(t, transformerErr)
	return transformerBuilt
}

var (
	transformerOnce  sync.Once
	transformerBuilt *Report
	transformerErr   error
)

// TestSections: each section of the text report of the bundled example,
// whole, against its golden file (HLOMEM_UPDATE=1 rewrites them).
func TestSections(t *testing.T) {
	r := transformerReport(t)
	for _, s := range []string{"totals", "peak", "what-if"} {
		var b bytes.Buffer
		require.NoError(t, r.writeSection(&b, s))
		require.NotEmpty(t, b.String(), s)
		golden.Check(t, filepath.Join("testdata", "golden", "transformer-"+s+".golden"), b.Bytes())
	}
	var all bytes.Buffer
	require.NoError(t, r.WriteText(&all))
	for _, s := range []string{"\nTotals\n", "\nPeak\n", "\nWhat if\n"} {
		require.Contains(t, all.String(), s)
	}
}

// TestReportFigures: the report's figures agree with the plan's and with
// each other.
func TestReportFigures(t *testing.T) {
	r := transformerReport(t)
	require.Equal(t, r.Parameters+r.Outputs+r.Temps+r.Constants+r.ThreadLocal, r.Total)
	var sum int64
	for _, a := range r.Allocations {
		sum += a.Size
	}
	require.Equal(t, r.Total, sum)
	require.LessOrEqual(t, r.LowerBound, r.Total)
	require.GreaterOrEqual(t, r.PeakStep, 0)
	require.Less(t, r.PeakStep, len(r.Steps))
	// What occupies memory at the peak: largest first, adding up to the
	// peak, per kind too; each occupant lies in its allocation.
	var occupied int64
	for i, x := range r.AtPeak {
		if i > 0 {
			require.GreaterOrEqual(t, r.AtPeak[i-1].Bytes, x.Bytes)
		}
		a := r.Allocations[x.Allocation]
		require.Equal(t, a.Kind, x.Kind)
		require.GreaterOrEqual(t, x.Offset, a.Base, x.Buffer.Name)
		require.LessOrEqual(t, x.Offset+x.Bytes, a.Base+a.Size, x.Buffer.Name)
		if x.Live {
			require.LessOrEqual(t, x.Buffer.Start, r.PeakStep, x.Buffer.Name)
		}
		occupied += x.Bytes
	}
	require.Equal(t, r.PeakBytes, occupied)
	var byKind, kindTotal int64
	for _, k := range r.PeakByKind {
		byKind += k.Bytes
		kindTotal += k.Total
	}
	require.Equal(t, r.PeakBytes, byKind)
	require.Equal(t, r.Total, kindTotal)
	require.Len(t, r.Peak, DefaultTop)
	// Every buffer lies in its allocation, within its live steps.
	for _, b := range r.Buffers {
		a := r.Allocations[b.Allocation]
		require.GreaterOrEqual(t, b.Offset, a.Base, b.Name)
		require.LessOrEqual(t, b.Offset+b.Size, a.Base+a.Size, b.Name)
		require.LessOrEqual(t, b.Start, b.End, b.Name)
		require.Less(t, b.End, len(r.Steps), b.Name)
	}
	// Source lines come from the metadata.
	src := 0
	for _, x := range r.Peak {
		if strings.HasPrefix(x.Buffer.Source, "/home/user/model/transformer.py:") {
			src++
		}
	}
	require.Positive(t, src)
	// The curve never exceeds the plan, its maximum is the peak, first
	// reached at the peak step, and no lower than the lower bound.
	var top int64
	first := -1
	for i, v := range r.Live {
		require.LessOrEqual(t, v, r.Total)
		if v > top {
			top, first = v, i
		}
	}
	require.Equal(t, r.PeakBytes, top)
	require.Equal(t, r.PeakStep, first)
	require.LessOrEqual(t, r.LowerBound, r.PeakBytes)
	// The what-ifs: the plan's own choices give its figures.
	m := parseFile(t, transformerHLO)
	for _, w := range r.WhatIf {
		require.Empty(t, w.Err, w.Lever.String())
		if w.Lever.Current(Options{}, m) {
			require.Equal(t, r.Total, w.Total, w.Lever.String())
			require.Equal(t, r.LowerBound, w.LowerBound, w.Lever.String())
		}
	}
}

// TestJSON: the JSON report decodes and holds the figures and every
// buffer.
func TestJSON(t *testing.T) {
	r := transformerReport(t)
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	var j jsonReport
	require.NoError(t, json.Unmarshal(b.Bytes(), &j))
	require.Equal(t, r.Total, j.Total)
	require.Equal(t, r.LowerBound, j.LowerBound)
	require.Equal(t, r.PeakStep, j.PeakStep)
	require.Len(t, j.Buffers, len(r.Buffers))
	require.Len(t, j.Live, len(r.Steps))
	require.Len(t, j.WhatIf, len(r.WhatIf))
	require.Equal(t, r.PeakBytes, j.PeakBytes)
	require.Len(t, j.AtPeak, len(r.AtPeak))
	ids := map[int]bool{}
	for _, x := range j.Buffers {
		ids[x.ID] = true
	}
	for _, x := range j.AtPeak {
		require.True(t, ids[x.Buffer], "peak buffer %d is among the buffers", x.Buffer)
	}
}

// rectCount counts the buffer rectangles of an SVG or HTML text.
func rectCount(s string) int { return strings.Count(s, `<rect class="b `) }

// TestSVG: the SVG is well-formed XML with one rectangle per buffer.
func TestSVG(t *testing.T) {
	r := transformerReport(t)
	var b bytes.Buffer
	require.NoError(t, r.WriteSVG(&b))
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	rects := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && strings.HasPrefix(a.Value, "b ") {
					rects++
				}
			}
		}
	}
	require.Equal(t, len(r.Buffers), rects)
	require.Contains(t, b.String(), "Memory occupied over program order")
	require.Contains(t, b.String(), `class="peak"`)
}

// TestHTMLSelfContained: the page loads nothing from elsewhere, holds one
// rectangle per buffer and the table of what occupies memory at the peak.
func TestHTMLSelfContained(t *testing.T) {
	r := transformerReport(t)
	var b bytes.Buffer
	require.NoError(t, r.WriteHTML(&b))
	s := b.String()
	require.True(t, strings.HasPrefix(s, "<!DOCTYPE html>"))
	require.Equal(t, len(r.Buffers), rectCount(s))
	// No resource from the network: the only URL is the SVG namespace.
	for _, u := range regexp.MustCompile(`(?i)(src|href)\s*=|https?://[^"' ]+`).FindAllString(s, -1) {
		require.Equal(t, "http://www.w3.org/2000/svg", u)
	}
	require.Equal(t, len(r.AtPeak), strings.Count(s, "<tr data-size="))
	require.Contains(t, s, `data-sort="size"`)
	require.Contains(t, s, `data-sort="start"`)
}

// TestPprof: the profile parses back with the pprof package, holds one
// sample per occupant of memory at the peak whose values add up to the
// peak's bytes,
// with their source lines; go tool pprof -top reads it.
func TestPprof(t *testing.T) {
	r := transformerReport(t)
	var b bytes.Buffer
	require.NoError(t, r.WritePprof(&b))
	p, err := profile.Parse(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	require.NoError(t, p.CheckValid())
	require.Equal(t, "space", p.SampleType[0].Type)
	require.Equal(t, "bytes", p.SampleType[0].Unit)
	require.Len(t, p.Sample, len(r.AtPeak))
	var sum int64
	lines := 0
	for _, s := range p.Sample {
		sum += s.Value[0]
		if l := s.Location[0].Line[0]; l.Line > 0 {
			require.Equal(t, "/home/user/model/transformer.py", l.Function.Filename)
			lines++
		}
	}
	require.Equal(t, r.PeakBytes, sum)
	require.Positive(t, lines)

	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool pprof: no go command on PATH")
	}
	path := filepath.Join(t.TempDir(), "peak.pb.gz")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	out, err := exec.Command(gobin, "tool", "pprof", "-top", "-nodefraction=0", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "params['mlp']['w1']")
	// pprof scales the total to its own unit (514.50kB); what must hold is
	// that the nodes shown account for all of it.
	shown := regexp.MustCompile(`Showing nodes accounting for (\S+), 100% of (\S+) total`).FindStringSubmatch(string(out))
	require.NotNil(t, shown, "%s", out)
	require.Equal(t, shown[1], shown[2])
	out, err = exec.Command(gobin, "tool", "pprof", "-top", "-lines", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "transformer.py:84")
}

// TestXLAComparisonRequiresPlan: without XLA's plan there is no XLA
// section.
func TestNoXLA(t *testing.T) {
	r := transformerReport(t)
	require.Nil(t, r.XLA)
	var b bytes.Buffer
	require.NoError(t, r.writeSection(&b, "xla"))
	require.Empty(t, b.String())
	_ = assign.GPU
}

// pairedReport is the report of a paired torch-xla module with XLA's own
// buffer assignment beside it.
func pairedReport(t *testing.T, dir string, whatIf bool) *Report {
	t.Helper()
	mods := corpus.Glob(t, "paired/"+dir+"/*after_optimizations.txt")
	require.Len(t, mods, 1)
	m := parseFile(t, mods[0])
	xf := strings.TrimSuffix(mods[0], ".txt") + "-buffer-assignment.txt"
	src, err := os.ReadFile(xf)
	require.NoError(t, err)
	x, err := assign.ReadXLA(xf, src)
	require.NoError(t, err)
	opts := Options{XLA: x, XLAFile: filepath.Base(xf)}
	if whatIf {
		opts.WhatIf = WhatIfs(m)
	}
	r, err := Build(context.Background(), m, opts)
	require.NoError(t, err)
	return r
}

// TestXLASection: beside XLA's own plan of a paired module, the report
// gives both totals, what hlomem saves, and the buffers placed
// differently, against its golden file; XLA's layout holds every buffer
// at XLA's address.
func TestXLASection(t *testing.T) {
	r := pairedReport(t, "*module_0010*", false)
	require.NotNil(t, r.XLA)
	var b bytes.Buffer
	require.NoError(t, r.writeSection(&b, "xla"))
	golden.Check(t, filepath.Join("testdata", "golden", "paired-0010-xla.golden"), b.Bytes())
	x := r.XLA
	require.Zero(t, x.Unplaced)
	require.Zero(t, x.Missing)
	require.Equal(t, len(r.Buffers), x.Placed)
	var sum int64
	for _, a := range x.Allocations {
		sum += a.Size
	}
	require.Equal(t, x.Total, sum)
	for _, xb := range x.Buffers {
		a := x.Allocations[xb.Allocation]
		require.GreaterOrEqual(t, xb.Offset, a.Base, xb.Name)
		require.LessOrEqual(t, xb.Offset+xb.Size, a.Base+a.Size, xb.Name)
	}
	require.Contains(t, b.String(), "hlomem saves")
}

// TestXLAAcrossPairedCorpus: on every paired torch-xla module, XLA's plan reads
// and places every buffer of hlomem's analysis.
func TestXLAAcrossPairedCorpus(t *testing.T) {
	dirs := corpus.Glob(t, "paired/*")
	for _, d := range dirs {
		r := pairedReport(t, filepath.Base(d), false)
		require.Zero(t, r.XLA.Unplaced, d)
		require.Zero(t, r.XLA.Missing, d)
		t.Logf("%-50s XLA %9d hlomem %9d moved %3d of %3d", filepath.Base(d), r.XLA.Total, r.Total, len(r.XLA.Moved), r.XLA.Placed)
	}
}

// chiReport is the report of a paired JAX module (no what-ifs) with XLA's
// plan beside it.
func chiReport(t testing.TB, file string) *Report {
	t.Helper()
	m := parseFile(t, file)
	xf := strings.TrimSuffix(file, ".txt") + "-buffer-assignment.txt"
	src, err := os.ReadFile(xf)
	require.NoError(t, err)
	x, err := assign.ReadXLA(xf, src)
	require.NoError(t, err)
	r, err := Build(context.Background(), m, Options{XLA: x, XLAFile: filepath.Base(xf)})
	require.NoError(t, err)
	return r
}

// TestLargeConstantAtPeak (issue 27, item 5): on jit__chi_at_q_jit the
// 329 MiB constant that the old "live there" list left out is among the
// largest of what occupies memory at the peak, as a constant, and the
// bytes by kind account for every constant and the whole peak.
func TestLargeConstantAtPeak(t *testing.T) {
	files := corpus.Glob(t, "paired-jax/module_0159.jit__chi_at_q_jit.0042/*after_optimizations.txt")
	require.Len(t, files, 1)
	r := chiReport(t, files[0])
	var found *Occupant
	for _, x := range r.Peak {
		if x.Buffer.Name == "constant_45_0{}" {
			found = x
		}
	}
	require.NotNil(t, found, "the 329 MiB constant is not among the largest at the peak")
	require.Equal(t, "constant", found.Kind)
	require.EqualValues(t, 345047040, found.Bytes)
	require.False(t, found.Live, "the constant is held, not live, at the peak")
	var constants, sum int64
	for _, k := range r.PeakByKind {
		if k.Kind == "constant" {
			constants = k.Bytes
			require.Equal(t, r.Constants, k.Total)
		}
		sum += k.Bytes
	}
	require.Equal(t, r.Constants, constants, "every constant occupies memory at the peak")
	require.Equal(t, r.PeakBytes, sum)
	var b bytes.Buffer
	require.NoError(t, r.writeSection(&b, "peak"))
	require.Contains(t, b.String(), "constant_45_0{}")
	require.Regexp(t, `(?m)^    constants +357\.95MiB \(375336071 bytes\) +of 357\.95MiB +29 allocations$`, b.String())
	checkPeakOutputs(t, "chi_at_q", writeOutputs(t, "chi_at_q", r))
}

// TestByteTicks (issue 27, item 12): the ticks of a byte axis fall on
// round values of a binary unit and read cleanly (not 195.3KiB or
// 476.84MiB, what decimal steps printed in binary units gave).
func TestByteTicks(t *testing.T) {
	labels := func(maxY int64) []string {
		var out []string
		for _, tk := range byteTicks(maxY) {
			out = append(out, tk.label)
		}
		return out
	}
	for _, tc := range []struct {
		max  int64
		want []string
	}{
		{527560, []string{"0", "200KiB", "400KiB"}},                          // the transformer's total
		{1538402736, []string{"0", "0.5GiB", "1GiB"}},                        // jit__chi_at_q_jit's
		{500_000_000, []string{"0", "100MiB", "200MiB", "300MiB", "400MiB"}}, // 476.84MiB
		{200_000, []string{"0", "50KiB", "100KiB", "150KiB"}},                // 195.3KiB
		{1000, []string{"0", "200B", "400B", "600B", "800B", "1000B"}},
		{3, []string{"0", "1B", "2B", "3B"}},
		{1024, []string{"0", "0.2KiB", "0.4KiB", "0.6KiB", "0.8KiB", "1KiB"}},
		{3 << 40, []string{"0", "1TiB", "2TiB", "3TiB"}},
	} {
		require.Equal(t, tc.want, labels(tc.max), "%d", tc.max)
	}
	clean := regexp.MustCompile(`^(0|[1-9][0-9]*(\.[0-9])?(B|KiB|MiB|GiB|TiB|PiB|EiB)|0\.[0-9](KiB|MiB|GiB|TiB|PiB|EiB))$`)
	for n := int64(1); n < 1<<62; n = n*3 + 7 {
		ticks := byteTicks(n)
		require.GreaterOrEqual(t, len(ticks), 2, "%d", n)
		require.LessOrEqual(t, len(ticks), 11, "%d", n)
		step := ticks[1].bytes - ticks[0].bytes
		for i, tk := range ticks {
			require.Regexp(t, clean, tk.label, "%d", n)
			require.LessOrEqual(t, tk.bytes, float64(n)*(1+1e-9), "%d", n)
			require.InDelta(t, float64(i)*step, tk.bytes, step*1e-9, "%d: evenly spaced", n)
		}
	}
	// The charts of the bundled example: every tick label is clean.
	r := transformerReport(t)
	var b bytes.Buffer
	require.NoError(t, r.WriteSVG(&b))
	ticks := regexp.MustCompile(`<text class="tick"[^>]*text-anchor="end">([^<]*)</text>`).FindAllStringSubmatch(b.String(), -1)
	require.NotEmpty(t, ticks)
	for _, tk := range ticks {
		require.Regexp(t, clean, tk[1])
	}
}
