package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/assign"
)

// The charts are drawn in pixels: a plot area of plotWidth(steps) by
// chartHeight (buffer chart) or liveHeight (live bytes), inside margins
// for the axes. Coordinates are computed here, in float64, so that byte
// offsets of 10^11 keep their precision (a renderer's float32 would not).
const (
	marginLeft   = 80
	marginRight  = 20
	marginTop    = 30
	marginBottom = 34
	liveHeight   = 200
	chartHeight  = 420
)

// plotWidth is the width of a plot of n steps: three pixels a step,
// between 1000 and 1180, so that the charts (with their margins, 1280
// pixels) fit a window 1400 pixels wide without scrolling sideways
// (TestViewerFitsWindow); a long program gets less than a pixel a step.
func plotWidth(n int) float64 {
	return math.Min(math.Max(float64(n)*3, 1000), maxPlotWidth)
}

// maxPlotWidth is the widest plot.
const maxPlotWidth = 1180

// kindClass is the CSS class of an allocation kind, which gives the
// colour of its buffers.
func kindClass(kind string) string {
	switch kind {
	case "parameter":
		return "kp"
	case "constant":
		return "kc"
	case "maybe-live-out":
		return "ko"
	case "thread-local":
		return "kl"
	}
	return "kt"
}

// chartStyle is the CSS the charts need, in the SVG file and the HTML
// page alike.
const chartStyle = `.kp{fill:#4e79a7}.kc{fill:#9c9c9c}.ko{fill:#59a14f}.kt{fill:#f28e2b}.kl{fill:#b07aa1}
rect.b{stroke:#fff;stroke-width:0.3}rect.b:hover{stroke:#000;stroke-width:1}
.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}
.live{fill:none;stroke:#1f4e79;stroke-width:1.5}.peak{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}.peakdot{fill:#d62728}
.lb{stroke:#2ca02c;stroke-width:1;stroke-dasharray:6 3}.tot{stroke:#555;stroke-width:1;stroke-dasharray:2 3}
text{font:11px sans-serif;fill:#222}.title{font:bold 13px sans-serif}`

// svgWriter writes chart elements; errors are kept until the end.
type svgWriter struct {
	b *bufio.Writer
}

func (s *svgWriter) f(format string, args ...any) { fmt.Fprintf(s.b, format, args...) }

// xAxis draws the step axis of a plot at y0 (its bottom), with ticks.
func (s *svgWriter) xAxis(y0, w float64, n int) {
	s.f(`<line class="axis" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, marginLeft, y0, marginLeft+w, y0)
	step := int64(1)
	if n > 0 {
		mant, exp := roundStep(float64(n), 10)
		step = max(mant*int64(math.Pow10(max(exp, 0))), 1)
	}
	for t := int64(0); t <= int64(n); t += step {
		x := marginLeft + float64(t)/math.Max(float64(n), 1)*w
		s.f(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%d</text>`,
			x, y0, x, y0+4, x, y0+16, t)
	}
	s.f(`<text x="%.1f" y="%.1f" text-anchor="middle">program step</text>`, marginLeft+w/2, y0+30)
}

// yAxis draws a byte axis from top to top+h for 0..maxY, with grid lines
// across width w, at round values (byteTicks).
func (s *svgWriter) yAxis(top, h, w float64, maxY int64) {
	s.f(`<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, marginLeft, top, marginLeft, top+h)
	if maxY <= 0 {
		return
	}
	for _, t := range byteTicks(maxY) {
		y := top + h - t.bytes/float64(maxY)*h
		s.f(`<line class="grid" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/><text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`,
			marginLeft, y, marginLeft+w, y, marginLeft-4, y+4, html.EscapeString(t.label))
	}
}

// tick is one tick of a byte axis: where it is, and its label.
type tick struct {
	bytes float64
	label string
}

// byteUnits are the units of a byte axis, each 1024 times the one before.
var byteUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// byteTicks returns the ticks of a byte axis from 0 to maxY: in the
// largest binary unit of which maxY holds at least one, a round step (1, 2
// or 5 times a power of ten of that unit) that cuts the axis into about
// five parts, so that the labels read 0, 200KiB, 400KiB or 0, 0.5GiB,
// 1GiB, 1.5GiB, never 195.3KiB.
func byteTicks(maxY int64) []tick {
	if maxY <= 0 {
		return nil
	}
	u, unit := 0, 1.0
	for u < len(byteUnits)-1 && float64(maxY) >= unit*1024 {
		u++
		unit *= 1024
	}
	span := float64(maxY) / unit
	mant, exp := roundStep(span, 5)
	if u == 0 && exp < 0 {
		mant, exp = 1, 0 // no fraction of a byte
	}
	var out []tick
	for i := int64(0); ; i++ {
		n := i * mant // the value is n * 10^exp units
		v := float64(n) * math.Pow10(exp)
		if v > span*(1+1e-9) {
			break
		}
		label := "0"
		if n != 0 {
			label = decimal(n, exp) + byteUnits[u]
		}
		out = append(out, tick{bytes: v * unit, label: label})
	}
	return out
}

// roundStep returns the step mant·10^exp, mant 1, 2 or 5, that cuts span
// (> 0) into about parts parts, rounding the raw step up.
func roundStep(span float64, parts int) (mant int64, exp int) {
	raw := span / float64(parts)
	exp = int(math.Floor(math.Log10(raw)))
	p := math.Pow10(exp)
	for _, m := range []int64{1, 2, 5} {
		if float64(m)*p >= raw*(1-1e-9) {
			return m, exp
		}
	}
	return 1, exp + 1
}

// decimal prints n·10^exp exactly, without trailing zeros: (15, -1) is
// "1.5", (2, 2) "200".
func decimal(n int64, exp int) string {
	if exp >= 0 {
		return strconv.FormatInt(n*int64(math.Pow10(exp)), 10)
	}
	d := strconv.FormatInt(n, 10)
	k := -exp
	for len(d) <= k {
		d = "0" + d
	}
	whole, frac := d[:len(d)-k], strings.TrimRight(d[len(d)-k:], "0")
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

// liveChart draws the bytes the plan occupies over program order
// (Report.Live) at y offset top, with the plan's total, its lower bound
// and the peak marked and labelled. id names the chart's element.
func (s *svgWriter) liveChart(r *Report, top float64, id string) {
	n := len(r.Live)
	w := plotWidth(n)
	h := float64(liveHeight)
	maxY := max(r.Total, r.LowerBound, r.PeakBytes)
	s.f(`<g id="%s">`, id)
	title := "Memory occupied over program order"
	if r.PeakStep >= 0 {
		title += fmt.Sprintf(" (peak %s at step %d)", assign.HumanBytes(r.PeakBytes), r.PeakStep)
	}
	s.f(`<text class="title" x="%d" y="%.1f">%s</text>`, marginLeft, top-10, html.EscapeString(title))
	s.yAxis(top, h, w, maxY)
	s.xAxis(top+h, w, n)
	yOf := func(v int64) float64 {
		if maxY == 0 {
			return top + h
		}
		return top + h - float64(v)/float64(maxY)*h
	}
	if n > 0 {
		s.b.WriteString(`<polyline class="live" points="`)
		for t, v := range r.Live {
			x0 := marginLeft + float64(t)/float64(n)*w
			x1 := marginLeft + float64(t+1)/float64(n)*w
			y := yOf(v)
			s.f("%.2f,%.2f %.2f,%.2f ", x0, y, x1, y)
		}
		s.b.WriteString(`"/>`)
	}
	s.f(`<line class="tot" x1="%d" y1="%.2f" x2="%.1f" y2="%.2f"/><text x="%.1f" y="%.2f" text-anchor="end">total %s</text>`,
		marginLeft, yOf(r.Total), marginLeft+w, yOf(r.Total), marginLeft+w, yOf(r.Total)-3, html.EscapeString(assign.HumanBytes(r.Total)))
	s.f(`<line class="lb" x1="%d" y1="%.2f" x2="%.1f" y2="%.2f"/><text x="%.1f" y="%.2f" text-anchor="end">lower bound %s</text>`,
		marginLeft, yOf(r.LowerBound), marginLeft+w, yOf(r.LowerBound), marginLeft+w, yOf(r.LowerBound)+12, html.EscapeString(assign.HumanBytes(r.LowerBound)))
	if r.PeakStep >= 0 && n > 0 {
		// The marker stands on the curve's point at the peak step, and
		// the label gives that point's figure.
		x := marginLeft + (float64(r.PeakStep)+0.5)/float64(n)*w
		y := yOf(r.PeakBytes)
		anchor, dx := "start", 4.0
		if x > marginLeft+w*0.75 {
			anchor, dx = "end", -4
		}
		s.f(`<line id="%s-peak" class="peak" x1="%.2f" y1="%.2f" x2="%.2f" y2="%.1f" data-step="%d" data-bytes="%d"/>`,
			id, x, y, x, top+h, r.PeakStep, r.PeakBytes)
		s.f(`<circle class="peakdot" cx="%.2f" cy="%.2f" r="3"/><text id="%s-peaklabel" x="%.2f" y="%.1f" text-anchor="%s">peak: %s at step %d</text>`,
			x, y, id, x+dx, top+h-8, anchor, html.EscapeString(assign.HumanBytes(r.PeakBytes)), r.PeakStep)
	}
	s.b.WriteString(`</g>`)
}

// bufferChart draws one rectangle per buffer, x its live range, y its
// address, coloured by kind; data-i is the buffer's index in bufs (the
// HTML page's data), id names the chart.
func (s *svgWriter) bufferChart(title string, bufs []*Buffer, allocs []Allocation, steps int, top float64, id string) {
	w := plotWidth(steps)
	h := float64(chartHeight)
	var maxY int64
	for _, a := range allocs {
		maxY = max(maxY, a.Base+a.Size)
	}
	s.f(`<g id="%s">`, id)
	s.f(`<text class="title" x="%d" y="%.1f">%s</text>`, marginLeft, top-10, html.EscapeString(title))
	s.yAxis(top, h, w, maxY)
	s.xAxis(top+h, w, steps)
	// Every buffer gets its rectangle, a zero-byte one too (of no
	// height).
	scaleY, scaleX := float64(max(maxY, 1)), float64(max(steps, 1))
	{
		for i, b := range bufs {
			x := marginLeft + float64(b.Start)/scaleX*w
			bw := float64(b.End-b.Start+1) / scaleX * w
			y := top + h - float64(b.Offset+b.Size)/scaleY*h
			bh := float64(b.Size) / scaleY * h
			s.f(`<rect class="b %s" data-i="%d" x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`, kindClass(b.Kind), i, x, y, bw, bh)
		}
	}
	s.b.WriteString(`</g>`)
}

// legend draws the colour of each kind at y.
func (s *svgWriter) legend(y float64) {
	x := float64(marginLeft)
	for _, k := range []string{"parameter", "constant", "maybe-live-out", "preallocated-temp", "thread-local"} {
		s.f(`<rect class="%s" x="%.1f" y="%.1f" width="10" height="10"/><text x="%.1f" y="%.1f">%s</text>`, kindClass(k), x, y-9, x+14, y, k)
		x += 14 + 7*float64(len(k)) + 16
	}
}

// chartsHeight is the height of the charts of r, stacked.
func (r *Report) chartsHeight() float64 {
	h := float64(marginTop + liveHeight + marginBottom + 20 + marginTop + chartHeight + marginBottom)
	if r.XLA != nil {
		h += marginTop + chartHeight + marginBottom
	}
	return h + 30
}

// writeCharts draws the live bytes, hlomem's buffer chart and XLA's, one
// under the other, from the top of the SVG.
func (r *Report) writeCharts(s *svgWriter, prefix string) {
	top := float64(marginTop)
	s.liveChart(r, top, prefix+"live")
	top += liveHeight + marginBottom + 20 + marginTop
	s.bufferChart(fmt.Sprintf("hlomem's plan: %s in %d allocations, one rectangle per buffer (x: live range, y: address)", assign.HumanBytes(r.Total), len(r.Allocations)),
		r.Buffers, r.Allocations, len(r.Steps), top, prefix+"buffers")
	top += chartHeight + marginBottom
	if r.XLA != nil {
		top += marginTop
		s.bufferChart(fmt.Sprintf("XLA's plan: %s in %d allocations (%s)", assign.HumanBytes(r.XLA.Total), len(r.XLA.Allocations), filepath.Base(r.XLA.File)),
			r.XLA.Buffers, r.XLA.Allocations, len(r.Steps), top, prefix+"xla")
		top += chartHeight + marginBottom
	}
	s.legend(top + 16)
}

// WriteSVG writes the live bytes and the buffer charts (hlomem's, and
// XLA's when the report has it) as one SVG document.
func (r *Report) WriteSVG(w io.Writer) error {
	b := bufio.NewWriterSize(w, 1<<16)
	width := marginLeft + plotWidth(len(r.Steps)) + marginRight
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", width, r.chartsHeight(), width, r.chartsHeight())
	fmt.Fprintf(b, "<title>%s</title><style>%s</style>\n", html.EscapeString("memory of "+r.Module), chartStyle)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>`)
	r.writeCharts(&svgWriter{b: b}, "")
	b.WriteString("\n</svg>\n")
	return b.Flush()
}
