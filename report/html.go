package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"

	"github.com/hlomem/hlomem/assign"
)

// The memory viewer is one self-contained HTML file: no network, styles
// and scripts inline. The charts are the SVG of writeCharts, drawn here
// in Go, so that the page shows them even before (or without) its script;
// the script adds the details of a buffer on hover (from the JSON data in
// the page), sorts the table of the buffers at the peak, and records on
// <body> how many buffer rectangles it found (data-rendered), how many
// pixels the page or its charts would scroll sideways in the window
// (data-overflow), the milliseconds from navigation to the end of the
// script (data-ms) and any script error (data-error), which the browser
// test reads.

const pageStyle = `body{font:13px/1.4 sans-serif;margin:16px 24px;color:#222}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:20px 0 6px}.sub{color:#666;margin:0 0 12px}
table{border-collapse:collapse;margin:4px 0 8px}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top;overflow-wrap:anywhere}
p,code,h1,h2{overflow-wrap:anywhere}td.n{white-space:nowrap}
th{border-bottom:1px solid #999}td.n,th.n{text-align:right}th[data-sort]{cursor:pointer;text-decoration:underline dotted}
.charts{overflow-x:auto;border:1px solid #ddd;margin:8px 0}
#tip{position:fixed;pointer-events:none;background:#fffbe6;border:1px solid #c9b458;padding:6px 8px;font:12px monospace;white-space:pre;z-index:9;box-shadow:1px 1px 4px #0003}
.module{border-top:2px solid #444;margin-top:18px;padding-top:8px}`

const pageScript = `(function(){
var body=document.body;
window.addEventListener('error',function(e){body.setAttribute('data-error',String(e.message||e));});
var tip=document.getElementById('tip');
function human(n){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(Math.abs(n)>=1024&&i<u.length-1){n/=1024;i++;}return (i?n.toFixed(2):n)+u[i];}
var mods=document.querySelectorAll('.module'),rects=0;
mods.forEach(function(mod){
  var data=JSON.parse(mod.querySelector('script.data').textContent);
  function show(e){
    var r=e.target;if(!r.classList||!r.classList.contains('b')){tip.hidden=true;return;}
    var g=r.closest('g'),list=g&&g.id.slice(-3)==='xla'?data.x:data.b,b=list[+r.getAttribute('data-i')];
    if(!b)return;
    var s=data.steps;
    tip.textContent=b[0]+'\n'+b[1]+'\n'+human(b[2])+' ('+b[2]+' bytes), '+b[3]+'\n'+
      'live: step '+b[4]+' ('+(s[b[4]]||'?')+') to '+b[5]+' ('+(s[b[5]]||'?')+')\n'+
      'address: '+b[6]+(b[7]?'\nop_name: '+b[7]:'')+(b[8]?'\nsource: '+b[8]:'');
    tip.hidden=false;tip.style.left=Math.min(e.clientX+14,window.innerWidth-tip.offsetWidth-8)+'px';tip.style.top=(e.clientY+14)+'px';
  }
  mod.querySelectorAll('svg').forEach(function(svg){svg.addEventListener('mousemove',show);svg.addEventListener('mouseleave',function(){tip.hidden=true;});});
  rects+=mod.querySelectorAll('rect.b').length;
  mod.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th[data-sort]').forEach(function(th){
      th.addEventListener('click',function(){
        var k=th.getAttribute('data-sort'),tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows);
        var dir=th.getAttribute('data-dir')==='asc'?-1:1;th.setAttribute('data-dir',dir>0?'asc':'desc');
        rows.sort(function(a,b){return dir*(+a.getAttribute('data-'+k)- +b.getAttribute('data-'+k));});
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
});
body.setAttribute('data-rendered',String(rects));
body.setAttribute('data-ms',String(Math.round(performance.now())));
// Measured after data-ms: reading the widths lays the page out now.
var de=document.documentElement,over=de.scrollWidth-de.clientWidth;
document.querySelectorAll('.charts').forEach(function(c){over=Math.max(over,c.scrollWidth-c.clientWidth);});
body.setAttribute('data-overflow',String(over));
})();`

// WriteHTML writes the memory viewer of r as a self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error { return WriteHTML(w, []*Report{r}) }

// WriteHTML writes the memory viewer of every report (one section per
// module) as one self-contained HTML page.
func WriteHTML(w io.Writer, rs []*Report) error {
	b := bufio.NewWriterSize(w, 1<<16)
	title := "hlomem memory viewer"
	if len(rs) == 1 {
		title = "hlomem: memory of " + rs[0].Module
	}
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<style>%s\n%s</style></head>\n<body data-rendered=\"0\">\n",
		html.EscapeString(title), pageStyle, chartStyle)
	b.WriteString(`<div id="tip" hidden></div>` + "\n")
	for i, r := range rs {
		if err := r.writeHTMLModule(b, i); err != nil {
			return err
		}
	}
	fmt.Fprintf(b, "<script>%s</script>\n</body></html>\n", pageScript)
	return b.Flush()
}

// esc is html.EscapeString.
var esc = html.EscapeString

// writeHTMLModule writes one module's section.
func (r *Report) writeHTMLModule(b *bufio.Writer, k int) error {
	h := assign.HumanBytes
	fmt.Fprintf(b, "<section class=\"module\" id=\"m%d\">\n<h1>Memory of %s</h1>\n<p class=\"sub\">target %s, schedule %s, packer %s; %d steps, %d buffers in %d allocations</p>\n",
		k, esc(r.Module), esc(r.Target), esc(r.Schedule), esc(r.Algorithm), len(r.Steps), len(r.Buffers), len(r.Allocations))
	// Totals and the peak.
	b.WriteString("<table><tbody>\n")
	row := func(name string, n int64, note string) {
		fmt.Fprintf(b, "<tr><th>%s</th><td class=\"n\">%s</td><td class=\"n\">%d bytes</td><td>%s</td></tr>\n", esc(name), esc(h(n)), n, esc(note))
	}
	row("parameters", r.Parameters, "")
	row("outputs", r.Outputs, "")
	row("temps", r.Temps, "")
	row("constants", r.Constants, "")
	row("total", r.Total, "")
	row("lower bound", r.LowerBound, fmt.Sprintf("the plan is %.1f%% above it", percent(r.Total-r.LowerBound, r.LowerBound)))
	row("temp fragmentation", r.TempFragmentation, fmt.Sprintf("%.1f%% of the temps", percent(r.TempFragmentation, r.Temps)))
	b.WriteString("</tbody></table>\n")
	if r.PeakStep >= 0 {
		fmt.Fprintf(b, "<p class=\"peakline\">Peak: <b>%s</b> (%d bytes, %.1f%% of the total; lower bound %s) at step %d of %d, in <code>%s</code>: <code>%s</code></p>\n",
			esc(h(r.PeakBytes)), r.PeakBytes, percent(r.PeakBytes, r.Total), esc(h(r.LowerBound)), r.PeakStep, len(r.Steps), esc(r.PeakComp), esc(shortInst(r.PeakInst, 200)))
	}
	if len(r.WhatIf) > 0 {
		b.WriteString("<h2>What if</h2>\n<table><thead><tr><th>lever</th><th class=\"n\">lower bound</th><th class=\"n\">total</th><th>vs this plan</th><th>command (its lower_bound and total_bytes)</th></tr></thead><tbody>\n")
		for _, w := range r.WhatIf {
			cmd := ""
			if len(w.Command) > 0 {
				cmd = "<code>" + esc(shellQuote(w.Command)) + "</code>"
			}
			if w.Remat != nil && w.Remat.Skipped != "" {
				fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">-</td><td class=\"n\">-</td><td>skipped: %s</td><td></td></tr>\n", esc(w.Lever.String()), esc(firstLine(w.Remat.Skipped)))
				continue
			}
			if w.Err != "" {
				fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">-</td><td class=\"n\">-</td><td>fails: %s</td><td>%s</td></tr>\n", esc(w.Lever.String()), esc(firstLine(w.Err)), cmd)
				continue
			}
			if w.Fit != nil {
				fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">-</td><td class=\"n\">%s</td><td>%s</td><td>%s</td></tr>\n", esc(w.Lever.String()), esc(h(w.Total)), esc(fitVs(w)), cmd)
				continue
			}
			if w.Lever.Kind == "jit" {
				fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">-</td><td class=\"n\">%s</td><td>%s</td><td>%s</td></tr>\n", esc(w.Lever.String()), esc(h(w.Total)), esc(eagerVs(w)), cmd)
				continue
			}
			vs := "same"
			if d := w.Total - r.Total; d < 0 {
				vs = fmt.Sprintf("saves %s", h(-d))
			} else if d > 0 {
				vs = fmt.Sprintf("costs %s more", h(d))
			}
			if w.Remat != nil {
				vs += "; " + rematVs(w)
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s</td><td>%s</td></tr>\n", esc(w.Lever.String()), esc(h(w.LowerBound)), esc(h(w.Total)), esc(vs), cmd)
		}
		b.WriteString("</tbody></table>\n")
	}
	if x := r.XLA; x != nil {
		fmt.Fprintf(b, "<h2>XLA's own plan</h2>\n<p>From <code>%s</code> (matched %d of %d of XLA's values): XLA takes %s in %d allocations, hlomem %s in %d. ",
			esc(x.File), x.Matched, x.Values, esc(h(x.Total)), len(x.Allocations), esc(h(r.Total)), len(r.Allocations))
		switch d := x.Total - r.Total; {
		case d > 0:
			fmt.Fprintf(b, "hlomem saves %s.", esc(h(d)))
		case d < 0:
			fmt.Fprintf(b, "XLA saves %s.", esc(h(-d)))
		default:
			b.WriteString("Both take the same.")
		}
		fmt.Fprintf(b, " %d of %d buffers are placed differently.</p>\n", len(x.Moved), x.Placed)
	}
	// The charts.
	width := marginLeft + plotWidth(len(r.Steps)) + marginRight
	fmt.Fprintf(b, "<div class=\"charts\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">", width, r.chartsHeight())
	r.writeCharts(&svgWriter{b: b}, fmt.Sprintf("m%d-", k))
	b.WriteString("</svg></div>\n")
	// What occupies memory at the peak.
	if r.PeakStep >= 0 {
		fmt.Fprintf(b, "<h2>What occupies memory at the peak (step %d): %s in %s</h2>\n<p>", r.PeakStep, esc(h(r.PeakBytes)),
			countOf(len(r.AtPeak), "allocation or temp chunk", "allocations and temp chunks"))
		for i, k := range r.PeakByKind {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(b, "%s %s of %s (%s)", esc(kindLabel(k.Kind)), esc(h(k.Bytes)), esc(h(k.Total)), kindCount(k))
		}
		b.WriteString("</p>\n")
	}
	b.WriteString("<table class=\"sortable peaktable\"><thead><tr><th class=\"n\" data-sort=\"size\">size</th><th>kind</th><th>buffer</th><th>shape</th><th>op_name</th><th>source</th><th class=\"n\" data-sort=\"start\">live range</th></tr></thead><tbody>\n")
	for _, x := range r.AtPeak {
		bf := x.Buffer
		fmt.Fprintf(b, "<tr data-size=\"%d\" data-start=\"%d\"><td class=\"n\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"n\">%s</td></tr>\n",
			x.Bytes, bf.Start, esc(h(x.Bytes)), esc(x.Kind), esc(occupantName(x)), esc(bf.Shape), esc(bf.OpName), esc(bf.Source), esc(liveCol(x)))
	}
	b.WriteString("</tbody></table>\n")
	if x := r.XLA; x != nil && len(x.Moved) > 0 {
		b.WriteString("<h2>Buffers XLA places differently</h2>\n<table class=\"sortable\"><thead><tr><th class=\"n\" data-sort=\"size\">size</th><th>buffer</th><th>hlomem</th><th>XLA</th></tr></thead><tbody>\n")
		for _, m := range x.Moved {
			fmt.Fprintf(b, "<tr data-size=\"%d\"><td class=\"n\">%s</td><td>%s</td><td>%s, allocation %d +%d</td><td>%s, allocation %d +%d</td></tr>\n",
				m.Buffer.Size, esc(h(m.Buffer.Size)), esc(m.Buffer.Name), esc(m.Kind), m.Allocation, m.Offset, esc(m.XLAKind), m.XLAAllocation, m.XLAOffset)
		}
		b.WriteString("</tbody></table>\n")
	}
	// The data the script shows on hover: a compact array per buffer.
	data := struct {
		Steps []string `json:"steps"`
		B     [][]any  `json:"b"`
		X     [][]any  `json:"x,omitempty"`
	}{Steps: r.Steps, B: compact(r.Buffers)}
	if r.XLA != nil {
		data.X = compact(r.XLA.Buffers)
	}
	js, err := json.Marshal(data) // escapes <, > and &: safe inside <script>
	if err != nil {
		return err
	}
	b.WriteString("<script type=\"application/json\" class=\"data\">")
	b.Write(js)
	b.WriteString("</script>\n</section>\n")
	return nil
}

// compact is the hover data of each buffer: name, shape, size, kind,
// start, end, address, op_name, source.
func compact(bs []*Buffer) [][]any {
	out := make([][]any, len(bs))
	for i, b := range bs {
		out[i] = []any{b.Name, b.Shape, b.Size, b.Kind, b.Start, b.End, b.Offset, b.OpName, b.Source}
	}
	return out
}
