package tpu_test

import (
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/tpu"
)

// ExampleDefaultLayout shows the tiles XLA:TPU gives arrays that have
// none, and the padded bytes they take in HBM beside their data.
func ExampleDefaultLayout() {
	for _, s := range []hlo.Shape{
		hlo.ArrayShape(hlo.F32, 3, 200),
		hlo.ArrayShape(hlo.BF16, 3, 200),
		hlo.ArrayShape(hlo.F32, 1000),
		hlo.ArrayShape(hlo.F32),
	} {
		for _, gen := range []tpu.Generation{tpu.V4, tpu.V7x} {
			tiled := tpu.DefaultLayout(s, gen)
			padded, _ := hlo.ByteSize(tiled)
			data, _ := hlo.UnpaddedByteSize(tiled)
			fmt.Printf("%-7s %-31s %4d bytes for %d\n", gen.Name, tiled, padded, data)
		}
	}
	// Output:
	// tpu-v4  f32[3,200]{1,0:T(8,128)}        8192 bytes for 2400
	// tpu-7x  f32[3,200]{1,0:T(8,128)}        8192 bytes for 2400
	// tpu-v4  bf16[3,200]{1,0:T(8,128)(2,1)}  4096 bytes for 1200
	// tpu-7x  bf16[3,200]{1,0:T(16,128)(2,1)} 8192 bytes for 1200
	// tpu-v4  f32[1000]{0:T(1024)}            4096 bytes for 4000
	// tpu-7x  f32[1000]{0:T(1024)}            4096 bytes for 4000
	// tpu-v4  f32[]{:T(256)}                  1024 bytes for 4
	// tpu-7x  f32[]{:T(256)}                  1024 bytes for 4
}

// ExampleHBM shows the HBM allocator compacting: a request that fails only
// because the free bytes are split is placed after the live regions slide
// down, and the owner of the moved bytes is told.
func ExampleHBM() {
	h, err := tpu.NewHBM(4 * tpu.Granule)
	if err != nil {
		fmt.Println(err)
		return
	}
	h.OnMove(func(from, to, size int64) { fmt.Printf("moved %d bytes from %d to %d\n", size, from, to) })
	var addrs []int64
	for range 4 {
		a, _ := h.Allocate(tpu.Granule, 0)
		addrs = append(addrs, a)
	}
	h.Free(addrs[0])
	h.Free(addrs[2])
	big, err := h.Allocate(2*tpu.Granule, 0)
	fmt.Println("allocated at", big, err)
	st := h.Stats()
	fmt.Printf("in use %d of %d, %d compaction(s), %d bytes moved\n", st.InUse, st.Capacity, st.Compactions, st.BytesMoved)
	_, err = h.Allocate(1, 0)
	var oom *tpu.OOMError
	fmt.Println("full:", errors.As(err, &oom))
	// Output:
	// moved 512 bytes from 512 to 0
	// moved 512 bytes from 1536 to 512
	// allocated at 1024 <nil>
	// in use 2048 of 2048, 1 compaction(s), 1024 bytes moved
	// full: true
}
