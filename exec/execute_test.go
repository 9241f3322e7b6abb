package exec

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/stretchr/testify/require"
)

var opInError = regexp.MustCompile(`cannot evaluate opcode ([a-z0-9-]+)`)

// TestPlannedRunEqualsReference: on every corpus module whose opcodes the
// evaluator knows, the run on the plan's bytes computes bit for bit what
// the run with a region per buffer computes. The rest are counted by the
// opcode that stopped them.
func TestPlannedRunEqualsReference(t *testing.T) {
	files := append(corpus.Glob(t, "paired*/*/*after_optimizations.txt"), corpus.Glob(t, "hlo/*/*.hlo")...)
	agreed := 0
	stopped := map[string]int{}
	for _, f := range files {
		for _, as := range plan(t, f, assign.Options{Budget: 20 * time.Millisecond}) {
			if as.Stats.TotalBytes > 64<<20 {
				stopped["(plan over 64 MiB, not run here)"]++
				continue
			}
			args := RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ref, err := Execute(ctx, as, args, nil, ExecOptions{Reference: true})
			cancel()
			if err != nil {
				m := opInError.FindStringSubmatch(err.Error())
				switch {
				case m != nil:
					stopped[m[1]]++
				case errors.Is(err, context.DeadlineExceeded):
					stopped["(over 5 s)"]++
				default:
					stopped["other: "+err.Error()]++
				}
				continue
			}
			got, err := Execute(context.Background(), as, args, nil, ExecOptions{})
			require.NoError(t, err, f)
			require.Equal(t, len(ref.Outputs), len(got.Outputs))
			for i := range ref.Outputs {
				require.Equal(t, ref.Outputs[i].Checksum(), got.Outputs[i].Checksum(), "%s: output %d differs between the planned and the reference run", f, i)
			}
			agreed++
		}
	}
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
