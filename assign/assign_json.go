package assign

import (
	"encoding/json"
	"io"
)

type jsonAssignment struct {
	Module      string           `json:"module"`
	Target      string           `json:"target"`
	Algorithm   string           `json:"algorithm"`
	Alignment   int64            `json:"alignment"`
	TotalBytes  int64            `json:"total_bytes"`
	TempBytes   int64            `json:"temp_bytes"`
	LowerBound  int64            `json:"lower_bound"`
	PeakStep    int              `json:"peak_step"`
	PeakValues  []string         `json:"peak_values"`
	TempLower   int64            `json:"temp_lower_bound"`
	Stats       jsonStats        `json:"stats"`
	Allocations []jsonAllocation `json:"allocations"`
}

type jsonStats struct {
	Parameter          int64 `json:"parameter_bytes"`
	Constant           int64 `json:"constant_bytes"`
	MaybeLiveOut       int64 `json:"maybe_live_out_bytes"`
	Temp               int64 `json:"temp_bytes"`
	TempFragmentation  int64 `json:"temp_fragmentation_bytes"`
	Total              int64 `json:"total_bytes"`
	XLAMinimum         int64 `json:"xla_minimum_bytes"`
	TotalFragmentation int64 `json:"total_fragmentation_bytes"`
}

type jsonAllocation struct {
	Index  int         `json:"index"`
	Size   int64       `json:"size"`
	Kind   string      `json:"kind"`
	Color  int64       `json:"color"`
	Param  *int64      `json:"parameter,omitempty"`
	Values []jsonValue `json:"values"`
}

type jsonValue struct {
	ID     int     `json:"id"`
	Name   string  `json:"name"`
	Index  []int64 `json:"index"`
	Shape  string  `json:"shape"`
	Offset int64   `json:"offset"`
	Size   int64   `json:"size"`
	Start  int     `json:"start"`
	End    int     `json:"end"` // inclusive, as in XLA's live ranges
}

// WriteJSON writes the assignment as JSON: totals; the lower bound of the
// total (Stats.LowerBound) with the step that proves it and the values live
// there; the temp heaps' lower bound (Stats.TempLowerBound); XLA's stats;
// and every allocation with its values, their offsets and inclusive live
// ranges.
func (as *Assignment) WriteJSON(w io.Writer) error {
	st := &as.Stats
	out := jsonAssignment{Module: as.Module.Name, Target: as.Options.Target, Algorithm: as.Options.Algorithm, Alignment: as.Options.Align,
		TotalBytes: st.TotalBytes, TempBytes: st.TempBytes, LowerBound: st.LowerBound, PeakStep: as.bound.Time, PeakValues: []string{},
		TempLower: st.TempLowerBound, Allocations: []jsonAllocation{},
		Stats: jsonStats{st.ParameterBytes, st.ConstantBytes, st.MaybeLiveOutBytes, st.TempBytes,
			st.TempFragmentation, st.TotalBytes, st.XLAMinimumBytes, st.TotalFragmentation}}
	for _, b := range as.bound.Live {
		for _, v := range b.Values {
			if v.Scheduled && v.Range.Contains(as.bound.Time) {
				out.PeakValues = append(out.PeakValues, v.Name())
			}
		}
	}
	for _, al := range as.Allocations {
		ja := jsonAllocation{Index: al.Index, Size: al.Size, Kind: al.Kind(), Color: al.Color, Values: []jsonValue{}}
		if al.IsParameter() {
			p := al.Parameter
			ja.Param = &p
		}
		for _, s := range al.Slots {
			v := s.Value
			ja.Values = append(ja.Values, jsonValue{ID: v.ID, Name: v.Inst.Name, Index: append([]int64{}, v.Index...), Shape: v.Shape.String(),
				Offset: s.Offset, Size: s.Size, Start: v.Range.Start, End: v.Range.End})
		}
		out.Allocations = append(out.Allocations, ja)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteTempCSV writes each temp heap's packing problem and offsets in
// MiniMalloc CSV (event-time intervals, half-open), so that any external
// solver can be run on the same problem.
func (as *Assignment) WriteTempCSV(w io.Writer) error {
	for _, h := range as.Heaps {
		if err := WriteCSV(w, h.Problem, h.Solution.Packing); err != nil {
			return err
		}
	}
	return nil
}
