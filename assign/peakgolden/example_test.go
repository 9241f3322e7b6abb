package peakgolden_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hlomem/hlomem/assign/peakgolden"
)

// mlp is a small model's step, scheduled as XLA compiled it.
const mlp = `HloModule jit_mlp, is_scheduled=true

ENTRY %main (x: f32[64,256], w: f32[256,256], b: f32[256]) -> f32[64,256] {
  %x = f32[64,256]{1,0} parameter(0)
  %w = f32[256,256]{1,0} parameter(1)
  %b = f32[256]{0} parameter(2)
  %h = f32[64,256]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bias = f32[64,256]{1,0} broadcast(%b), dimensions={1}
  %y = f32[64,256]{1,0} add(%h, %bias)
  ROOT %z = f32[64,256]{1,0} exponential(%y)
}
`

// Example measures a module's peak memory, writes its golden file, and
// compares the run with a golden file recorded when the module needed
// less temp memory.
func Example() {
	dir, err := os.MkdirTemp("", "peakgolden")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	model := filepath.Join(dir, "mlp.hlo")
	if err := os.WriteFile(model, []byte(mlp), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	in, err := peakgolden.Collect([]string{model})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := peakgolden.Options{} // the gpu target, XLA's heap algorithm
	lines, err := peakgolden.Measure(context.Background(), in.Files, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	golden, err := peakgolden.Bytes(opts, lines)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(golden))

	// The golden file as it was when the temp allocation was 32KiB.
	old := strings.Replace(string(golden), " 65536 459776 4 ", " 32768 427008 4 ", 1)
	g, err := peakgolden.Parse("mlp.peak", []byte(old))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := peakgolden.Compare("mlp.peak", g, lines, peakgolden.Tolerance{Default: 0.01})
	fmt.Print(r)
	fmt.Println("failed:", r.Failed())
	// Output:
	// # hlomem peak v2 target=gpu algorithm=xla schedule=default
	// # module@signature schedule lower_bound temp total peak_step | largest occupants of the peak: name shape bytes occupied
	// jit_mlp@6ffdd663 keep 459776 65536 459776 4 | w f32[256,256] 262144 | x f32[64,256] 65536 | h f32[64,256] 65536 | bias f32[64,256] 65536 | b f32[256] 1024
	// module jit_mlp@6ffdd663: temp grew 100.0% (32.0KiB → 64.0KiB) and total grew 7.7% (417.0KiB → 449.0KiB), over the 1% tolerance
	// 1 of 1 module out of tolerance of mlp.peak: 1 grew
	// failed: true
}
