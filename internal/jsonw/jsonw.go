// Package jsonw writes indented JSON documents quickly, without
// reflection, byte for byte as encoding/json's Encoder with
// SetIndent("", "  ") would write the same values (HTML characters
// escaped, a newline after the document).
//
// The large outputs of hlomem (an allocation per buffer, every value of a
// module) spend most of their time in encoding/json's reflection and
// indentation otherwise.
package jsonw

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"strconv"
)

// Writer writes one JSON document. Errors stick: after the first, every
// call does nothing and Close returns it.
type Writer struct {
	w     *bufio.Writer
	depth int
	// first is true right after an opening bracket: the next element
	// needs no comma.
	first bool
	// key is true right after a key: the value follows on the same line.
	key bool
	num []byte
}

// New returns a Writer on w.
func New(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), first: true}
}

// Err flushes what is written so far and returns the first error, so a
// long loop can stop once the output has failed (an interrupted command's
// output refuses every write).
func (j *Writer) Err() error { return j.w.Flush() }

// Close ends the document with a newline and flushes it.
func (j *Writer) Close() error {
	j.w.WriteByte('\n')
	return j.w.Flush()
}

// element starts a value: a comma after a sibling, the newline and
// indentation inside a container, nothing after a key.
func (j *Writer) element() {
	if j.key {
		j.key = false
		return
	}
	if j.depth > 0 {
		if !j.first {
			j.w.WriteByte(',')
		}
		j.w.WriteByte('\n')
		j.indent()
	}
	j.first = false
}

func (j *Writer) indent() {
	for range j.depth {
		j.w.WriteString("  ")
	}
}

func (j *Writer) open(c byte) {
	j.element()
	j.w.WriteByte(c)
	j.depth++
	j.first = true
}

func (j *Writer) close(c byte) {
	j.depth--
	if !j.first {
		j.w.WriteByte('\n')
		j.indent()
	}
	j.first = false
	j.w.WriteByte(c)
}

// BeginObject and EndObject bracket an object.
func (j *Writer) BeginObject() { j.open('{') }
func (j *Writer) EndObject()   { j.close('}') }

// BeginArray and EndArray bracket an array.
func (j *Writer) BeginArray() { j.open('[') }
func (j *Writer) EndArray()   { j.close(']') }

// Key writes an object key; its value comes next.
func (j *Writer) Key(k string) {
	j.element()
	j.quote(k)
	j.w.WriteString(": ")
	j.key = true
}

// String writes a string value.
func (j *Writer) String(s string) {
	j.element()
	j.quote(s)
}

// Int writes an integer value.
func (j *Writer) Int(n int64) {
	j.element()
	j.num = strconv.AppendInt(j.num[:0], n, 10)
	j.w.Write(j.num)
}

// Float writes a finite number in the shortest form that reads back the
// same (strconv 'g'); NaN and infinities, which JSON lacks, are written as
// null.
func (j *Writer) Float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		j.Null()
		return
	}
	j.element()
	j.num = strconv.AppendFloat(j.num[:0], f, 'g', -1, 64)
	j.w.Write(j.num)
}

// Bool writes true or false.
func (j *Writer) Bool(b bool) {
	j.element()
	if b {
		j.w.WriteString("true")
	} else {
		j.w.WriteString("false")
	}
}

// Null writes null.
func (j *Writer) Null() {
	j.element()
	j.w.WriteString("null")
}

// Ints writes an array of integers.
func (j *Writer) Ints(ns []int64) {
	j.BeginArray()
	for _, n := range ns {
		j.Int(n)
	}
	j.EndArray()
}

// quote writes s as a JSON string. Plain printable ASCII without the
// characters encoding/json escapes is written as it is; anything else
// goes through encoding/json, so the escapes are its own.
func (j *Writer) quote(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			j.w.Write(b)
			return
		}
	}
	j.w.WriteByte('"')
	j.w.WriteString(s)
	j.w.WriteByte('"')
}
