package cli

import (
	"bytes"
	"encoding/json"
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
	out    *bytes.Buffer // the command's output
	layout layout
	n      int               // modules in the file
	i      int               // modules begun
	docs   []json.RawMessage // jsonArray: each module's document
	part   bytes.Buffer      // jsonArray: the current module's document
}

type layout uint8

const (
	splitMarker layout = iota // "// -----" between modules
	headed                    // a heading per module when there are several
	jsonArray                 // one JSON array of per-module documents
	table                     // the command writes rows into one table itself
)

func newModuleOutput(out *bytes.Buffer, l layout, n int) *moduleOutput {
	return &moduleOutput{out: out, layout: l, n: n}
}

// next starts the output of module m and returns where to write it.
func (o *moduleOutput) next(m *hlo.Module) io.Writer {
	o.flushPart()
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
		return &o.part
	}
	return o.out
}

func (o *moduleOutput) flushPart() {
	if o.layout == jsonArray && o.i > 0 {
		o.docs = append(o.docs, bytes.Clone(o.part.Bytes()))
		o.part.Reset()
	}
}

// finish completes the document: for JSON, the array of the modules'
// documents, indented as each of them is.
func (o *moduleOutput) finish() error {
	if o.layout != jsonArray {
		return nil
	}
	o.flushPart()
	if len(o.docs) == 0 {
		o.out.WriteString("[]\n")
		return nil
	}
	o.out.WriteString("[\n")
	for i, d := range o.docs {
		o.out.WriteString("  ")
		if err := json.Indent(o.out, bytes.TrimSpace(d), "  ", "  "); err != nil {
			return fmt.Errorf("internal error: module %d: invalid JSON: %w", i, err)
		}
		if i < len(o.docs)-1 {
			o.out.WriteByte(',')
		}
		o.out.WriteByte('\n')
	}
	o.out.WriteString("]\n")
	return nil
}
