package report

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/hlo"
)

// XLAPlan is XLA's own buffer assignment of the module, laid out as the
// report lays out hlomem's: XLA's allocations stacked by XLA's index, and
// every buffer of hlomem's analysis at the address XLA gave it.
type XLAPlan struct {
	File        string
	Total       int64
	Allocations []Allocation
	// Buffers are hlomem's buffers (same IDs, names and live ranges) at
	// XLA's addresses: Kind, Allocation and Offset are XLA's. A buffer
	// XLA places nowhere is left out.
	Buffers []*Buffer
	// Placed counts the buffers both plans place, Moved lists those they
	// place differently (another kind of allocation, or another offset
	// in it), largest first.
	Placed int
	Moved  []Moved
	// Unplaced counts hlomem's buffers XLA places nowhere, Missing the
	// values XLA places that hlomem's analysis lacks.
	Unplaced, Missing int
	// Values counts XLA's values (name{index}, each once) and Matched
	// those hlomem's analysis has: Values - Missing.
	Values, Matched int
}

// Moved is a buffer the two plans place differently: in hlomem's plan at
// Offset in allocation Allocation of kind Kind, in XLA's at XLAOffset in
// XLAAllocation of kind XLAKind (offsets within the allocation).
type Moved struct {
	Buffer                    *Buffer
	Kind, XLAKind             string
	Allocation, XLAAllocation int
	Offset, XLAOffset         int64
}

// compareXLA lays out XLA's plan x of r's module (planned as as) and
// finds the buffers the two plans place differently.
func compareXLA(r *Report, as *assign.Assignment, x *assign.XLAAssignment, file string) *XLAPlan {
	p := &XLAPlan{File: file, Total: x.TotalBytes}
	if p.File == "" {
		p.File = x.File
	}
	var base int64
	bases := map[int]int64{}
	kinds := map[int]string{}
	colors := map[int]int64{}
	var sum int64
	for _, al := range x.Allocations {
		p.Allocations = append(p.Allocations, Allocation{Index: al.Index, Kind: al.Kind(), Color: al.Color, Base: base, Size: al.Size})
		bases[al.Index], kinds[al.Index], colors[al.Index] = base, al.Kind(), al.Color
		base += al.Size
		sum += al.Size
	}
	if p.Total < 0 {
		p.Total = sum
	}
	loc := x.Locate(as.Analysis)
	p.Missing = len(loc.Missing)
	p.Values = xlaValueCount(x)
	p.Matched = p.Values - p.Missing
	a := as.Analysis
	for _, b := range r.Buffers {
		lb := a.Buffers[b.ID]
		xa, xo := -1, int64(0)
		for _, v := range lb.Values {
			if v.ID < len(loc.Alloc) && loc.Alloc[v.ID] >= 0 {
				xa, xo = loc.Alloc[v.ID], loc.Offset[v.ID]
				break
			}
		}
		if xa < 0 {
			p.Unplaced++
			continue
		}
		p.Placed++
		xb := *b
		xb.Allocation, xb.Kind, xb.Color = xa, kinds[xa], colors[xa]
		xb.Offset = bases[xa] + xo
		p.Buffers = append(p.Buffers, &xb)
		off := b.Offset - r.Allocations[b.Allocation].Base
		if kinds[xa] != b.Kind || xo != off {
			p.Moved = append(p.Moved, Moved{Buffer: b, Kind: b.Kind, XLAKind: kinds[xa], Allocation: b.Allocation, XLAAllocation: xa, Offset: off, XLAOffset: xo})
		}
	}
	sort.SliceStable(p.Moved, func(i, j int) bool {
		if p.Moved[i].Buffer.Size != p.Moved[j].Buffer.Size {
			return p.Moved[i].Buffer.Size > p.Moved[j].Buffer.Size
		}
		return p.Moved[i].Buffer.ID < p.Moved[j].Buffer.ID
	})
	sort.SliceStable(p.Buffers, func(i, j int) bool {
		if p.Buffers[i].Offset != p.Buffers[j].Offset {
			return p.Buffers[i].Offset < p.Buffers[j].Offset
		}
		return p.Buffers[i].ID < p.Buffers[j].ID
	})
	return p
}

// xlaValueCount counts the values of XLA's dump, name{index}, each once.
func xlaValueCount(x *assign.XLAAssignment) int {
	seen := map[string]bool{}
	for _, al := range x.Allocations {
		for _, v := range al.Values {
			seen[v.Name+v.Index.String()] = true
		}
	}
	return len(seen)
}

// XLAMismatchError says that XLA's buffer assignment given with a module
// is not that module's: its file is named for another module, or it names
// instructions the module does not have, or its schedule leaves out
// instructions of the module's entry.
type XLAMismatchError struct {
	File, Module string
	// XLAModule is the module XLA's file name (module_NNNN.NAME.*) names,
	// when that is not Module; "" otherwise.
	XLAModule string
	// Unknown lists the instructions XLA's dump names that the module
	// lacks, of Names in all; Absent the instructions of the module's
	// entry that XLA's schedule (its HloLiveRange block) lacks, of Entry
	// in all. Both are sorted.
	Unknown, Absent []string
	Names, Entry    int
	// Reshaped lists the values whose shape (dimensions and element type)
	// in the dump is not their instruction's in the module, of Shaped
	// values of instructions the module has, in the dump's order: "name{index} dump-shape, the
	// module has module-shape".
	Reshaped []string
	Shaped   int
}

func (e *XLAMismatchError) Error() string {
	var why []string
	if e.XLAModule != "" {
		why = append(why, fmt.Sprintf("its file is named for module %s", e.XLAModule))
	}
	if len(e.Unknown) > 0 {
		why = append(why, fmt.Sprintf("%d of the %d instructions it names %s not in the module (%s)", len(e.Unknown), e.Names, isAre(len(e.Unknown)), examples(e.Unknown)))
	}
	if len(e.Reshaped) > 0 {
		why = append(why, fmt.Sprintf("%d of the %d values it places for the module's instructions %s another shape there (%s)", len(e.Reshaped), e.Shaped, hasHave(len(e.Reshaped)), examples(e.Reshaped)))
	}
	if len(e.Absent) > 0 {
		why = append(why, fmt.Sprintf("%d of the %d instructions of the module's entry %s not in its schedule (%s)", len(e.Absent), e.Entry, isAre(len(e.Absent)), examples(e.Absent)))
	}
	return fmt.Sprintf("%s is not XLA's buffer assignment of module %s: %s", e.File, e.Module, strings.Join(why, "; "))
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// examples lists the first three names, with how many more.
func examples(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// dumpName splits the name of an XLA dump file, module_NNNN.REST, where
// REST is the module's name, a dot, and the dump's suffix.
var dumpName = regexp.MustCompile(`^module_[0-9]+\.(.+)$`)

// dumpSuffix is the end of the name of a buffer-assignment dump after the
// module's name: [sm_8.0_][gpu_|cpu_]after_optimizations-buffer-assignment.txt
// or buffer-assignment.txt.
var dumpSuffix = regexp.MustCompile(`\.(?:(?:sm_[0-9.]+_)?[a-z0-9]*_?(?:after|before)_optimizations[-.])?buffer-assignment\.txt$`)

// CheckXLAModule checks that x, read from file, is XLA's buffer
// assignment of m (the module as parsed, before hlomem prepares it) and
// returns an *XLAMismatchError naming the mismatch if it is not: a file
// named in XLA's way (module_NNNN.NAME....) must name m, every instruction
// the dump names must be one of m's, every value it places must have its
// instruction's shape in m (a function compiled for other shapes keeps its
// names), and when the dump holds XLA's schedule, it must hold every
// instruction of m's entry.
func CheckXLAModule(m *hlo.Module, x *assign.XLAAssignment, file string) error {
	if file == "" {
		file = x.File
	}
	e := &XLAMismatchError{File: file, Module: m.Name}
	if sm := dumpName.FindStringSubmatch(filepath.Base(file)); sm != nil {
		rest := sm[1]
		if rest != m.Name && !strings.HasPrefix(rest, m.Name+".") {
			e.XLAModule = strings.TrimSuffix(dumpSuffix.ReplaceAllString(rest, ""), ".")
			if e.XLAModule == "" {
				e.XLAModule = rest
			}
		}
	}
	have := map[string]*hlo.Instruction{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			have[in.Name] = in
		}
	}
	names := map[string]bool{}
	for _, al := range x.Allocations {
		for _, v := range al.Values {
			names[v.Name] = true
			in := have[v.Name]
			if in == nil {
				continue
			}
			xs, err := hlo.ParseShape(file, v.Shape)
			if err != nil {
				continue // ReadXLA checked it; a shape this reader cannot compare
			}
			e.Shaped++
			if ms, ok := in.Shape.Subshape(v.Index); !ok || ms.StringNoLayout() != xs.StringNoLayout() {
				got := "no such index"
				if ok {
					got = ms.StringNoLayout()
				}
				e.Reshaped = append(e.Reshaped, fmt.Sprintf("%s%s %s, the module has %s", v.Name, v.Index, xs.StringNoLayout(), got))
			}
		}
	}
	var sched map[string]bool
	if lr := x.LiveRange; lr != nil && len(lr.Sequence) > 0 {
		sched = make(map[string]bool, len(lr.Sequence))
		for _, n := range lr.Sequence {
			names[n] = true
			sched[n] = true
		}
	}
	e.Names = len(names)
	for n := range names {
		if have[n] == nil {
			e.Unknown = append(e.Unknown, n)
		}
	}
	if sched != nil && m.Entry != nil {
		e.Entry = len(m.Entry.Instructions)
		for _, in := range m.Entry.Instructions {
			if !sched[in.Name] {
				e.Absent = append(e.Absent, in.Name)
			}
		}
	}
	sort.Strings(e.Unknown)
	sort.Strings(e.Absent)
	if e.XLAModule == "" && len(e.Unknown) == 0 && len(e.Absent) == 0 && len(e.Reshaped) == 0 {
		return nil
	}
	return e
}
