package assigntest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/assign/assigntest"
)

// mlp is a small model's step; BATCH is its batch size.
const mlp = `HloModule jit_mlp

ENTRY %main (x: f32[BATCH,256], w: f32[256,256], b: f32[256]) -> f32[BATCH,256] {
  %x = f32[BATCH,256]{1,0} parameter(0)
  %w = f32[256,256]{1,0} parameter(1)
  %b = f32[256]{0} parameter(2)
  %h = f32[BATCH,256]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bias = f32[BATCH,256]{1,0} broadcast(%b), dimensions={1}
  %y = f32[BATCH,256]{1,0} add(%h, %bias)
  ROOT %z = f32[BATCH,256]{1,0} exponential(%y)
}
`

// Example records a model's peak memory in a golden file, checks it,
// catches the growth a doubled batch brings, and accepts it by updating
// the file. In a test, Golden does the same with t: it fails the test
// with these sentences, and updates under HLOMEM_UPDATE=1 (or Options.Update).
func Example() {
	dir, err := os.MkdirTemp("", "assigntest")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	model := filepath.Join(dir, "mlp.hlo")
	opts := assigntest.Options{File: filepath.Join(dir, "mlp.peak"), Tolerance: 0.01}
	run := func(what string, batch int, update bool) {
		fmt.Printf("-- %s (batch %d)\n", what, batch)
		src := strings.ReplaceAll(mlp, "BATCH", strconv.Itoa(batch))
		if err := os.WriteFile(model, []byte(src), 0o644); err != nil {
			fmt.Println(err)
			return
		}
		opts.Update = update
		r, err := assigntest.Check(context.Background(), []string{model}, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, v := range r.Verdicts {
			fmt.Println(v.Sentence)
		}
		fmt.Println("failed:", r.Failed())
	}
	run("record", 64, true)
	golden, _ := os.ReadFile(opts.File)
	fmt.Print(string(golden))
	run("check", 64, false)
	run("check", 128, false)
	run("update", 128, true)
	run("check", 128, false)
	// Output:
	// -- record (batch 64)
	// failed: false
	// # hlomem peak v2 target=gpu algorithm=xla schedule=default
	// # module@signature schedule lower_bound temp total peak_step | largest occupants of the peak: name shape bytes occupied
	// jit_mlp@6ffdd663 search 459776 65536 459776 4 | w f32[256,256] 262144 | x f32[64,256] 65536 | h f32[64,256] 65536 | bias f32[64,256] 65536 | b f32[256] 1024
	// -- check (batch 64)
	// module jit_mlp@6ffdd663: ok (temp 64.0KiB, total 449.0KiB, lower bound 449.0KiB)
	// failed: false
	// -- check (batch 128)
	// module jit_mlp@1c4feb63: temp grew 100.0% (64.0KiB → 128.0KiB), total grew 42.8% (449.0KiB → 641.0KiB) and lower bound grew 42.8% (449.0KiB → 641.0KiB), over the 1% tolerance; grew at the peak: x f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB), h f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB), bias f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB); entry signature changed: the golden file has the module as jit_mlp@6ffdd663 (line 3)
	// failed: true
	// -- update (batch 128)
	// module jit_mlp@1c4feb63: temp grew 100.0% (64.0KiB → 128.0KiB), total grew 42.8% (449.0KiB → 641.0KiB) and lower bound grew 42.8% (449.0KiB → 641.0KiB), over the 1% tolerance; grew at the peak: x f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB), h f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB), bias f32[128,256] 128.0KiB (was f32[64,256] 64.0KiB); entry signature changed: the golden file has the module as jit_mlp@6ffdd663 (line 3)
	// failed: false
	// -- check (batch 128)
	// module jit_mlp@1c4feb63: ok (temp 128.0KiB, total 641.0KiB, lower bound 641.0KiB)
	// failed: false
}
