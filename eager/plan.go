package eager

import (
	"sort"

	"github.com/hlomem/hlomem/assign"
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
		if !v.Scheduled || !v.Shape.IsArray() || v.Range.Start > step || v.Range.End < step {
			continue
		}
		a := LiveArray{Name: v.Name(), Shape: v.Shape, Bytes: v.Size, Inst: v.Inst, Source: m.Source(v.Inst)}
		if v.Inst.Metadata != nil {
			a.OpName = v.Inst.Metadata.OpName
		}
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Name < out[j].Name
	})
	return step, out
}
