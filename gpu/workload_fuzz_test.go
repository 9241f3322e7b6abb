package gpu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
)

// FuzzWorkload: any input is parsed without a panic; a workload that parses
// replays on a small device, with a real program, without a panic, and
// leaves the allocator's books straight: the bytes in use are the arrays'
// buffers.
func FuzzWorkload(f *testing.F) {
	for _, seed := range []string{
		`{"steps": [{"put": "a", "bytes": 1}]}`,
		`{"device": "custom:64MiB", "steps": [{"put": "p", "bytes": "1MiB"}, {"run": "s", "args": ["p"], "outputs": ["p"]}, {"defragment": true}, {"delete": "p"}]}`,
		`{"steps": [{"put_params": "s"}, {"run": "s"}, {"run": "s", "expect_oom": true}]}`,
		`{"steps": [{"put": "x", "shape": "f32[4,4]"}, {"delete": "x"}, {"delete": "x"}]}`,
		`{"steps": [`, `[]`, `{"steps": [{"put": "a", "bytes": "99TiB"}]}`,
	} {
		f.Add([]byte(seed))
	}
	if b, err := os.ReadFile("testdata/frag.json"); err == nil {
		f.Add(b)
	}
	p := program(f, "s.hlo", `HloModule s, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY e {
  p = f32[262144]{0} parameter(0)
  a = f32[262144]{0} exponential(p)
  b = f32[524288]{0} concatenate(a, a), dimensions={0}
  ROOT c = f32[262144]{0} slice(b), slice={[0:262144]}
}
`)
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload("fuzz.json", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, k := range []AllocatorKind{BFCKind, Platform, CudaAsync} {
			for _, prealloc := range []bool{true, false} {
				cfg := DefaultConfig()
				cfg.Allocator, cfg.Preallocate = k, prealloc
				c, err := NewClient(Device{Name: "custom", Memory: 64 << 20}, cfg, ClientOptions{Verify: true})
				if err != nil {
					t.Fatal(err)
				}
				err = c.Replay(context.Background(), w, map[string]*Program{"s": p}, nil)
				var se *StepError
				if err != nil && !errors.As(err, &se) {
					t.Fatalf("%s: replay error without its step: %v", k, err)
				}
				if got, inUse := c.Stats().BytesInUse, heldBytes(c); got != inUse {
					t.Fatalf("%s: %d bytes in use, the arrays hold %d", k, got, inUse)
				}
			}
		}
	})
}
