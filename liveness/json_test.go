package liveness

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
)

// JSON form of the analysis.
type jsonAnalysis struct {
	Module     string       `json:"module"`
	Schedule   string       `json:"schedule"`
	XLARules   string       `json:"xla_rules"`
	Threads    []string     `json:"execution_threads,omitempty"`
	Max        int          `json:"max"`
	Sequence   []string     `json:"sequence"`
	Values     []jsonValue  `json:"values"`
	Buffers    []jsonBuffer `json:"buffers"`
	LowerBound jsonBound    `json:"lower_bound"`
	XLAPeak    jsonPeak     `json:"xla_peak"`
}

type jsonValue struct {
	ID     int     `json:"id"`
	Name   string  `json:"name"`
	Index  []int64 `json:"index"`
	Shape  string  `json:"shape"`
	Size   int64   `json:"size"`
	Start  int     `json:"start"`
	End    int     `json:"end"` // inclusive
	Buffer int     `json:"buffer"`
	Phi    bool    `json:"phi,omitempty"`
	Out    bool    `json:"live_out,omitempty"`
}

type jsonBuffer struct {
	ID     int   `json:"id"`
	Size   int64 `json:"size"`
	Color  int64 `json:"color"`
	Values []int `json:"values"`
	Start  int   `json:"start"`
	End    int   `json:"end"`
}

type jsonPeak struct {
	Bytes int64 `json:"bytes"`
	Time  int   `json:"time"`
}

type jsonBound struct {
	Bytes   int64 `json:"bytes"`
	Time    int   `json:"time"`
	Buffers []int `json:"buffers"`
}

// writeJSONReflect is WriteJSON through encoding/json, the reference.
func (a *Analysis) writeJSONReflect(w io.Writer) error {
	out := jsonAnalysis{Module: a.Module.Name, Schedule: a.Schedule.Name, XLARules: string(a.Settings().XLARules), Threads: a.Settings().ExecutionThreads, Max: a.EndTime(), Sequence: make([]string, len(a.Sequence)),
		Values: []jsonValue{}, Buffers: []jsonBuffer{}}
	for t, in := range a.Sequence {
		out.Sequence[t] = in.Name
	}
	for _, v := range a.Values {
		if !v.Scheduled {
			continue
		}
		out.Values = append(out.Values, jsonValue{ID: v.ID, Name: v.Inst.Name, Index: append([]int64{}, v.Index...), Shape: v.Shape.String(),
			Size: v.Size, Start: v.Range.Start, End: v.Range.End, Buffer: v.Buffer.ID, Phi: v.IsPhi, Out: v.LiveOut})
	}
	for _, b := range a.Buffers {
		r, ok := b.Range()
		if !ok {
			continue
		}
		jb := jsonBuffer{ID: b.ID, Size: b.Size, Color: b.Color, Start: r.Start, End: r.End}
		for _, v := range b.Values {
			jb.Values = append(jb.Values, v.ID)
		}
		out.Buffers = append(out.Buffers, jb)
	}
	lb := a.LowerBound(nil)
	out.LowerBound = jsonBound{Bytes: lb.Bytes, Time: lb.Time, Buffers: []int{}}
	for _, b := range lb.Live {
		out.LowerBound.Buffers = append(out.LowerBound.Buffers, b.ID)
	}
	pk := a.XLAPeak()
	out.XLAPeak = jsonPeak{Bytes: pk.Bytes, Time: pk.Time}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// TestWriteJSONMatchesEncodingJSONCorpus compares WriteJSON with encoding/json
// on the paired dumps (torch-xla and JAX, loops and phis included).
func TestWriteJSONMatchesEncodingJSONCorpus(t *testing.T) {
	files := corpus.Glob(t, "paired/*/*after_optimizations.txt")
	files = append(files, corpus.Glob(t, "paired-jax-cpu/*/*after_optimizations.txt")...)
	require.NotEmpty(t, files)
	for _, f := range files {
		mods, err := hlo.ParseFile(f)
		require.NoError(t, err)
		_, err = hlo.FlattenCallGraph(mods[0])
		require.NoError(t, err)
		a, err := Analyze(mods[0], Options{})
		require.NoError(t, err)
		var got, want bytes.Buffer
		require.NoError(t, a.WriteJSON(&got))
		require.NoError(t, a.writeJSONReflect(&want))
		require.Equal(t, want.String(), got.String(), f)
		require.True(t, json.Valid(got.Bytes()))
	}
}
