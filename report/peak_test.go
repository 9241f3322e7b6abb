package report

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/assign"
)

// The peak as each output states it, read back from the output's bytes
// (issue 27: the peak was three different numbers).
var (
	textPeakRe  = regexp.MustCompile(`(?m)^Peak\n  \S+ \((\d+) bytes\) at step (\d+) of (\d+), in (\S+): `)
	textKindRe  = regexp.MustCompile(`(?m)^    (?:parameters|outputs|temps|constants|thread-local) +\S+ \((\d+) bytes\) +of `)
	polylineRe  = regexp.MustCompile(`<polyline class="live" points="([^"]*)"/>`)
	markerRe    = regexp.MustCompile(`<line id="[^"]*live-peak" class="peak" x1="([^"]+)" y1="([^"]+)" x2="[^"]+" y2="[^"]+" data-step="(\d+)" data-bytes="(\d+)"/>`)
	labelRe     = regexp.MustCompile(`>peak: ([^<]+) at step (\d+)</text>`)
	titleRe     = regexp.MustCompile(`>Memory occupied over program order \(peak ([^)]+) at step (\d+)\)</text>`)
	htmlPeakRe  = regexp.MustCompile(`<p class="peakline">Peak: <b>([^<]+)</b> \((\d+) bytes, [^)]*\) at step (\d+) of `)
	htmlRowRe   = regexp.MustCompile(`<tr data-size="(\d+)" data-start="-?\d+"><td class="n">`)
	pprofStepRe = regexp.MustCompile(`, step (\d+): (\d+) bytes$`)
)

func atoi64(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, s)
	return n
}

// curvePeak is the largest value of a curve and the first step reaching
// it (-1 when the curve is empty or all zero).
func curvePeak(curve []int64) (step int, top int64) {
	step = -1
	for t, v := range curve {
		if v > top {
			step, top = t, v
		}
	}
	return step, top
}

// outputs are a report written in every format.
type outputs struct{ text, json, svg, html, pprof []byte }

// writeOutputs writes r in every format.
func writeOutputs(t testing.TB, name string, r *Report) outputs {
	t.Helper()
	var o outputs
	for _, f := range []struct {
		dst   *[]byte
		write func(io.Writer) error
	}{{&o.text, r.WriteText}, {&o.json, r.WriteJSON}, {&o.svg, r.WriteSVG}, {&o.html, r.WriteHTML}, {&o.pprof, r.WritePprof}} {
		var b bytes.Buffer
		require.NoError(t, f.write(&b), name)
		*f.dst = b.Bytes()
	}
	return o
}

// checkPeakOutputs reads the peak back from every output of a report and holds
// that each states the curve's maximum at the step the curve first
// reaches it, and that what occupies memory there adds up to it: the text
// (the Peak line, the bytes by kind), the JSON (live_bytes, peak_step,
// peak_bytes, at_peak, peak_by_kind), the SVG and the HTML (the curve's
// points, the marker on the curve's highest point, its label and the
// chart's title; the page's peak line and table) and the pprof profile
// (the samples add up to the peak).
func checkPeakOutputs(t testing.TB, name string, out outputs) {
	t.Helper()
	var j jsonReport
	require.NoError(t, json.Unmarshal(out.json, &j), name)
	step, top := curvePeak(j.Live)
	require.Len(t, j.Live, len(j.Steps), name)
	require.Equal(t, step, j.PeakStep, "%s: JSON peak_step is the curve's first maximum", name)
	require.Equal(t, top, j.PeakBytes, "%s: JSON peak_bytes is the curve's maximum", name)
	require.LessOrEqual(t, j.LowerBound, top, "%s: the lower bound exceeds the peak", name)
	require.LessOrEqual(t, top, j.Total, "%s: the peak exceeds the total", name)
	// Why the total is above the bound: parts that add up to the gap,
	// none negative.
	var above int64
	for _, p := range j.AboveLowerBound {
		require.GreaterOrEqual(t, p.Bytes, int64(0), "%s: above the bound: part %+v", name, p)
		above += p.Bytes
	}
	require.Equal(t, j.Total-j.LowerBound, above, "%s: the parts above the bound add up to total - lower bound", name)
	var sum int64
	for _, x := range j.AtPeak {
		sum += x.Bytes
	}
	require.Equal(t, top, sum, "%s: JSON at_peak adds up to the peak", name)
	sum = 0
	for _, k := range j.PeakByKind {
		sum += k.Bytes
	}
	require.Equal(t, top, sum, "%s: JSON peak_by_kind adds up to the peak", name)
	if step < 0 {
		return // nothing occupies memory: no peak to read
	}

	text := string(out.text)
	m := textPeakRe.FindStringSubmatch(text)
	require.NotNil(t, m, "%s: no peak line in the text:\n%s", name, text)
	require.Equal(t, top, atoi64(t, m[1]), "%s: text peak bytes", name)
	require.Equal(t, strconv.Itoa(step), m[2], "%s: text peak step", name)
	require.Equal(t, strconv.Itoa(len(j.Steps)), m[3], name)
	require.Equal(t, j.PeakComp, m[4], name)
	sum = 0
	kinds := textKindRe.FindAllStringSubmatch(text, -1)
	require.NotEmpty(t, kinds, name)
	for _, k := range kinds {
		sum += atoi64(t, k[1])
	}
	require.Equal(t, top, sum, "%s: the text's bytes by kind add up to the peak", name)

	checkChartPeak(t, name+" (SVG)", string(out.svg), step, top)
	page := string(out.html)
	checkChartPeak(t, name+" (HTML)", page, step, top)
	m = htmlPeakRe.FindStringSubmatch(page)
	require.NotNil(t, m, "%s: no peak line in the page", name)
	require.Equal(t, assign.HumanBytes(top), m[1], name)
	require.Equal(t, top, atoi64(t, m[2]), name)
	require.Equal(t, strconv.Itoa(step), m[3], name)
	sum = 0
	table := page[strings.Index(page, `<table class="sortable peaktable">`):]
	table = table[:strings.Index(table, "</table>")]
	rows := htmlRowRe.FindAllStringSubmatch(table, -1)
	require.Len(t, rows, len(j.AtPeak), name)
	for _, row := range rows {
		sum += atoi64(t, row[1])
	}
	require.Equal(t, top, sum, "%s: the page's table adds up to the peak", name)

	p, err := profile.Parse(bytes.NewReader(out.pprof))
	require.NoError(t, err, name)
	sum = 0
	for _, s := range p.Sample {
		sum += s.Value[0]
	}
	require.Equal(t, top, sum, "%s: the profile's samples add up to the peak", name)
	require.Len(t, p.Comments, 1, name)
	m = pprofStepRe.FindStringSubmatch(p.Comments[0])
	require.NotNil(t, m, "%s: %q", name, p.Comments[0])
	require.Equal(t, strconv.Itoa(step), m[1], name)
	require.Equal(t, top, atoi64(t, m[2]), name)
}

// checkChartPeak reads the live chart of an SVG or HTML text: its curve
// is at its highest point at the peak step, the marker stands on it, and the marker, its label and the chart's title give the peak.
func checkChartPeak(t testing.TB, name, doc string, step int, top int64) {
	t.Helper()
	pl := polylineRe.FindStringSubmatch(doc)
	require.NotNil(t, pl, "%s: no curve", name)
	pts := strings.Fields(pl[1])
	require.Zero(t, len(pts)%2, name)
	type seg struct {
		x0, x1 float64
		y      string
	}
	var segs []seg
	for i := 0; i < len(pts); i += 2 {
		p0, p1 := strings.Split(pts[i], ","), strings.Split(pts[i+1], ",")
		require.Equal(t, p0[1], p1[1], "%s: a step of the curve is flat", name)
		x0, err := strconv.ParseFloat(p0[0], 64)
		require.NoError(t, err)
		x1, err := strconv.ParseFloat(p1[0], 64)
		require.NoError(t, err)
		segs = append(segs, seg{x0, x1, p0[1]})
	}
	// The curve's highest point (least y): the peak step is at it (the
	// curve's values are exact in the JSON; here two steps a few bytes
	// apart may round to one pixel row, so the first such step need not
	// be the peak's).
	least := ""
	for i, s := range segs {
		y, err := strconv.ParseFloat(s.y, 64)
		require.NoError(t, err)
		if l, _ := strconv.ParseFloat(least, 64); i == 0 || y < l {
			least = s.y
		}
	}
	require.Less(t, step, len(segs), name)
	require.Equal(t, least, segs[step].y, "%s: the curve is at its highest point at the peak step", name)
	mk := markerRe.FindStringSubmatch(doc)
	require.NotNil(t, mk, "%s: no peak marker", name)
	x, err := strconv.ParseFloat(mk[1], 64)
	require.NoError(t, err)
	require.True(t, segs[step].x0 <= x && x <= segs[step].x1, "%s: the marker (x %v) is off the peak step [%v, %v]", name, x, segs[step].x0, segs[step].x1)
	require.Equal(t, segs[step].y, mk[2], "%s: the marker's top is the curve's point", name)
	require.Equal(t, strconv.Itoa(step), mk[3], name)
	require.Equal(t, top, atoi64(t, mk[4]), name)
	lb := labelRe.FindStringSubmatch(doc)
	require.NotNil(t, lb, "%s: no peak label", name)
	require.Equal(t, assign.HumanBytes(top), lb[1], name)
	require.Equal(t, strconv.Itoa(step), lb[2], name)
	ti := titleRe.FindStringSubmatch(doc)
	require.NotNil(t, ti, "%s: no chart title with the peak", name)
	require.Equal(t, assign.HumanBytes(top), ti[1], name)
	require.Equal(t, strconv.Itoa(step), ti[2], name)
}

// TestPeakOutputsAgree: on the bundled example, every output states the
// same peak, the curve's maximum at its first step.
func TestPeakOutputsAgree(t *testing.T) {
	m := parseFile(t, transformerHLO)
	r, err := Build(t.Context(), m, Options{})
	require.NoError(t, err)
	checkPeakOutputs(t, "transformer", writeOutputs(t, "transformer", r))
}
