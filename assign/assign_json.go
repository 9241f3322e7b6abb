package assign

import (
	"io"

	"github.com/hlomem/hlomem/internal/poll"
	"github.com/hlomem/hlomem/liveness"

	"github.com/hlomem/hlomem/assign/pack"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/jsonw"
)

// WriteJSON writes the assignment as JSON: totals; the lower bound of the
// total (Stats.LowerBound) with the step that proves it and the values live
// there; the plan's peak (Occupancy: its step, its bytes and what occupies
// memory there, by allocation); the temp heaps' lower bound (Stats.TempLowerBound); XLA's stats;
// and every allocation with its values, their offsets and inclusive live
// ranges (README, "JSON"). A plan with tiled layouts adds what the padding
// costs: "padding" with the unpadded and padded totals over the buffers and
// the expansion, and each value's "unpadded_size" beside its "size".
func (as *Assignment) WriteJSON(w io.Writer) error {
	st := &as.Stats
	j := jsonw.New(w)
	j.BeginObject()
	j.Key("module")
	j.String(as.Module.Name)
	j.Key("target")
	j.String(as.Options.Target.Name)
	j.Key("algorithm")
	j.String(as.Options.Algorithm)
	as.Analysis.Settings().WriteJSONKeys(j)
	for _, f := range []struct {
		k string
		v int64
	}{{"alignment", as.Options.Align}, {"total_bytes", st.TotalBytes}, {"temp_bytes", st.TempBytes},
		{"lower_bound", st.LowerBound}, {"lower_bound_step", int64(as.bound.Time)}} {
		j.Key(f.k)
		j.Int(f.v)
	}
	j.Key("lower_bound_values")
	j.BeginArray()
	for _, b := range as.bound.Live {
		for _, v := range b.Values {
			if v.Scheduled && v.Range.Contains(as.bound.Time) {
				j.String(v.Name())
			}
		}
	}
	j.EndArray()
	step, peak, at := as.Peak()
	j.Key("peak_step")
	j.Int(int64(step))
	j.Key("peak_bytes")
	j.Int(peak)
	j.Key("peak_occupants")
	j.BeginArray()
	for _, o := range at {
		j.BeginObject()
		j.Key("allocation")
		j.Int(int64(o.Allocation.Index))
		j.Key("kind")
		j.String(o.Kind())
		j.Key("offset")
		j.Int(o.Offset)
		j.Key("bytes")
		j.Int(o.Bytes)
		j.Key("live")
		j.Bool(o.Live)
		j.Key("buffers")
		j.BeginArray()
		for _, b := range o.Buffers {
			j.String(BufferName(b))
		}
		j.EndArray()
		j.EndObject()
	}
	j.EndArray()
	j.Key("temp_lower_bound")
	j.Int(st.TempLowerBound)
	j.Key("stats")
	j.BeginObject()
	for _, f := range []struct {
		k string
		v int64
	}{{"parameter_bytes", st.ParameterBytes}, {"constant_bytes", st.ConstantBytes}, {"maybe_live_out_bytes", st.MaybeLiveOutBytes},
		{"temp_bytes", st.TempBytes}, {"temp_fragmentation_bytes", st.TempFragmentation}, {"total_bytes", st.TotalBytes},
		{"xla_minimum_bytes", st.XLAMinimumBytes}, {"total_fragmentation_bytes", st.TotalFragmentation}} {
		j.Key(f.k)
		j.Int(f.v)
	}
	if st.HostBytes != 0 {
		// Only a plan with host-memory arrays: every other plan's JSON
		// stays as it was.
		j.Key("host_bytes")
		j.Int(st.HostBytes)
		j.Key("device_bytes")
		j.Int(st.DeviceBytes)
	}
	j.EndObject()
	tiled := as.tiled()
	if tiled {
		// Tiled layouts (the TPU's): what the tiles' padding costs.
		p := as.Padding()
		j.Key("padding")
		j.BeginObject()
		j.Key("buffers")
		j.Int(int64(len(p.Buffers)))
		j.Key("unpadded_bytes")
		j.Int(p.Unpadded)
		j.Key("padded_bytes")
		j.Int(p.Padded)
		j.Key("expansion")
		j.Float(p.Expansion())
		j.EndObject()
	}
	j.Key("allocations")
	j.BeginArray()
	for i, al := range as.Allocations {
		if err := poll.OutputFailed(i, j.Err); err != nil {
			return err
		}
		j.BeginObject()
		j.Key("index")
		j.Int(int64(al.Index))
		j.Key("size")
		j.Int(al.Size)
		j.Key("kind")
		j.String(al.Kind())
		j.Key("color")
		j.Int(al.Color)
		if al.IsParameter() {
			j.Key("parameter")
			j.Int(al.Parameter)
		}
		j.Key("values")
		j.BeginArray()
		for _, s := range al.Slots {
			v := s.Value
			j.BeginObject()
			liveness.WriteValueKeys(j, v)
			j.Key("offset")
			j.Int(s.Offset)
			j.Key("size")
			j.Int(s.Size)
			if tiled {
				un, err := hlo.UnpaddedByteSize(v.Shape)
				if err != nil {
					un = v.Size
				}
				j.Key("unpadded_size")
				j.Int(un)
			}
			j.Key("start")
			j.Int(int64(v.Range.Start))
			j.Key("end") // inclusive, as in XLA's live ranges
			j.Int(int64(v.Range.End))
			j.EndObject()
		}
		j.EndArray()
		j.EndObject()
	}
	j.EndArray()
	j.EndObject()
	return j.Close()
}

// WriteTempCSV writes each temp heap's packing problem and offsets in
// MiniMalloc CSV (event-time intervals, half-open), so that any external
// solver can be run on the same problem.
func (as *Assignment) WriteTempCSV(w io.Writer) error {
	for _, h := range as.Heaps {
		if err := pack.WriteCSV(w, h.Problem, h.Solution.Packing); err != nil {
			return err
		}
	}
	return nil
}
