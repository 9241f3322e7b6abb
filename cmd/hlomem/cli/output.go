package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/hlomem/hlomem/hlo"
)

// A file may hold several modules (split by "// -----"); liveness and
// assign print one document for the whole file in every format, so that
// the output of any input parses the same way:
//
//   - xla: each module's dump, with a "// -----" line between modules, as
//     the HLO text itself separates them;
//   - report: each module's report; with more than one module, each is
//     headed by a line "==== module NAME (I of N) ====";
//   - json: always one JSON array with one object per module, in file
//     order (each object names its module in "module"), also for a
//     single module;
//   - csv: one header row and a leading module column (assign adds the
//     heap's color), so the rows of every module form one table.
//
// moduleOutput lays the modules' outputs out that way; the commands write
// each module's part to the writer that next returns.
type moduleOutput struct {
	out    *spool // the command's output
	layout layout
	n      int       // modules in the file
	i      int       // modules begun
	part   *indenter // jsonArray: the current module's document
}

// indenter copies a module's JSON document into the array, each line one
// level deeper. The documents come from our own writers, indented by two
// spaces without a prefix, so the new level is two spaces after each line
// break (what json.Indent would give, without parsing megabytes again);
// the document's final line break is left to the array.
type indenter struct {
	out     *spool
	first   byte // the document's first byte
	pending bool // a line break not yet written
}

func (d *indenter) Write(p []byte) (int, error) {
	n := len(p)
	if d.first == 0 && n > 0 {
		d.first = p[0]
	}
	for len(p) > 0 {
		if d.pending {
			d.out.WriteString("\n  ")
			d.pending = false
		}
		k := bytes.IndexByte(p, '\n')
		if k < 0 {
			d.out.Write(p)
			break
		}
		d.out.Write(p[:k])
		d.pending = true
		p = p[k+1:]
	}
	return n, nil
}

type layout uint8

const (
	splitMarker layout = iota // "// -----" between modules
	headed                    // a heading per module when there are several
	jsonArray                 // one JSON array of per-module documents
	table                     // the command writes rows into one table itself
)

func newModuleOutput(out *spool, l layout, n int) *moduleOutput {
	return &moduleOutput{out: out, layout: l, n: n}
}

// next starts the output of module m and returns where to write it.
func (o *moduleOutput) next(m *hlo.Module) (io.Writer, error) {
	if err := o.flushPart(); err != nil {
		return nil, err
	}
	o.i++
	switch o.layout {
	case splitMarker:
		if o.i > 1 {
			o.out.WriteString("\n// -----\n\n")
		}
	case headed:
		if o.n > 1 {
			if o.i > 1 {
				o.out.WriteByte('\n')
			}
			fmt.Fprintf(o.out, "==== module %s (%d of %d) ====\n\n", m.Name, o.i, o.n)
		}
	case jsonArray:
		if o.i == 1 {
			o.out.WriteString("[\n  ")
		} else {
			o.out.WriteString(",\n  ")
		}
		o.part = &indenter{out: o.out}
		return o.part, nil
	}
	return o.out, nil
}

// flushPart ends the current module's JSON document.
func (o *moduleOutput) flushPart() error {
	if o.layout != jsonArray || o.part == nil {
		return nil
	}
	if o.part.first != '{' {
		return fmt.Errorf("internal error: module %d: not a JSON object", o.i)
	}
	o.part = nil
	return nil
}

// finish completes the document: for JSON, the end of the array.
func (o *moduleOutput) finish() error {
	if o.layout != jsonArray {
		return nil
	}
	if err := o.flushPart(); err != nil {
		return err
	}
	if o.i == 0 {
		o.out.WriteString("[]\n")
		return nil
	}
	o.out.WriteString("\n]\n")
	return nil
}
