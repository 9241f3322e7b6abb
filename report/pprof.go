package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// WritePprof writes what occupies memory at the peak as a pprof profile
// (gzip protobuf), which `go tool pprof -top` and the other pprof views
// read: one sample per occupant (Report.AtPeak), its value the bytes it
// occupies ("space", "bytes"), so that the profile's total is the peak;
// its location its buffer's source line (metadata source_file:line or
// JAX's stack frame, the function named by op_name) or, without one, its
// op_name or instruction; labels give the buffer, its shape, the
// allocation's kind and index.
func (r *Report) WritePprof(w io.Writer) error {
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "space", Unit: "bytes"}},
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
		DefaultSampleType: "space",
		Comments: []string{"hlomem: what occupies memory at the peak of module " + r.Module + ", step " + strconv.Itoa(r.PeakStep) +
			": " + strconv.FormatInt(r.PeakBytes, 10) + " bytes"},
	}
	type fkey struct{ name, file string }
	funcs := map[fkey]*profile.Function{}
	type lkey struct {
		fn   *profile.Function
		line int64
	}
	locs := map[lkey]*profile.Location{}
	for _, x := range r.AtPeak {
		b := x.Buffer
		name := b.OpName
		if name == "" {
			name = b.Inst
		}
		file, line := "", int64(0)
		if b.Source != "" {
			file = b.Source
			if i := strings.LastIndexByte(b.Source, ':'); i > 0 {
				if n, err := strconv.ParseInt(b.Source[i+1:], 10, 64); err == nil {
					file, line = b.Source[:i], n
				}
			}
		}
		fk := fkey{name, file}
		fn := funcs[fk]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
			funcs[fk] = fn
			p.Function = append(p.Function, fn)
		}
		lk := lkey{fn, line}
		loc := locs[lk]
		if loc == nil {
			loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: line}}}
			locs[lk] = loc
			p.Location = append(p.Location, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: []*profile.Location{loc},
			Value:    []int64{x.Bytes},
			Label: map[string][]string{"buffer": {occupantName(x)}, "shape": {b.Shape}, "kind": {x.Kind},
				"allocation": {strconv.Itoa(x.Allocation)}},
		})
	}
	if err := p.CheckValid(); err != nil {
		return err
	}
	return p.Write(w)
}
