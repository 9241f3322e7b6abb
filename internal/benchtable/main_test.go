package main

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
BenchmarkPass/parse/chain/n=10000-2   	       1	   1000 ns/op	  2.0 µs/instr	  400 B/instr	 10000 instrs
BenchmarkPass/parse/chain/n=10000-2   	       1	   1000 ns/op	  1.0 µs/instr	  300 B/instr	 10000 instrs
BenchmarkPass/parse/chain/n=10000-2   	       1	   1000 ns/op	  9.0 µs/instr	  500 B/instr	 10000 instrs
BenchmarkPass/parse/chain/n=1000000-2 	       1	   1000 ns/op	  4.0 µs/instr	  400 B/instr	 1000000 instrs
BenchmarkPass/fusion/chain/n=1000000
    passes_bench_test.go:99: too slow
--- SKIP: BenchmarkPass/fusion/chain/n=1000000
BenchmarkPass/fusion/chain/n=10000-2   	       1	   1000 ns/op	  5.0 µs/instr	  400 B/instr	 10000 instrs
`

func TestTable(t *testing.T) {
	tb, err := read(strings.NewReader(sample))
	require.NoError(t, err)
	require.Equal(t, []int{10000, 1000000}, tb.sizes)
	k := key{"parse", "chain"}
	require.Equal(t, 2.0, median(tb.vals[k][10000]["µs/instr"]))
	require.Equal(t, 400.0, median(tb.vals[k][10000]["B/instr"]))
	// 2 µs × 10^4 to 4 µs × 10^6: a ratio of 200 over 100× the size.
	e, ok := tb.exponent(k, "µs/instr", 10000, 1000000)
	require.True(t, ok)
	require.InDelta(t, math.Log(200)/math.Log(100), e, 1e-9)
	require.Equal(t, "too slow", tb.skips[key{"fusion", "chain"}][1000000])
	_, ok = tb.exponent(key{"fusion", "chain"}, "µs/instr", 10000, 1000000)
	require.False(t, ok)
	var out strings.Builder
	write(&out, tb)
	require.Contains(t, out.String(), "| parse | chain | 2.00 | 4.00 | – | – | 400 | 400 |")
	require.Contains(t, out.String(), "| fusion | chain | 5.00 | skip |")
	require.Contains(t, out.String(), " 1.15 | – |\n")
	require.Contains(t, out.String(), "fusion/chain at n=10^6 skipped: too slow")
	require.Contains(t, out.String(), "Medians of the runs per size (10^4: 3, 10^6: 1).")
}

func TestMedianEven(t *testing.T) {
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	require.True(t, math.IsNaN(median(nil)))
}
