package hlo

import "fmt"

// SourceLocation returns where in the user's program in was written:
// metadata's source_file and source_line, or else the frame its
// stack_frame_id names in the module's stack-frame tables (JAX's dumps).
// ok is false when neither says.
func (m *Module) SourceLocation(in *Instruction) (file string, line int64, ok bool) {
	if in == nil || in.Metadata == nil {
		return "", 0, false
	}
	md := in.Metadata
	if md.SourceFile != "" {
		return md.SourceFile, md.SourceLine, true
	}
	if m == nil || m.StackFrames == nil || md.StackFrameID <= 0 {
		return "", 0, false
	}
	sf := m.StackFrames
	frame, found := findByID(sf.StackFrames, md.StackFrameID, func(f StackFrame) int64 { return f.ID })
	if !found {
		return "", 0, false
	}
	loc, found := findByID(sf.FileLocations, frame.FileLocationID, func(l FileLocation) int64 { return l.ID })
	if !found {
		return "", 0, false
	}
	name, found := findByID(sf.FileNames, loc.FileNameID, func(s IndexedString) int64 { return s.ID })
	if !found {
		return "", 0, false
	}
	return name.Text, loc.Line, true
}

// Source is SourceLocation as "file:line" ("file" without a line), or ""
// when unknown.
func (m *Module) Source(in *Instruction) string {
	file, line, ok := m.SourceLocation(in)
	switch {
	case !ok:
		return ""
	case line <= 0:
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// findByID finds the entry whose ID is id: the tables are numbered from 1
// in order, so entry id-1 is tried first, then every entry.
func findByID[T any](xs []T, id int64, idOf func(T) int64) (T, bool) {
	if id >= 1 && id <= int64(len(xs)) && idOf(xs[id-1]) == id {
		return xs[id-1], true
	}
	for _, x := range xs {
		if idOf(x) == id {
			return x, true
		}
	}
	var zero T
	return zero, false
}

// ParseShape reads one shape as HLO text writes it ("f32[8,128]{1,0}",
// "(s32[], bf16[4])"); filename names the text in errors, which carry
// positions as the parser's do.
func ParseShape(filename, text string) (s Shape, err error) {
	p := &parser{file: filename, src: text, lx: newLexer(text), shapes: make(map[string]Shape)}
	p.tok = p.lx.next()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			s, err = Shape{}, p.errs.Err()
		}
	}()
	s = p.parseShape()
	if t := p.peek(); t.kind != tokEOF {
		p.errorf(t.pos(), "unexpected %s after the shape", p.lx.text(*t))
	}
	if err := p.errs.Err(); err != nil {
		return Shape{}, err
	}
	return s, nil
}
