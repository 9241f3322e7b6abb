package assign

// Reading XLA's buffer-assignment dump.
//
// XLA writes its buffer assignment as text (BufferAssignment::ToString,
// buffer_assignment.cc; the layout is in ../../shared/reference/XLA.md
// §2.1-2.3): a "BufferAssignment:" line, one header per allocation
// (BufferAllocation::ToShortString) followed by one " value:" line per
// HloValue it holds, "Total bytes used", the "Used values" section
// (ValuesToString) and, in dumps made before April 2026, the HloLiveRange
// block (HloLiveRange::ToString). Later XLA splits the last two into files
// of their own; ReadXLA accepts any of the sections alone or together, in
// that order.
//
// The reader is line-oriented and strict: every line must be one the
// format has, in a section where the format puts it, and every error is
// positioned at the byte column where the offending token begins. Blank
// lines, trailing blanks, CRLF line ends and a missing final newline are
// tolerated. Shapes are checked with hlo.ParseShape but kept as printed.
// Nothing is checked across lines except what a reader needs to be sure of
// what it returns: allocation indices and instruction-sequence times must
// count up from 0, an allocation must have a kind, a value line must follow
// an allocation, and a Used values entry must be complete. Figures that
// could disagree (Total bytes used against the sum of the sizes, offsets
// against allocation sizes) are kept as printed for callers to judge.
//
// WriteXLA (xla_dump.go) writes this format; ReadXLA reads what it writes
// and what XLA writes, and Locate matches a dump's values with an
// analysis of the module it describes.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
)

// XLAAssignment is XLA's own buffer assignment as its
// *-buffer-assignment.txt dump prints it.
type XLAAssignment struct {
	File        string
	Allocations []XLAAllocation
	// TotalBytes is "Total bytes used"; -1 when absent.
	TotalBytes int64
	// UsedValues counts the entries of the "Used values:" section; -1
	// when the section is absent. Their text is checked, not kept.
	UsedValues int
	// LiveRange is the HloLiveRange block, nil when absent.
	LiveRange *XLALiveRange
}

// XLAAllocation is one allocation of the dump: its header line and the
// values it holds.
type XLAAllocation struct {
	Index int
	Size  int64
	Color int64
	// Parameter is the entry parameter number, -1 if none.
	Parameter      int64
	ParameterIndex hlo.ShapeIndex
	// ParameterShape is the parameter's shape as "shape |...|" prints it
	// (without layout; "<unknown shape>" when XLA could not find the
	// parameter), "" if none.
	ParameterShape string
	Constant       bool
	ThreadLocal    bool
	MaybeLiveOut   bool
	// Temp is "preallocated-temp".
	Temp bool
	// ParameterAliased is inferred, since the dump does not print
	// donation: a parameter allocation that may be live out holds an
	// output, which only a donated (input_output_alias) parameter can.
	ParameterAliased bool
	// OutputShape is the entry result's shape from "output shape is
	// |...|", "" if none.
	OutputShape string
	Values      []XLAValue
	// Line is the header's line in the file.
	Line int
}

// Kind names the class as assign.Allocation.Kind does: parameter,
// constant, thread-local, maybe-live-out or preallocated-temp.
func (a XLAAllocation) Kind() string {
	switch {
	case a.Parameter >= 0:
		return "parameter"
	case a.Constant:
		return "constant"
	case a.ThreadLocal:
		return "thread-local"
	case a.MaybeLiveOut:
		return "maybe-live-out"
	}
	return "preallocated-temp"
}

// XLAValue is one " value:" line: an HloValue and where its allocation
// holds it.
type XLAValue struct {
	// ID is XLA's value number.
	ID int
	// Name is the defining instruction's name.
	Name string
	// Index is the value's shape index; {} when the label prints none.
	Index hlo.ShapeIndex
	// IndexShown: the label printed the index, as XLA does exactly when
	// the instruction is tuple-shaped.
	IndexShown bool
	Color      int64
	Phi        bool
	Offset     int64
	Size       int64
	// Shape is the value's shape with layout, as printed.
	Shape string
	Line  int
}

// XLALiveRange is the HloLiveRange block.
type XLALiveRange struct {
	// Max is "HloLiveRange (max N)", the schedule's end time.
	Max int
	// Sequence is the InstructionSequence, in order: Sequence[t] runs at t.
	Sequence []string
	// Ranges are the BufferLiveRange lines, in order.
	Ranges []XLARange
	// PeakTime is T of "Live ranges at T (peak)", -1 if absent.
	PeakTime int
	// Peak are the lines under "Live ranges at T (peak)", in order.
	Peak []XLAPeakValue
}

// XLARange is a BufferLiveRange line, name{index}:start-end; both ends are
// inclusive, as printed.
type XLARange struct {
	Name       string
	Index      hlo.ShapeIndex
	Start, End int
}

// XLAPeakValue is a line of "Live ranges at T (peak)": name: N bytes in
// the legacy layout, name{index}: N bytes (cumulative: C bytes) in the
// current one.
type XLAPeakValue struct {
	Name string
	// Index is nil in the legacy layout, which prints none.
	Index hlo.ShapeIndex
	Bytes int64
	// Cumulative is -1 in the legacy layout.
	Cumulative int64
}

// XLALocation is where XLA's dump places the values of an analysis.
type XLALocation struct {
	// Alloc is, by Value.ID, the index of the XLA allocation holding the
	// value, -1 if XLA places it nowhere.
	Alloc []int
	// Offset is, by Value.ID, the value's offset in that allocation, -1
	// if XLA places it nowhere.
	Offset []int64
	// Missing are the values XLA places that the analysis lacks,
	// "name{index}", in the order of the dump.
	Missing []string
	// Unplaced are the IDs of the analysis' values that XLA places
	// nowhere (fusion-internal values, for instance), in ID order.
	Unplaced []int
}

// Locate places the values of an analysis of the module the dump
// describes in XLA's allocations: for every value of a (by Value.ID), the
// XLA allocation index and offset XLA gave it, matched by instruction name
// and shape index. Values XLA lists that the analysis lacks, and the
// analysis' values XLA does not place, are reported, not fatal. XLA
// places each value once; should a dump list one twice, the first
// placement counts.
func (x *XLAAssignment) Locate(a *liveness.Analysis) *XLALocation {
	n := len(a.Values)
	loc := &XLALocation{Alloc: make([]int, n), Offset: make([]int64, n)}
	byName := make(map[string]int, n)
	for _, v := range a.Values {
		byName[v.Name()] = v.ID
		loc.Alloc[v.ID], loc.Offset[v.ID] = -1, -1
	}
	missing := make(map[string]bool)
	for _, al := range x.Allocations {
		for _, xv := range al.Values {
			key := xv.Name + xv.Index.String()
			id, ok := byName[key]
			switch {
			case !ok:
				if !missing[key] {
					missing[key] = true
					loc.Missing = append(loc.Missing, key)
				}
			case loc.Alloc[id] < 0:
				loc.Alloc[id], loc.Offset[id] = al.Index, xv.Offset
			}
		}
	}
	for id, al := range loc.Alloc {
		if al < 0 {
			loc.Unplaced = append(loc.Unplaced, id)
		}
	}
	return loc
}

// ReadXLA parses the text of a buffer-assignment dump. Errors are
// hlo.ErrorList of *hlo.Error positioned FILE:LINE:COL (the column where
// the offending token begins), sorted; never a panic, on any input.
func ReadXLA(file string, src []byte) (*XLAAssignment, error) {
	r := &xlaReader{
		file:   file,
		x:      &XLAAssignment{File: file, TotalBytes: -1, UsedValues: -1},
		shapes: make(map[string]bool),
	}
	text := string(src)
	for ln := 1; len(text) > 0 || ln == 1; ln++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		start := 0
		if ln == 1 && strings.HasPrefix(line, byteOrderMark) {
			start = len(byteOrderMark)
		}
		r.line(&cursor{r: r, ln: ln, s: strings.TrimRight(line, " \t\r"), i: start})
	}
	r.finish()
	if err := r.errs.Err(); err != nil {
		return nil, err
	}
	return r.x, nil
}

const byteOrderMark = "\uFEFF"

// Sections of the dump, in the order they must come.
const (
	secNone = iota
	secAllocations
	secTotal
	secUsed
	secLiveRange
)

var sectionNames = [...]string{"", `"BufferAssignment:"`, `"Total bytes used"`, `"Used values:"`, `the HloLiveRange block`}

// Parts of a Used values entry, in order: what the last line was.
const (
	entryDone = iota // no entry open: a label or a section comes next
	entryLabel
	entryPositions
	entryUses
)

// Parts of the HloLiveRange block, in order.
const (
	lrHeader = iota
	lrSequence
	lrRanges
	lrPeak
	lrStack
)

var lrTitles = [...]string{"HloLiveRange", "InstructionSequence", "BufferLiveRange", "Live ranges at", "Stack trace breakdown"}

type xlaReader struct {
	file    string
	x       *XLAAssignment
	errs    hlo.ErrorList
	section int
	seen    bool // any line of the format
	allocs  int  // allocation headers read, good or bad
	inAlloc bool // a header was read: value lines may follow

	entry    int     // part of the open Used values entry
	entryPos hlo.Pos // its label

	lr    int     // part of the HloLiveRange block
	lrPos hlo.Pos // its header

	shapes map[string]bool // shapes that parsed, to parse each once
}

func (r *xlaReader) errorf(pos hlo.Pos, format string, args ...any) {
	r.errs = append(r.errs, &hlo.Error{File: r.file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// line reads one line, the trailing blanks cut off.
func (r *xlaReader) line(c *cursor) {
	s := c.rest()
	switch {
	case strings.TrimLeft(s, " \t") == "":
		return
	case s == "BufferAssignment:":
		if r.enter(c, secAllocations, `"BufferAssignment:"`) {
			r.x.Allocations = []XLAAllocation{}
		}
	case strings.HasPrefix(s, "allocation "):
		switch r.section {
		case secAllocations:
			r.allocation(c)
		case secNone:
			r.seen = true
			c.errorf(c.i, `allocation before "BufferAssignment:"`)
		default:
			c.errorf(c.i, "unexpected allocation after %s", sectionNames[r.section])
		}
	case strings.HasPrefix(s, "Total bytes used:"):
		if r.enter(c, secTotal, `"Total bytes used"`) {
			r.total(c)
		}
	case s == "Used values:":
		if r.enter(c, secUsed, `"Used values:"`) {
			r.x.UsedValues = 0
		}
	case strings.HasPrefix(s, "HloLiveRange"):
		if r.enter(c, secLiveRange, "HloLiveRange block") {
			r.liveRangeHeader(c)
		}
	default:
		r.seen = true
		switch r.section {
		case secAllocations:
			r.value(c)
		case secUsed:
			r.usedValue(c)
		case secLiveRange:
			r.liveRange(c)
		default:
			c.skipBlanks()
			c.errorf(c.i, "unexpected %s", c.found())
		}
	}
}

// enter starts section sec at the line of c, if it may come here.
func (r *xlaReader) enter(c *cursor, sec int, what string) bool {
	r.seen = true
	switch {
	case sec == r.section:
		c.errorf(c.i, "second %s", what)
		return false
	case sec < r.section:
		c.errorf(c.i, "unexpected %s after %s", what, sectionNames[r.section])
		return false
	}
	r.leave()
	r.section = sec
	return true
}

// leave closes the current section, reporting what it lacks.
func (r *xlaReader) leave() {
	switch r.section {
	case secUsed:
		if r.entry != entryDone {
			r.errorf(r.entryPos, `used value has no "from instruction:" line`)
		}
	case secLiveRange:
		if r.lr < lrRanges && r.lrPos.IsValid() {
			r.errorf(r.lrPos, "HloLiveRange block has no BufferLiveRange section")
		}
	}
}

func (r *xlaReader) finish() {
	r.leave()
	if !r.seen {
		r.errorf(hlo.Pos{Line: 1, Col: 1}, "no buffer assignment in file")
	}
}

// allocation reads a header:
//
//	allocation N: size S[, color C][, parameter P, shape |SHAPE| at ShapeIndex {I}]
//	    [, output shape is |SHAPE|][, constant][, thread-local][, maybe-live-out][, preallocated-temp]:
func (r *xlaReader) allocation(c *cursor) {
	r.allocs++
	r.inAlloc = true
	al := XLAAllocation{Parameter: -1, Line: c.ln}
	c.lit("allocation ")
	at := c.i
	al.Index = c.int("allocation index")
	if !c.bad && al.Index != r.allocs-1 {
		c.errorf(at, "allocation %d, want %d", al.Index, r.allocs-1)
	}
	c.lit(": size ")
	al.Size = c.uint("size")
	last, lastName := 0, ""
	for !c.bad {
		if c.rest() == ":" {
			break
		}
		if !strings.HasPrefix(c.rest(), ", ") {
			c.errorf(c.i, `expected ", " or ":", found %s`, c.found())
			return
		}
		c.i += 2
		at := c.i
		name := c.word()
		rank := 0
		switch name {
		case "color":
			rank = 1
			c.lit(" ")
			al.Color = c.uint("color")
		case "parameter":
			rank = 2
			c.lit(" ")
			al.Parameter = c.uint("parameter number")
			c.lit(", shape ")
			al.ParameterShape = r.barShape(c, true)
			c.lit(" at ShapeIndex ")
			al.ParameterIndex = c.index()
		case "output":
			rank = 3
			c.lit(" shape is ")
			al.OutputShape = r.barShape(c, false)
		case "constant":
			rank, al.Constant = 4, true
		case "thread-local":
			rank, al.ThreadLocal = 5, true
		case "maybe-live-out":
			rank, al.MaybeLiveOut = 6, true
		case "preallocated-temp":
			rank, al.Temp = 7, true
			if al.Parameter >= 0 || al.Constant || al.ThreadLocal || al.MaybeLiveOut {
				c.errorf(at, "preallocated-temp allocation %d is also a %s allocation", al.Index, al.Kind())
			}
		default:
			c.i = at
			c.errorf(at, "unknown allocation attribute %s", c.found())
			return
		}
		switch {
		case rank == last:
			c.errorf(at, "duplicate %s", name)
		case rank < last:
			c.errorf(at, "%s after %s", name, lastName)
		}
		last, lastName = rank, name
	}
	if c.bad {
		return
	}
	if !al.Temp && al.Parameter < 0 && !al.Constant && !al.ThreadLocal && !al.MaybeLiveOut {
		c.errorf(c.i, "allocation %d has no kind: parameter, constant, thread-local, maybe-live-out or preallocated-temp", al.Index)
		return
	}
	al.ParameterAliased = al.Parameter >= 0 && al.MaybeLiveOut
	r.x.Allocations = append(r.x.Allocations, al)
}

// barShape reads |SHAPE|, a shape without layout between bars.
func (r *xlaReader) barShape(c *cursor, param bool) string {
	if c.bad {
		return ""
	}
	open := c.i
	c.lit("|")
	if c.bad {
		return ""
	}
	end := strings.IndexByte(c.s[c.i:], '|')
	if end < 0 {
		c.errorf(open, "shape has no closing '|'")
		return ""
	}
	sh := c.s[c.i : c.i+end]
	if !(param && sh == "<unknown shape>") {
		r.shape(c, sh)
	}
	c.i += end + 1
	return sh
}

// shape checks that the text at c is a shape, reporting hlo.ParseShape's
// errors at their place in the line.
func (r *xlaReader) shape(c *cursor, sh string) {
	if c.bad || r.shapes[sh] {
		return
	}
	if sh == "" {
		c.errorf(c.i, "expected shape, found %s", c.found())
		return
	}
	_, err := hlo.ParseShape(r.file, sh)
	if err == nil {
		r.shapes[sh] = true
		return
	}
	list, ok := err.(hlo.ErrorList)
	if !ok || len(list) == 0 {
		c.errorf(c.i, "bad shape: %v", err)
		return
	}
	// A shape is one line, so its errors are on line 1 of it.
	e := list[0]
	msg := strings.ReplaceAll(e.Msg, "end of file", "end of shape")
	c.errorf(c.i+int(e.Pos.Col)-1, "bad shape: %s", msg)
}

// value reads a value line of an allocation:
//
//	value: <ID NAME[{I}][ (phi)] @C> (size=S,offset=O): SHAPE
func (r *xlaReader) value(c *cursor) {
	if !strings.HasPrefix(c.rest(), " value: ") {
		c.skipBlanks()
		c.errorf(c.i, `expected " value:" or allocation, found %s`, c.found())
		return
	}
	if !r.inAlloc {
		c.errorf(c.i+1, "value before the first allocation")
		return
	}
	c.lit(" value: ")
	v := r.label(c)
	v.Line = c.ln
	c.lit(" (size=")
	v.Size = c.uint("size")
	c.lit(",offset=")
	v.Offset = c.uint("offset")
	c.lit("): ")
	if c.bad {
		return
	}
	v.Shape = c.rest()
	r.shape(c, v.Shape)
	if c.bad || len(r.x.Allocations) != r.allocs {
		return // the allocation's header was bad: reported already
	}
	al := &r.x.Allocations[len(r.x.Allocations)-1]
	al.Values = append(al.Values, v)
}

// label reads HloValue::ToShortString: <ID NAME[{I}][ (phi)] @C>.
func (r *xlaReader) label(c *cursor) XLAValue {
	var v XLAValue
	c.lit("<")
	v.ID = c.int("value id")
	c.lit(" ")
	v.Name = c.name()
	v.Index = hlo.ShapeIndex{}
	if c.peek('{') {
		v.Index, v.IndexShown = c.index(), true
	}
	if !c.bad && strings.HasPrefix(c.rest(), " (phi)") {
		c.i += len(" (phi)")
		v.Phi = true
	}
	c.lit(" @")
	v.Color = c.uint("color")
	c.lit(">")
	return v
}

// total reads "Total bytes used: N[ (HUMAN)]".
func (r *xlaReader) total(c *cursor) {
	c.lit("Total bytes used: ")
	r.x.TotalBytes = c.uint("byte count")
	if c.bad || c.rest() == "" {
		return
	}
	if rest := c.rest(); !strings.HasPrefix(rest, " (") || !strings.HasSuffix(rest, ")") {
		c.errorf(c.i, "expected end of line or \" (size)\", found %s", c.found())
	}
}

// usedValue reads a line of the Used values section (HloValue::ToString):
//
//	<ID NAME[{I}][ (phi)] @C>
//	 positions:
//	  NAME[ {I}]
//	 uses:
//	  NAME, operand K[ {I}]
//	 from instruction: INSTRUCTION
func (r *xlaReader) usedValue(c *cursor) {
	s := c.rest()
	switch {
	case strings.HasPrefix(s, "<"):
		pos := hlo.Pos{Line: int32(c.ln), Col: int32(c.i + 1)}
		if r.entry != entryDone {
			// Reported here, where the entry turns out cut short; the
			// new entry is read as usual.
			r.errorf(pos, "expected %s, found %s", r.entryNext(), c.found())
			r.entry = entryDone
		}
		r.label(c)
		c.end()
		if !c.bad {
			r.entry, r.entryPos = entryLabel, pos
			r.x.UsedValues++
		}
	case s == " positions:":
		if r.entry != entryLabel {
			c.errorf(c.i+1, `unexpected "positions:"`)
			return
		}
		r.entry = entryPositions
	case s == " uses:":
		if r.entry != entryPositions {
			c.errorf(c.i+1, `unexpected "uses:"`)
			return
		}
		r.entry = entryUses
	case strings.HasPrefix(s, " from instruction: "):
		if r.entry != entryUses {
			c.errorf(c.i+1, `unexpected "from instruction:"`)
			return
		}
		r.entry = entryDone
	case strings.HasPrefix(s, "  ") && len(s) > 2 && s[2] != ' ':
		c.i += 2
		switch r.entry {
		case entryPositions:
			c.name()
			if !c.bad && c.rest() != "" {
				c.lit(" ")
				c.index()
			}
		case entryUses:
			c.name()
			c.lit(", operand ")
			c.uint("operand number")
			if !c.bad && c.rest() != "" {
				c.lit(" ")
				c.index()
			}
		default:
			c.errorf(c.i, "unexpected %s outside positions and uses", c.found())
			return
		}
		c.end()
	default:
		c.skipBlanks()
		if r.entry == entryDone {
			c.errorf(c.i, "expected used value <ID name @color>, found %s", c.found())
		} else {
			c.errorf(c.i, "expected %s, found %s", r.entryNext(), c.found())
		}
	}
}

// entryNext says what the open Used values entry lacks next.
func (r *xlaReader) entryNext() string {
	switch r.entry {
	case entryLabel:
		return `" positions:"`
	case entryPositions:
		return `position or " uses:"`
	}
	return `use or " from instruction:"`
}

// liveRangeHeader reads "HloLiveRange (max N):".
func (r *xlaReader) liveRangeHeader(c *cursor) {
	r.lrPos = hlo.Pos{Line: int32(c.ln), Col: int32(c.i + 1)}
	lr := &XLALiveRange{PeakTime: -1, Sequence: []string{}, Ranges: []XLARange{}}
	r.x.LiveRange = lr
	c.lit("HloLiveRange (max ")
	lr.Max = c.int("schedule end")
	c.lit("):")
	c.end()
	if c.bad {
		r.lrPos = hlo.Pos{} // one error for the block is enough
	}
}

// liveRange reads a line of the HloLiveRange block:
//
//	InstructionSequence:
//	  T:NAME
//	BufferLiveRange:
//	  NAME{I}:START-END
//	Live ranges at T (peak):
//	  NAME[{I}]: N bytes[ (cumulative: C bytes)]
//	Stack trace breakdown for peak usage: N bytes
//	  TREE
func (r *xlaReader) liveRange(c *cursor) {
	lr := r.x.LiveRange
	s := c.rest()
	sub, step := "", strings.HasPrefix(s, "    ")
	if !step && strings.HasPrefix(s, "  ") && s[2] != ' ' {
		sub = s[2:]
	}
	next := -1
	switch {
	case sub == "InstructionSequence:":
		next = lrSequence
	case sub == "BufferLiveRange:":
		next = lrRanges
	case strings.HasPrefix(sub, "Live ranges at "):
		next = lrPeak
	case strings.HasPrefix(sub, "Stack trace breakdown for peak usage:"):
		next = lrStack
	case step:
	default:
		c.skipBlanks()
		c.errorf(c.i, "unexpected %s in the HloLiveRange block", c.found())
		return
	}
	if next >= 0 {
		c.i += 2
		switch {
		case next == r.lr:
			c.errorf(c.i, "second %q", lrTitles[next])
			return
		case next < r.lr:
			c.errorf(c.i, "%q after %q", lrTitles[next], lrTitles[r.lr])
			return
		case next > r.lr+1:
			// Reported, and read as if it came in order, so that the
			// lines under it read as what they are.
			c.r.errorf(hlo.Pos{Line: int32(c.ln), Col: int32(c.i + 1)}, "expected %q, found %q", lrTitles[r.lr+1], lrTitles[next])
		}
		r.lr = next
		switch next {
		case lrPeak:
			c.lit("Live ranges at ")
			lr.PeakTime = c.int("time")
			c.lit(" (peak):")
			c.end()
		case lrStack:
			c.lit("Stack trace breakdown for peak usage: ")
			c.groupedUint()
			c.lit(" bytes")
			c.end()
		}
		return
	}
	c.i += 4
	switch r.lr {
	case lrHeader:
		c.errorf(c.i, `expected "InstructionSequence:", found %s`, c.found())
	case lrSequence:
		at := c.i
		t := c.int("time")
		if !c.bad && t != len(lr.Sequence) {
			c.errorf(at, "time %d, want %d", t, len(lr.Sequence))
		}
		c.lit(":")
		name := c.name()
		c.end()
		if !c.bad {
			lr.Sequence = append(lr.Sequence, name)
		}
	case lrRanges:
		var rg XLARange
		rg.Name = c.name()
		rg.Index = c.index()
		c.lit(":")
		rg.Start = c.int("start")
		c.lit("-")
		rg.End = c.int("end")
		c.end()
		if !c.bad {
			lr.Ranges = append(lr.Ranges, rg)
		}
	case lrPeak:
		p := XLAPeakValue{Cumulative: -1}
		p.Name = c.name()
		if c.peek('{') {
			p.Index = c.index()
		}
		c.lit(": ")
		p.Bytes = c.uint("byte count")
		c.lit(" bytes")
		if !c.bad && c.rest() != "" {
			c.lit(" (cumulative: ")
			p.Cumulative = c.uint("byte count")
			c.lit(" bytes)")
		}
		c.end()
		if !c.bad {
			lr.Peak = append(lr.Peak, p)
		}
	case lrStack:
		r.stackLine(c)
	}
}

// stackLine checks a line of the stack trace breakdown, a diagnostic the
// reader does not keep: tree drawing, a name (an op name, which may hold
// any character) and
//
//	(P%, total: N bytes, current: N bytes, remaining: N bytes)
func (r *xlaReader) stackLine(c *cursor) {
	s := c.rest()
	for cut := true; cut; {
		cut = false
		for _, p := range []string{" ", "│", "├── ", "└── "} {
			if strings.HasPrefix(s, p) {
				s, cut = s[len(p):], true
			}
		}
	}
	c.i = len(c.s) - len(s)
	open := strings.LastIndex(s, " (")
	if open <= 0 {
		c.errorf(c.i, "expected stack frame NAME (P%%, total: N bytes, ...), found %s", c.found())
		return
	}
	c.i += open + 2
	pct := strings.IndexByte(c.rest(), '%')
	if pct <= 0 || strings.ContainsAny(c.rest()[:pct], " ,()") {
		c.errorf(c.i, "expected percentage, found %s", c.found())
		return
	}
	c.i += pct + 1
	for _, field := range []string{", total: ", ", current: ", ", remaining: "} {
		c.lit(field)
		c.groupedUint()
		c.lit(" bytes")
	}
	c.lit(")")
	c.end()
}

// cursor reads one line; after the first error (c.bad) every method does
// nothing, so that a line reports one error, where it begins.
type cursor struct {
	r   *xlaReader
	ln  int
	s   string
	i   int
	bad bool
}

func (c *cursor) rest() string { return c.s[c.i:] }

func (c *cursor) errorf(at int, format string, args ...any) {
	if c.bad {
		return
	}
	c.bad = true
	c.r.errorf(hlo.Pos{Line: int32(c.ln), Col: int32(at + 1)}, format, args...)
}

// found describes the token at the cursor for an error message.
// A blank shows with the token after it, " x", since a blank alone says
// little.
func (c *cursor) found() string {
	s := c.rest()
	if s == "" {
		return "end of line"
	}
	n := 0
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	start := n
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	if n == start {
		for n < len(s) && s[n] != ' ' && s[n] != '\t' && !isNameByte(s[n]) && n-start < 8 {
			n++
		}
	}
	if n > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s[:n])
}

func (c *cursor) skipBlanks() {
	for c.i < len(c.s) && (c.s[c.i] == ' ' || c.s[c.i] == '\t') {
		c.i++
	}
}

func (c *cursor) peek(b byte) bool { return !c.bad && c.i < len(c.s) && c.s[c.i] == b }

// lit reads the literal text s.
func (c *cursor) lit(s string) {
	if c.bad {
		return
	}
	if !strings.HasPrefix(c.rest(), s) {
		c.errorf(c.i, "expected %q, found %s", s, c.found())
		return
	}
	c.i += len(s)
}

// end requires the end of the line.
func (c *cursor) end() {
	if !c.bad && c.i < len(c.s) {
		c.errorf(c.i, "unexpected %s at end of line", c.found())
	}
}

// uint reads a decimal number without sign.
func (c *cursor) uint(what string) int64 {
	if c.bad {
		return 0
	}
	n := 0
	for c.i+n < len(c.s) && c.s[c.i+n] >= '0' && c.s[c.i+n] <= '9' {
		n++
	}
	if n == 0 {
		c.errorf(c.i, "expected %s, found %s", what, c.found())
		return 0
	}
	v, err := strconv.ParseInt(c.s[c.i:c.i+n], 10, 64)
	if err != nil {
		c.errorf(c.i, "%s %s out of range", what, c.s[c.i:c.i+n])
		return 0
	}
	c.i += n
	return v
}

// int is uint for what the API holds as int.
func (c *cursor) int(what string) int {
	at := c.i
	v := c.uint(what)
	if v > math.MaxInt32 {
		c.errorf(at, "%s %d out of range", what, v)
		return 0
	}
	return int(v)
}

// groupedUint reads a number with its digits grouped by spaces in threes,
// as the stack trace breakdown prints them: "11 990 649".
func (c *cursor) groupedUint() {
	if c.bad {
		return
	}
	c.uint("byte count")
	for !c.bad && len(c.s)-c.i >= 4 && c.s[c.i] == ' ' && isDigits(c.s[c.i+1:c.i+4]) {
		c.i += 4
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// name reads an instruction name: the bytes an HLO name may hold.
func (c *cursor) name() string {
	if c.bad {
		return ""
	}
	n := 0
	for c.i+n < len(c.s) && isNameByte(c.s[c.i+n]) {
		n++
	}
	if n == 0 {
		c.errorf(c.i, "expected instruction name, found %s", c.found())
		return ""
	}
	s := c.s[c.i : c.i+n]
	c.i += n
	return s
}

// word reads a run of lower-case letters and '-', an attribute keyword.
func (c *cursor) word() string {
	n := 0
	for c.i+n < len(c.s) && (c.s[c.i+n] >= 'a' && c.s[c.i+n] <= 'z' || c.s[c.i+n] == '-') {
		n++
	}
	s := c.s[c.i : c.i+n]
	c.i += n
	return s
}

// index reads a shape index: {} or {1,0}.
func (c *cursor) index() hlo.ShapeIndex {
	c.lit("{")
	ix := hlo.ShapeIndex{}
	for !c.bad && !c.peek('}') {
		if len(ix) > 0 {
			c.lit(",")
		}
		ix = append(ix, c.uint("shape index"))
	}
	c.lit("}")
	if c.bad {
		return nil
	}
	return ix
}

// isNameByte: the bytes of an HLO instruction name, as the hlo lexer's words.
func isNameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		b == '_' || b == '.' || b == '-' || b == '$' || b == '+'
}
