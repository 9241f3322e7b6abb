package peakgolden

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
)

// formatTag opens every golden file; the version changes when the meaning
// of a column does. v2 keys a module by NAME@SIGNATURE (key.go); v1, still
// read, keyed it by NAME, NAME#K when several modules had that name.
const (
	formatTag   = "# hlomem peak v2"
	formatTagV1 = "# hlomem peak v1"
	tagPrefix   = "# hlomem peak "
)

// Version is the format version Write writes.
const Version = 2

// columnsComment is the second line of a golden file, naming the columns.
const columnsComment = "# module@signature schedule lower_bound temp total peak_step | largest occupants of the peak: name shape bytes occupied"

// File is a golden file: the options its figures were measured with and
// one line per module, sorted by key.
type File struct {
	// Version is the format's: 2, or 1 for a file written before modules
	// were keyed by signature.
	Version int
	Options Options
	Lines   []Line
}

// header is the first line for opts (resolved).
func header(opts Options) string {
	sched := opts.Schedule
	if sched == "" {
		sched = "default"
	}
	h := fmt.Sprintf("%s target=%s algorithm=%s schedule=%s", formatTag, opts.Target.Name, opts.Algorithm, sched)
	// Not the default live-range rules, or a set of threads: say so
	// (files without them were measured under the defaults).
	if opts.XLARules != "" && opts.XLARules != liveness.Rules2026 {
		h += " xla_rules=" + string(opts.XLARules)
	}
	if len(opts.ExecutionThreads) > 0 {
		h += " execution_threads=" + strings.Join(opts.ExecutionThreads, ",")
	}
	return h
}

// Write writes the golden file of lines measured with opts: the header,
// then one line per module in the order given (Measure's is sorted).
func Write(w io.Writer, opts Options, lines []Line) error {
	opts, err := opts.resolved()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, header(opts))
	fmt.Fprintln(bw, columnsComment)
	for i := range lines {
		bw.WriteString(lines[i].text())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Bytes returns the golden file of lines as Write writes it.
func Bytes(opts Options, lines []Line) ([]byte, error) {
	var b bytes.Buffer
	if err := Write(&b, opts, lines); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// text is the line as the golden file holds it.
func (l *Line) text() string {
	var b strings.Builder
	b.WriteString(l.Key)
	b.WriteByte(' ')
	b.WriteString(l.figuresText())
	return b.String()
}

// figuresText is the line without its key.
func (l *Line) figuresText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %d %d %d", l.Schedule, l.LowerBound, l.Temp, l.Total, l.PeakStep)
	for _, t := range l.Top {
		fmt.Fprintf(&b, " | %s %s %d", t.Name, t.Shape, t.Bytes)
	}
	return b.String()
}

// ParseError is a malformed golden file, at a line.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Parse reads the golden file named name (for messages) from data, of
// format v2 or v1. The first line must be the header; then blank lines and
// lines starting with # are skipped and every other line is a module's.
func Parse(name string, data []byte) (*File, error) {
	f := &File{}
	errAt := func(line int, format string, args ...any) error {
		return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	text := string(data)
	if len(text) == 0 {
		return nil, errAt(1, "empty file; a peak file starts with %q (write one with hlomem peak --update)", formatTag)
	}
	rows := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	version, opts, err := parseHeader(strings.TrimSuffix(rows[0], "\r"))
	if err != nil {
		return nil, errAt(1, "%v", err)
	}
	f.Version, f.Options = version, opts
	first := map[string]int{}
	for i, row := range rows[1:] {
		n := i + 2
		row = strings.TrimSuffix(row, "\r")
		if strings.TrimSpace(row) == "" || strings.HasPrefix(row, "#") {
			continue
		}
		l, err := parseLine(row)
		if err != nil {
			return nil, errAt(n, "%v", err)
		}
		if l.Module, l.Signature, err = parseKey(l.Key, version); err != nil {
			return nil, errAt(n, "%v", err)
		}
		if at, dup := first[l.Key]; dup {
			return nil, errAt(n, "module %s again (first on line %d)", l.Key, at)
		}
		first[l.Key] = n
		l.lineNo = n
		f.Lines = append(f.Lines, l)
	}
	return f, nil
}

// parseHeader reads the format version and the options from the first
// line.
func parseHeader(row string) (int, Options, error) {
	var o Options
	version, rest := 0, ""
	for _, tag := range []struct {
		tag     string
		version int
	}{{formatTag, Version}, {formatTagV1, 1}} {
		if r, ok := strings.CutPrefix(row, tag.tag); ok && (r == "" || r[0] == ' ') {
			version, rest = tag.version, r
			break
		}
	}
	if version == 0 {
		if strings.HasPrefix(row, tagPrefix) {
			return 0, o, fmt.Errorf("unsupported version %q (this hlomem reads %q and %q)", abbreviate(row), formatTag, formatTagV1)
		}
		return 0, o, fmt.Errorf("not a peak file: the first line is %q, want %q followed by the options", abbreviate(row), formatTag)
	}
	o, err := parseOptions(rest)
	return version, o, err
}

// parseOptions reads the key=value options of the header.
func parseOptions(rest string) (Options, error) {
	var o Options
	seen := map[string]bool{}
	for _, kv := range strings.Fields(rest) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return o, fmt.Errorf("header: want key=value, got %q", kv)
		}
		if seen[k] {
			return o, fmt.Errorf("header: %s given twice", k)
		}
		seen[k] = true
		switch k {
		case "target":
			o.Target.Name = v
		case "algorithm":
			o.Algorithm = v
		case "schedule":
			if v != "default" {
				o.Schedule = v
			}
		case "xla_rules":
			r, err := liveness.ParseRules(v)
			if err != nil {
				return o, fmt.Errorf("header: %v", err)
			}
			o.XLARules = r
		case "execution_threads":
			o.ExecutionThreads = strings.Split(v, ",")
		default:
			return o, fmt.Errorf("header: unknown option %q (want target, algorithm and schedule, and optionally xla_rules and execution_threads)", k)
		}
	}
	for _, k := range []string{"target", "algorithm", "schedule"} {
		if !seen[k] {
			return o, fmt.Errorf("header: no %s= option", k)
		}
	}
	return o, nil
}

// parseLine reads one module's line.
func parseLine(row string) (Line, error) {
	var l Line
	parts := strings.Split(row, " | ")
	head := strings.Fields(parts[0])
	if len(head) != 6 {
		return l, fmt.Errorf("want 6 fields (module@signature schedule lower_bound temp total peak_step) before the first \" | \", got %d", len(head))
	}
	l.Key, l.Schedule = head[0], head[1]
	if !knownSchedule(l.Schedule) {
		return l, fmt.Errorf("module %s: unknown schedule %q", l.Key, l.Schedule)
	}
	for i, dst := range []*int64{&l.LowerBound, &l.Temp, &l.Total} {
		v, err := strconv.ParseInt(head[2+i], 10, 64)
		if err != nil || v < 0 {
			return l, fmt.Errorf("module %s: %s: want a byte count, got %q", l.Key, []string{"lower_bound", "temp", "total"}[i], head[2+i])
		}
		*dst = v
	}
	step, err := strconv.Atoi(head[5])
	if err != nil || step < -1 {
		return l, fmt.Errorf("module %s: peak_step: want a step (-1 for none), got %q", l.Key, head[5])
	}
	l.PeakStep = step
	for i, p := range parts[1:] {
		f := strings.Fields(p)
		if len(f) != 3 {
			return l, fmt.Errorf("module %s: buffer %d: want name shape bytes, got %q", l.Key, i+1, strings.TrimSpace(p))
		}
		b, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || b < 0 {
			return l, fmt.Errorf("module %s: buffer %d (%s): want a byte count, got %q", l.Key, i+1, f[0], f[2])
		}
		l.Top = append(l.Top, Buffer{Name: f[0], Shape: f[1], Bytes: b})
	}
	return l, nil
}

func knownSchedule(s string) bool {
	switch s {
	case schedule.Keep, schedule.List, schedule.DFS, schedule.PostOrder,
		schedule.Heuristic, schedule.Search, schedule.Optimal:
		return true
	}
	return false
}

// abbreviate shortens a line quoted in a message.
func abbreviate(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
