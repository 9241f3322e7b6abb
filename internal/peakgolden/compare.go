package peakgolden

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hlomem/hlomem/assign"
)

// Tolerance says how far each field may move from its golden figure,
// relative to it (0.01 is 1%), before a module fails.
type Tolerance struct {
	// Default applies to every field without one of its own; 0 (exact)
	// by default.
	Default float64
	// Fields gives fields a tolerance of their own.
	Fields map[Field]float64
}

// Of returns the tolerance of field f.
func (t Tolerance) Of(f Field) float64 {
	if v, ok := t.Fields[f]; ok {
		return v
	}
	return t.Default
}

// Validate refuses a negative or NaN tolerance and an unknown field.
func (t Tolerance) Validate() error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(t.Default) {
		return fmt.Errorf("tolerance must be a fraction of at least 0, got %v", t.Default)
	}
	for _, f := range Fields {
		if v, ok := t.Fields[f]; ok && bad(v) {
			return fmt.Errorf("tolerance of %s must be a fraction of at least 0, got %v", f, v)
		}
	}
	for f := range t.Fields {
		if !knownField(f) {
			return fmt.Errorf("tolerance for unknown field %q (want lower_bound, temp or total)", f)
		}
	}
	return nil
}

func knownField(f Field) bool {
	for _, k := range Fields {
		if k == f {
			return true
		}
	}
	return false
}

// Kind classifies a module's verdict.
type Kind uint8

const (
	Same    Kind = iota // the line is the golden file's
	Changed             // within tolerance, but some figure or the peak differs
	Grew                // a figure grew beyond its tolerance
	Shrank              // a figure shrank beyond its tolerance (and none grew beyond it)
	Added               // not in the golden file
	Removed             // in the golden file, not among the modules
)

// Failed reports whether the kind fails the check.
func (k Kind) Failed() bool { return k >= Grew }

// Verdict is the outcome for one module.
type Verdict struct {
	Module string
	Kind   Kind
	// Sentence says what happened, starting "module NAME: ".
	Sentence string
	// Golden and Now are the module's line in the golden file and in this
	// run; nil for a module added or removed.
	Golden, Now *Line
}

// Report is the comparison of a run with a golden file.
type Report struct {
	// File is the golden file's name.
	File string
	// Verdicts, one per module, sorted by module.
	Verdicts []Verdict
	// Diff is go-cmp's diff of the golden file's lines and this run's,
	// by module (-golden +now), "" when they are the same.
	Diff string
	// Modules is the number of modules of this run.
	Modules int

	// Update is set when the run rewrote the golden file rather than
	// checking against it: the verdicts, if any, then say what the update
	// changed, and nothing fails.
	Update bool
	// Wrote reports whether the update wrote the file: false when the
	// file held these very lines already.
	Wrote bool
	// Note says why an update has no verdicts although a file was there.
	Note string
}

// Failed reports whether some module failed a check (never for an update).
func (r *Report) Failed() bool {
	if r.Update {
		return false
	}
	for _, v := range r.Verdicts {
		if v.Kind.Failed() {
			return true
		}
	}
	return false
}

// Count returns how many verdicts are of kind k.
func (r *Report) Count(k Kind) int {
	n := 0
	for _, v := range r.Verdicts {
		if v.Kind == k {
			n++
		}
	}
	return n
}

// Summary is one sentence on the whole comparison, or on the update.
func (r *Report) Summary() string {
	if r.Update {
		mods := fmt.Sprintf("%d %s", r.Modules, plural(r.Modules, "module", "modules"))
		s := "wrote " + r.File + " (" + mods + ")"
		if !r.Wrote {
			s = r.File + " is up to date (" + mods + ")"
		}
		if r.Note != "" {
			s += "; " + r.Note
		}
		return s
	}
	failed := 0
	for _, v := range r.Verdicts {
		if v.Kind.Failed() {
			failed++
		}
	}
	n := len(r.Verdicts)
	if failed == 0 {
		return fmt.Sprintf("%d %s within tolerance of %s", n, plural(n, "module", "modules"), r.File)
	}
	var parts []string
	for _, k := range []struct {
		kind Kind
		word string
	}{{Grew, "grew"}, {Shrank, "shrank"}, {Added, "added"}, {Removed, "removed"}} {
		if c := r.Count(k.kind); c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, k.word))
		}
	}
	return fmt.Sprintf("%d of %d %s out of tolerance of %s (%s)", failed, n, plural(n, "module", "modules"), r.File, strings.Join(parts, ", "))
}

// String gives every verdict's sentence, one per line, then the summary.
func (r *Report) String() string {
	var b strings.Builder
	for _, v := range r.Verdicts {
		b.WriteString(v.Sentence)
		b.WriteByte('\n')
	}
	b.WriteString(r.Summary())
	b.WriteByte('\n')
	return b.String()
}

// Compare compares the lines of a run (sorted, as Measure returns them)
// with the golden file g, read from the file called name.
func Compare(name string, g *File, now []Line, tol Tolerance) *Report {
	r := &Report{File: name}
	// A hand-edited file need not be sorted.
	golden := append([]Line(nil), g.Lines...)
	Sort(golden)
	i, j := 0, 0
	for i < len(golden) || j < len(now) {
		switch {
		case j == len(now) || i < len(golden) && lessModule(golden[i].Module, now[j].Module):
			w := &golden[i]
			r.Verdicts = append(r.Verdicts, Verdict{Module: w.Module, Kind: Removed, Golden: w,
				Sentence: fmt.Sprintf("module %s: in the golden file (line %d) but not among the modules: removed or renamed since it was written", w.Module, w.lineNo)})
			i++
		case i == len(golden) || lessModule(now[j].Module, golden[i].Module):
			n := &now[j]
			r.Verdicts = append(r.Verdicts, Verdict{Module: n.Module, Kind: Added, Now: n,
				Sentence: fmt.Sprintf("module %s: not in the golden file, added since it was written: %s", n.Module, figures(n))})
			j++
		default:
			r.Verdicts = append(r.Verdicts, verdict(&golden[i], &now[j], tol))
			i++
			j++
		}
	}
	// By module, so that a module added or removed shows as such rather
	// than as a change of its neighbour.
	byModule := func(lines []Line) map[string]Line {
		m := make(map[string]Line, len(lines))
		for _, l := range lines {
			m[l.Module] = l
		}
		return m
	}
	r.Diff = cmp.Diff(byModule(golden), byModule(now), cmpopts.IgnoreUnexported(Line{}), cmpopts.IgnoreFields(Line{}, "Source"), cmpopts.EquateEmpty())
	return r
}

// joinAnd joins clauses as a list in words: "a, b and c".
func joinAnd(cs []string) string {
	if len(cs) == 1 {
		return cs[0]
	}
	return strings.Join(cs[:len(cs)-1], ", ") + " and " + cs[len(cs)-1]
}

// figures gives a line's byte figures in words.
func figures(l *Line) string {
	return fmt.Sprintf("temp %s, total %s, lower bound %s", assign.HumanBytes(l.Temp), assign.HumanBytes(l.Total), assign.HumanBytes(l.LowerBound))
}

// verdict compares one module's lines.
func verdict(w, n *Line, tol Tolerance) Verdict {
	v := Verdict{Module: n.Module, Golden: w, Now: n}
	var out, within []string
	grew, shrank := false, false
	// Figures out of tolerance that moved the same way under the same
	// tolerance share one clause: "temp grew 12.5% (...) and total grew
	// 8.0% (...), over the 1% tolerance".
	var group []string
	groupTail := ""
	flush := func() {
		if len(group) > 0 {
			out = append(out, joinAnd(group)+groupTail)
			group = nil
		}
	}
	for _, f := range Fields {
		a, b := w.Value(f), n.Value(f)
		if a == b {
			continue
		}
		t := tol.Of(f)
		clause := change(f, a, b)
		if math.Abs(float64(b-a)) <= t*float64(a) {
			within = append(within, clause)
			continue
		}
		tail := ", beyond the " + percent(t) + " tolerance"
		if b > a {
			grew = true
			tail = ", over the " + percent(t) + " tolerance"
		} else {
			shrank = true
		}
		if tail != groupTail {
			flush()
			groupTail = tail
		}
		group = append(group, clause)
	}
	flush()
	peak := peakChanges(w, n)
	switch {
	case grew:
		v.Kind = Grew
	case shrank:
		v.Kind = Shrank
	case len(within) > 0 || len(peak) > 0 || w.text() != n.text():
		v.Kind = Changed
	default:
		v.Kind = Same
	}
	var clauses []string
	switch v.Kind {
	case Same:
		clauses = []string{"ok (" + figures(n) + ")"}
	case Changed:
		if len(within) > 0 {
			clauses = append(clauses, "ok", "within tolerance: "+joinAnd(within))
		} else {
			clauses = append(clauses, "ok, same figures")
		}
	default:
		clauses = append(clauses, out...)
		if len(within) > 0 {
			clauses = append(clauses, "within tolerance: "+joinAnd(within))
		}
	}
	clauses = append(clauses, peak...)
	if v.Kind == Shrank {
		clauses = append(clauses, "a gain: update the golden file to record it")
	}
	v.Sentence = "module " + n.Module + ": " + strings.Join(clauses, "; ")
	return v
}

// change describes how a figure moved: temp grew 12.5% (1.20GiB → 1.35GiB).
func change(f Field, a, b int64) string {
	verb := "grew"
	if b < a {
		verb = "shrank"
	}
	from, to := assign.HumanBytes(a), assign.HumanBytes(b)
	if from == to {
		// Too small a change to show in these units: say it in bytes.
		d := b - a
		sign := "+"
		if d < 0 {
			sign, d = "-", -d
		}
		to += ", " + sign + strconv.FormatInt(d, 10) + "B"
	}
	if a == 0 {
		return fmt.Sprintf("%s %s from nothing (%s → %s)", f.label(), verb, from, to)
	}
	rel := math.Abs(float64(b-a)) / float64(a) * 100
	pct := strconv.FormatFloat(rel, 'f', 1, 64) + "%"
	if rel < 0.05 {
		pct = "<0.1%"
	}
	return fmt.Sprintf("%s %s %s (%s → %s)", f.label(), verb, pct, from, to)
}

// percent prints a tolerance fraction as a percentage: 0.01 → 1%.
func percent(t float64) string {
	return strconv.FormatFloat(t*100, 'g', -1, 64) + "%"
}

// peakChanges says what changed at the peak: the schedule, the step, and
// the buffers among the largest there that are new, grew, shrank or left.
func peakChanges(w, n *Line) []string {
	var out []string
	if w.Schedule != n.Schedule {
		out = append(out, fmt.Sprintf("schedule %s, was %s", n.Schedule, w.Schedule))
	}
	old := map[string]Buffer{}
	for _, b := range w.Top {
		old[b.Name] = b
	}
	cur := map[string]bool{}
	var added, grew, shrank, left []string
	for _, b := range n.Top {
		cur[b.Name] = true
		o, ok := old[b.Name]
		switch {
		case !ok:
			added = append(added, b.String())
		case b.Bytes > o.Bytes:
			grew = append(grew, fmt.Sprintf("%s (was %s %s)", b, o.Shape, assign.HumanBytes(o.Bytes)))
		case b.Bytes < o.Bytes:
			shrank = append(shrank, fmt.Sprintf("%s (was %s %s)", b, o.Shape, assign.HumanBytes(o.Bytes)))
		}
	}
	for _, b := range w.Top {
		if !cur[b.Name] {
			left = append(left, b.String())
		}
	}
	for _, c := range []struct {
		what string
		bufs []string
	}{{"new at the peak", added}, {"grew at the peak", grew}, {"shrank at the peak", shrank}, {"no longer among the largest at the peak", left}} {
		if len(c.bufs) > 0 {
			out = append(out, c.what+": "+strings.Join(c.bufs, ", "))
		}
	}
	if w.PeakStep != n.PeakStep && len(out) == 0 {
		out = append(out, fmt.Sprintf("the peak moved from step %d to %d", w.PeakStep, n.PeakStep))
	}
	return out
}
