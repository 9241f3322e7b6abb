package assign

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// The JSON document as encoding/json writes it from structs: the reference
// WriteJSON's hand-written encoder must match byte for byte.

type jsonAssignment struct {
	Module      string           `json:"module"`
	Target      string           `json:"target"`
	Algorithm   string           `json:"algorithm"`
	XLARules    string           `json:"xla_rules"`
	Threads     []string         `json:"execution_threads,omitempty"`
	Alignment   int64            `json:"alignment"`
	TotalBytes  int64            `json:"total_bytes"`
	TempBytes   int64            `json:"temp_bytes"`
	LowerBound  int64            `json:"lower_bound"`
	BoundStep   int              `json:"lower_bound_step"`
	BoundValues []string         `json:"lower_bound_values"`
	PeakStep    int              `json:"peak_step"`
	PeakBytes   int64            `json:"peak_bytes"`
	Occupants   []jsonOccupant   `json:"peak_occupants"`
	TempLower   int64            `json:"temp_lower_bound"`
	Stats       jsonStats        `json:"stats"`
	Allocations []jsonAllocation `json:"allocations"`
}

type jsonOccupant struct {
	Allocation int      `json:"allocation"`
	Kind       string   `json:"kind"`
	Offset     int64    `json:"offset"`
	Bytes      int64    `json:"bytes"`
	Live       bool     `json:"live"`
	Buffers    []string `json:"buffers"`
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

func (as *Assignment) writeJSONReflect(w io.Writer) error {
	st := &as.Stats
	out := jsonAssignment{Module: as.Module.Name, Target: as.Options.Target.Name, Algorithm: as.Options.Algorithm,
		XLARules: string(as.Analysis.Settings().XLARules), Threads: as.Analysis.Settings().ExecutionThreads, Alignment: as.Options.Align,
		TotalBytes: st.TotalBytes, TempBytes: st.TempBytes, LowerBound: st.LowerBound, BoundStep: as.bound.Time, BoundValues: []string{}, Occupants: []jsonOccupant{},
		TempLower: st.TempLowerBound, Allocations: []jsonAllocation{},
		Stats: jsonStats{st.ParameterBytes, st.ConstantBytes, st.MaybeLiveOutBytes, st.TempBytes,
			st.TempFragmentation, st.TotalBytes, st.XLAMinimumBytes, st.TotalFragmentation}}
	for _, b := range as.bound.Live {
		for _, v := range b.Values {
			if v.Scheduled && v.Range.Contains(as.bound.Time) {
				out.BoundValues = append(out.BoundValues, v.Name())
			}
		}
	}
	// The peak, from the occupancy curve and the slots directly.
	occ := as.Occupancy()
	out.PeakStep, out.PeakBytes = occ.PeakStep, occ.Peak
	for _, o := range as.OccupantsAt(occ.PeakStep) {
		jo := jsonOccupant{Allocation: o.Allocation.Index, Kind: o.Allocation.Kind(), Offset: o.Offset, Bytes: o.Bytes, Live: o.Live, Buffers: []string{}}
		for _, b := range o.Buffers {
			jo.Buffers = append(jo.Buffers, BufferName(b))
		}
		out.Occupants = append(out.Occupants, jo)
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

// TestWriteJSONMatchesEncodingJSONCorpus compares WriteJSON with encoding/json
// on every paired torch-xla module and a module with a parameter.
func TestWriteJSONMatchesEncodingJSONCorpus(t *testing.T) {
	files := corpus.Glob(t, "paired/*/*after_optimizations.txt")
	require.NotEmpty(t, files)
	for _, f := range files {
		mods, err := hlo.ParseFile(f)
		require.NoError(t, err)
		as := assignModule(t, mods[0], Options{})
		var got, want bytes.Buffer
		require.NoError(t, as.WriteJSON(&got))
		require.NoError(t, as.writeJSONReflect(&want))
		require.Equal(t, want.String(), got.String(), f)
		require.True(t, json.Valid(got.Bytes()))
	}
}
