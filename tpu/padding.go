package tpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// G prints bytes as XLA:TPU's messages do: 1024-based units with two
// decimals and a one-letter suffix (14.00G, 276.0K, 0B).
func G(n int64) string {
	h := assign.HumanBytes(n)
	return strings.Replace(h, "iB", "", 1)
}

// CompileOOM returns XLA:TPU's compile-time out-of-memory error when the
// plan does not fit one of gen's memories (HBM, then VMEM and SMEM, whose
// allocations are the plan's colors 1 and 2), or nil when it fits:
//
//	Ran out of memory in memory space hbm. Used X of Y hbm. Exceeded hbm capacity by Z.
//
// followed by the usage breakdown, the HLO temp line with its utilization
// (unpadded against padded) and fragmentation, and the largest allocations
// with shape, unpadded size, the extra memory due to padding, op_name and
// the XLA label.
func CompileOOM(as *assign.Assignment, gen Generation, largest int) error {
	if as == nil {
		return nil
	}
	for _, sp := range []struct {
		color    int64
		name     string
		capacity int64
	}{{HBMSpace, "hbm", gen.HBM}, {VMEMSpace, "vmem", gen.VMEM}, {SMEMSpace, "smem", gen.SMEM}} {
		var used int64
		for _, al := range as.Allocations {
			if al.Color == sp.color {
				used += al.Size
			}
		}
		if used > sp.capacity {
			return &CompileOOMError{Assignment: as, Generation: gen, Largest: largest, Space: sp.name, Color: sp.color, Used: used, Capacity: sp.capacity}
		}
	}
	return nil
}

// CompileOOMError is a plan larger than one of the generation's memories.
type CompileOOMError struct {
	Assignment *assign.Assignment
	Generation Generation
	// Largest is how many allocations the message lists (5 when 0).
	Largest int
	// Space names the memory that overflows (hbm, vmem or smem), Color is
	// its memory space; Used is the bytes of the plan's allocations there,
	// Capacity the memory's size.
	Space          string
	Color          int64
	Used, Capacity int64
}

func (e *CompileOOMError) Error() string {
	as, sp := e.Assignment, e.Space
	var args, out, shares, consts, temp int64
	for _, al := range as.Allocations {
		if al.Color != e.Color {
			continue
		}
		switch {
		case al.IsParameter():
			args += al.Size
			for _, s := range al.Slots {
				if s.Value != nil && s.Value.LiveOut {
					shares += al.Size
					break
				}
			}
		case al.Constant:
			consts += al.Size
		case al.MaybeLiveOut:
			out += al.Size
		case al.Temp:
			temp += al.Size
		}
	}
	out += shares
	var tempBound int64
	for _, h := range as.Heaps {
		if h.Color == e.Color {
			tempBound += h.LowerBound
		}
	}
	frag := max(temp-tempBound, 0)
	var b strings.Builder
	fmt.Fprintf(&b, "Ran out of memory in memory space %s. Used %s of %s %s. Exceeded %s capacity by %s.\n", sp, G(e.Used), G(e.Capacity), sp, sp, G(e.Used-e.Capacity))
	fmt.Fprintf(&b, "Total %s usage >= %s:\n    program %s\n    arguments %s\n", sp, G(e.Used), G(e.Used-args), G(args))
	fmt.Fprintf(&b, "Output size %s; shares %s with arguments.\n", G(out), G(shares))
	pad := as.Padding()
	var tempUn, tempPad int64
	var bufs []assign.PaddedBuffer
	for _, x := range pad.Buffers {
		if x.Color != e.Color {
			continue
		}
		bufs = append(bufs, x)
		if x.Kind == "preallocated-temp" {
			tempUn += x.Unpadded
			tempPad += x.Padded
		}
	}
	util := 100.0
	if tempPad > 0 {
		util = 100 * float64(tempUn) / float64(tempPad)
	}
	fragPct := 0.0
	if temp > 0 {
		fragPct = 100 * float64(frag) / float64(temp)
	}
	fmt.Fprintf(&b, "Program %s requirement %s:\n    global %s\n    HLO temp %s (%.1f%% utilization: Unpadded (%s) Padded (%s), %.1f%% fragmentation (%s))\n",
		sp, G(e.Used-args), G(consts), G(temp), util, G(tempUn), G(tempPad), fragPct, G(frag))
	fmt.Fprintf(&b, "Largest program allocations in %s:\n", sp)
	n := e.Largest
	if n <= 0 {
		n = 5
	}
	for i, x := range bufs {
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
		fmt.Fprintf(&b, "     XLA label: %s\n     Allocation type: %s\n     ==========================\n", x.Label(), allocationType(x.Kind))
	}
	return strings.TrimSuffix(b.String(), "\n")
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

// StepBytes is what the buffers live at one step of the schedule take:
// those in HBM unpadded and padded, and those in VMEM and SMEM (at their
// plan sizes).
type StepBytes struct {
	Step             int
	Inst             string
	Unpadded, Padded int64
	VMEM, SMEM       int64
}

// LiveBytes returns, for every step of a's schedule, the bytes of the
// buffers live there: a buffer counts once, at its size, at every step
// one of its values (a loop's phis included) is live, as a plan that
// gave every buffer its own memory would hold them. HBM buffers count
// unpadded (their largest value's hlo.UnpaddedByteSize) and padded, VMEM
// and SMEM buffers at their size.
func LiveBytes(a *liveness.Analysis) []StepBytes {
	if a == nil {
		return nil
	}
	n := len(a.Sequence)
	dun := make([]int64, n+1)
	dpad := make([]int64, n+1)
	dv := make([]int64, n+1)
	ds := make([]int64, n+1)
	type span struct{ s, e int }
	var spans []span
	for _, b := range a.Buffers {
		if b.Size == 0 {
			continue
		}
		spans = spans[:0]
		var un int64
		for _, v := range b.Values {
			if !v.Scheduled {
				continue
			}
			s, e := v.Range.HalfOpen()
			s, e = max(s, 0), min(e, n)
			if s < e {
				spans = append(spans, span{s, e})
			}
			u, err := hlo.UnpaddedByteSize(v.Shape)
			if err != nil {
				u = v.Size
			}
			un = max(un, u)
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].s < spans[j].s })
		add := func(s, e int) {
			switch b.Color {
			case VMEMSpace:
				dv[s] += b.Size
				dv[e] -= b.Size
			case SMEMSpace:
				ds[s] += b.Size
				ds[e] -= b.Size
			default:
				dun[s] += un
				dun[e] -= un
				dpad[s] += b.Size
				dpad[e] -= b.Size
			}
		}
		// The union of the values' spans.
		for i := 0; i < len(spans); {
			s, e := spans[i].s, spans[i].e
			for i++; i < len(spans) && spans[i].s <= e; i++ {
				e = max(e, spans[i].e)
			}
			add(s, e)
		}
	}
	out := make([]StepBytes, n)
	var un, pad, vm, sm int64
	for t := range n {
		un += dun[t]
		pad += dpad[t]
		vm += dv[t]
		sm += ds[t]
		out[t] = StepBytes{Step: t, Inst: a.Sequence[t].Name, Unpadded: un, Padded: pad, VMEM: vm, SMEM: sm}
	}
	return out
}
