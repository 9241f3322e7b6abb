// Command benchtable reads `go test -bench` output on stdin and prints a
// markdown table of BenchmarkPass-style results (Benchmark<Top>/<pass>/
// <shape>/n=<N>): for each pass and shape, the median over the -count runs
// of each metric (µs/instr, cpu-µs/instr, B/instr, peak-heap-B/instr) at
// each size, and the growth exponents of the time and of the CPU time from
// 10^4 to 10^6 instructions (log(t(10^6)/t(10^4)) / log 100, on the time
// per run, i.e. µs/instr × n: 1 is linear). A size a benchmark skipped shows "skip"
// and its reason is listed after the table; that takes go test -v
// (without it a skip prints nothing, and the cell shows "–").
//
//	go test -run '^$' -bench 'Pass/' -benchtime 1x -count 3 -v ./compile | go run ./internal/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

var metricsShown = []string{"µs/instr", "cpu-µs/instr", "B/instr", "peak-heap-B/instr"}

type key struct{ pass, shape string }

type table struct {
	order  []key
	sizes  []int
	vals   map[key]map[int]map[string][]float64 // pass,shape -> n -> metric -> runs
	skips  map[key]map[int]string
	instrs map[key]map[int]float64
}

var nameRE = regexp.MustCompile(`^Benchmark[^/]+/([^/]+)/([^/]+)/n=(\d+)(-\d+)?$`)
var skipRE = regexp.MustCompile(`--- SKIP: Benchmark[^/]+/([^/]+)/([^/]+)/n=(\d+)`)
var logRE = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)

func read(r io.Reader) (*table, error) {
	t := &table{vals: map[key]map[int]map[string][]float64{}, skips: map[key]map[int]string{}, instrs: map[key]map[int]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	addSize := func(n int) {
		if !slices.Contains(t.sizes, n) {
			t.sizes = append(t.sizes, n)
		}
	}
	addKey := func(k key) {
		if !slices.Contains(t.order, k) {
			t.order = append(t.order, k)
		}
	}
	// With -v, a skipped benchmark's reason (a "file.go:N: why" line)
	// comes before its "--- SKIP" line; without -v a skip prints nothing.
	lastLog := ""
	for sc.Scan() {
		line := sc.Text()
		if m := skipRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[3])
			k := key{m[1], m[2]}
			addKey(k)
			addSize(n)
			if t.skips[k] == nil {
				t.skips[k] = map[int]string{}
			}
			t.skips[k][n] = lastLog
			lastLog = ""
			continue
		}
		if m := logRE.FindStringSubmatch(line); m != nil {
			lastLog = m[1]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		m := nameRE.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		k := key{m[1], m[2]}
		addKey(k)
		addSize(n)
		if t.vals[k] == nil {
			t.vals[k] = map[int]map[string][]float64{}
			t.instrs[k] = map[int]float64{}
		}
		if t.vals[k][n] == nil {
			t.vals[k][n] = map[string][]float64{}
		}
		// f[1] is the iteration count; then value unit pairs.
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			if unit == "instrs" {
				t.instrs[k][n] = v
				continue
			}
			t.vals[k][n][unit] = append(t.vals[k][n][unit], v)
		}
	}
	sort.Ints(t.sizes)
	return t, sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

// exponent is the growth exponent of the time per run (metric, per
// instruction, times the instructions) from n=lo to n=hi.
func (t *table) exponent(k key, metric string, lo, hi int) (float64, bool) {
	a, b := t.vals[k][lo], t.vals[k][hi]
	if lo == hi || a == nil || b == nil {
		return 0, false
	}
	ta, tb := median(a[metric])*t.instrs[k][lo], median(b[metric])*t.instrs[k][hi]
	if !(ta > 0 && tb > 0) {
		return 0, false
	}
	return math.Log(tb/ta) / math.Log(t.instrs[k][hi]/t.instrs[k][lo]), true
}

func write(w io.Writer, t *table) {
	fmt.Fprintf(w, "| pass | shape |")
	for _, met := range metricsShown {
		for _, n := range t.sizes {
			fmt.Fprintf(w, " %s n=%s |", met, sizeName(n))
		}
	}
	lo, hi := 10_000, 1_000_000
	if !slices.Contains(t.sizes, hi) && len(t.sizes) > 0 {
		hi = t.sizes[len(t.sizes)-1]
	}
	if !slices.Contains(t.sizes, lo) && len(t.sizes) > 0 {
		lo = t.sizes[0]
	}
	fmt.Fprintf(w, " exponent %s→%s | cpu exponent |\n|---|---|", sizeName(lo), sizeName(hi))
	for range metricsShown {
		for range t.sizes {
			fmt.Fprintf(w, "---:|")
		}
	}
	fmt.Fprintln(w, "---:|---:|")
	for _, k := range t.order {
		fmt.Fprintf(w, "| %s | %s |", k.pass, k.shape)
		for _, met := range metricsShown {
			for _, n := range t.sizes {
				if _, ok := t.skips[k][n]; ok {
					fmt.Fprintf(w, " skip |")
					continue
				}
				fmt.Fprintf(w, " %s |", format(median(t.vals[k][n][met])))
			}
		}
		for _, met := range []string{"µs/instr", "cpu-µs/instr"} {
			if e, ok := t.exponent(k, met, lo, hi); ok {
				fmt.Fprintf(w, " %.2f |", e)
			} else {
				fmt.Fprint(w, " – |")
			}
		}
		fmt.Fprintln(w)
	}
	// How many runs each size's medians are of (the most of any pass).
	var runs []string
	for _, n := range t.sizes {
		most := 0
		for _, k := range t.order {
			most = max(most, len(t.vals[k][n]["µs/instr"]))
		}
		runs = append(runs, fmt.Sprintf("%s: %d", sizeName(n), most))
	}
	fmt.Fprintf(w, "\nMedians of the runs per size (%s).\n", strings.Join(runs, ", "))
	var notes []string
	for _, k := range t.order {
		for _, n := range t.sizes {
			if why, ok := t.skips[k][n]; ok {
				notes = append(notes, fmt.Sprintf("- %s/%s at n=%s skipped: %s", k.pass, k.shape, sizeName(n), why))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(notes, "\n"))
	}
}

func sizeName(n int) string {
	if e := math.Log10(float64(n)); n > 0 && e == math.Trunc(e) {
		return fmt.Sprintf("10^%d", int(e))
	}
	return strconv.Itoa(n)
}

func main() {
	t, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(t.order) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no Benchmark<Name>/<pass>/<shape>/n=<N> results on stdin")
		os.Exit(1)
	}
	write(os.Stdout, t)
}
