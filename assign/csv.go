package assign

// MiniMalloc's CSV format (github.com/google/minimalloc): a header row naming
// the columns, then one buffer per row. Columns are found by name, in any
// order: id, lower, upper and size are required; alignment and offset are
// optional. Lifetimes are half-open, [lower, upper), as in MiniMalloc: a
// buffer whose upper is 3 and one whose lower is 3 may share bytes. A
// non-empty offset in the input fixes that buffer there. The solution written
// back has the same rows plus the offset column.

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ParseError is an error at a line of an input file.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

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

// ReadCSV reads a problem in MiniMalloc's CSV form from r; name is the file
// name used in error messages. Errors are reported as an ErrorList of
// "FILE:LINE: message" entries: a missing column, a field that is not an
// integer, a negative size or alignment, an upper before its lower, a
// duplicate id, a fixed offset that is negative or misaligned.
func ReadCSV(r io.Reader, name string) (*Problem, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	var errs ErrorList
	fail := func(line int, format string, args ...any) {
		errs = append(errs, &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	header, err := cr.Read()
	if err == io.EOF {
		return nil, ErrorList{{File: name, Line: 1, Msg: "empty file: want a header row id,lower,upper,size"}}
	}
	if err != nil {
		return nil, csvReadError(name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[h]; dup {
			fail(1, "duplicate column %q", h)
		}
		col[h] = i
	}
	required := []string{"id", "lower", "upper", "size"}
	for _, c := range required {
		if _, ok := col[c]; !ok {
			fail(1, "missing column %q", c)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	names := append([]string(nil), header...)
	for i := range names {
		names[i] = strings.ToLower(strings.TrimSpace(names[i]))
	}
	alignCol, hasAlign := col["alignment"]
	offCol, hasOff := col["offset"]
	p := &Problem{}
	var lines []int32 // line of each buffer read
	for len(errs) < maxErrors {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, csvReadError(name, err)...)
			break
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < len(header) {
			fail(line, "missing column %q", names[len(rec)])
			continue
		}
		if len(rec) > len(header) {
			fail(line, "%d fields, the header has %d", len(rec), len(header))
			continue
		}
		bad := false
		num := func(c string) int64 {
			s := strings.TrimSpace(rec[col[c]])
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				if !bad {
					fail(line, "%s: %q is not an integer", c, s)
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
		switch {
		case b.ID == "":
			fail(line, "empty id")
		case b.Size < 0:
			fail(line, "negative size %d", b.Size)
		case b.End < b.Start:
			fail(line, "upper %d is before lower %d", b.End, b.Start)
		case b.Align < 0:
			fail(line, "negative alignment %d", b.Align)
		case b.Fixed && b.Offset < 0:
			fail(line, "negative offset %d", b.Offset)
		case b.Fixed && b.Align > 1 && b.Offset%b.Align != 0:
			fail(line, "offset %d is not a multiple of the alignment %d", b.Offset, b.Align)
		case b.Size > maxBytes || b.Align > maxBytes || b.Offset > maxBytes:
			fail(line, "size, alignment or offset above %d", int64(maxBytes))
		default:
			p.Buffers = append(p.Buffers, b)
			lines = append(lines, int32(line))
		}
	}
	// Duplicate ids: sort the buffers by id and compare neighbours, which
	// needs far less memory than a map on files of millions of rows.
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
	for k := 1; k < len(order); k++ {
		b := order[k]
		if p.Buffers[order[k-1]].ID != p.Buffers[b].ID {
			continue
		}
		errs = append(errs, &ParseError{File: name, Line: int(lines[b]),
			Msg: fmt.Sprintf("duplicate id %q (first on line %d)", p.Buffers[b].ID, lines[firstOf(order, k, p)])})
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(x, y *ParseError) int { return x.Line - y.Line })
		if len(errs) > maxErrors {
			errs = errs[:maxErrors]
		}
		return nil, errs
	}
	if err := p.Validate(); err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) && ie.Buffer >= 0 {
			return nil, ErrorList{{File: name, Line: int(lines[ie.Buffer]), Msg: ie.Msg}}
		}
		return nil, ErrorList{{File: name, Line: 1, Msg: err.Error()}}
	}
	return p, nil
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

func csvReadError(name string, err error) ErrorList {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return ErrorList{{File: name, Line: pe.Line, Msg: pe.Err.Error()}}
	}
	return ErrorList{{File: name, Line: 0, Msg: err.Error()}}
}

// WriteCSV writes the packing pk of p in MiniMalloc's CSV form: the columns
// id,lower,upper,size (and alignment, when any buffer has one), then offset.
func WriteCSV(w io.Writer, p *Problem, pk Packing) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	align := false
	for i := range p.Buffers {
		if p.Buffers[i].Align > 1 {
			align = true
			break
		}
	}
	if align {
		bw.WriteString("id,lower,upper,size,alignment,offset\n")
	} else {
		bw.WriteString("id,lower,upper,size,offset\n")
	}
	var buf []byte
	for i := range p.Buffers {
		b := &p.Buffers[i]
		buf = buf[:0]
		buf = appendCSVField(buf, b.ID)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, b.Start, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, b.End, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, b.Size, 10)
		if align {
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, max(b.Align, 1), 10)
		}
		buf = append(buf, ',')
		if i < len(pk.Offsets) {
			buf = strconv.AppendInt(buf, pk.Offsets[i], 10)
		}
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
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
