package schedule_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
)

// Two chains that each shrink a large temporary to a scalar, written
// interleaved: run in the text's order both temporaries are live at
// once; the list heuristic and the search run one chain to its end
// before the other starts.
const chains = `HloModule chains
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  a1 = f32[256,4] broadcast(p), dimensions={1}
  b1 = f32[256,4] broadcast(p), dimensions={1}
  a2 = f32[256,4] negate(a1)
  b2 = f32[256,4] negate(b1)
  z = f32[] constant(0)
  ra = f32[] reduce(a2, z), dimensions={0,1}, to_apply=add
  rb = f32[] reduce(b2, z), dimensions={0,1}, to_apply=add
  ROOT t = (f32[], f32[]) tuple(ra, rb)
}
`

// The module laid out under three schedulers with Apply, as the pipeline
// does: the order of the entry computation and the module's lower bound
// under it.
func Example() {
	for _, name := range []string{schedule.Keep, schedule.List, schedule.Search} {
		m, err := hlo.ParseModule("chains.hlo", chains)
		if err != nil {
			log.Fatal(err)
		}
		a, err := liveness.AnalyzeUnscheduled(context.Background(), m, liveness.CheckAll)
		if err != nil {
			log.Fatal(err)
		}
		a, _, err = schedule.Apply(context.Background(), a, name, schedule.Options{})
		if err != nil {
			log.Fatal(err)
		}
		var order []string
		for _, in := range a.Schedule.Sequence(m.Entry) {
			order = append(order, in.Name)
		}
		fmt.Printf("%-6s %5d bytes  %s\n", name, a.LowerBound(nil).Bytes, strings.Join(order, " "))
		if r := a.Search; r != nil {
			// The search starts from the best heuristic by the bound and
			// never ends above it.
			fmt.Printf("       started from %s at %d bytes\n", r.Heuristic, r.Start)
		}
	}
	fmt.Println(schedule.Check("fastest"))
	// Output:
	// keep    8224 bytes  p a1 b1 a2 b2 z ra rb t
	// list    4132 bytes  z p b1 b2 rb a1 a2 ra t
	// search  4132 bytes  z p b1 b2 rb a1 a2 ra t
	//        started from list at 4132 bytes
	// schedule: unknown scheduler "fastest" (want keep, postorder, dfs, list, heuristic, best, search or optimal)
}
