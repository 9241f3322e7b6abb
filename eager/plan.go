package eager

import (
	"sort"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
)

// PlanLive lists the arrays alive at step of a planned run (the
// assignment's flattened schedule; negative: its peak step), largest
// first: every array value whose live range holds the step, with the op
// that made it. It returns the step it listed.
func PlanLive(as *assign.Assignment, step int) (int, []LiveArray) {
	if as == nil || as.Analysis == nil || as.Module == nil {
		return step, nil
	}
	if step < 0 {
		step, _, _ = as.Peak()
	}
	m := as.Module
	var out []LiveArray
	for _, v := range as.Analysis.Values {
		if v.Scheduled && v.Shape.IsArray() && v.Range.Contains(step) {
			out = append(out, liveArray(m, v.Name(), v.Shape, v.Size, v.Inst))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Name < out[j].Name
	})
	return step, out
}

// liveArray describes an array of in's, with in's op_name and source line.
func liveArray(m *hlo.Module, name string, shape hlo.Shape, bytes int64, in *hlo.Instruction) LiveArray {
	a := LiveArray{Name: name, Shape: shape, Bytes: bytes, Inst: in, Source: m.Source(in)}
	if in.Metadata != nil {
		a.OpName = in.Metadata.OpName
	}
	return a
}
