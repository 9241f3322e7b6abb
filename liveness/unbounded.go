package liveness

import "github.com/hlomem/hlomem/hlo"

// Unbounded dynamic shapes. A dimension printed "?" (XLA's kUnboundedSize)
// has no size, so a module with one can be analysed (AllowUnbounded) for
// its values and live ranges but not sized. XLA does the same in its
// live-range dump: HloLiveRange::ToString prints the sequence and every
// live range, then, where ComputePeakMemoryMoment met a value whose
// defining instruction's shape is_unbounded_dynamic (and returned -1),
// the sentence below in place of the peak section, and stops.

// unboundedPeakLine is what XLA's HloLiveRange::ToString prints in place
// of the peak section when ComputePeakMemoryMoment returns -1.
const unboundedPeakLine = "  Peak memory could not be determined due to unbounded dynamic shape.\n"

// Unbounded returns a positioned error (matching hlo.ErrUnboundedShape)
// for every instruction of the module whose shape has an unbounded
// dynamic dimension, in module order, or nil when there is none. Only an
// analysis made with AllowUnbounded can have any; what weighs sizes must
// refuse it then.
func (a *Analysis) Unbounded() hlo.ErrorList {
	if a == nil {
		return nil
	}
	return hlo.UnboundedErrors(a.Module)
}

// peakUndetermined reports whether XLA's ComputePeakMemoryMoment gives up
// on the analysis: some value with a live range is defined by an
// instruction whose whole shape (a tuple's elements included) has an
// unbounded dimension.
func (a *Analysis) peakUndetermined() bool {
	for _, v := range a.Values {
		if v.Scheduled && v.Inst.Shape.IsUnboundedDynamic() {
			return true
		}
	}
	return false
}
