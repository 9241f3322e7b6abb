package hlo

// The parser reads HLO text as XLA prints it, in every form found in real
// dumps and tests:
//
//	hlo_module  ::= ['HloModule' name (',' attribute)*] (table | computation)*
//	computation ::= ['ENTRY'] name [param_list '->' shape] '{' instruction* '}' [',' 'execution_thread=' string]
//	instruction ::= ['ROOT'] name '=' shape opcode '(' operands ')' (',' attribute)*
//	operand     ::= [shape] name ('#' int)* | shape opcode '(' operands ')'
//
// Names may carry a '%' prefix or not. Operands may be preceded by their
// shape. "/*index=N*/" comments are skipped. A file may hold several modules
// separated by "// -----" lines (FileCheck's split-input-file), and a module
// may lack its HloModule header; without ENTRY the last computation is the
// entry, and without ROOT the last instruction is the root. The JAX stack
// frame tables (FileNames, FunctionNames, FileLocations, StackFrames) may
// appear anywhere between computations.
//
// Attributes the IR models are parsed into typed fields; all others are
// kept as their source text (whitespace normalised) so printing loses
// nothing. Syntax errors stop the parse; reference errors (unknown operand,
// unknown computation) are collected, and Parse reports them all, sorted.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse parses every module in src; filename is used in error messages.
// It fails with an ErrorList of positioned errors.
func Parse(filename string, src []byte) ([]*Module, error) {
	return ParseString(filename, string(src))
}

// ParseString is Parse for a string; the modules' names and attribute
// texts share memory with src.
func ParseString(filename, src string) (mods []*Module, err error) {
	return ParseStringContext(context.Background(), filename, src)
}

// ParseStringContext is ParseString that stops, returning ctx's error,
// once ctx is done (checked every few thousand instructions).
func ParseStringContext(ctx context.Context, filename, src string) (mods []*Module, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &parser{ctx: ctx, file: filename, src: src, lx: newLexer(src), shapes: make(map[string]Shape)}
	p.tok = p.lx.next()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			mods, err = nil, p.errs.Err()
			if p.stopped != nil {
				err = p.stopped
			}
		}
	}()
	mods = p.parseFile()
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return mods, nil
}

// ParseModule parses src, which must hold exactly one module.
func ParseModule(filename, src string) (*Module, error) {
	mods, err := ParseString(filename, src)
	if err != nil {
		return nil, err
	}
	if len(mods) != 1 {
		return nil, &Error{File: filename, Msg: fmt.Sprintf("want one HLO module, found %d", len(mods))}
	}
	return mods[0], nil
}

// bailout is the panic value that unwinds the parser after a syntax error.
type bailout struct{}

type parser struct {
	ctx     context.Context
	stopped error // ctx's error, once the parse stopped for it
	polled  int   // instructions parsed since ctx was last checked
	file    string
	src     string
	lx      lexer
	tok     token // the current token
	prev    token // the last consumed token
	errs    ErrorList

	shapes      map[string]Shape // parsed shapes by source text, to share their slices
	shapeHeight int              // tuple height of the shape parseShape read last
	tupleDepth  int              // tuples parseShape is inside
	inlineDepth int              // operand lists parseOperand is inside

	// Per module.
	mod       *Module
	header    bool // the module had an HloModule line
	entries   []*Computation
	comps     map[string]*Computation
	pendCall  []pendingCall
	pendInfer []*Instruction // instructions written without a shape
	sugared   []*Computation // async computations built for short-form starts
	autoName  int

	// insts maps names to instructions for the whole file; lookup only
	// sees those of the computation being parsed (Parent == comp), so the
	// map never needs clearing.
	insts map[string]*Instruction

	// instSlab is where newInstruction takes its next instruction from.
	instSlab     []Instruction
	instSlabSize int // the size of the last slab

	// Per computation.
	comp   *Computation
	pendOp []pendingOperand
	gtes   map[string]*Instruction // compact GTEs by "name#i#j"
}

type pendingCall struct {
	in   *Instruction
	role string
	name string
	pos  Pos
	slot int // index in the role's list
}

type pendingOperand struct {
	in   *Instruction
	slot int // operand index, or -1-k for control predecessor k
	name string
	pos  Pos
	ctrl bool
}

// ---- tokens ----

// peek returns the current token; the parser keeps exactly one token
// lexed ahead.
func (p *parser) peek() *token { return &p.tok }

// peek1 returns the token after the current one, lexing it without
// consuming it (the lexer state is three integers, cheap to save).
func (p *parser) peek1() token {
	save := p.lx
	t := p.lx.next()
	p.lx = save
	return t
}

func (p *parser) next() token {
	p.prev = p.tok
	p.tok = p.lx.next()
	if p.prev.kind == tokError {
		p.fail(p.prev.pos(), "%s", p.lx.text(p.prev))
	}
	return p.prev
}

func (p *parser) got(k tokKind) bool {
	if p.peek().kind == k {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(k tokKind, what string) token {
	t := *p.peek()
	if t.kind == tokError {
		p.next() // reports the lexical error
	}
	if t.kind != k {
		p.fail(t.pos(), "expected %s %s, found %s", tokNames[k], what, p.describe(t))
	}
	return p.next()
}

// expectAfter is expect with a message built from two parts only on failure.
func (p *parser) expectAfter(k tokKind, what, detail string) token {
	if p.tok.kind != k {
		p.expect(k, what+detail)
	}
	return p.next()
}

func (p *parser) describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokWord, tokString:
		return strconv.Quote(clip(p.lx.text(t)))
	case tokName:
		return strconv.Quote("%" + clip(p.lx.text(t)))
	case tokError:
		return clip(p.lx.text(t))
	}
	return "'" + clip(p.lx.text(t)) + "'"
}

// clip shortens input text quoted in an error message to its first 100
// bytes (whole characters) and its length.
func clip(s string) string {
	const keep = 100
	if len(s) <= keep+20 {
		return s
	}
	n := keep
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:n], len(s))
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) fail(pos Pos, format string, args ...any) {
	p.errorf(pos, format, args...)
	panic(bailout{})
}

// pollEvery is how many instructions the parser reads between two looks
// at its context.
const pollEvery = 4096

// poll stops the parse once the context is done.
func (p *parser) poll() {
	if p.polled++; p.polled < pollEvery {
		return
	}
	p.polled = 0
	if err := p.ctx.Err(); err != nil {
		p.stopped = err
		panic(bailout{})
	}
}

// name reads a name, with or without '%'.
func (p *parser) isWord(t token, s string) bool {
	return t.kind == tokWord && p.lx.text(t) == s
}

func (p *parser) name(what string) token {
	t := *p.peek()
	if t.kind != tokName && t.kind != tokWord {
		p.fail(t.pos(), "expected %s, found %s", what, p.describe(t))
	}
	return p.next()
}

func (p *parser) int64Token(what string) int64 {
	t := *p.peek()
	if t.kind != tokWord {
		p.fail(t.pos(), "expected %s, found %s", what, p.describe(t))
	}
	v, err := strconv.ParseInt(p.lx.text(t), 10, 64)
	if err != nil {
		p.fail(t.pos(), "expected %s, found %s", what, p.describe(t))
	}
	p.next()
	return v
}

func isIntText(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	if s[0] == '-' {
		i = 1
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// lookup returns the instruction of the current computation with the
// given name, or nil.
func (p *parser) lookup(name string) *Instruction {
	if in := p.insts[name]; in != nil && in.Parent == p.comp {
		return in
	}
	return nil
}

// ---- file and module ----

func (p *parser) parseFile() []*Module {
	var mods []*Module
	finish := func() {
		if p.mod == nil {
			return
		}
		if m := p.finishModule(); m != nil {
			mods = append(mods, m)
		}
		p.mod = nil
	}
	for {
		t := *p.peek()
		switch {
		case t.kind == tokEOF:
			finish()
			if len(mods) == 0 && len(p.errs) == 0 {
				p.errorf(Pos{1, 1}, "no HLO module in file")
			}
			return mods
		case t.kind == tokSplit:
			p.next()
			finish()
		case p.isWord(t, "HloModule"):
			finish()
			p.startModule(t.pos())
			p.parseHeader()
		case t.kind == tokWord && isTableName(p.lx.text(t)) && p.peek1().kind == tokWord && isIntText(p.lx.text(p.peek1())):
			if p.mod == nil {
				p.startModule(t.pos())
			}
			p.parseTable()
		default:
			if p.mod == nil {
				p.startModule(t.pos())
			}
			p.parseComputation()
		}
	}
}

func (p *parser) startModule(pos Pos) {
	p.mod = &Module{File: p.file, Pos: pos}
	p.header = false
	p.entries = nil
	p.comps = make(map[string]*Computation)
	if p.insts == nil {
		// One map for the whole file, sized from the line count: most
		// lines hold one instruction.
		p.insts = make(map[string]*Instruction, strings.Count(p.src, "\n")+1)
	}
	p.pendCall = p.pendCall[:0]
	p.pendInfer = nil
	p.sugared = nil
	p.autoName = 0
}

func (p *parser) parseHeader() {
	p.next() // HloModule
	p.header = true
	m := p.mod
	m.Name = p.lx.text(p.name("module name"))
	for p.got(tokComma) {
		nt := p.name("module attribute name")
		p.expect(tokEq, "after attribute name")
		switch p.lx.text(nt) {
		case "is_scheduled":
			v := p.name("true or false")
			switch p.lx.text(v) {
			case "true":
				m.IsScheduled = true
			case "false":
			default:
				p.fail(v.pos(), "is_scheduled must be true or false, found %s", p.describe(v))
			}
		case "input_output_alias":
			m.InputOutputAlias = p.parseIOAlias()
		case "buffer_donor":
			m.BufferDonors = p.parseBufferDonors()
		default:
			m.Attrs = append(m.Attrs, Attr{p.lx.text(nt), p.rawValue()})
		}
	}
}

// input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}) }
func (p *parser) parseIOAlias() []IOAlias {
	var out []IOAlias
	p.expect(tokLBrace, "to open input_output_alias")
	for p.peek().kind != tokRBrace {
		var a IOAlias
		a.Output = p.shapeIndex()
		p.expect(tokColon, "after output index")
		p.expect(tokLParen, "to open alias")
		a.Param = p.int64Token("parameter number")
		p.expect(tokComma, "after parameter number")
		a.ParamIndex = p.shapeIndex()
		if p.got(tokComma) {
			k := p.name("alias kind")
			switch p.lx.text(k) {
			case "may-alias":
				a.Kind = MayAlias
			case "must-alias":
				a.Kind = MustAlias
			default:
				p.fail(k.pos(), "alias kind must be may-alias or must-alias, found %s", p.describe(k))
			}
		}
		p.expect(tokRParen, "to close alias")
		out = append(out, a)
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrace, "to close input_output_alias")
	return out
}

// buffer_donor={ (0, {}), (1, {}) }
func (p *parser) parseBufferDonors() []BufferDonor {
	var out []BufferDonor
	p.expect(tokLBrace, "to open buffer_donor")
	for p.peek().kind != tokRBrace {
		var d BufferDonor
		p.expect(tokLParen, "to open buffer donor")
		d.Param = p.int64Token("parameter number")
		p.expect(tokComma, "after parameter number")
		d.ParamIndex = p.shapeIndex()
		p.expect(tokRParen, "to close buffer donor")
		out = append(out, d)
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrace, "to close buffer_donor")
	return out
}

func (p *parser) shapeIndex() ShapeIndex {
	p.expect(tokLBrace, "to open shape index")
	ix := ShapeIndex{}
	for p.peek().kind != tokRBrace {
		ix = append(ix, p.int64Token("shape index"))
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrace, "to close shape index")
	return ix
}

func isTableName(s string) bool {
	return s == "FileNames" || s == "FunctionNames" || s == "FileLocations" || s == "StackFrames"
}

// parseTable reads one of JAX's stack-frame tables.
func (p *parser) parseTable() {
	kw := p.next()
	if p.mod.StackFrames == nil {
		p.mod.StackFrames = &StackFrameIndex{}
	}
	sf := p.mod.StackFrames
	for p.peek().kind == tokWord && isIntText(p.lx.text(p.tok)) {
		id := p.int64Token("table entry id")
		switch p.lx.text(kw) {
		case "FileNames", "FunctionNames":
			s := p.expectAfter(tokString, "in ", p.lx.text(kw))
			e := IndexedString{ID: id, Text: p.unquote(s)}
			if p.lx.text(kw) == "FileNames" {
				sf.FileNames = append(sf.FileNames, e)
			} else {
				sf.FunctionNames = append(sf.FunctionNames, e)
			}
		case "FileLocations":
			fl := FileLocation{ID: id}
			p.keyInts(p.lx.text(kw), map[string]*int64{
				"file_name_id": &fl.FileNameID, "function_name_id": &fl.FunctionNameID,
				"line": &fl.Line, "end_line": &fl.EndLine, "column": &fl.Column, "end_column": &fl.EndColumn,
			})
			sf.FileLocations = append(sf.FileLocations, fl)
		case "StackFrames":
			f := StackFrame{ID: id}
			p.keyInts(p.lx.text(kw), map[string]*int64{"file_location_id": &f.FileLocationID, "parent_frame_id": &f.ParentFrameID})
			sf.StackFrames = append(sf.StackFrames, f)
		}
	}
}

// keyInts reads {key=int key=int ...} into the given fields.
func (p *parser) keyInts(table string, fields map[string]*int64) {
	p.expectAfter(tokLBrace, "to open ", table+" entry")
	for p.peek().kind != tokRBrace {
		k := p.name("field name")
		p.expect(tokEq, "after field name")
		dst, ok := fields[p.lx.text(k)]
		if !ok {
			p.fail(k.pos(), "unknown %s field %q", table, clip(p.lx.text(k)))
		}
		*dst = p.int64Token(p.lx.text(k))
	}
	p.expectAfter(tokRBrace, "to close ", table+" entry")
}

// finishModule resolves called computations, picks the entry and fills
// the derived fields. It returns nil for an empty module.
func (p *parser) finishModule() *Module {
	m := p.mod
	if len(m.Computations) == 0 {
		if p.header {
			p.errorf(m.Pos, "module %s has no computations", m.Name)
		}
		return nil
	}
	for _, pc := range p.pendCall {
		c := p.comps[pc.name]
		if c == nil {
			p.errorf(pc.pos, "unknown computation %%%s in %s=", pc.name, pc.role)
			continue
		}
		x := pc.in.Ext
		switch pc.role {
		case "calls":
			x.Calls[pc.slot] = c
		case "to_apply":
			x.ToApply = c
		case "condition":
			x.Condition = c
		case "body":
			x.Body = c
		case "select":
			x.Select = c
		case "scatter":
			x.Scatter = c
		case "branch_computations", "true_computation", "false_computation":
			x.Branches[pc.slot] = c
		case "called_computations":
			x.CalledComputations[pc.slot] = c
		}
	}
	switch len(p.entries) {
	case 0:
		m.Entry = m.Computations[len(m.Computations)-1]
	case 1:
		m.Entry = p.entries[0]
	default:
		p.errorf(p.entries[1].Pos, "module has more than one ENTRY computation (%s and %s)", p.entries[0].Name, p.entries[1].Name)
		m.Entry = p.entries[0]
	}
	m.Entry.IsEntry = true
	for _, in := range p.pendInfer {
		p.inferShape(in, 0)
	}
	if m.Name == "" {
		m.Name = m.Entry.Name
	}
	p.nameSugared(m)
	m.Renumber()
	return m
}

// ---- computations ----

func (p *parser) parseComputation() {
	isEntry := false
	if p.isWord(p.tok, "ENTRY") {
		p.next()
		isEntry = true
	}
	nt := p.name("computation name")
	c := &Computation{Name: p.lx.text(nt), Module: p.mod, Pos: nt.pos()}
	if p.peek().kind == tokLParen {
		p.skipSignature()
	}
	open := p.expectAfter(tokLBrace, "to open computation ", c.Name)
	p.comp = c
	p.pendOp = p.pendOp[:0]
	p.gtes = nil
	for p.peek().kind != tokRBrace {
		if k := p.peek().kind; k == tokEOF || k == tokSplit {
			p.fail(open.pos(), "computation %s has no closing '}'", c.Name)
		}
		p.poll()
		p.parseInstruction()
	}
	p.next()
	if p.peek().kind == tokComma && p.isWord(p.peek1(), "execution_thread") {
		p.next()
		p.next()
		p.expect(tokEq, "after execution_thread")
		c.ExecutionThread = p.unquote(p.expect(tokString, "execution thread"))
	}
	p.finishComputation()
	if prev, dup := p.comps[c.Name]; dup {
		p.errorf(c.Pos, "duplicate computation name %s (first defined at %d:%d)", c.Name, prev.Pos.Line, prev.Pos.Col)
	} else {
		p.comps[c.Name] = c
	}
	if isEntry {
		p.entries = append(p.entries, c)
	}
	p.mod.Computations = append(p.mod.Computations, c)
	p.comp = nil
}

// skipSignature skips "(p: shape, ...) -> shape": the printer derives the
// signature from the parameters, and the verifier checks those.
func (p *parser) skipSignature() {
	p.expect(tokLParen, "to open parameter list")
	for p.peek().kind != tokRParen {
		p.name("parameter name")
		p.expect(tokColon, "after parameter name")
		p.parseShape()
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRParen, "to close parameter list")
	p.expect(tokArrow, "after parameter list")
	p.parseShape()
}

func (p *parser) finishComputation() {
	c := p.comp
	for _, po := range p.pendOp {
		op := p.lookup(po.name)
		if op == nil {
			if po.ctrl {
				p.errorf(po.pos, "unknown control predecessor %%%s", po.name)
			} else {
				p.errorf(po.pos, "unknown operand %%%s", po.name)
			}
			continue
		}
		if po.ctrl {
			po.in.Ext.ControlPredecessors[po.slot] = op
		} else {
			po.in.Operands[po.slot] = op
		}
	}
	if len(c.Instructions) == 0 {
		p.errorf(c.Pos, "computation %s has no instructions", c.Name)
		return
	}
	if c.Root == nil {
		c.Root = c.Instructions[len(c.Instructions)-1]
	}
	// Implicit GTEs get their shapes once the tuple is known.
	for _, in := range c.Instructions {
		if in.ImplicitGTE && in.Operands[0] != nil {
			sub, ok := in.Operands[0].Shape.Subshape(ShapeIndex{in.TupleIndex})
			if !ok {
				p.errorf(in.Pos, "tuple index %d out of range for %%%s of shape %s", in.TupleIndex, in.Operands[0].Name, in.Operands[0].Shape)
				continue
			}
			in.Shape = sub
		}
	}
	maxParam := int64(-1)
	for _, in := range c.Instructions {
		if in.Opcode == OpParameter && in.ParameterNumber > maxParam {
			maxParam = in.ParameterNumber
		}
	}
	if maxParam >= 0 && maxParam < int64(len(c.Instructions)) {
		c.Params = make([]*Instruction, maxParam+1)
		for _, in := range c.Instructions {
			if in.Opcode == OpParameter && in.ParameterNumber >= 0 && c.Params[in.ParameterNumber] == nil {
				c.Params[in.ParameterNumber] = in
			}
		}
	} else if maxParam >= 0 {
		p.errorf(c.Pos, "computation %s: parameter number %d is out of range for %d instructions", c.Name, maxParam, len(c.Instructions))
	}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			if op == nil {
				return // unresolved operands were reported
			}
		}
		for _, op := range in.ControlPredecessors() {
			if op == nil {
				return
			}
		}
	}
	c.RebuildUsers()
}

// ---- instructions ----

func (p *parser) parseInstruction() {
	isRoot := false
	if p.isWord(p.tok, "ROOT") {
		p.next()
		isRoot = true
	}
	nt := p.name("instruction name")
	p.expectAfter(tokEq, "after instruction name ", p.lx.text(nt))
	// The shape may be left out ("t = tuple(a, b)" in XLA's test inputs);
	// it is inferred once the operands are known.
	var shape Shape
	t := *p.peek()
	infer := t.kind == tokWord && p.peek1().kind == tokLParen
	if !infer {
		shape = p.parseShape()
	}
	in := p.parseOp(p.lx.text(nt), nt.pos(), shape)
	if infer {
		p.pendInfer = append(p.pendInfer, in)
	}
	if in.Opcode == OpAsyncStart && in.ext().AsyncSugar != OpUnknown {
		p.parseAsyncSugarStart(in, infer)
	} else {
		p.parseAttributes(in)
	}
	p.addInstruction(in)
	if isRoot {
		if p.comp.Root != nil {
			p.errorf(nt.pos(), "computation %s has more than one ROOT (%s and %s)", p.comp.Name, p.comp.Root.Name, in.Name)
		} else {
			p.comp.Root = in
		}
	}
}

func (p *parser) addInstruction(in *Instruction) {
	in.Parent = p.comp
	// An ID from the start (finishModule renumbers them in module order).
	in.ID = p.mod.nextID
	p.mod.nextID++
	if prev := p.lookup(in.Name); prev != nil {
		p.errorf(in.Pos, "duplicate instruction name %s (first defined at %d:%d)", in.Name, prev.Pos.Line, prev.Pos.Col)
	} else {
		p.insts[in.Name] = in
	}
	p.comp.Instructions = append(p.comp.Instructions, in)
}

// instSlab is the most instructions the parser allocates at once: 512
// of 272 bytes fill 17 pages of 8 KiB exactly, where one by one each would
// take 288 (the next size class) and be an object of its own for the
// collector. Slabs start at 8 and double, so that a small module takes
// little.
const instSlab = 512

// newInstruction returns a zero instruction from the parser's slab.
func (p *parser) newInstruction() *Instruction {
	if len(p.instSlab) == 0 {
		p.instSlabSize = min(max(2*p.instSlabSize, 8), instSlab)
		p.instSlab = make([]Instruction, p.instSlabSize)
	}
	in := &p.instSlab[0]
	p.instSlab = p.instSlab[1:]
	return in
}

// parseOp reads "opcode(operands)" for an instruction named nt of the given shape.
func (p *parser) parseOp(name string, pos Pos, shape Shape) *Instruction {
	ot := *p.peek()
	if ot.kind != tokWord {
		p.fail(ot.pos(), "expected opcode, found %s", p.describe(ot))
	}
	p.next()
	in := p.newInstruction()
	in.Name, in.Shape, in.Pos = name, shape, pos
	if op, ok := opByName[p.lx.text(ot)]; ok {
		in.Opcode = op
	} else if async, wrapped, ok := asyncSugar(p.lx.text(ot)); ok {
		in.Opcode = async
		in.EnsureExt().AsyncSugar = wrapped
		if !wrappable(wrapped) {
			p.fail(ot.pos(), "%s cannot run asynchronously (%s)", wrapped, p.lx.text(ot))
		}
	} else {
		in.Opcode = OpUnknown
		in.EnsureExt().UnknownOpcode = p.lx.text(ot)
	}
	lp := p.expectAfter(tokLParen, "after opcode ", p.lx.text(ot))
	switch in.Opcode {
	case OpParameter:
		in.ParameterNumber = p.int64Token("parameter number")
		if in.ParameterNumber < 0 {
			p.fail(p.prev.pos(), "parameter number %d is negative", in.ParameterNumber)
		}
		p.expect(tokRParen, "to close parameter")
	case OpConstant:
		in.EnsureExt().Literal = p.parseLiteral(lp, shape)
	default:
		p.parseOperands(in)
	}
	return in
}

func (p *parser) parseLiteral(lp token, shape Shape) *Literal {
	start := p.peek().start
	depth := 0
	for {
		t := *p.peek()
		switch t.kind {
		case tokEOF, tokSplit:
			p.fail(lp.pos(), "unterminated constant literal")
		case tokLParen, tokLBrace, tokLBrack:
			depth++
		case tokRBrace, tokRBrack:
			depth--
		case tokRParen:
			if depth == 0 {
				text := normalizeText(p.src[start:t.start])
				p.next()
				l := &Literal{Text: text}
				if text == "{...}" || text == "..." {
					l.Elided = true
					return l
				}
				if err := parseLiteralValues(l, shape); err != nil {
					p.fail(lp.pos(), "%v", err)
				}
				return l
			}
			depth--
		}
		p.next()
	}
}

func (p *parser) parseOperands(in *Instruction) {
	if p.got(tokRParen) {
		return
	}
	var buf [4]*Instruction
	ops := buf[:0]
	for {
		ops = append(ops, p.parseOperand(in, len(ops)))
		if !p.got(tokComma) {
			break
		}
	}
	p.expectAfter(tokRParen, "to close operand list of ", in.Name)
	in.Operands = append([]*Instruction(nil), ops...)
}

// parseOperand reads one operand of in, which will be operand number slot.
func (p *parser) parseOperand(in *Instruction, slot int) *Instruction {
	t := *p.peek()
	hasShape := false
	var shape Shape
	if t.kind == tokLParen || (t.kind == tokWord && p.peek1().kind == tokLBrack && typeByName[p.lx.text(t)] != InvalidType) {
		shape = p.parseShape()
		hasShape = true
		t = *p.peek()
	}
	if t.kind != tokName && t.kind != tokWord {
		p.fail(t.pos(), "expected operand name, found %s", p.describe(t))
	}
	if hasShape && t.kind == tokWord && p.peek1().kind == tokLParen {
		// A nested instruction: "f32[] parameter(0)". It gets a generated
		// name and is placed before the instruction that uses it.
		if p.inlineDepth >= MaxInlineDepth {
			p.fail(t.pos(), "instructions nested inside operands more than %d deep", MaxInlineDepth)
		}
		p.inlineDepth++
		defer func() { p.inlineDepth-- }()
		p.autoName++
		name := fmt.Sprintf("%s.inline.%d", p.lx.text(t), p.autoName)
		nested := p.parseOp(name, t.pos(), shape)
		p.addInstruction(nested)
		return nested
	}
	if hasShape {
		p.mod.OperandShapes = true
	}
	p.next()
	var op *Instruction
	if found := p.lookup(p.lx.text(t)); found != nil {
		op = found
	} else {
		p.pendOp = append(p.pendOp, pendingOperand{in: in, slot: slot, name: p.lx.text(t), pos: t.pos()})
	}
	// Compact tuple access: %t#1#0.
	key := p.lx.text(t)
	for p.peek().kind == tokOther && p.lx.text(p.tok) == "#" && !p.peek().space {
		p.next()
		idx := p.int64Token("tuple index after '#'")
		key += "#" + strconv.FormatInt(idx, 10)
		if g := p.gtes[key]; g != nil {
			op = g
			continue
		}
		g := &Instruction{Name: key, Opcode: OpGetTupleElement, TupleIndex: idx, ImplicitGTE: true, Pos: t.pos()}
		if op == nil {
			// The tuple is defined later: resolve it with the pending list,
			// moved from the user to the GTE.
			last := &p.pendOp[len(p.pendOp)-1]
			last.in, last.slot = g, 0
			g.Operands = []*Instruction{nil}
		} else {
			g.Operands = []*Instruction{op}
		}
		if p.gtes == nil {
			p.gtes = make(map[string]*Instruction)
		}
		p.gtes[key] = g
		p.addInstruction(g)
		op = g
	}
	return op
}

// ---- attributes ----

func (p *parser) parseAttributes(in *Instruction) {
	for p.peek().kind == tokComma {
		p.next()
		nt := p.name("attribute name")
		p.expectAfter(tokEq, "after attribute name ", p.lx.text(nt))
		p.parseAttribute(in, nt)
	}
}

func (p *parser) parseAttribute(in *Instruction, nt token) {
	switch name := p.lx.text(nt); {
	case name == "index" && in.Opcode == OpGetTupleElement:
		in.TupleIndex = p.int64Token("tuple index")
	case name == "kind" && in.Opcode == OpFusion:
		in.EnsureExt().FusionKind = FusionKind(p.lx.text(p.name("fusion kind")))
	case name == "slice" && in.Opcode == OpSlice:
		in.EnsureExt().Slice = p.sliceDims()
	case (name == "select" || name == "scatter") && in.Opcode == OpSelectAndScatter:
		p.computationRef(in, name, 0)
	default:
		p.parseCommonAttribute(in, nt)
	}
}

func (p *parser) parseCommonAttribute(in *Instruction, nt token) {
	switch p.lx.text(nt) {
	case "calls":
		in.EnsureExt().Calls = p.computationRefs(in, "calls")
	case "to_apply":
		p.computationRef(in, "to_apply", 0)
	case "condition":
		p.computationRef(in, "condition", 0)
	case "body":
		p.computationRef(in, "body", 0)
	case "true_computation", "false_computation":
		x := in.EnsureExt()
		if x.Branches == nil {
			x.Branches = make([]*Computation, 2)
		}
		x.PredicatedBranches = true
		slot := 0
		if p.lx.text(nt) == "false_computation" {
			slot = 1
		}
		p.computationRef(in, p.lx.text(nt), slot)
	case "branch_computations":
		in.EnsureExt().Branches = p.computationRefs(in, "branch_computations")
	case "called_computations":
		in.EnsureExt().CalledComputations = p.computationRefs(in, "called_computations")
	case "dimensions":
		in.Dimensions = p.intList("dimensions")
		in.HasDimensions = true
	case "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims":
		x := in.EnsureExt()
		if x.Dot == nil {
			x.Dot = &DotDims{}
		}
		v := p.intList(p.lx.text(nt))
		switch p.lx.text(nt) {
		case "lhs_batch_dims":
			x.Dot.LhsBatch = v
		case "lhs_contracting_dims":
			x.Dot.LhsContracting = v
		case "rhs_batch_dims":
			x.Dot.RhsBatch = v
		case "rhs_contracting_dims":
			x.Dot.RhsContracting = v
		}
	case "custom_call_target":
		x := in.EnsureExt()
		x.CustomCallTarget = p.unquote(p.expect(tokString, "custom call target"))
		x.HasCustomCallTarget = true
	case "output_to_operand_aliasing":
		in.EnsureExt().OutputOperandAliasing = p.outputOperandAliasing()
	case "metadata":
		in.Metadata = p.metadata()
	case "control-predecessors":
		p.controlPredecessors(in)
	case "backend_config":
		in.EnsureExt().BackendConfig = p.rawValue()
	default:
		in.Attrs = append(in.Attrs, Attr{p.lx.text(nt), p.rawValue()})
	}
}

func (p *parser) computationRef(in *Instruction, role string, slot int) {
	in.EnsureExt()
	t := p.name("computation name")
	p.pendCall = append(p.pendCall, pendingCall{in: in, role: role, name: p.lx.text(t), pos: t.pos(), slot: slot})
}

// computationRefs reads "%c" or "{%a, %b}".
func (p *parser) computationRefs(in *Instruction, role string) []*Computation {
	if !p.got(tokLBrace) {
		p.computationRef(in, role, 0)
		return make([]*Computation, 1)
	}
	n := 0
	for p.peek().kind != tokRBrace {
		p.computationRef(in, role, n)
		n++
		if !p.got(tokComma) {
			break
		}
	}
	p.expectAfter(tokRBrace, "to close ", role)
	return make([]*Computation, n)
}

func (p *parser) intList(what string) []int64 {
	p.expectAfter(tokLBrace, "to open ", what)
	v := []int64{}
	for p.peek().kind != tokRBrace {
		v = append(v, p.int64Token(what+" entry"))
		if !p.got(tokComma) {
			break
		}
	}
	p.expectAfter(tokRBrace, "to close ", what)
	return v
}

// slice={[0:2], [1:8:2]}
func (p *parser) sliceDims() []SliceDim {
	p.expect(tokLBrace, "to open slice")
	var v []SliceDim
	for p.peek().kind != tokRBrace {
		p.expect(tokLBrack, "to open slice range")
		d := SliceDim{Stride: 1}
		d.Start = p.int64Token("slice start")
		p.expect(tokColon, "in slice range")
		d.Limit = p.int64Token("slice limit")
		if p.got(tokColon) {
			d.Stride = p.int64Token("slice stride")
		}
		p.expect(tokRBrack, "to close slice range")
		v = append(v, d)
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrace, "to close slice")
	return v
}

// output_to_operand_aliasing={ {0}: (1, {}), {1}: (0, {2}) }
func (p *parser) outputOperandAliasing() []OutputOperandAlias {
	p.expect(tokLBrace, "to open output_to_operand_aliasing")
	var v []OutputOperandAlias
	for p.peek().kind != tokRBrace {
		var a OutputOperandAlias
		a.Output = p.shapeIndex()
		p.expect(tokColon, "after output index")
		p.expect(tokLParen, "to open operand alias")
		a.Operand = p.int64Token("operand number")
		p.expect(tokComma, "after operand number")
		a.OperandIndex = p.shapeIndex()
		p.expect(tokRParen, "to close operand alias")
		v = append(v, a)
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrace, "to close output_to_operand_aliasing")
	return v
}

func (p *parser) controlPredecessors(in *Instruction) {
	p.expect(tokLBrace, "to open control-predecessors")
	for p.peek().kind != tokRBrace {
		t := p.name("control predecessor")
		x := in.EnsureExt()
		slot := len(x.ControlPredecessors)
		op := p.lookup(p.lx.text(t))
		x.ControlPredecessors = append(x.ControlPredecessors, op)
		if op == nil {
			p.pendOp = append(p.pendOp, pendingOperand{in: in, slot: slot, name: p.lx.text(t), pos: t.pos(), ctrl: true})
		}
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrace, "to close control-predecessors")
}

// metadata={op_type="..." op_name="..." source_file="..." source_line=12 ...}
func (p *parser) metadata() *Metadata {
	p.expect(tokLBrace, "to open metadata")
	md := &Metadata{}
	for p.peek().kind != tokRBrace {
		k := p.name("metadata field")
		p.expectAfter(tokEq, "after metadata field ", p.lx.text(k))
		switch p.lx.text(k) {
		case "op_type", "op_name", "source_file", "deduplicated_name", "scheduling_name":
			s := p.unquote(p.expect(tokString, p.lx.text(k)))
			switch p.lx.text(k) {
			case "op_type":
				md.OpType = s
			case "op_name":
				md.OpName = s
			case "source_file":
				md.SourceFile = s
			case "deduplicated_name":
				md.DeduplicatedName = s
			case "scheduling_name":
				md.SchedulingName = s
			}
		case "source_line":
			md.SourceLine = p.int64Token(p.lx.text(k))
		case "source_end_line":
			md.SourceEndLine = p.int64Token(p.lx.text(k))
		case "source_column":
			md.SourceColumn = p.int64Token(p.lx.text(k))
		case "source_end_column":
			md.SourceEndColumn = p.int64Token(p.lx.text(k))
		case "stack_frame_id":
			md.StackFrameID = p.int64Token(p.lx.text(k))
		default:
			md.Rest = append(md.Rest, Attr{p.lx.text(k), p.rawValue()})
		}
		p.got(tokComma)
	}
	p.expect(tokRBrace, "to close metadata")
	return md
}

// rawValue consumes one attribute value and returns its text: a run of
// tokens joined without whitespace (T(8,128), b01f_01io->b01f,
// [2,4]<=[8]), where bracketed groups may hold anything, including spaces
// and newlines. The text is whitespace-normalised.
func (p *parser) rawValue() string {
	first := *p.peek()
	switch first.kind {
	case tokEOF, tokSplit, tokComma, tokRBrace, tokRParen, tokRBrack:
		p.fail(first.pos(), "expected attribute value, found %s", p.describe(first))
	}
	var stackBuf [16]tokKind
	stack := stackBuf[:0]
	var end int32
	for i := 0; ; i++ {
		t := *p.peek()
		if len(stack) == 0 && i > 0 {
			if t.kind == tokComma || t.kind == tokEOF || t.kind == tokSplit || t.kind == tokRBrace || t.kind == tokRParen || t.kind == tokRBrack {
				break
			}
			if t.space && t.kind != tokArrow && t.kind != tokLeq && p.prev.kind != tokArrow && p.prev.kind != tokLeq {
				break
			}
		}
		switch t.kind {
		case tokEOF, tokSplit:
			p.fail(first.pos(), "unterminated attribute value")
		case tokLParen:
			stack = append(stack, tokRParen)
		case tokLBrace:
			stack = append(stack, tokRBrace)
		case tokLBrack:
			stack = append(stack, tokRBrack)
		case tokRParen, tokRBrace, tokRBrack:
			if len(stack) == 0 || stack[len(stack)-1] != t.kind {
				p.fail(t.pos(), "unbalanced %s in attribute value", p.describe(t))
			}
			stack = stack[:len(stack)-1]
		}
		p.next()
		end = t.end
	}
	return normalizeText(p.src[first.start:end])
}

// normalizeText removes comments from text and turns every run of
// whitespace that contains a line break into one space, leaving strings
// untouched. Text without line breaks or comments is returned as is.
func normalizeText(s string) string {
	if strings.IndexByte(s, '\n') < 0 && !strings.Contains(s, "/*") && !strings.Contains(s, "//") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				j = len(s) - 1
			}
			b.WriteString(s[i : j+1])
			i = j + 1
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if end := strings.Index(s[i+2:], "*/"); end >= 0 {
				i += end + 4
			} else {
				i = len(s)
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			j := i
			nl := false
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n') {
				nl = nl || s[j] == '\n'
				j++
			}
			if nl {
				// Drop the space next to brackets so that reformatted JSON stays tidy.
				if b.Len() > 0 && j < len(s) {
					b.WriteByte(' ')
				}
			} else {
				b.WriteString(s[i:j])
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return strings.TrimSpace(b.String())
}

// unquote decodes a string token with C escapes, as XLA's CEscape writes them.
func (p *parser) unquote(t token) string {
	s := p.lx.text(t)[1 : len(p.lx.text(t))-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	out, err := unescapeC(s)
	if err != nil {
		p.fail(t.pos(), "bad string %s: %v", p.lx.text(t), err)
	}
	return out
}

func unescapeC(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		switch c = s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\\', '"', '\'', '?':
			b.WriteByte(c)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				return "", fmt.Errorf("bad \\x escape")
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 8)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			if c >= '0' && c <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 16)
				if v > 255 {
					return "", fmt.Errorf("octal escape out of range")
				}
				b.WriteByte(byte(v))
				i = j - 1
				continue
			}
			return "", fmt.Errorf("unknown escape \\%c", c)
		}
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// ---- shapes ----

// MaxTupleDepth is the deepest tuple nesting the parser accepts. It bounds
// the recursion of everything that walks a shape; XLA's own programs nest
// a few levels.
const MaxTupleDepth = 100_000

// MaxInlineDepth is the deepest nesting of instructions written inside
// operand lists ("negate(f32[] negate(p))") the parser accepts.
const MaxInlineDepth = 10_000

// maxInternHeight is the deepest tuple nesting whose shapes parseShape
// interns.
const maxInternHeight = 8

// parseShape reads a shape. Identical shape texts share one parsed value
// (for tuples up to maxInternHeight deep). It leaves the shape's tuple
// height (0 for an array) in p.shapeHeight.
func (p *parser) parseShape() Shape {
	t := *p.peek()
	start := t.start
	if t.kind == tokLParen {
		if p.tupleDepth >= MaxTupleDepth {
			p.fail(t.pos(), "tuple shape nested more than %d deep", MaxTupleDepth)
		}
		p.tupleDepth++
		defer func() { p.tupleDepth-- }()
		p.next()
		var elems []Shape
		height := 0
		for p.peek().kind != tokRParen {
			elems = append(elems, p.parseShape())
			height = max(height, p.shapeHeight)
			if !p.got(tokComma) {
				break
			}
		}
		p.expect(tokRParen, "to close tuple shape")
		height++
		p.shapeHeight = height
		// Interning hashes the tuple's whole text, which holds the text of
		// every tuple nested in it; beyond a small height that would hash
		// the text once per level, quadratic in the depth.
		key := p.src[start:p.prev.end]
		if height <= maxInternHeight {
			if s, ok := p.shapes[key]; ok {
				return s
			}
		}
		s := Shape{Elem: Tuple, Tuple: elems}
		if s.Tuple == nil {
			s.Tuple = []Shape{}
		}
		if height <= maxInternHeight {
			p.shapes[key] = s
		}
		return s
	}
	p.shapeHeight = 0
	if t.kind != tokWord {
		p.fail(t.pos(), "expected shape, found %s", p.describe(t))
	}
	// Fast path: a shape text seen before is found by its bytes, and its
	// tokens are skipped without lexing them.
	if end, ok := p.arrayShapeEnd(int(t.start)); ok {
		if sh, hit := p.shapes[p.src[t.start:end]]; hit {
			p.skipTo(t, end)
			return sh
		}
	}
	et, ok := typeByName[p.lx.text(t)]
	if !ok || et == Tuple {
		p.fail(t.pos(), "unknown element type %q", clip(p.lx.text(t)))
	}
	p.next()
	p.expectAfter(tokLBrack, "after element type ", p.lx.text(t))
	var dimBuf [8]int64
	var dynBuf [8]bool
	dims, dyn := dimBuf[:0], dynBuf[:0]
	anyDyn := false
	for p.peek().kind != tokRBrack {
		d := *p.peek()
		isDyn := false
		if d.kind == tokLeq {
			p.next()
			isDyn = true
			d = *p.peek()
		}
		switch {
		case d.kind == tokOther && p.lx.text(d) == "?":
			p.next()
			dims = append(dims, UnboundedDim)
			isDyn = true
		case d.kind == tokWord && isIntText(p.lx.text(d)):
			v, err := strconv.ParseInt(p.lx.text(d), 10, 64)
			if err != nil {
				p.fail(d.pos(), "dimension size %s does not fit in int64", p.lx.text(d))
			}
			p.next()
			if v < 0 {
				p.fail(d.pos(), "dimension size %d is negative", v)
			}
			dims = append(dims, v)
		default:
			p.fail(d.pos(), "expected dimension size, found %s", p.describe(d))
		}
		dyn = append(dyn, isDyn)
		anyDyn = anyDyn || isDyn
		if !p.got(tokComma) {
			break
		}
	}
	p.expect(tokRBrack, "to close dimensions")
	if !et.IsArray() && len(dims) > 0 {
		p.fail(t.pos(), "%s shape cannot have dimensions", et)
	}
	hasLayout := false
	if p.peek().kind == tokLBrace && !p.peek().space {
		hasLayout = true
	} else if p.peek().kind == tokLBrace {
		// "-> f32[2] {" opens a computation body; a layout starts with a
		// number, ':' or '}'.
		n := p.peek1()
		hasLayout = n.kind == tokColon || n.kind == tokRBrace || (n.kind == tokWord && isIntText(p.lx.text(n)))
	}
	if hasLayout {
		p.skipLayout()
	}
	key := p.src[start:p.prev.end]
	if s, ok := p.shapes[key]; ok {
		return s
	}
	s := Shape{Elem: et}
	if len(dims) > 0 {
		s.Dims = append([]int64(nil), dims...)
	} else if et.IsArray() {
		s.Dims = []int64{}
	}
	if anyDyn {
		s.Dynamic = append([]bool(nil), dyn...)
	}
	if hasLayout {
		s.Layout = p.layoutFromText(key, t.pos(), len(dims))
	}
	p.shapes[key] = s
	return s
}

// arrayShapeEnd returns the end offset of the array shape text starting at
// i (type, dimensions, and a layout written right after them), when it can
// be found by scanning bytes: no line breaks and no layout that a space
// separates from the dimensions.
func (p *parser) arrayShapeEnd(i int) (int, bool) {
	src := p.src
	for i < len(src) && wordByte[src[i]] {
		i++
	}
	if i >= len(src) || src[i] != '[' {
		return 0, false
	}
	for i < len(src) && src[i] != ']' {
		if src[i] == '\n' || src[i] == '{' || src[i] == '(' {
			return 0, false
		}
		i++
	}
	if i >= len(src) {
		return 0, false
	}
	i++
	if i < len(src) && src[i] == '{' {
		for i < len(src) && src[i] != '}' {
			if src[i] == '\n' || src[i] == '{' && i > 0 && src[i-1] != ']' {
				return 0, false
			}
			i++
		}
		if i >= len(src) {
			return 0, false
		}
		return i + 1, true
	}
	// A space and then '{' may be a layout or a computation body: let the
	// token path decide.
	j := i
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	if j > i && j < len(src) && src[j] == '{' {
		return 0, false
	}
	return i, true
}

// skipTo moves the lexer past a shape that starts at token t and ends at
// byte end (on t's line), as if its tokens had been consumed.
func (p *parser) skipTo(t token, end int) {
	last := tokRBrack
	if p.src[end-1] == '}' {
		last = tokRBrace
	}
	p.prev = token{kind: last, start: int32(end - 1), end: int32(end), line: t.line, col: t.col + int32(end-1-int(t.start))}
	p.lx.off = end
	p.tok = p.lx.next()
}

// skipLayout consumes a layout's tokens; layoutFromText parses them once
// per distinct shape text.
func (p *parser) skipLayout() {
	open := p.next()
	depth := 1
	for depth > 0 {
		t := *p.peek()
		switch t.kind {
		case tokEOF, tokSplit:
			p.fail(open.pos(), "unterminated layout")
		case tokLBrace:
			depth++
		case tokRBrace:
			depth--
		}
		p.next()
	}
}

// layoutFromText parses the layout inside a shape's text (everything from
// the first '{' after the dimensions).
func (p *parser) layoutFromText(shapeText string, pos Pos, rank int) *Layout {
	i := strings.IndexByte(shapeText, ']')
	text := shapeText[i+1:]
	lp := &layoutParser{s: text}
	l, err := lp.parse()
	if err != nil {
		p.fail(pos, "bad layout %s: %v", clip(text), err)
	}
	if len(l.MinorToMajor) != 0 && len(l.MinorToMajor) != rank {
		p.fail(pos, "bad layout %s: %d minor-to-major entries for %d dimensions", clip(text), len(l.MinorToMajor), rank)
	}
	if len(l.MinorToMajor) == 0 && rank > 0 && len(l.Tiles) == 0 && l.MemorySpace == 0 {
		p.fail(pos, "bad layout %s: no minor-to-major order for %d dimensions", clip(text), rank)
	}
	seen := make([]bool, rank)
	for _, d := range l.MinorToMajor {
		if d < 0 || int(d) >= rank {
			p.fail(pos, "bad layout %s: dimension %d out of range for rank %d", clip(text), d, rank)
		}
		if seen[d] {
			p.fail(pos, "bad layout %s: dimension %d repeated", clip(text), d)
		}
		seen[d] = true
	}
	return l
}

// layoutParser parses "{1,0:T(8,128)(2,1)E(4)S(1)}" character by character.
type layoutParser struct {
	s string
	i int
}

func (lp *layoutParser) skipSpace() {
	for lp.i < len(lp.s) && (lp.s[lp.i] == ' ' || lp.s[lp.i] == '\n' || lp.s[lp.i] == '\t' || lp.s[lp.i] == '\r') {
		lp.i++
	}
}

func (lp *layoutParser) eat(c byte) bool {
	lp.skipSpace()
	if lp.i < len(lp.s) && lp.s[lp.i] == c {
		lp.i++
		return true
	}
	return false
}

func (lp *layoutParser) int() (int64, error) {
	lp.skipSpace()
	j := lp.i
	if j < len(lp.s) && lp.s[j] == '-' {
		j++
	}
	for j < len(lp.s) && lp.s[j] >= '0' && lp.s[j] <= '9' {
		j++
	}
	v, err := strconv.ParseInt(lp.s[lp.i:j], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected integer at %q", lp.rest())
	}
	lp.i = j
	return v, nil
}

func (lp *layoutParser) rest() string {
	r := lp.s[lp.i:]
	if len(r) > 12 {
		r = r[:12] + "..."
	}
	return r
}

// paren returns the text inside the parentheses that start at lp.i.
func (lp *layoutParser) paren() (string, error) {
	if !lp.eat('(') {
		return "", fmt.Errorf("expected '(' at %q", lp.rest())
	}
	depth := 1
	start := lp.i
	for lp.i < len(lp.s) {
		switch lp.s[lp.i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				lp.i++
				return lp.s[start : lp.i-1], nil
			}
		}
		lp.i++
	}
	return "", fmt.Errorf("unterminated '('")
}

func (lp *layoutParser) parse() (*Layout, error) {
	l := &Layout{}
	if !lp.eat('{') {
		return nil, fmt.Errorf("expected '{'")
	}
	lp.skipSpace()
	for lp.i < len(lp.s) && lp.s[lp.i] != ':' && lp.s[lp.i] != '}' {
		v, err := lp.int()
		if err != nil {
			return nil, err
		}
		l.MinorToMajor = append(l.MinorToMajor, v)
		if !lp.eat(',') {
			break
		}
		lp.skipSpace()
	}
	if lp.eat(':') {
		for {
			lp.skipSpace()
			if lp.i >= len(lp.s) || lp.s[lp.i] == '}' {
				break
			}
			if err := lp.extra(l); err != nil {
				return nil, err
			}
		}
	}
	if !lp.eat('}') {
		return nil, fmt.Errorf("expected '}' at %q", lp.rest())
	}
	lp.skipSpace()
	if lp.i != len(lp.s) {
		return nil, fmt.Errorf("unexpected %q after layout", lp.rest())
	}
	return l, nil
}

func (lp *layoutParser) smallInt(inside string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(inside), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected integer, found %q", inside)
	}
	return v, nil
}

func (lp *layoutParser) extra(l *Layout) error {
	s := lp.s[lp.i:]
	var err error
	switch {
	case strings.HasPrefix(s, "SC("), strings.HasPrefix(s, "P("), strings.HasPrefix(s, "M("):
		start := lp.i
		for lp.i < len(lp.s) && lp.s[lp.i] != '(' {
			lp.i++
		}
		if _, err = lp.paren(); err != nil {
			return err
		}
		l.Rest = append(l.Rest, lp.s[start:lp.i])
	case strings.HasPrefix(s, "D("):
		lp.i++
		l.DimLevelTypes, err = lp.paren()
	case s[0] == 'T':
		lp.i++
		for lp.i < len(lp.s) && lp.s[lp.i] == '(' {
			inside, err := lp.paren()
			if err != nil {
				return err
			}
			var t Tile
			for _, f := range strings.Split(inside, ",") {
				f = strings.TrimSpace(f)
				if f == "*" {
					t.Dims = append(t.Dims, CombineDim)
					continue
				}
				v, err := strconv.ParseInt(f, 10, 64)
				if err != nil || v <= 0 {
					return fmt.Errorf("bad tile dimension %q", f)
				}
				t.Dims = append(t.Dims, v)
			}
			l.Tiles = append(l.Tiles, t)
		}
		if len(l.Tiles) == 0 {
			return fmt.Errorf("expected tile after T")
		}
	case s[0] == 'L' || s[0] == 'E' || s[0] == 'S':
		lp.i++
		inside, err := lp.paren()
		if err != nil {
			return err
		}
		v, err := lp.smallInt(inside)
		if err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("negative value %d in %c(...)", v, s[0])
		}
		switch s[0] {
		case 'L':
			l.TailPaddingAlignment = v
		case 'E':
			l.ElementSizeBits = v
		case 'S':
			l.MemorySpace = v
		}
	case s[0] == '#' || s[0] == '*':
		lp.i++
		inside, err := lp.paren()
		if err != nil {
			return err
		}
		t, ok := typeByName[strings.TrimSpace(inside)]
		if !ok {
			return fmt.Errorf("unknown element type %q", inside)
		}
		if s[0] == '#' {
			l.IndexType = t
		} else {
			l.PointerType = t
		}
	default:
		return fmt.Errorf("unknown layout attribute at %q", lp.rest())
	}
	return err
}
