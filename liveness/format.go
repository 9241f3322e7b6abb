package liveness

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/hlomem/hlomem/internal/poll"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/jsonw"
)

// PeakFormat selects the layout of the "Live ranges at T (peak)" section
// of WriteXLA, which XLA changed in 2025.
type PeakFormat uint8

const (
	// PeakCumulative is XLA's current layout: each value live at the peak
	// as "name{index}: N bytes (cumulative: M bytes)", N its own size,
	// largest first (ties by name, then index), followed by the stack-trace
	// breakdown of those bytes by computation and op_name.
	PeakCumulative PeakFormat = iota
	// PeakLegacy is the layout of older XLA (the paired GPU dumps of the
	// corpus): "name: N bytes" per value in value ID order, N the size of
	// the defining instruction's whole shape.
	PeakLegacy
)

// XLAOptions configures WriteXLAWith. The zero value prints XLA's current
// layout.
type XLAOptions struct {
	Peak PeakFormat
}

// WriteXLA writes the analysis as XLA's HloLiveRange::ToString does, in
// XLA's current layout (WriteXLAWith chooses another):
//
//	HloLiveRange (max N):
//	  InstructionSequence:
//	    0:name
//	  BufferLiveRange:
//	    name{index}:start-end
//	  Live ranges at T (peak):
//	    name{index}: S bytes (cumulative: C bytes)
//	  Stack trace breakdown for peak usage: C bytes
//	    ...
//
// Ranges are inclusive, as in XLA. The peak time follows XLA's
// ComputePeakMemoryMoment: per value, ignoring aliasing, sizes of the
// defining instructions' whole shapes. When a value with a live range is
// defined by an instruction of unbounded dynamic shape (AllowUnbounded),
// the peak section is XLA's one line "Peak memory could not be determined
// due to unbounded dynamic shape." (in both layouts).
func (a *Analysis) WriteXLA(w io.Writer) error { return a.WriteXLAWith(w, XLAOptions{}) }

// WriteXLAWith is WriteXLA with the layout opts chooses.
func (a *Analysis) WriteXLAWith(w io.Writer, opts XLAOptions) error {
	b := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(b, "HloLiveRange (max %d):\n", a.EndTime())
	b.WriteString("  InstructionSequence:\n")
	for t, in := range a.Sequence {
		if err := poll.OutputFailed(t, b.Flush); err != nil {
			return err
		}
		fmt.Fprintf(b, "    %d:%s\n", t, in.Name)
	}
	b.WriteString("  BufferLiveRange:\n")
	for i, v := range a.Values {
		if err := poll.OutputFailed(i, b.Flush); err != nil {
			return err
		}
		if v.Scheduled {
			fmt.Fprintf(b, "    %s:%d-%d\n", v.Name(), v.Range.Start, v.Range.End)
		}
	}
	if pk := a.XLAPeak(); pk.Undetermined {
		b.WriteString(unboundedPeakLine)
	} else if pk.Time >= 0 {
		live := pk.Live
		fmt.Fprintf(b, "  Live ranges at %d (peak):\n", pk.Time)
		if opts.Peak == PeakLegacy {
			for _, v := range live {
				fmt.Fprintf(b, "    %s: %d bytes\n", v.Inst.Name, instSize(v))
			}
		} else {
			sort.SliceStable(live, func(i, j int) bool {
				x, y := live[i], live[j]
				if sx, sy := xlaSize(x), xlaSize(y); sx != sy {
					return sx > sy
				}
				if x.Inst.Name != y.Inst.Name {
					return x.Inst.Name < y.Inst.Name
				}
				return lessIndex(x.Index, y.Index)
			})
			var cum int64
			for _, v := range live {
				cum += xlaSize(v)
				fmt.Fprintf(b, "    %s: %d bytes (cumulative: %d bytes)\n", v.Name(), xlaSize(v), cum)
			}
			writeStackBreakdown(b, a, live)
		}
	}
	return b.Flush()
}

// lessIndex orders shape indices lexicographically.
func lessIndex(x, y hlo.ShapeIndex) bool {
	for i := 0; i < len(x) && i < len(y); i++ {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return len(x) < len(y)
}

// Peak is XLA's peak memory moment of a live-range dump.
type Peak struct {
	Time int // -1 for an empty schedule or an undetermined peak
	// Undetermined says that XLA's ComputePeakMemoryMoment gives up (it
	// returns -1): a value with a live range is defined by an instruction
	// whose shape has an unbounded dynamic dimension (AllowUnbounded).
	// Time is then -1, Bytes 0 and Live empty.
	Undetermined bool
	// Bytes is the total size of the values live at Time, the last
	// cumulative figure of the dump and its "peak usage".
	Bytes int64
	Live  []*Value
}

// XLAPeak reproduces XLA's HloLiveRange::ComputePeakMemoryMoment, the
// "Live ranges at T (peak)" section of the dump: an event sweep with +size
// at each value's start and -size after its end, starts before ends at
// equal times, sizes of the defining instruction's whole shape, aliasing
// ignored. The peak is the first time the running total reaches its
// maximum; that total still counts values that ended one step before.
// Bytes then sums the sizes of the values live at that time, as the dump
// does.
//
// It is XLA's report, not a bound: a tuple counts at the size of all its
// elements, aliased values count apart, and nothing is reused in place, so
// it can exceed what a plan takes (and LowerBound never does).
func (a *Analysis) XLAPeak() Peak {
	end := a.EndTime()
	if end == 0 {
		return Peak{Time: -1}
	}
	if a.peakUndetermined() {
		return Peak{Time: -1, Undetermined: true}
	}
	starts := make([]int64, end+2)
	ends := make([]int64, end+2)
	for _, v := range a.Values {
		if v.Scheduled {
			s := instSize(v)
			starts[v.Range.Start] += s
			ends[v.Range.End+1] += s
		}
	}
	var cur, best int64
	bestT := -1
	for t := 0; t <= end+1; t++ {
		cur += starts[t]
		if cur > best {
			best, bestT = cur, t
		}
		cur -= ends[t]
	}
	pk := Peak{Time: bestT}
	for _, v := range a.Values {
		if v.Scheduled && v.Range.Contains(bestT) {
			pk.Live = append(pk.Live, v)
			pk.Bytes += xlaSize(v)
		}
	}
	return pk
}

// xlaSize is the size XLA's live-range dump gives a value live at the
// peak: ShapeUtil::ByteSizeOf of its shape, without the dynamic-size
// metadata a buffer of a dynamic array also holds (v.Size, hlo.BufferSize).
func xlaSize(v *Value) int64 {
	n, err := hlo.ByteSize(v.Shape)
	if err != nil {
		return 0
	}
	return n
}

// instSize is the size XLA's peak report uses: the defining instruction's
// whole shape (ShapeUtil::ByteSizeOf, no dynamic-size metadata).
func instSize(v *Value) int64 {
	n, err := hlo.ByteSize(v.Inst.Shape)
	if err != nil {
		return 0
	}
	return n
}

// WriteJSON writes the schedule's name (with, when best, search or
// optimal chose it, what the search found: Analysis.Search), the sequence,
// every scheduled value with its size and
// inclusive range, the buffers, the lower bound (LowerBound: its bytes,
// step and buffers) and XLA's peak moment (XLAPeak, as the XLA-format dump
// prints it) as JSON.
//
// It refuses an analysis with unbounded dynamic shapes (AllowUnbounded),
// whose sizes are unknown, with Unbounded's errors and writes nothing.
func (a *Analysis) WriteJSON(w io.Writer) error {
	if errs := a.Unbounded(); errs != nil {
		return errs
	}
	j := jsonw.New(w)
	j.BeginObject()
	j.Key("module")
	j.String(a.Module.Name)
	j.Key("schedule")
	j.String(a.Schedule.Name)
	a.settings.WriteJSONKeys(j)
	if r := a.Search; r != nil {
		// What the searching scheduler found: its bound (the module's
		// lower_bound below unless copies were added after it), the best
		// heuristic's it started from and XLA's choice's, and whether the
		// result is proven optimal (optimal only) and why not.
		j.Key("search")
		j.BeginObject()
		j.Key("lower_bound")
		j.Int(r.LowerBound)
		j.Key("heuristic")
		j.String(r.Heuristic)
		j.Key("heuristic_lower_bound")
		j.Int(r.Start)
		j.Key("xla_lower_bound")
		j.Int(r.XLABest)
		j.Key("expansions")
		j.Int(r.Expansions)
		if r.OwnOrder {
			// A module XLA scheduled kept its own order: nothing found
			// beat it.
			j.Key("own_order")
			j.Bool(true)
		}
		if a.Schedule.Name == "optimal" { // schedule.Optimal
			j.Key("proven_optimal")
			j.Bool(r.Proven)
			if !r.Proven {
				j.Key("why_not")
				j.String(r.Why)
			}
		}
		if r.Stopped {
			j.Key("stopped")
			j.Bool(true)
		}
		j.EndObject()
	}
	j.Key("max")
	j.Int(int64(a.EndTime()))
	j.Key("sequence")
	j.BeginArray()
	for i, in := range a.Sequence {
		if err := poll.OutputFailed(i, j.Err); err != nil {
			return err
		}
		j.String(in.Name)
	}
	j.EndArray()
	j.Key("values")
	j.BeginArray()
	for i, v := range a.Values {
		if err := poll.OutputFailed(i, j.Err); err != nil {
			return err
		}
		if !v.Scheduled {
			continue
		}
		j.BeginObject()
		WriteValueKeys(j, v)
		j.Key("size")
		j.Int(v.Size)
		j.Key("start")
		j.Int(int64(v.Range.Start))
		j.Key("end") // inclusive
		j.Int(int64(v.Range.End))
		j.Key("buffer")
		j.Int(int64(v.Buffer.ID))
		if v.IsPhi {
			j.Key("phi")
			j.Bool(true)
		}
		if v.LiveOut {
			j.Key("live_out")
			j.Bool(true)
		}
		j.EndObject()
	}
	j.EndArray()
	j.Key("buffers")
	j.BeginArray()
	for i, b := range a.Buffers {
		if err := poll.OutputFailed(i, j.Err); err != nil {
			return err
		}
		r, ok := b.Range()
		if !ok {
			continue
		}
		j.BeginObject()
		j.Key("id")
		j.Int(int64(b.ID))
		j.Key("size")
		j.Int(b.Size)
		j.Key("color")
		j.Int(b.Color)
		j.Key("values")
		j.BeginArray()
		for _, v := range b.Values {
			j.Int(int64(v.ID))
		}
		j.EndArray()
		j.Key("start")
		j.Int(int64(r.Start))
		j.Key("end")
		j.Int(int64(r.End))
		j.EndObject()
	}
	j.EndArray()
	lb := a.LowerBound(nil)
	j.Key("lower_bound")
	writeBytesTime(j, lb.Bytes, lb.Time)
	j.Key("buffers")
	j.BeginArray()
	for _, b := range lb.Live {
		j.Int(int64(b.ID))
	}
	j.EndArray()
	j.EndObject()
	pk := a.XLAPeak()
	j.Key("xla_peak")
	writeBytesTime(j, pk.Bytes, pk.Time)
	j.EndObject()
	j.EndObject()
	return j.Close()
}

// writeBytesTime opens an object and writes its "bytes" and "time" fields,
// as the lower bound and the XLA peak both report them.
// WriteValueKeys writes the keys that name value v in every JSON output
// (liveness's values, assign's slots): id, name, index and shape.
func WriteValueKeys(j *jsonw.Writer, v *Value) {
	j.Key("id")
	j.Int(int64(v.ID))
	j.Key("name")
	j.String(v.Inst.Name)
	j.Key("index")
	j.Ints(v.Index)
	j.Key("shape")
	j.String(v.Shape.String())
}

func writeBytesTime(j *jsonw.Writer, bytes int64, time int) {
	j.BeginObject()
	j.Key("bytes")
	j.Int(bytes)
	j.Key("time")
	j.Int(int64(time))
}
