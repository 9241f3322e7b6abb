package peakgolden

import (
	"fmt"
	"math"
	"sort"
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
	Changed             // within tolerance, but some figure, the peak or the signature differs
	Grew                // a figure grew beyond its tolerance
	Shrank              // a figure shrank beyond its tolerance (and none grew beyond it)
	Added               // not in the golden file
	Removed             // in the golden file, not among the modules
)

// kinds lists the kinds in the order a summary counts them.
var kinds = []Kind{Same, Changed, Grew, Shrank, Added, Removed}

// Failed reports whether the kind fails the check: a figure beyond its
// tolerance, and a module added or removed, which the golden file must
// record before the check passes again.
func (k Kind) Failed() bool { return k >= Grew }

// String names the kind as a summary counts it.
func (k Kind) String() string {
	switch k {
	case Same:
		return "same"
	case Changed:
		return "changed within tolerance"
	case Grew:
		return "grew"
	case Shrank:
		return "shrank"
	case Added:
		return "added"
	case Removed:
		return "removed"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Verdict is the outcome for one module.
type Verdict struct {
	// Key is the module's key: this run's, or the golden file's for a
	// module removed. Against a v1 file, the v1 key (NAME, NAME#K).
	Key  string
	Kind Kind
	// Sentence says what happened, starting "module KEY: ".
	Sentence string
	// Golden and Now are the module's line in the golden file and in this
	// run; Golden is nil for a module added, Now for one removed.
	Golden, Now *Line
}

// Report is the comparison of a run with a golden file.
type Report struct {
	// File is the golden file's name.
	File string
	// Version is the golden file's format version (File.Version); 1 when
	// it keyed modules by name alone, and the comparison then did too.
	Version int
	// Verdicts, one per module, sorted by key.
	Verdicts []Verdict
	// Diff is go-cmp's diff of the golden file's lines and this run's,
	// by key (-golden +now), "" when they are the same.
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

// counts gives the number of verdicts of each kind there is, in words:
// "2 same, 1 added".
func (r *Report) counts() string {
	var parts []string
	for _, k := range kinds {
		if c := r.Count(k); c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, k))
		}
	}
	return strings.Join(parts, ", ")
}

// Summary is one sentence on the whole comparison, or on the update: how
// many modules, how many of each kind, and the rule that an added or
// removed module fails.
func (r *Report) Summary() string {
	if r.Update {
		mods := fmt.Sprintf("%d %s", r.Modules, plural(r.Modules, "module", "modules"))
		s := r.File + " is up to date (" + mods + ")"
		if r.Wrote {
			if c := r.counts(); c != "" && r.Count(Same) != len(r.Verdicts) {
				mods += ": " + c
			}
			s = "wrote " + r.File + " (" + mods + ")"
		}
		if r.Note != "" {
			s += "; " + r.Note
		}
		if r.Version == 1 {
			s += "; converted from format v1 (modules keyed by name) to v2 (keyed by name and entry signature)"
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
	var s string
	if failed == 0 {
		s = fmt.Sprintf("%d %s within tolerance of %s", n, plural(n, "module", "modules"), r.File)
	} else {
		s = fmt.Sprintf("%d of %d %s out of tolerance of %s", failed, n, plural(n, "module", "modules"), r.File)
	}
	if c := r.counts(); c != "" {
		s += ": " + c
	}
	if r.Count(Added)+r.Count(Removed) > 0 {
		s += "; a module added or removed fails the check until the golden file is updated"
	}
	if r.Version == 1 {
		s += "; " + r.File + " is format v1, which keys modules by name alone: update it to key them by name and entry signature (v2)"
	}
	return s
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

// Compare compares the lines of a run (keyed, as Measure returns them)
// with the golden file g, read from the file called name.
//
// A module is its line of the same key. Failing that, in order:
//   - lines of one name and signature that only their ordinal told apart
//     (NAME@SIGNATURE#K) pair up in order, as the number of such compiles
//     changed;
//   - a module whose name is on exactly one line of the file and one of
//     the run is the same module with another entry signature (the
//     function compiled once, for a batch twice as large): its figures
//     are compared and the sentence says the signature changed.
//
// The other lines are modules added or removed: a function compiled once
// more is one module added, the others keep their lines. Against a v1
// file the keys are v1's (NAME, NAME#K) and nothing else pairs.
func Compare(name string, g *File, now []Line, tol Tolerance) *Report {
	r := &Report{File: name, Version: g.Version}
	if r.Version == 0 {
		r.Version = Version
	}
	key := func(l *Line) string { return l.Key }
	if r.Version == 1 {
		key = func(l *Line) string {
			if l.v1Key != "" {
				return l.v1Key
			}
			return l.Key
		}
	}
	golden := make([]*Line, len(g.Lines))
	byKey := make(map[string]*Line, len(g.Lines))
	for i := range g.Lines {
		golden[i] = &g.Lines[i]
		byKey[g.Lines[i].Key] = &g.Lines[i]
	}
	matched := map[*Line]bool{} // golden lines
	var left []*Line            // this run's lines without a golden line of their key
	for i := range now {
		n := &now[i]
		w, ok := byKey[key(n)]
		if !ok {
			left = append(left, n)
			continue
		}
		matched[w] = true
		r.Verdicts = append(r.Verdicts, verdict(key(n), w, n, tol, ""))
	}
	// Modules of one name and signature that the ordinal alone kept
	// apart (compiled twice for the same shapes): paired in order when
	// their number changed, jit_f@1a2b3c4d#2 now jit_f@1a2b3c4d.
	if r.Version > 1 {
		unmatched := map[string][]*Line{} // golden, by key without the ordinal
		for _, w := range golden {
			if !matched[w] {
				base, _ := splitOrdinal(w.Key)
				unmatched[base] = append(unmatched[base], w)
			}
		}
		for _, ws := range unmatched {
			sort.SliceStable(ws, func(i, j int) bool { return lessKey(ws[i].Key, ws[j].Key) })
		}
		rest := left[:0:0]
		for _, n := range left {
			base, _ := splitOrdinal(n.Key)
			ws := unmatched[base]
			if len(ws) == 0 {
				rest = append(rest, n)
				continue
			}
			w := ws[0]
			unmatched[base] = ws[1:]
			matched[w] = true
			r.Verdicts = append(r.Verdicts, verdict(key(n), w, n, tol,
				fmt.Sprintf("the golden file has the module as %s (line %d)", w.Key, w.lineNo)))
		}
		left = rest
	}
	// By name: how many lines each side has, and the keys.
	goldenNames, nowNames := map[string][]*Line{}, map[string][]*Line{}
	for _, w := range golden {
		goldenNames[w.Module] = append(goldenNames[w.Module], w)
	}
	for i := range now {
		nowNames[now[i].Module] = append(nowNames[now[i].Module], &now[i])
	}
	for _, n := range left {
		if r.Version > 1 && len(goldenNames[n.Module]) == 1 && len(nowNames[n.Module]) == 1 && !matched[goldenNames[n.Module][0]] {
			w := goldenNames[n.Module][0]
			matched[w] = true
			r.Verdicts = append(r.Verdicts, verdict(key(n), w, n, tol,
				fmt.Sprintf("entry signature changed: the golden file has the module as %s (line %d)", w.Key, w.lineNo)))
			continue
		}
		s := fmt.Sprintf("module %s: added, not in the golden file: %s", key(n), figures(n))
		if r.Version > 1 {
			if others := keysOf(goldenNames[n.Module]); len(others) > 0 {
				s += fmt.Sprintf("; another compile of %s, beside %s in the golden file", n.Module, joinAnd(others))
			}
		}
		r.Verdicts = append(r.Verdicts, Verdict{Key: key(n), Kind: Added, Now: n, Sentence: s})
	}
	for _, w := range golden {
		if matched[w] {
			continue
		}
		s := fmt.Sprintf("module %s: removed, in the golden file (line %d) but not among the modules", w.Key, w.lineNo)
		if r.Version > 1 {
			if others := keysOf(nowNames[w.Module]); len(others) > 0 {
				s += fmt.Sprintf("; this run's %s %s", plural(len(others), "compile of "+w.Module+" is", "compiles of "+w.Module+" are"), joinAnd(others))
			}
		}
		r.Verdicts = append(r.Verdicts, Verdict{Key: w.Key, Kind: Removed, Golden: w, Sentence: s})
	}
	sort.SliceStable(r.Verdicts, func(i, j int) bool { return lessKey(r.Verdicts[i].Key, r.Verdicts[j].Key) })

	// The diff by verdict, so that a module added or removed shows as
	// such rather than as a change of its neighbour, and a module whose
	// signature changed as one line that changed.
	was, is := map[string]Line{}, map[string]Line{}
	for _, v := range r.Verdicts {
		if v.Golden != nil {
			was[v.Key] = *v.Golden
		}
		if v.Now != nil {
			is[v.Key] = *v.Now
		}
	}
	ignore := []string{"Source", "Signature"} // the key shows a change of signature
	if r.Version == 1 {
		ignore = append(ignore, "Key")
	}
	r.Diff = cmp.Diff(was, is, cmpopts.IgnoreUnexported(Line{}), cmpopts.IgnoreFields(Line{}, ignore...), cmpopts.EquateEmpty())
	return r
}

// keysOf returns the keys of lines, sorted.
func keysOf(lines []*Line) []string {
	var keys []string
	for _, l := range lines {
		keys = append(keys, l.Key)
	}
	sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	return keys
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

// verdict compares one module's lines; key names it, and note, if any, is
// a clause on it that the sentence adds.
func verdict(key string, w, n *Line, tol Tolerance, note string) Verdict {
	v := Verdict{Key: key, Golden: w, Now: n}
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
	case len(within) > 0 || len(peak) > 0 || w.figuresText() != n.figuresText() || w.Signature != n.Signature && w.Signature != "":
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
	if note != "" {
		clauses = append(clauses, note)
	}
	if v.Kind == Shrank {
		clauses = append(clauses, "a gain: update the golden file to record it")
	}
	v.Sentence = "module " + key + ": " + strings.Join(clauses, "; ")
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
