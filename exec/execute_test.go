package exec

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

var opInError = regexp.MustCompile(`cannot evaluate opcode ([a-z0-9-]+)`)

// TestPlannedRunEqualsReferenceCorpus: on every corpus module whose opcodes the
// evaluator knows, the run on the plan's bytes computes bit for bit what
// the run with a region per buffer computes. The rest are counted by the
// opcode that stopped them.
func TestPlannedRunEqualsReferenceCorpus(t *testing.T) {
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	var mu sync.Mutex
	agreed := 0
	stopped := map[string]int{}
	stop := func(why string) {
		mu.Lock()
		stopped[why]++
		mu.Unlock()
	}
	eachFile(t, files, func(t *testing.T, f string) {
		for _, as := range plan(t, f, assign.Options{Budget: 20 * time.Millisecond}) {
			if as.Stats.TotalBytes > 64<<20 {
				stop("(plan over 64 MiB, not run here)")
				continue
			}
			args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ref, err := Execute(ctx, as, args, nil, Options{Reference: true})
			cancel()
			if err != nil {
				m := opInError.FindStringSubmatch(err.Error())
				switch {
				case m != nil:
					stop(m[1])
				case errors.Is(err, context.DeadlineExceeded):
					stop("(over 5 s)")
				default:
					stop("other: " + err.Error())
				}
				continue
			}
			got, err := Execute(context.Background(), as, args, nil, Options{})
			require.NoError(t, err, f)
			require.Equal(t, len(ref.Outputs), len(got.Outputs))
			for i := range ref.Outputs {
				require.Equal(t, ref.Outputs[i].Checksum(), got.Outputs[i].Checksum(), "%s: output %d differs between the planned and the reference run", f, i)
			}
			mu.Lock()
			agreed++
			mu.Unlock()
		}
	})
	type kv struct {
		k string
		n int
	}
	var list []kv
	for k, n := range stopped {
		list = append(list, kv{k, n})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].n > list[j].n })
	t.Logf("%d modules: planned run equals reference; stopped by: %v", agreed, list)
	require.Positive(t, agreed)
}

// TestHugeArgumentsAreErrors: an argument whose shape is absurd is an
// error before anything is allocated for it, in a reference run and a
// planned one alike.
func TestHugeArgumentsAreErrors(t *testing.T) {
	m, err := hlo.ParseModule("huge.hlo", `HloModule huge
ENTRY e {
  a = f32[1000000,1000000] parameter(0)
  ROOT b = f32[1000000,1000000] negate(a)
}
`)
	require.NoError(t, err)
	a, err := preptest.Prepare(m, "")
	require.NoError(t, err)
	as, err := assign.Assign(context.Background(), a, assign.Options{})
	require.NoError(t, err)
	args := eval.RandomArgs(m, rand.New(rand.NewPCG(1, 2)))
	require.Len(t, args, 1)
	for _, ref := range []bool{true, false} {
		_, err = Execute(context.Background(), as, args, nil, Options{Reference: ref})
		require.EqualError(t, err, "runtime: argument 0: shape f32[1000000,1000000] is too large to evaluate: 4000000000000 bytes, more than "+strconv.Itoa(eval.MaxLiteralBytes))
	}
}
