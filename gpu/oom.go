package gpu

import (
	"fmt"
	"strings"

	"github.com/hlomem/hlomem/assign"
)

// Error is the OOM as XLA reports it, followed by what a user needs to act
// on it: the cause when the free memory would have sufficed
// (fragmentation), the allocator's dump with its stats, the occupancy map,
// and the program's largest buffers at its peak.
func (e *OOMError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Out of memory while trying to allocate %d bytes.\n", e.Requested)
	fmt.Fprintf(&b, "Allocator (%s) ran out of memory trying to allocate %s (rounded to %d)", e.Allocator, assign.HumanBytes(e.Requested), e.Rounded)
	if e.Op != "" {
		fmt.Fprintf(&b, "requested by op %s", e.Op)
	}
	b.WriteString("\n")
	if e.Fragmented() {
		fmt.Fprintf(&b, "The cause is fragmentation: %s is free in total (%d bytes, at least the %d asked for), but the largest free block is %s (%d bytes).\n",
			assign.HumanBytes(e.Free), e.Free, e.Rounded, assign.HumanBytes(e.Stats.LargestFreeBlockBytes), e.Stats.LargestFreeBlockBytes)
		b.WriteString("Defragmenting the device (moving the live arrays out and back), preallocating the arena (XLA_PYTHON_CLIENT_PREALLOCATE=true) or the cuda_async allocator (XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async) may help.\n")
	} else {
		fmt.Fprintf(&b, "The memory is not there: %s is free in total (%d bytes) and %d are needed, %s more than the limit allows.\n",
			assign.HumanBytes(e.Free), e.Free, e.Rounded, assign.HumanBytes(e.Rounded-e.Free))
	}
	b.WriteString("Current allocation summary follows.\n")
	b.WriteString(e.Dump)
	if e.Dump != "" && !strings.HasSuffix(e.Dump, "\n") {
		b.WriteString("\n")
	}
	if e.Occupancy != "" {
		fmt.Fprintf(&b, "Occupancy (%s):\n%s\n", occupancyLegend(e.Occupancy), e.Occupancy)
	}
	if e.Program != "" && len(e.Peak) > 0 {
		fmt.Fprintf(&b, "What occupies memory at the peak of %s (step %d of %d, %s), largest first:\n", e.Program, e.PeakStep, e.Steps, assign.HumanBytes(e.PeakBytes))
		for i, p := range e.Peak {
			fmt.Fprintf(&b, "  %2d. %s (%s, %s): %s", i+1, p.Name, p.Kind, assign.HumanBytes(p.Bytes), p.Shape)
			if p.OpName != "" {
				fmt.Fprintf(&b, " op_name=%q", p.OpName)
			}
			if p.Source != "" {
				fmt.Fprintf(&b, " at %s", p.Source)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// occupancyLegend explains the characters an occupancy map uses.
func occupancyLegend(m string) string {
	var parts []string
	for _, c := range []struct{ ch, meaning string }{{"*", "in use"}, {"x", "rounding waste"}, {"_", "free"}, {".", "not reserved"}} {
		if strings.Contains(m, c.ch) {
			parts = append(parts, fmt.Sprintf("'%s' %s", c.ch, c.meaning))
		}
	}
	return strings.Join(parts, ", ")
}
