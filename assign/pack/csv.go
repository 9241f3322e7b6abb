package pack

// MiniMalloc's CSV format (github.com/google/minimalloc): a header row naming
// the columns, then one buffer per row. Columns are found by name, in any
// order: id, lower, upper and size are required; alignment and offset are
// optional. Lifetimes are half-open, [lower, upper), as in MiniMalloc: a
// buffer whose upper is 3 and one whose lower is 3 may share bytes. A
// non-empty offset in the input fixes that buffer there. The solution written
// back has the same rows plus the offset column.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ParseError is an error at a line and column of an input file. Col is
// the 1-based byte column of the offending field, 0 when the error is
// about a whole line; Line is 0 when the error is about the whole file.
type ParseError struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *ParseError) Error() string {
	switch {
	case e.Line <= 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Col <= 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// ErrorList is a list of input errors in line order.
type ErrorList []*ParseError

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// maxErrors is how many input errors ReadCSV collects before it stops.
const maxErrors = 10

// MaxCSVSize is the most ReadCSV reads, 1 GiB; MaxCSVLine bounds one line,
// 1 MiB. A row of MiniMalloc CSV is a few dozen bytes and the largest
// problem of the corpus is a few megabytes, so both are far above real
// inputs; they make /dev/zero or an endless pipe an error instead of a
// read without end.
const (
	MaxCSVSize = 1 << 30
	MaxCSVLine = 1 << 20
)

// csvSizeLimit is MaxCSVSize; tests lower it.
var csvSizeLimit int64 = MaxCSVSize

// CSVColumns says which optional columns a MiniMalloc CSV file has.
type CSVColumns struct {
	Alignment bool
	Offset    bool
}

// ReadCSV reads a problem in MiniMalloc's CSV form from r; name is the file
// name used in error messages. A UTF-8 byte-order mark at the start is
// skipped. Errors are reported as an ErrorList of "FILE:LINE:COL: message"
// entries, the column being that of the offending field: a missing
// column, a field that is not an integer, a negative size or alignment, an
// upper before its lower, a duplicate id, a fixed offset that is negative
// or misaligned. Reading more than MaxCSVSize bytes, or a line longer than
// MaxCSVLine, is an error.
func ReadCSV(r io.Reader, name string) (*Problem, error) {
	p, _, err := ReadCSVColumns(r, name)
	return p, err
}

// ReadCSVColumns is ReadCSV that also reports which optional columns the
// header names, so that a solution can be written back with the input's
// columns (NewCSVWriter).
func ReadCSVColumns(r io.Reader, name string) (*Problem, CSVColumns, error) {
	br := &boundedReader{r: r}
	in := bufio.NewReaderSize(br, 1<<16)
	if b, _ := in.Peek(len(byteOrderMark)); string(b) == byteOrderMark {
		in.Discard(len(byteOrderMark))
	}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	var errs ErrorList
	fail := func(line, col int, format string, args ...any) {
		errs = append(errs, &ParseError{File: name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
	}
	header, err := cr.Read()
	if err == io.EOF {
		return nil, CSVColumns{}, ErrorList{{File: name, Line: 1, Col: 1, Msg: "empty file: want a header row id,lower,upper,size"}}
	}
	if err != nil {
		return nil, CSVColumns{}, csvReadError(name, br, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[h]; dup {
			line, c := cr.FieldPos(i)
			fail(line, c, "duplicate column %q", h)
		}
		col[h] = i
	}
	required := []string{"id", "lower", "upper", "size"}
	for _, c := range required {
		if _, ok := col[c]; !ok {
			fail(1, 1, "missing column %q", c)
		}
	}
	if len(errs) > 0 {
		return nil, CSVColumns{}, errs
	}
	names := append([]string(nil), header...)
	for i := range names {
		names[i] = strings.ToLower(strings.TrimSpace(names[i]))
	}
	alignCol, hasAlign := col["alignment"]
	offCol, hasOff := col["offset"]
	cols := CSVColumns{Alignment: hasAlign, Offset: hasOff}
	p := &Problem{}
	var lines, idCols []int32 // line and id column of each buffer read
	for len(errs) < maxErrors {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, csvReadError(name, br, err)...)
			break
		}
		pos := func(c string) (int, int) { return cr.FieldPos(col[c]) }
		line, _ := cr.FieldPos(0)
		if len(rec) < len(header) {
			// Point just past the last field, where the missing one
			// should begin.
			l, c := cr.FieldPos(len(rec) - 1)
			fail(l, c+len(rec[len(rec)-1]), "missing column %q", names[len(rec)])
			continue
		}
		if len(rec) > len(header) {
			l, c := cr.FieldPos(len(header))
			fail(l, c, "%d fields, the header has %d", len(rec), len(header))
			continue
		}
		bad := false
		num := func(c string) int64 {
			s := strings.TrimSpace(rec[col[c]])
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				if !bad {
					l, k := pos(c)
					fail(l, k, "%s: %q is not an integer", c, s)
				}
				bad = true
			}
			return v
		}
		b := Buffer{ID: strings.TrimSpace(rec[col["id"]])}
		b.Start = num("lower")
		b.End = num("upper")
		b.Size = num("size")
		if hasAlign && strings.TrimSpace(rec[alignCol]) != "" {
			b.Align = num("alignment")
		}
		if hasOff && strings.TrimSpace(rec[offCol]) != "" {
			b.Fixed = true
			b.Offset = num("offset")
		}
		if bad {
			continue
		}
		if c, msg := badBuffer(b); msg != "" {
			l, k := pos(c)
			fail(l, k, "%s", msg)
			continue
		}
		p.Buffers = append(p.Buffers, b)
		_, c := pos("id")
		lines = append(lines, int32(line))
		idCols = append(idCols, int32(c))
	}
	errs = append(errs, duplicateIDs(name, p, lines, idCols)...)
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(x, y *ParseError) int {
			if x.Line != y.Line {
				return x.Line - y.Line
			}
			return x.Col - y.Col
		})
		if len(errs) > maxErrors {
			errs = errs[:maxErrors]
		}
		return nil, CSVColumns{}, errs
	}
	if err := p.Validate(); err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) && ie.Buffer >= 0 {
			return nil, CSVColumns{}, ErrorList{{File: name, Line: int(lines[ie.Buffer]), Col: int(idCols[ie.Buffer]), Msg: ie.Msg}}
		}
		return nil, CSVColumns{}, ErrorList{{File: name, Msg: err.Error()}}
	}
	return p, cols, nil
}

// badBuffer returns the column and the message of what is wrong with a
// buffer read from a row, or an empty message.
func badBuffer(b Buffer) (col, msg string) {
	switch {
	case b.ID == "":
		return "id", "empty id"
	case b.Size < 0:
		return "size", fmt.Sprintf("negative size %d", b.Size)
	case b.End < b.Start:
		return "upper", fmt.Sprintf("upper %d is before lower %d", b.End, b.Start)
	case b.Align < 0:
		return "alignment", fmt.Sprintf("negative alignment %d", b.Align)
	case b.Fixed && b.Offset < 0:
		return "offset", fmt.Sprintf("negative offset %d", b.Offset)
	case b.Fixed && b.Align > 1 && b.Offset%b.Align != 0:
		return "offset", fmt.Sprintf("offset %d is not a multiple of the alignment %d", b.Offset, b.Align)
	case b.Size > maxBytes:
		return "size", fmt.Sprintf("size %d above %d", b.Size, int64(maxBytes))
	case b.Align > maxBytes:
		return "alignment", fmt.Sprintf("alignment %d above %d", b.Align, int64(maxBytes))
	case b.Offset > maxBytes:
		return "offset", fmt.Sprintf("offset %d above %d", b.Offset, int64(maxBytes))
	}
	return "", ""
}

// duplicateIDs returns an error for every buffer whose id an earlier one
// has, at its row (lines, idCols). It sorts the buffers by id and compares
// neighbours, which needs far less memory than a map on files of millions
// of rows.
func duplicateIDs(name string, p *Problem, lines, idCols []int32) ErrorList {
	order := make([]int32, len(p.Buffers))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(p.Buffers[a].ID, p.Buffers[b].ID); c != 0 {
			return c
		}
		return int(a - b)
	})
	var errs ErrorList
	for k := 1; k < len(order); k++ {
		b := order[k]
		if p.Buffers[order[k-1]].ID != p.Buffers[b].ID {
			continue
		}
		errs = append(errs, &ParseError{File: name, Line: int(lines[b]), Col: int(idCols[b]),
			Msg: fmt.Sprintf("duplicate id %q (first on line %d)", p.Buffers[b].ID, lines[firstOf(order, k, p)])})
	}
	return errs
}

// byteOrderMark is U+FEFF in UTF-8, which some editors write at the start
// of a file.
const byteOrderMark = "\uFEFF"

// boundedReader passes reads through until MaxCSVSize bytes, or a line
// longer than MaxCSVLine, and then fails. It counts lines so that the
// error can name the line.
type boundedReader struct {
	r       io.Reader
	n       int64 // bytes read
	line    int   // 1-based number of the line being read
	lineLen int   // bytes of it read so far
	err     error // the limit error, once hit
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.line == 0 {
		b.line = 1
	}
	n, err := b.r.Read(p)
	for q := p[:n]; ; {
		i := bytes.IndexByte(q, '\n')
		if i < 0 {
			b.lineLen += len(q)
			break
		}
		if b.lineLen+i > MaxCSVLine {
			b.lineLen += i
			break
		}
		b.line++
		b.lineLen = 0
		q = q[i+1:]
	}
	b.n += int64(n)
	switch {
	case b.lineLen > MaxCSVLine:
		b.err = &ParseError{Line: b.line, Msg: fmt.Sprintf("line longer than %d bytes, the most hlomem reads", MaxCSVLine)}
	case b.n > csvSizeLimit:
		b.err = &ParseError{Msg: fmt.Sprintf("input larger than %d bytes, the most hlomem reads", csvSizeLimit)}
	}
	if b.err != nil {
		return 0, b.err
	}
	return n, err
}

// firstOf returns the first buffer, in input order, of the run of equal ids
// that order[k] ends.
func firstOf(order []int32, k int, p *Problem) int32 {
	id := p.Buffers[order[k]].ID
	for k > 0 && p.Buffers[order[k-1]].ID == id {
		k--
	}
	return order[k]
}

func csvReadError(name string, br *boundedReader, err error) ErrorList {
	if br.err != nil {
		e := *br.err.(*ParseError)
		e.File = name
		return ErrorList{&e}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return ErrorList{{File: name, Line: pe.Line, Col: pe.Column, Msg: pe.Err.Error()}}
	}
	return ErrorList{{File: name, Msg: err.Error()}}
}

// WriteCSV writes the packing pk of p in MiniMalloc's CSV form: the columns
// id,lower,upper,size (and alignment, when any buffer has one), then offset.
func WriteCSV(w io.Writer, p *Problem, pk Packing) error {
	cw := NewCSVWriter(w, CSVColumns{Alignment: anyAligned(p)})
	if err := cw.Write(p, pk); err != nil {
		return err
	}
	return cw.Flush()
}

// anyAligned reports whether a buffer of p has an alignment above 1.
func anyAligned(p *Problem) bool {
	for i := range p.Buffers {
		if p.Buffers[i].Align > 1 {
			return true
		}
	}
	return false
}

// CSVWriter writes packings in MiniMalloc's CSV form under one header row,
// so that several problems (the temp heaps of several modules and colors)
// make one CSV file. Its columns are fixed when it is made, whatever the
// rows hold: the lead columns, then id,lower,upper,size, alignment when
// asked for (1 for a buffer without one), and offset. The header is
// written with the first rows, or by Flush when there are none.
type CSVWriter struct {
	bw     *bufio.Writer
	lead   []string
	align  bool
	header bool
	buf    []byte
}

// NewCSVWriter returns a writer of packings to w with the columns cols
// asks for (its Offset is ignored: the offset column is always written)
// and, before id, the named lead columns, whose values each Write gives.
func NewCSVWriter(w io.Writer, cols CSVColumns, lead ...string) *CSVWriter {
	return &CSVWriter{bw: bufio.NewWriterSize(w, 1<<16), lead: lead, align: cols.Alignment}
}

func (cw *CSVWriter) writeHeader() {
	if cw.header {
		return
	}
	cw.header = true
	for _, l := range cw.lead {
		cw.bw.Write(appendCSVField(nil, l))
		cw.bw.WriteByte(',')
	}
	if cw.align {
		cw.bw.WriteString("id,lower,upper,size,alignment,offset\n")
	} else {
		cw.bw.WriteString("id,lower,upper,size,offset\n")
	}
}

// Write writes one row per buffer of p with its offset in pk, each row
// starting with the lead values (one per lead column).
func (cw *CSVWriter) Write(p *Problem, pk Packing, lead ...string) error {
	if len(lead) != len(cw.lead) {
		return fmt.Errorf("pack: %d lead values for the %d lead columns %v", len(lead), len(cw.lead), cw.lead)
	}
	cw.writeHeader()
	var prefix []byte
	for _, l := range lead {
		prefix = appendCSVField(prefix, l)
		prefix = append(prefix, ',')
	}
	buf := cw.buf
	for i := range p.Buffers {
		b := &p.Buffers[i]
		buf = append(buf[:0], prefix...)
		buf = appendCSVField(buf, b.ID)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, b.Start, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, b.End, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, b.Size, 10)
		if cw.align {
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, max(b.Align, 1), 10)
		}
		buf = append(buf, ',')
		if i < len(pk.Offsets) {
			buf = strconv.AppendInt(buf, pk.Offsets[i], 10)
		}
		buf = append(buf, '\n')
		if _, err := cw.bw.Write(buf); err != nil {
			return err
		}
	}
	cw.buf = buf
	return nil
}

// Flush writes the header if no rows were written, and flushes.
func (cw *CSVWriter) Flush() error {
	cw.writeHeader()
	return cw.bw.Flush()
}

// appendCSVField appends s, quoted when CSV requires it.
func appendCSVField(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") && strings.TrimSpace(s) == s {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	dst = append(dst, strings.ReplaceAll(s, `"`, `""`)...)
	return append(dst, '"')
}
