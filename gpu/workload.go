package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/hlo"
)

// Workload is a session of several programs replayed on one client: a
// JSON file
//
//	{
//	  "device": "custom:16GiB",            (optional: the device, unless the caller says)
//	  "programs": {"step": "train.hlo"},   (optional: HLO files, relative to the workload)
//	  "steps": [
//	    {"put": "w", "bytes": "1GiB"},     (an array of a size: a number, or with a KiB..TiB suffix)
//	    {"put": "x", "shape": "f32[1024,1024]"},
//	    {"put_params": "step"},            (one array per parameter leaf of a program, named after it)
//	    {"run": "step", "args": ["w", "x"], "outputs": ["w"]},
//	    {"delete": "x"},
//	    {"defragment": true},
//	    {"put": "big", "bytes": "3GiB", "expect_oom": true}
//	  ]
//	}
//
// A run without "args" passes the arrays named after the program's
// parameter leaves (as put_params names them). A step with "expect_oom"
// must fail with an OOM: the replay goes on, and fails if it does not.
type Workload struct {
	File     string
	Device   string
	Programs map[string]string
	Steps    []Step
}

// Step is one step of a workload: exactly one of Put, PutParams, Run,
// Delete and Defragment is set.
type Step struct {
	Line, Col  int // where the step starts in the file
	Put        string
	Bytes      int64
	Shape      string
	PutParams  string
	Run        string
	Args       []string
	HasArgs    bool
	Outputs    []string
	Delete     string
	Defragment bool
	ExpectOOM  bool
}

// Kind names the step's operation.
func (s *Step) Kind() string {
	switch {
	case s.Put != "":
		return "put"
	case s.PutParams != "":
		return "put_params"
	case s.Run != "":
		return "run"
	case s.Delete != "":
		return "delete"
	}
	return "defragment"
}

// stepJSON is a step as written.
type stepJSON struct {
	Put        *string   `json:"put"`
	Bytes      *byteSize `json:"bytes"`
	Shape      *string   `json:"shape"`
	PutParams  *string   `json:"put_params"`
	Run        *string   `json:"run"`
	Args       *[]string `json:"args"`
	Outputs    []string  `json:"outputs"`
	Delete     *string   `json:"delete"`
	Defragment *bool     `json:"defragment"`
	ExpectOOM  bool      `json:"expect_oom"`
}

// byteSize is a byte count written as a number or a string with a unit.
type byteSize int64

func (b *byteSize) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		if n < 0 {
			return fmt.Errorf("bytes %d is negative", n)
		}
		*b = byteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("bytes must be a number or a string such as \"1GiB\", not %s", data)
	}
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// MaxWorkloadSize bounds a workload file (64 MiB).
const MaxWorkloadSize = 64 << 20

// ParseWorkload reads a workload from r; file names it in errors, which
// say FILE:LINE:COL.
func ParseWorkload(file string, r io.Reader) (*Workload, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxWorkloadSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > MaxWorkloadSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, MaxWorkloadSize)
	}
	p := &wparser{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w, err := p.parse()
	if err != nil {
		return nil, err
	}
	return w, nil
}

type wparser struct {
	file string
	data []byte
	dec  *json.Decoder
}

// at is the position of byte offset off.
func (p *wparser) at(off int64) (line, col int) {
	off = min(max(off, 0), int64(len(p.data)))
	line = 1 + bytes.Count(p.data[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(p.data[:off], '\n')
	return line, col
}

func (p *wparser) errorAt(off int64, format string, args ...any) error {
	line, col := p.at(off)
	return fmt.Errorf("%s:%d:%d: %s", p.file, line, col, fmt.Sprintf(format, args...))
}

// jsonError places a decoding error: at its own offset when it has one,
// else at off.
func (p *wparser) jsonError(err error, off int64) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return p.errorAt(syn.Offset-1, "%s", syn.Error())
	case errors.As(err, &typ):
		msg := fmt.Sprintf("%s must be %s, not a JSON %s", typ.Field, typ.Type, typ.Value)
		if typ.Field == "" {
			msg = fmt.Sprintf("want %s, not a JSON %s", typ.Type, typ.Value)
		}
		return p.errorAt(typ.Offset-1, "%s", msg)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return p.errorAt(int64(len(p.data)), "unexpected end of the file")
	}
	return p.errorAt(off, "%s", strings.TrimPrefix(err.Error(), "json: "))
}

// skipSpace returns the offset of the next token at or after off.
func (p *wparser) skipSpace(off int64) int64 {
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *wparser) delim(want json.Delim, what string) error {
	off := p.skipSpace(p.dec.InputOffset())
	t, err := p.dec.Token()
	if err != nil {
		return p.jsonError(err, off)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return p.errorAt(off, "want %s", what)
	}
	return nil
}

func (p *wparser) parse() (*Workload, error) {
	w := &Workload{File: p.file}
	if err := p.delim('{', "a JSON object with \"steps\""); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for p.dec.More() {
		off := p.skipSpace(p.dec.InputOffset())
		t, err := p.dec.Token()
		if err != nil {
			return nil, p.jsonError(err, off)
		}
		key, _ := t.(string)
		if seen[key] {
			return nil, p.errorAt(off, "%q appears twice", key)
		}
		seen[key] = true
		voff := p.skipSpace(p.dec.InputOffset())
		switch key {
		case "device":
			err = p.dec.Decode(&w.Device)
		case "programs":
			err = p.dec.Decode(&w.Programs)
		case "steps":
			if err := p.steps(w); err != nil {
				return nil, err
			}
		default:
			return nil, p.errorAt(off, "unknown key %q (want device, programs or steps)", key)
		}
		if err != nil {
			return nil, p.jsonError(err, voff)
		}
	}
	if err := p.delim('}', "the end of the object"); err != nil {
		return nil, err
	}
	off := p.skipSpace(p.dec.InputOffset())
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errorAt(off, "text after the workload object")
	}
	if !seen["steps"] {
		return nil, p.errorAt(0, "no \"steps\"")
	}
	return w, nil
}

func (p *wparser) steps(w *Workload) error {
	if err := p.delim('[', "a list of steps"); err != nil {
		return err
	}
	for p.dec.More() {
		off := p.skipSpace(p.dec.InputOffset())
		var raw json.RawMessage
		if err := p.dec.Decode(&raw); err != nil {
			return p.jsonError(err, off)
		}
		var sj stepJSON
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&sj); err != nil {
			var typ *json.UnmarshalTypeError
			var syn *json.SyntaxError
			if errors.As(err, &typ) {
				typ.Offset += off
			} else if errors.As(err, &syn) {
				syn.Offset += off
			}
			return p.jsonError(err, off)
		}
		s, err := stepOf(sj)
		if err != nil {
			return p.errorAt(off, "step %d: %v", len(w.Steps)+1, err)
		}
		s.Line, s.Col = p.at(off)
		w.Steps = append(w.Steps, s)
	}
	return p.delim(']', "the end of the steps")
}

func stepOf(sj stepJSON) (Step, error) {
	var s Step
	var ops []string
	if sj.Put != nil {
		ops = append(ops, "put")
		s.Put = *sj.Put
		if s.Put == "" {
			return s, errors.New("put needs an array name")
		}
		switch {
		case sj.Bytes != nil && sj.Shape != nil:
			return s, errors.New("put takes bytes or shape, not both")
		case sj.Bytes != nil:
			s.Bytes = int64(*sj.Bytes)
		case sj.Shape != nil:
			sh, err := hlo.ParseShape("shape", *sj.Shape)
			if err != nil {
				return s, fmt.Errorf("shape %q: %v", *sj.Shape, err)
			}
			if sh.IsTuple() {
				return s, fmt.Errorf("shape %q is a tuple; put each array on its own", *sj.Shape)
			}
			n, err := hlo.ByteSize(sh)
			if err != nil {
				return s, fmt.Errorf("shape %q: %v", *sj.Shape, err)
			}
			s.Bytes, s.Shape = n, *sj.Shape
		default:
			return s, errors.New("put needs bytes or shape")
		}
	} else if sj.Bytes != nil || sj.Shape != nil {
		return s, errors.New("bytes and shape belong to a put")
	}
	if sj.PutParams != nil {
		ops = append(ops, "put_params")
		if s.PutParams = *sj.PutParams; s.PutParams == "" {
			return s, errors.New("put_params needs a program name")
		}
	}
	if sj.Run != nil {
		ops = append(ops, "run")
		if s.Run = *sj.Run; s.Run == "" {
			return s, errors.New("run needs a program name")
		}
		if sj.Args != nil {
			s.Args, s.HasArgs = *sj.Args, true
		}
		s.Outputs = sj.Outputs
	} else if sj.Args != nil || sj.Outputs != nil {
		return s, errors.New("args and outputs belong to a run")
	}
	if sj.Delete != nil {
		ops = append(ops, "delete")
		if s.Delete = *sj.Delete; s.Delete == "" {
			return s, errors.New("delete needs an array name")
		}
	}
	if sj.Defragment != nil {
		if !*sj.Defragment {
			return s, errors.New("defragment: write true, or leave the step out")
		}
		ops = append(ops, "defragment")
		s.Defragment = true
	}
	switch len(ops) {
	case 0:
		return s, errors.New("a step is one of put, put_params, run, delete or defragment")
	case 1:
	default:
		return s, fmt.Errorf("a step does one thing, this one says %s", strings.Join(ops, " and "))
	}
	s.ExpectOOM = sj.ExpectOOM
	return s, nil
}

// StepResult is what one replayed step did, with the allocator's stats
// after it.
type StepResult struct {
	Index int // from 1
	Step  *Step
	Stats Stats
	// OOM is the expected OOM of a step with ExpectOOM.
	OOM    *OOMError
	Run    *RunResult
	Defrag *DefragReport
	Arrays int // arrays on the device after the step
}

// Replay runs w's steps on c with the programs by name, calling each after
// every step. An error names the step's place in the file; an unexpected
// OOM is returned as a *StepError wrapping the *OOMError.
func (c *Client) Replay(ctx context.Context, w *Workload, progs map[string]*Program, each func(StepResult) error) error {
	for i := range w.Steps {
		s := &w.Steps[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		r := StepResult{Index: i + 1, Step: s}
		err := c.step(ctx, s, progs, &r)
		var oom *OOMError
		switch {
		case err != nil && s.ExpectOOM && errors.As(err, &oom):
			r.OOM = oom
		case err != nil:
			return &StepError{File: w.File, Step: s, Index: i + 1, Err: err}
		case s.ExpectOOM:
			return &StepError{File: w.File, Step: s, Index: i + 1, Err: errors.New("expected an out-of-memory error, and the step succeeded")}
		}
		r.Stats = c.Stats()
		r.Arrays = len(c.arrays)
		if each != nil {
			if err := each(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Client) step(ctx context.Context, s *Step, progs map[string]*Program, r *StepResult) error {
	prog := func(name string) (*Program, error) {
		p := progs[name]
		if p == nil {
			names := make([]string, 0, len(progs))
			for n := range progs {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return nil, fmt.Errorf("no program named %q (no program is loaded)", name)
			}
			return nil, fmt.Errorf("no program named %q (have %s)", name, strings.Join(names, ", "))
		}
		return p, nil
	}
	switch {
	case s.Put != "":
		_, err := c.Put(s.Put, s.Bytes, s.Shape)
		return err
	case s.PutParams != "":
		p, err := prog(s.PutParams)
		if err != nil {
			return err
		}
		for _, l := range p.Params {
			if _, ok := c.arrays[l.Name]; ok {
				continue
			}
			put := c.Put
			if l.Host {
				put = c.putHost
			}
			if _, err := put(l.Name, l.Bytes, l.Shape.String()); err != nil {
				return err
			}
		}
		return nil
	case s.Run != "":
		p, err := prog(s.Run)
		if err != nil {
			return err
		}
		args := s.Args
		if !s.HasArgs {
			args = ParamNames(p)
		}
		r.Run, err = c.Run(ctx, p, args, s.Outputs)
		return err
	case s.Delete != "":
		return c.Delete(s.Delete)
	case s.Defragment:
		rep, err := c.Defragment()
		r.Defrag = &rep
		return err
	}
	return errors.New("empty step")
}

// ParamNames are the names of p's parameter leaves, the default arguments
// of a run.
func ParamNames(p *Program) []string {
	names := make([]string, len(p.Params))
	for i, l := range p.Params {
		names[i] = l.Name
	}
	return names
}

// StepError is a workload step that failed, placed in the file.
type StepError struct {
	File  string
	Step  *Step
	Index int
	Err   error
}

func (e *StepError) Error() string {
	if e.Step.Line <= 0 {
		// A session made up in code, not read from a file.
		return fmt.Sprintf("step %d (%s %s): %v", e.Index, e.Step.Kind(), e.Step.name(), e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: step %d (%s): %v", e.File, e.Step.Line, e.Step.Col, e.Index, e.Step.Kind(), e.Err)
}

// name is what the step acts on.
func (s *Step) name() string {
	return s.Put + s.PutParams + s.Run + s.Delete
}

func (e *StepError) Unwrap() error { return e.Err }
