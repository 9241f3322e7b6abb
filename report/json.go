package report

import (
	"encoding/json"
	"io"
	"math"
)

// jsonBuffer is a buffer in the JSON report and in the HTML page's data.
type jsonBuffer struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	Shape      string `json:"shape"`
	Size       int64  `json:"size"`
	Kind       string `json:"kind"`
	Color      int64  `json:"color,omitempty"`
	Allocation int    `json:"allocation"`
	Offset     int64  `json:"offset"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Values     int    `json:"values"`
	OpName     string `json:"op_name,omitempty"`
	Source     string `json:"source,omitempty"`
}

func jsonBuffers(bs []*Buffer) []jsonBuffer {
	out := make([]jsonBuffer, len(bs))
	for i, b := range bs {
		out[i] = jsonBuffer{ID: b.ID, Name: b.Name, Shape: b.Shape, Size: b.Size, Kind: b.Kind, Color: b.Color,
			Allocation: b.Allocation, Offset: b.Offset, Start: b.Start, End: b.End, Values: b.Values, OpName: b.OpName, Source: b.Source}
	}
	return out
}

func bufferIDs(bs []*Buffer) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

type jsonAllocation struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"`
	Color int64  `json:"color,omitempty"`
	Base  int64  `json:"base"`
	Size  int64  `json:"size"`
}

func jsonAllocations(as []Allocation) []jsonAllocation {
	out := make([]jsonAllocation, len(as))
	for i, a := range as {
		out[i] = jsonAllocation(a)
	}
	return out
}

type jsonWhatIf struct {
	Lever      string `json:"lever"`
	LowerBound int64  `json:"lower_bound,omitempty"`
	Total      int64  `json:"total_bytes,omitempty"`
	Error      string `json:"error,omitempty"`
	// Command is the command line whose output has these lower_bound
	// and total_bytes, as a POSIX shell reads it.
	Command string `json:"command,omitempty"`
	// JitPeak is, for a jit=off lever, the jitted run's peak beside
	// total_bytes, the peak without jit.
	JitPeak int64 `json:"jit_peak_bytes,omitempty"`
	// For a remat lever: the limit on the plan's total and where it
	// comes from, why the row was skipped, or whether total_bytes fits
	// the limit and the FLOPs the recomputation adds (and their
	// percentage of the module's own).
	RematLimit      int64    `json:"remat_limit_bytes,omitempty"`
	RematLimitLabel string   `json:"remat_limit,omitempty"`
	Skipped         string   `json:"skipped,omitempty"`
	Fits            *bool    `json:"fits,omitempty"`
	AddedFLOPs      *int64   `json:"added_flops,omitempty"`
	AddedShare      *float64 `json:"added_flops_percent,omitempty"`
	// For a fit lever: the combination's levers, what its run needs of
	// the client's limit, and why none fits (fits above says whether it
	// does).
	FitLevers []string `json:"fit_levers,omitempty"`
	FitNeed   int64    `json:"fit_need_bytes,omitempty"`
	FitLimit  int64    `json:"fit_limit_bytes,omitempty"`
	FitWhy    string   `json:"fit_why,omitempty"`
}

type jsonMoved struct {
	Buffer        int    `json:"buffer"`
	Name          string `json:"name"`
	Size          int64  `json:"size"`
	Kind          string `json:"kind"`
	Allocation    int    `json:"allocation"`
	Offset        int64  `json:"offset"`
	XLAKind       string `json:"xla_kind"`
	XLAAllocation int    `json:"xla_allocation"`
	XLAOffset     int64  `json:"xla_offset"`
}

type jsonXLA struct {
	File        string           `json:"file"`
	Total       int64            `json:"total_bytes"`
	Saves       int64            `json:"hlomem_saves_bytes"`
	Allocations []jsonAllocation `json:"allocations"`
	Placed      int              `json:"placed"`
	Unplaced    int              `json:"unplaced"`
	Missing     int              `json:"missing"`
	Values      int              `json:"values"`
	Matched     int              `json:"matched_values"`
	Moved       []jsonMoved      `json:"moved"`
	Buffers     []jsonBuffer     `json:"buffers"`
}

// jsonOccupant is one of what occupies memory at the peak; buffer and
// others are IDs into "buffers" (or, for a buffer without bytes of its
// own, absent from it).
type jsonOccupant struct {
	Kind       string `json:"kind"`
	Allocation int    `json:"allocation"`
	Offset     int64  `json:"offset"`
	Bytes      int64  `json:"bytes"`
	Buffer     int    `json:"buffer"`
	Name       string `json:"name"`
	Others     []int  `json:"others,omitempty"`
	Live       bool   `json:"live"`
}

type jsonKindBytes struct {
	Kind        string `json:"kind"`
	Bytes       int64  `json:"bytes"`
	Total       int64  `json:"total_bytes"`
	Allocations int    `json:"allocations"`
}

// jsonReport is the whole report as JSON.
type jsonReport struct {
	Module            string           `json:"module"`
	Target            string           `json:"target"`
	Algorithm         string           `json:"algorithm"`
	Schedule          string           `json:"schedule"`
	XLARules          string           `json:"xla_rules"`
	ExecutionThreads  []string         `json:"execution_threads,omitempty"`
	Parameters        int64            `json:"parameter_bytes"`
	Outputs           int64            `json:"output_bytes"`
	Temps             int64            `json:"temp_bytes"`
	Constants         int64            `json:"constant_bytes"`
	ThreadLocal       int64            `json:"thread_local_bytes"`
	Total             int64            `json:"total_bytes"`
	LowerBound        int64            `json:"lower_bound"`
	TempLowerBound    int64            `json:"temp_lower_bound"`
	TempFragmentation int64            `json:"temp_fragmentation_bytes"`
	XLAMinimum        int64            `json:"xla_minimum_bytes"`
	AboveLowerBound   []jsonAbovePart  `json:"above_lower_bound"`
	PeakStep          int              `json:"peak_step"`
	PeakInst          string           `json:"peak_instruction"`
	PeakComp          string           `json:"peak_computation"`
	PeakBytes         int64            `json:"peak_bytes"`
	PeakByKind        []jsonKindBytes  `json:"peak_by_kind"`
	AtPeak            []jsonOccupant   `json:"at_peak"`
	WhatIf            []jsonWhatIf     `json:"what_if"`
	Steps             []string         `json:"steps"`
	Live              []int64          `json:"live_bytes"`
	Allocations       []jsonAllocation `json:"allocations"`
	Buffers           []jsonBuffer     `json:"buffers"`
	XLA               *jsonXLA         `json:"xla,omitempty"`
}

// jsonAbovePart is one part of why the total is above the lower bound
// (Report.Above); the parts add up to total_bytes - lower_bound.
type jsonAbovePart struct {
	Why         string `json:"why"`
	Kind        string `json:"kind,omitempty"`
	Bytes       int64  `json:"bytes"`
	Allocations int    `json:"allocations,omitempty"`
}

func (r *Report) jsonView() *jsonReport {
	j := &jsonReport{
		Module: r.Module, Target: r.Target, Algorithm: r.Algorithm, Schedule: r.Schedule,
		XLARules: string(r.Rules.XLARules.Effective()), ExecutionThreads: r.Rules.ExecutionThreads,
		Parameters: r.Parameters, Outputs: r.Outputs, Temps: r.Temps, Constants: r.Constants, ThreadLocal: r.ThreadLocal,
		Total: r.Total, LowerBound: r.LowerBound, TempLowerBound: r.TempLowerBound, TempFragmentation: r.TempFragmentation,
		XLAMinimum: r.XLAMinimum, PeakStep: r.PeakStep, PeakInst: r.PeakInst, PeakComp: r.PeakComp, PeakBytes: r.PeakBytes,
		PeakByKind: []jsonKindBytes{}, AtPeak: []jsonOccupant{}, WhatIf: []jsonWhatIf{}, Steps: r.Steps, Live: r.Live,
		Allocations: jsonAllocations(r.Allocations), Buffers: jsonBuffers(r.Buffers),
	}
	j.AboveLowerBound = []jsonAbovePart{}
	for _, p := range r.Above {
		j.AboveLowerBound = append(j.AboveLowerBound, jsonAbovePart{Why: p.Why, Kind: p.Kind, Bytes: p.Bytes, Allocations: p.Count})
	}
	for _, k := range r.PeakByKind {
		j.PeakByKind = append(j.PeakByKind, jsonKindBytes{Kind: k.Kind, Bytes: k.Bytes, Total: k.Total, Allocations: k.Count})
	}
	for _, x := range r.AtPeak {
		j.AtPeak = append(j.AtPeak, jsonOccupant{Kind: x.Kind, Allocation: x.Allocation, Offset: x.Offset, Bytes: x.Bytes,
			Buffer: x.Buffer.ID, Name: x.Buffer.Name, Others: bufferIDs(x.Others), Live: x.Live})
	}
	for _, w := range r.WhatIf {
		jw := jsonWhatIf{Lever: w.Lever.String(), LowerBound: w.LowerBound, Total: w.Total, Error: w.Err, JitPeak: w.JitPeak}
		if len(w.Command) > 0 {
			jw.Command = shellQuote(w.Command)
		}
		if rw := w.Remat; rw != nil {
			jw.RematLimit, jw.RematLimitLabel, jw.Skipped = rw.Limit, rw.LimitLabel, rw.Skipped
			if rw.Skipped == "" && w.Err == "" {
				share := math.Round(rw.AddedShare*100) / 100 // as the text prints it
				jw.Fits, jw.AddedFLOPs, jw.AddedShare = &rw.Fits, &rw.AddedFLOPs, &share
			}
		}
		if f := w.Fit; f != nil {
			jw.Fits, jw.FitLevers, jw.FitNeed, jw.FitLimit, jw.FitWhy = &f.Fits, f.Levers, f.Need, f.Limit, f.Why
		}
		j.WhatIf = append(j.WhatIf, jw)
	}
	if x := r.XLA; x != nil {
		jx := &jsonXLA{File: x.File, Total: x.Total, Saves: x.Total - r.Total, Allocations: jsonAllocations(x.Allocations),
			Placed: x.Placed, Unplaced: x.Unplaced, Missing: x.Missing, Values: x.Values, Matched: x.Matched, Moved: []jsonMoved{}, Buffers: jsonBuffers(x.Buffers)}
		for _, m := range x.Moved {
			jx.Moved = append(jx.Moved, jsonMoved{Buffer: m.Buffer.ID, Name: m.Buffer.Name, Size: m.Buffer.Size, Kind: m.Kind,
				Allocation: m.Allocation, Offset: m.Offset, XLAKind: m.XLAKind, XLAAllocation: m.XLAAllocation, XLAOffset: m.XLAOffset})
		}
		j.XLA = jx
	}
	return j
}

// WriteJSON writes the whole report as one JSON object: totals, the peak
// (its step, bytes, bytes by kind, and what occupies memory there by
// allocation, with buffer IDs into "buffers"), the what-ifs, the live bytes per step,
// the allocations and every buffer with its place, and XLA's plan.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.jsonView())
}
