package tpu

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// PaddedBuffer is one buffer's cost of tiling.
type PaddedBuffer struct {
	Name, Shape      string
	OpName           string
	Unpadded, Padded int64
	// Kind is the allocation kind of the buffer's allocation in the plan
	// (parameter, constant, maybe-live-out, preallocated-temp, ...).
	Kind string

	inst *hlo.Instruction // the defining instruction, XLA's label
}

// Expansion is padded / unpadded (1 when either is 0).
func (p PaddedBuffer) Expansion() float64 { return expansion(p.Unpadded, p.Padded) }

func expansion(unpadded, padded int64) float64 {
	if unpadded <= 0 || padded <= 0 {
		return 1
	}
	return float64(padded) / float64(unpadded)
}

// Padding is what tiling costs a plan: every buffer's padded and unpadded
// size, largest padded first, and the totals.
type Padding struct {
	Buffers          []PaddedBuffer
	Unpadded, Padded int64
}

// Expansion is the total padded / unpadded.
func (p Padding) Expansion() float64 { return expansion(p.Unpadded, p.Padded) }

// PaddingOf measures the buffers of as: a buffer's padded size is the one
// the plan uses (hlo.ByteSize, honouring tiles), its unpadded size the
// largest of its values' hlo.UnpaddedByteSize.
func PaddingOf(as *assign.Assignment) Padding {
	var p Padding
	if as == nil || as.Analysis == nil {
		return p
	}
	for _, b := range as.Analysis.Buffers {
		if len(b.Values) == 0 || b.Size == 0 {
			continue
		}
		var un int64
		var rep *liveness.Value
		for _, v := range b.Values {
			n, err := hlo.UnpaddedByteSize(v.Shape)
			if err != nil {
				n = v.Size
			}
			if rep == nil || v.Size > rep.Size {
				rep = v
			}
			un = max(un, n)
		}
		pb := PaddedBuffer{Name: rep.Name(), Shape: rep.Shape.String(), Unpadded: un, Padded: b.Size, inst: rep.Inst}
		if rep.Inst != nil && rep.Inst.Metadata != nil {
			pb.OpName = rep.Inst.Metadata.OpName
		}
		if al, _, ok := as.AllocationOf(rep); ok && al != nil {
			pb.Kind = al.Kind()
		}
		p.Buffers = append(p.Buffers, pb)
		p.Unpadded += un
		p.Padded += b.Size
	}
	sort.SliceStable(p.Buffers, func(i, j int) bool {
		if p.Buffers[i].Padded != p.Buffers[j].Padded {
			return p.Buffers[i].Padded > p.Buffers[j].Padded
		}
		return p.Buffers[i].Name < p.Buffers[j].Name
	})
	return p
}

// Write prints the totals and the n buffers that grow most in bytes (every
// buffer when n <= 0):
//
//	TPU padding: 12 buffers, unpadded 1.09GiB, padded 14.00GiB (12.80x expansion)
//	  iota.2{}: s32[29360128,10]{1,0:T(8,128)} unpadded 1.09GiB padded 14.00GiB (12.80x)
func (p Padding) Write(w io.Writer, n int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "TPU padding: %d buffers, unpadded %s (%d bytes), padded %s (%d bytes), %.2fx expansion\n",
		len(p.Buffers), assign.HumanBytes(p.Unpadded), p.Unpadded, assign.HumanBytes(p.Padded), p.Padded, p.Expansion())
	bufs := append([]PaddedBuffer(nil), p.Buffers...)
	sort.SliceStable(bufs, func(i, j int) bool {
		return bufs[i].Padded-bufs[i].Unpadded > bufs[j].Padded-bufs[j].Unpadded
	})
	if n > 0 && len(bufs) > n {
		bufs = bufs[:n]
	}
	for _, x := range bufs {
		fmt.Fprintf(&b, "  %s: %s unpadded %d padded %d (%.2fx)\n", x.Name, x.Shape, x.Unpadded, x.Padded, x.Expansion())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// G prints bytes as XLA:TPU's messages do: 1024-based units with two
// decimals and a one-letter suffix (14.00G, 276.0K, 0B).
func G(n int64) string {
	h := assign.HumanBytes(n)
	return strings.Replace(h, "iB", "", 1)
}

// CompileOOM returns XLA:TPU's compile-time out-of-memory error when the
// plan does not fit gen's HBM, or nil when it does:
//
//	Ran out of memory in memory space hbm. Used X of Y hbm. Exceeded hbm capacity by Z.
//
// followed by the usage breakdown, the HLO temp line with its utilization
// (unpadded against padded) and fragmentation, and the largest allocations
// with shape, unpadded size, the extra memory due to padding, op_name and
// the XLA label.
func CompileOOM(as *assign.Assignment, gen Generation, largest int) error {
	if as == nil || as.Stats.TotalBytes <= gen.HBM {
		return nil
	}
	return &CompileOOMError{Assignment: as, Generation: gen, Largest: largest}
}

// CompileOOMError is a plan larger than the generation's HBM.
type CompileOOMError struct {
	Assignment *assign.Assignment
	Generation Generation
	// Largest is how many allocations the message lists (5 when 0).
	Largest int
}

func (e *CompileOOMError) Error() string {
	as, st := e.Assignment, e.Assignment.Stats
	hbm := e.Generation.HBM
	var b strings.Builder
	fmt.Fprintf(&b, "Ran out of memory in memory space hbm. Used %s of %s hbm. Exceeded hbm capacity by %s.\n", G(st.TotalBytes), G(hbm), G(st.TotalBytes-hbm))
	fmt.Fprintf(&b, "Total hbm usage >= %s:\n    program %s\n    arguments %s\n", G(st.TotalBytes), G(st.TotalBytes-st.ParameterBytes), G(st.ParameterBytes))
	fmt.Fprintf(&b, "Output size %s.\n", G(st.MaybeLiveOutBytes))
	pad := PaddingOf(as)
	var tempUn, tempPad int64
	for _, x := range pad.Buffers {
		if x.Kind == "preallocated-temp" {
			tempUn += x.Unpadded
			tempPad += x.Padded
		}
	}
	util := 100.0
	if tempPad > 0 {
		util = 100 * float64(tempUn) / float64(tempPad)
	}
	frag := 0.0
	if st.TempBytes > 0 {
		frag = 100 * float64(st.TempFragmentation) / float64(st.TempBytes)
	}
	fmt.Fprintf(&b, "Program hbm requirement %s:\n    global %s\n    HLO temp %s (%.1f%% utilization: Unpadded (%s) Padded (%s), %.1f%% fragmentation (%s))\n",
		G(st.TotalBytes-st.ParameterBytes), G(st.ConstantBytes), G(st.TempBytes), util, G(tempUn), G(tempPad), frag, G(st.TempFragmentation))
	b.WriteString("Largest program allocations in hbm:\n")
	n := e.Largest
	if n <= 0 {
		n = 5
	}
	for i, x := range pad.Buffers {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "  %d. Size: %s\n", i+1, G(x.Padded))
		if x.OpName != "" {
			fmt.Fprintf(&b, "     Operator: op_name=%q\n", x.OpName)
		}
		fmt.Fprintf(&b, "     Shape: %s\n     Unpadded size: %s\n", x.Shape, G(x.Unpadded))
		if x.Padded > x.Unpadded {
			fmt.Fprintf(&b, "     Extra memory due to padding: %s (%.1fx expansion)\n", G(x.Padded-x.Unpadded), x.Expansion())
		}
		fmt.Fprintf(&b, "     XLA label: %s\n     Allocation type: %s\n     ==========================\n", x.label(), allocationType(x.Kind))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// label is the defining instruction as HLO text (the value's name when
// unknown).
func (p PaddedBuffer) label() string {
	if p.inst == nil {
		return p.Name
	}
	return p.inst.String()
}

func allocationType(kind string) string {
	switch kind {
	case "preallocated-temp", "":
		return "HLO temp"
	case "parameter":
		return "program argument"
	case "maybe-live-out":
		return "program output"
	}
	return kind
}

// StepBytes is what the values live at one step of the schedule take,
// unpadded and padded.
type StepBytes struct {
	Step             int
	Inst             string
	Unpadded, Padded int64
}

// LiveBytes returns, for every step of a's schedule, the bytes of the
// values live there (every value counted, aliases included, as the
// bytes a naive allocator would hold), unpadded and padded.
func LiveBytes(a *liveness.Analysis) []StepBytes {
	if a == nil {
		return nil
	}
	n := len(a.Sequence)
	dun := make([]int64, n+1)
	dpad := make([]int64, n+1)
	for _, v := range a.Values {
		if !v.Scheduled || v.IsPhi || v.Size == 0 {
			continue
		}
		s, e := v.Range.HalfOpen()
		s, e = max(s, 0), min(e, n)
		if s >= e {
			continue
		}
		un, err := hlo.UnpaddedByteSize(v.Shape)
		if err != nil {
			un = v.Size
		}
		dun[s] += un
		dun[e] -= un
		dpad[s] += v.Size
		dpad[e] -= v.Size
	}
	out := make([]StepBytes, n)
	var un, pad int64
	for t := range n {
		un += dun[t]
		pad += dpad[t]
		out[t] = StepBytes{Step: t, Inst: a.Sequence[t].Name, Unpadded: un, Padded: pad}
	}
	return out
}
