package hlo

import "strings"

// detach copies the strings of mods that may share memory with the text
// they were parsed from (names, attributes kept verbatim, metadata,
// literal texts, layout extras) into one new string, so that the text
// itself can be freed. ParseFile and ParseReader read the text
// themselves and hand it to no one: without this the modules' names would
// keep all of it alive, 41 MB for a chain of 10^6 instructions of which
// the names are 7 MB. ParseString leaves its modules sharing memory with
// the caller's src, as documented.
func detach(mods []*Module) {
	var d detacher
	for _, m := range mods {
		d.module(m)
	}
	d.finish()
}

// detacher collects the string fields to copy; finish copies them.
type detacher struct {
	fields  []*string
	size    int
	layouts map[*Layout]bool
	tuples  map[*Shape]bool // by first element: the parser shares shapes
	meta    map[*Metadata]bool
	lits    map[*Literal]bool
}

func (d *detacher) add(s *string) {
	if *s != "" {
		d.fields = append(d.fields, s)
		d.size += len(*s)
	}
}

func (d *detacher) attrs(as []Attr) {
	for i := range as {
		d.add(&as[i].Name)
		d.add(&as[i].Value)
	}
}

func (d *detacher) module(m *Module) {
	d.add(&m.Name)
	d.attrs(m.Attrs)
	if sf := m.StackFrames; sf != nil {
		for i := range sf.FileNames {
			d.add(&sf.FileNames[i].Text)
		}
		for i := range sf.FunctionNames {
			d.add(&sf.FunctionNames[i].Text)
		}
	}
	for _, c := range m.Computations {
		d.add(&c.Name)
		d.add(&c.ExecutionThread)
		for _, in := range c.Instructions {
			d.instruction(in)
		}
	}
}

func (d *detacher) instruction(in *Instruction) {
	d.add(&in.Name)
	d.shape(&in.Shape)
	d.attrs(in.Attrs)
	if md := in.Metadata; md != nil && !d.meta[md] {
		if d.meta == nil {
			d.meta = map[*Metadata]bool{}
		}
		d.meta[md] = true
		d.add(&md.OpType)
		d.add(&md.OpName)
		d.add(&md.SourceFile)
		d.add(&md.DeduplicatedName)
		d.add(&md.SchedulingName)
		d.attrs(md.Rest)
	}
	if e := in.Ext; e != nil {
		d.add(&e.UnknownOpcode)
		d.add((*string)(&e.FusionKind))
		d.add(&e.CustomCallTarget)
		d.add(&e.BackendConfig)
		if l := e.Literal; l != nil && !d.lits[l] {
			if d.lits == nil {
				d.lits = map[*Literal]bool{}
			}
			d.lits[l] = true
			d.add(&l.Text)
		}
	}
}

func (d *detacher) shape(s *Shape) {
	if l := s.Layout; l != nil && !d.layouts[l] {
		if d.layouts == nil {
			d.layouts = map[*Layout]bool{}
		}
		d.layouts[l] = true
		d.add(&l.DimLevelTypes)
		for i := range l.Rest {
			d.add(&l.Rest[i])
		}
	}
	if len(s.Tuple) == 0 || d.tuples[&s.Tuple[0]] {
		return
	}
	if d.tuples == nil {
		d.tuples = map[*Shape]bool{}
	}
	d.tuples[&s.Tuple[0]] = true
	for i := range s.Tuple {
		d.shape(&s.Tuple[i])
	}
}

func (d *detacher) finish() {
	var b strings.Builder
	b.Grow(d.size)
	for _, s := range d.fields {
		b.WriteString(*s)
	}
	all := b.String()
	off := 0
	for _, s := range d.fields {
		n := len(*s)
		*s = all[off : off+n]
		off += n
	}
}
